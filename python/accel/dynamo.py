"""`torch.compile(model, backend="accel")`: accel as a TorchDynamo backend.

    import accel.dynamo                     # registers the backend (or via the entry point)
    fast = torch.compile(model.eval(), backend="accel", options={"opt_level": 2})
    with torch.no_grad():
        y = fast(x)

Dynamo hands `accel_backend` each captured FX graph with example inputs; the graph is
compiled with `accel.api.compile` at those inputs' shapes and dtypes (dynamo re-captures and
recompiles when a guard such as a shape fails). `options` are `accel.api.OPTIONS`.

The graph runs eagerly instead (the usual `torch.compile` backend behaviour), with one
`UserWarning` per distinct reason, when accel cannot compile it (`AccelError`), when it takes
non-tensor or symbolic-shape inputs (`dynamic=True`), when it mutates its inputs in place,
or when autograd is asked for (grad mode on and an input requires grad: compiled code is
inference only). With `options={"strict_target": True}` an `AccelError` is raised instead
for a compile failure or an input mutation (dynamo wraps it in `BackendCompilerFailed`).

`stats` counts the graphs the backend compiled (`"compiled"`) and the graphs it handed back
to run eagerly (`"eager"`) in this process, so a caller can check that accel ran. Dynamo can
also leave code out of every graph before the backend sees it: it graph-breaks on
`nn.LSTM`/`nn.GRU`/`nn.RNN` unless `torch._dynamo.config.allow_rnn = True`, and such code runs
eagerly with no warning and no count here.

Importing this module registers the backend under "accel" with
`torch._dynamo.register_backend`; the package's `torch_dynamo_backends` entry point lets
torch find it without the import.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch._dynamo.backends import registry as _registry

from accel.api import compile as accel_compile
from accel.api import resolve_options
from accel.diagnostics import AccelError

BACKEND_NAME = "accel"

#: Graphs compiled by accel / run eagerly by the backend, in this process (see the docstring).
stats: dict[str, int] = {"compiled": 0, "eager": 0}

#: Fallback reasons already warned about (one warning per distinct reason per process).
_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def _concrete(value: Any) -> torch.Tensor | None:
    """A real tensor with `value`'s shape/dtype (fake tensors materialised), else None."""
    if not isinstance(value, torch.Tensor):
        return None
    if not all(isinstance(d, int) for d in value.shape):
        return None  # symbolic shape (dynamic=True)
    if isinstance(value, torch._subclasses.FakeTensor):
        return torch.zeros(tuple(value.shape), dtype=value.dtype)
    return value


def _fallback(gm: torch.fx.GraphModule, reason: str) -> Callable[..., Any]:
    stats["eager"] += 1
    _warn_once(f"accel backend: running graph eagerly: {reason}")
    return gm.forward


def accel_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], *,
                  options: dict[str, Any] | None = None, mode: str | None = None
                  ) -> Callable[..., Any]:
    """Dynamo backend: compile `gm` for `example_inputs`; returns a callable on tensors.

    `options` come from `torch.compile(..., options=...)` (`accel.api.OPTIONS`; bad ones
    raise). `mode` (`torch.compile(mode=...)`) is accepted and ignored.
    """
    del mode
    opts = resolve_options(options)
    out_node = gm.graph.output_node()
    flat_out, out_spec = torch.utils._pytree.tree_flatten(out_node.args[0])
    if not flat_out or not all(isinstance(n, torch.fx.Node) for n in flat_out):
        return _fallback(gm, "the graph returns no tensors or returns constants")
    inputs = [_concrete(x) for x in example_inputs]
    if any(x is None for x in inputs):
        return _fallback(gm, "the graph takes non-tensor or symbolic-shape inputs "
                             "(use dynamic=False)")
    if torch.is_grad_enabled() and any(x.requires_grad for x in inputs):
        return _fallback(gm, "autograd is on and an input requires grad; accel compiles "
                             "inference graphs (use torch.no_grad())")
    try:
        compiled = accel_compile(gm, tuple(inputs), options=options)
    except AccelError as err:
        if opts["strict_target"]:
            raise
        return _fallback(gm, str(err))
    n_out = len(flat_out)
    n_compiled = len(compiled.compiled.functions[compiled.func_name].results)
    if n_compiled != n_out:
        # torch.export returns mutated inputs as extra leading outputs: not written back.
        reason = (f"the graph mutates its inputs in place ({n_compiled} compiled outputs for "
                  f"{n_out} graph outputs)")
        if opts["strict_target"]:
            raise AccelError(f"accel backend: {reason}")
        return _fallback(gm, reason)

    def run(*args: Any) -> Any:
        results = compiled(*args)
        flat = list(results) if isinstance(results, tuple) else [results]
        if len(flat) != n_out:
            raise AccelError(f"accel backend: compiled graph returned {len(flat)} outputs, "
                             f"the FX graph {n_out}")
        return torch.utils._pytree.tree_unflatten(flat, out_spec)

    run.compiled = compiled  # type: ignore[attr-defined] - for inspection/tests
    stats["compiled"] += 1
    return run


def register() -> None:
    """Register `accel_backend` as "accel" unless torch has it already (idempotent).

    When torch has discovered the entry point but not loaded it, registration is left to
    torch (`lookup_backend` loads this function through the entry point).
    """
    from importlib.metadata import EntryPoint

    if BACKEND_NAME in _registry._COMPILER_FNS:
        return
    if isinstance(_registry._BACKENDS.get(BACKEND_NAME), EntryPoint):
        return
    _registry.register_backend(accel_backend, name=BACKEND_NAME)


register()
