"""`@accel.jit`: compile a module or function on first call, once per input signature.

    @accel.jit                                   # or @accel.jit(compile_options={...})
    def mlp(x, w1, w2):
        return torch.relu(x @ w1) @ w2

    fast = accel.jit(model.eval(), compile_options={"opt_level": 2})
    y = fast(x)         # compiles for x's shape/dtype; later calls with that signature reuse it

A signature is the (shape, dtype, device) of every positional tensor argument. Each new
signature is compiled with `accel.api.compile` and cached in the wrapper (`signatures`,
`stats`, `reset()`). Compiled code is for inference: it runs when no autograd is asked for,
and the call runs eagerly (one `UserWarning` per wrapper) when the module is in training
mode or grad mode is on and an argument requires grad. A module's parameters are frozen into
the compiled code at compile time: call `reset()` after changing them.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from accel.api import compile as accel_compile
from accel.api import resolve_options
from accel.settings import Settings

#: One positional tensor argument's part of a signature: (shape, dtype, device), as strings
#: for dtype and device so that keys print readably.
ArgKey = tuple[tuple[int, ...], str, str]
Signature = tuple[ArgKey, ...]


def _is_module(obj: Any) -> bool:
    import torch

    return isinstance(obj, torch.nn.Module)


class JitFunction:
    """A module or function compiled lazily, once per input signature (see module doc).

    Attributes: `fn` (the wrapped module/function), `compile_options` (as given, validated),
    `settings` (them resolved, once: every compile reuses them),
    `compiled` (signature -> `accel.api.CompiledModule`).
    """

    def __init__(self, fn: Any, compile_options: Mapping[str, Any] | None = None):
        if not callable(fn):
            raise TypeError(f"accel.jit needs an nn.Module or a function, got "
                            f"{type(fn).__name__}")
        # ValueError/NotImplementedError now, not at call; resolved once for every compile.
        self.settings = resolve_options(compile_options)
        self.fn = fn
        given = compile_options.given if isinstance(compile_options, Settings) else None
        self.compile_options: dict[str, Any] = {
            k: v for k, v in (compile_options or {}).items() if given is None or k in given}
        self.compiled: dict[Signature, Any] = {}
        self._stats = {"compiles": 0, "hits": 0, "eager_calls": 0}
        self._warned_eager = False
        if not _is_module(fn):
            functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", None) or type(self.fn).__name__
        return f"JitFunction({name}, {len(self.compiled)} signature(s))"

    @property
    def signatures(self) -> tuple[Signature, ...]:
        """The signatures compiled so far, in compile order."""
        return tuple(self.compiled)

    @property
    def stats(self) -> dict[str, int]:
        """Counters: `compiles` (cache misses), `hits` (cache reuses), `eager_calls`."""
        return dict(self._stats)

    def reset(self) -> None:
        """Drop every compiled signature (e.g. after changing the module's weights)."""
        self.compiled.clear()

    def signature(self, *args: Any) -> Signature:
        """The cache key of a call with `args` (TypeError for a non-tensor argument)."""
        import torch

        key = []
        for i, arg in enumerate(args):
            if not isinstance(arg, torch.Tensor):
                raise TypeError(f"accel.jit: argument {i} is {type(arg).__name__}; compiled "
                                f"calls take torch.Tensor positional arguments only")
            key.append((tuple(arg.shape), str(arg.dtype), str(arg.device)))
        return tuple(key)

    def _needs_autograd(self, args: tuple[Any, ...]) -> bool:
        import torch

        if _is_module(self.fn) and self.fn.training:
            return True
        return torch.is_grad_enabled() and any(a.requires_grad for a in args)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"accel.jit: keyword arguments are not supported "
                            f"(got {', '.join(sorted(kwargs))}); pass tensors positionally")
        key = self.signature(*args)
        if self._needs_autograd(args):
            self._stats["eager_calls"] += 1
            if not self._warned_eager:
                self._warned_eager = True
                warnings.warn("accel.jit compiles inference only: running eagerly because "
                              "the module is in training mode or an argument requires grad "
                              "(use model.eval() and torch.no_grad())", UserWarning,
                              stacklevel=2)
            return self.fn(*args)
        compiled = self.compiled.get(key)
        if compiled is None:
            compiled = accel_compile(self.fn, args, options=self.settings)
            self.compiled[key] = compiled
            self._stats["compiles"] += 1
        else:
            self._stats["hits"] += 1
        return compiled(*args)


def jit(fn: Any = None, *, compile_options: dict[str, Any] | None = None
        ) -> JitFunction | Callable[[Any], JitFunction]:
    """Wrap `fn` (an `nn.Module` or a function on tensors) in a `JitFunction`.

    Use as `@accel.jit`, `@accel.jit(compile_options={...})` or
    `accel.jit(model, compile_options={...})`. `compile_options` are `accel.api.OPTIONS`,
    validated here: `ValueError`/`NotImplementedError` as from `accel.compile`.
    """
    if fn is None:
        settings = resolve_options(compile_options)  # errors at decoration, resolved once
        return functools.partial(JitFunction, compile_options=settings)
    return JitFunction(fn, compile_options)
