"""`CompiledModule`: a compiled model with PyTorch's and numpy's call conventions.

Any target's executable (`accel.targets.base.Executable`) is wrapped here: torch tensors in
-> tensors out, numpy in -> numpy out, in-place buffer updates written back as eager
PyTorch does, `verify_numerics` against the eager model, and a fast path for plain dense
CPU tensors (`accel.runtime.call.FastPlan`).
"""

from __future__ import annotations

import time
from time import perf_counter
from types import MappingProxyType
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.options import VERIFY_ATOL, VERIFY_RTOL
from accel.runtime.heap import reuse_large_blocks
from accel.runtime.weights import numpy_view


class CompiledModule:
    """A compiled model: call it with torch tensors (-> tensors) or numpy arrays (-> arrays).

    One output comes back as one tensor/array, several as a tuple. `module` is the imported
    linalg-on-tensors MLIR, `compiled` the `CompiledMLIR` (LLVM IR and friends).
    `save(folder)` writes an artifact that `accel.load(folder)` reloads without compiling;
    a loaded module has no eager `model` (None) and its `module` is the saved MLIR text.
    """

    def __init__(self, model: Any, compiled: Any, module: Any, func_name: str,
                 options: dict[str, Any], mutations: tuple[Any, ...] = (),
                 outputs: Any = None, inputs: Any = None):
        self.model = model
        self.compiled = compiled
        self.module = module
        #: The imported MLIR's text when it was not parsed (a front-cache hit): `module`
        #: parses it on first use.
        self._module_text: str | None = None
        self.func_name = func_name
        self.options = MappingProxyType(dict(options))
        #: In-place updates of buffers/inputs (accel.frontend.Mutation): the code returns
        #: their new values first, and each call writes them back, as eager PyTorch does.
        self.mutations = tuple(mutations)
        self._fn = compiled[func_name]
        #: What `forward` returns around the flat results (`accel.frontend.outputs`): a
        #: dict, a 1-tuple, a ModelOutput are rebuilt; None for the flat default.
        self.outputs = outputs
        self._rebuild = self._rebuilder()
        #: How a call's (args, kwargs) map onto the flat tensor arguments
        #: (`accel.frontend.inputs`): kwargs, nested containers, HF caches, fixed values;
        #: None for plain positional tensors.
        self.inputs = inputs
        #: The front-cache entry that holds this code (`accel.front_cache`), or None: the
        #: train-step cache names its phases by it (`accel.training.step_cache`).
        self.front_key: str | None = None
        #: The AOT library (`accel.aot.AotLibrary`) when compiled with `aot=True`.
        self.aot_library: Any = None
        #: Mean seconds of one run in the last call (`num_iters` runs are averaged).
        self.last_seconds: float | None = None
        self._fast_fn, self._fast_args = self._fast_setup()
        # Each call allocates the same large intermediates again: reuse malloc's blocks
        # instead of page-faulting fresh mappings (accel.runtime.heap; the Whisper-base
        # encoder at 1 thread: 885 -> 596 ms, 44K page faults per call -> ~0).
        reuse_large_blocks()

    def _rebuilder(self) -> Any:
        if self.outputs is None:
            return None
        from accel.frontend.outputs import rebuilder

        count = len(self.compiled.functions[self.func_name].results) - len(self.mutations)
        return rebuilder(self.outputs, count)

    def _fast_setup(self) -> tuple[Any, Any]:
        """(the function, per-argument checks) of the fast call path, or (None, None).

        The fast path serves calls whose arguments are all plain dense CPU tensors (or all
        numpy arrays) of the right dtypes and static sizes, when the options ask for
        nothing per call (no mutations, `verify_numerics`, `num_iters`); everything else,
        errors included, takes the general path, which checks and converts as documented.
        """
        fast = getattr(self._fn, "fast", None)
        if fast is None or not fast.n_args or self.mutations or \
                self.options.get("verify_numerics") or self.options.get("num_iters", 1) != 1:
            return None, None
        self._fast_threads = self.options.get("num_threads")
        try:
            import torch
        except ImportError:  # numpy calls only (an artifact loaded without torch)
            return self._fn, None
        self._tensor_type, self._from_numpy = torch.Tensor, torch.from_numpy
        checks = []
        for dtype, rank, static, shape in fast.args:
            try:
                tdtype = torch.from_numpy(np.empty(0, dtype)).dtype
            except (TypeError, RuntimeError):
                return self._fn, None
            if tdtype.is_complex:  # conjugate views need resolving: the general path
                return self._fn, None
            checks.append((tdtype, rank, None if static is None else torch.Size(static),
                           shape))
        return self._fn, tuple(checks)

    def __repr__(self) -> str:
        return f"CompiledModule({self.compiled.functions[self.func_name]})"

    def set_module_text(self, text: str | None) -> None:
        """The imported MLIR as text, parsed into `module` on first use."""
        self._module = None
        self._module_text = text

    def module_text(self) -> str | None:
        """The imported MLIR's text (without parsing it when only the text is known)."""
        if self._module is not None:
            return str(self._module)
        return self._module_text

    @property
    def module(self) -> Any:
        """The imported linalg-on-tensors MLIR module (parsed on first use)."""
        if self._module is None and self._module_text is not None:
            from accel.context import make_context
            from accel.ir import load_torch_dialects
            from accel.safe_parse import parse_module

            ctx = make_context()
            load_torch_dialects(ctx)
            with ctx:  # the text may come from an artifact folder on disk: untrusted
                self._module = parse_module(self._module_text, "model.mlir")
        return self._module

    @module.setter
    def module(self, value: Any) -> None:
        self._module = value
        self._module_text = None

    @property
    def cache_hit(self) -> bool:
        """True when the compile cache supplied the code (the MLIR pipeline did not run)."""
        return bool(getattr(self.compiled, "cache_hit", False))

    def save(self, folder: Any) -> Any:
        """Write an artifact folder (accel.artifact) that `accel.load` reloads; its Path."""
        from accel import targets
        from accel.artifact import save_executable

        if self.mutations:
            raise NotImplementedError("saving a model that updates its buffers or inputs in "
                                      "place is not supported yet")
        if self.inputs is not None and self.inputs.to_json() is None:
            raise NotImplementedError("saving a model whose arguments' structure cannot be "
                                      "written as text is not supported")
        return save_executable(folder, self.compiled,
                               target=targets.get(self.options.get("target", "cpu")),
                               entry=self.func_name,
                               options=self.options, model_mlir=self.module_text(),
                               outputs=self.outputs, inputs=self.inputs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.inputs is not None:
            return self._call_structured(args, kwargs)
        if kwargs:
            raise TypeError(f"compiled {self.func_name}: keyword arguments "
                            f"{', '.join(kwargs)} were not given when compiling (pass "
                            "example_kwargs to accel.compile)")
        return self._call_flat(args)

    def _call_structured(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call whose arguments are nested or keywords: flattened as the example's
        were; HF cache objects in the results update the caches passed in, as eager."""
        from accel.frontend import hf_cache

        flat = self.inputs.flatten(args, kwargs)
        result = self._call_flat(tuple(flat))
        return hf_cache.adopt((args, kwargs), result)

    def _call_flat(self, args: tuple[Any, ...]) -> Any:
        fn = self._fast_fn
        if fn is not None and fn is self._fn:
            plan = fn.fast
            pointers = self._tensor_pointers(args)
            as_torch = pointers is not None
            if not as_torch:
                pointers = plan.numpy_pointers(args)
            if pointers is not None:
                if self._fast_threads is not None:
                    from accel.host.parallel import set_num_threads

                    set_num_threads(self._fast_threads)
                shapes = None if plan.all_static else [a.shape for a in args]
                start = perf_counter()
                results = plan.run(pointers, shapes)
                self.last_seconds = perf_counter() - start
                if self._rebuild is not None:
                    flat = [results] if plan.single else list(results)
                    return self._rebuild([self._from_numpy(r) for r in flat] if as_torch
                                         else flat)
                if not as_torch:
                    return results
                if plan.single:
                    return self._from_numpy(results)
                return tuple(self._from_numpy(r) for r in results)
        return self._call(args)

    def _tensor_pointers(self, args: tuple[Any, ...]) -> list[int] | None:
        """Data addresses of `args` when all are tensors the fast path takes as they are."""
        checks = self._fast_args
        if checks is None or len(args) != len(checks):
            return None
        pointers = []
        tensor = self._tensor_type
        for t, check in zip(args, checks):  # noqa: B905 - lengths checked above
            if type(t) is not tensor or t.dtype is not check[0] or not t.is_cpu or \
                    not t.is_contiguous() or t.is_neg():
                return None
            static = check[2]
            if static is not None:
                if t.shape != static:
                    return None
            elif t.dim() != check[1] or any(w is not None and w != g
                                            for w, g in zip(check[3], t.shape, strict=True)):
                return None
            pointers.append(t.data_ptr())
        return pointers

    def _call(self, args: tuple[Any, ...]) -> Any:
        """The general call path: any inputs, every check and conversion."""
        import torch

        as_torch = any(isinstance(a, torch.Tensor) for a in args)
        arrays = [_to_numpy(a) for a in args]
        eager_state = self._eager_state(args) if self.options.get("verify_numerics") else None
        threads = self.options.get("num_threads")
        if threads is not None:  # process-wide: set for this model's call
            from accel.host.parallel import set_num_threads

            set_num_threads(threads)
        runs = 1 if self.mutations else self.options.get("num_iters", 1)  # updates happen once
        start = time.perf_counter()
        for _ in range(runs):
            results = self._fn(*arrays)
        self.last_seconds = (time.perf_counter() - start) / runs
        outputs = list(results) if isinstance(results, tuple) else [results]
        specs = list(self.compiled.functions[self.func_name].results)
        if self.mutations:
            count = len(self.mutations)
            self._write_back(args, outputs[:count])
            outputs, specs = outputs[count:], specs[count:]
        if eager_state is not None:
            self._verify(eager_state, outputs)
        if as_torch:
            outputs = [_to_torch(o, spec) for o, spec in zip(outputs, specs, strict=True)]
        if self.outputs is not None:
            for i, k in self.outputs.aliases.items():  # an updated input, not a copy of it
                outputs[i] = args[k]
        if self._rebuild is not None:
            return self._rebuild(outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _write_back(self, args: tuple[Any, ...], values: list[Any]) -> None:
        """Store each mutated buffer's/input's new value where eager PyTorch would."""
        import torch

        for mutation, value in zip(self.mutations, values, strict=True):
            if mutation.kind == "buffer":
                target = self.model.get_buffer(mutation.target)
            else:
                target = args[int(mutation.target)]
            if isinstance(target, torch.Tensor):
                with torch.no_grad():
                    target.copy_(torch.from_numpy(np.asarray(value)))
            else:
                np.copyto(target, value)

    def _eager_state(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Inputs (and buffers, if the model updates them) for the eager reference run,
        copied before the compiled call changes them."""
        import torch

        inputs = tuple(a.clone() if isinstance(a, torch.Tensor) else
                       torch.from_numpy(np.array(a)) for a in args)
        buffers = None
        if any(m.kind == "buffer" for m in self.mutations):
            buffers = {k: v.clone() for k, v in self.model.named_buffers()}
        return inputs, buffers

    def _verify(self, state: tuple[Any, ...], outputs: list[Any]) -> None:
        import torch

        inputs, buffers = state
        with torch.no_grad():
            if buffers is None:
                expected = self.model(*inputs)
            else:  # on copies: the compiled call has updated the real buffers already
                params = dict(self.model.named_parameters())
                expected = torch.func.functional_call(self.model, {**params, **buffers},
                                                      inputs)
        flat = list(expected) if isinstance(expected, tuple | list) else [expected]
        if len(flat) != len(outputs):
            raise AccelError(f"verify_numerics: the compiled model returned {len(outputs)} "
                             f"outputs, eager PyTorch {len(flat)}")
        for i, (want, got) in enumerate(zip(flat, outputs, strict=True)):
            if isinstance(want, torch.Tensor):
                want = want.detach().cpu()
                want_np = (want.float() if want.dtype == torch.bfloat16 else want).numpy()
            else:
                want_np = np.asarray(want)
            got_np = np.asarray(got)
            if want_np.shape != got_np.shape:
                raise AccelError(f"verify_numerics: output {i} has shape {got_np.shape}, "
                                 f"eager PyTorch {want_np.shape}")
            close = np.isclose(got_np, want_np, rtol=VERIFY_RTOL, atol=VERIFY_ATOL,
                               equal_nan=True)
            if not close.all():
                bad = np.unravel_index(int(np.argmin(close)), close.shape)
                diff = np.abs(got_np.astype(np.float64) - want_np.astype(np.float64))
                raise AccelError(
                    f"verify_numerics: output {i} differs from eager PyTorch at "
                    f"{int((~close).sum())} of {close.size} elements (first at index "
                    f"{tuple(int(j) for j in bad)}: {got_np[bad]!r} vs {want_np[bad]!r}; "
                    f"max abs error {np.nanmax(diff):.3g}; rtol={VERIFY_RTOL}, "
                    f"atol={VERIFY_ATOL})")


def _to_numpy(value: Any) -> Any:
    """A torch tensor as a numpy array sharing its memory where possible."""
    import torch

    if isinstance(value, torch.Tensor):
        return numpy_view(value.detach().cpu().resolve_conj().resolve_neg())
    return value


def _to_torch(value: Any, spec: Any = None) -> Any:
    """A numpy result as a tensor sharing its memory (read-only arrays are copied); bf16
    results (float32 arrays holding exact bf16 values) become bf16 tensors again."""
    import torch

    if isinstance(value, np.ndarray):
        out = torch.from_numpy(value if value.flags.writeable else value.copy())
    else:
        out = torch.as_tensor(value)
    if spec is not None and spec.dtype is not None and spec.dtype.is_bf16:
        out = out.to(torch.bfloat16)
    return out


