"""`accel.compile(model, example_inputs, options=...) -> CompiledModule`: PyTorch on the CPU.

    fn = accel.compile(model.eval(), (torch.randn(8, 784),), options={"verify_numerics": True})
    y = fn(x)            # torch in, torch out (numpy in, numpy out)

The model is exported at the example inputs' shapes and dtypes (`accel.frontend`), lowered
to linalg on tensors and JIT-compiled for the host CPU (`accel.backend.cpu.compile_mlir`).
`OPTIONS` below is the one table of options; docs/python-api.md mirrors it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from types import MappingProxyType
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.weights import numpy_view

#: Tolerances of `verify_numerics`: |compiled - eager| <= ATOL + RTOL * |eager|, elementwise.
VERIFY_RTOL = 1e-4
VERIFY_ATOL = 1e-5

TARGETS = ("cpu", "rdu", "mncore")
#: AOT target CPUs (accel.aot.TARGET_CPUS, repeated here so the options table needs no import).
AOT_CPUS = ("host", "generic", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")
SUPPORTED_TARGETS = ("cpu",)


@dataclass(frozen=True)
class OptionSpec:
    """One option: accepted types, default, doc, and which values work today."""

    types: tuple[type, ...]
    default: Any
    doc: str
    #: A value of the right type that is still invalid -> the reason (ValueError).
    invalid: Callable[[Any], str | None] = lambda v: None
    #: False for a value whose feature is not built yet (NotImplementedError).
    supported: Callable[[Any], bool] = lambda v: True


def _default_only(default: Any) -> Callable[[Any], bool]:
    return lambda v: v == default


OPTIONS: MappingProxyType[str, OptionSpec] = MappingProxyType({
    "target": OptionSpec(
        (str,), "cpu", "Device to compile for: 'cpu' (host JIT); 'rdu', 'mncore' not yet.",
        invalid=lambda v: None if v in TARGETS else f"must be one of {', '.join(TARGETS)}",
        supported=lambda v: v in SUPPORTED_TARGETS),
    "opt_level": OptionSpec(
        (int,), 3, "LLVM optimisation level, 0-3.",
        invalid=lambda v: None if 0 <= v <= 3 else "must be an int from 0 to 3"),
    "disable_affine_fusion": OptionSpec(
        (bool,), False, "Do not fuse loop nests (accel-affine-fusion; docs/fusion.md)."),
    "disable_reduce_reduce_fusion": OptionSpec(
        (bool,), False, "Do not fuse reduction chains (accel-reduce-reduce-fusion: "
        "attention without the score matrix)."),
    "disable_fast_math": OptionSpec(
        (bool,), False, "Keep strict IEEE semantics: no fast-math flags (the unsafe-math "
        "pass then does not reassociate reductions)."),
    "disable_unsafe_math_canonicalizations": OptionSpec(
        (bool,), False, "Forbid value-changing float rewrites (accel-unsafe-math-"
        "canonicalize: x/sqrt(y) -> x*rsqrt(y), x/C -> x*(1/C), reassociated reductions)."),
    "mm_conv_precision_mode": OptionSpec(
        (str,), "default", "Precision of matmul/conv arithmetic; only 'default' (the "
        "model's dtype) yet.", supported=_default_only("default")),
    "float_dtype": OptionSpec(
        (str, type(None)), None, "Convert float computation to this dtype; only None (keep "
        "the model's dtypes) yet.", supported=_default_only(None)),
    "strict_target": OptionSpec(
        (bool,), False, "Fail instead of falling back to the host for ops the target cannot "
        "run. The CPU target runs every op it compiles, so True changes nothing there."),
    "num_threads": OptionSpec(
        (int, type(None)), None, "Threads for the parallel loops of compiled code (large "
        "matmul kernels), set before each call; None: the process setting "
        "(accel.set_num_threads, else $ACCEL_NUM_THREADS, else all cores available).",
        invalid=lambda v: None if v is None or v >= 1 else "must be None or an int >= 1"),
    "num_iters": OptionSpec(
        (int,), 1, "Run each call this many times on the same inputs (benchmarking); the "
        "mean seconds per run is in `CompiledModule.last_seconds`.",
        invalid=lambda v: None if v >= 1 else "must be an int >= 1"),
    "aot": OptionSpec(
        (bool,), False, "Also build a C library (lib<aot_name>.so, <aot_name>.o, "
        "<aot_name>.h) into output_folder (docs/aot.md); `CompiledModule.aot_library`."),
    "aot_name": OptionSpec(
        (str,), "accel_artifact", "Name of the AOT library and its C function.",
        invalid=lambda v: None if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v)
        else "must be a C identifier"),
    "output_folder": OptionSpec(
        (str, type(None)), None, "Folder for the AOT files (None: the current folder)."),
    "user_memory": OptionSpec(
        (bool,), False, "AOT: the C function takes a scratch pool (pointer, size) and makes "
        "no heap allocation; <aot_name>_scratch_bytes() gives the size."),
    "device": OptionSpec(
        (str,), "host", "AOT target CPU: 'host', 'generic'/'x86-64' (any x86-64), 'x86-64-v2', "
        "'x86-64-v3', 'x86-64-v4'.",
        invalid=lambda v: None if v in AOT_CPUS else f"must be one of {', '.join(AOT_CPUS)}"),
    "verify_numerics": OptionSpec(
        (bool,), False, f"Also run the model eagerly on every call and raise AccelError "
        f"unless all outputs match (rtol={VERIFY_RTOL}, atol={VERIFY_ATOL})."),
    "cache": OptionSpec(
        (bool,), True, "Reuse and fill the on-disk compile cache ($ACCEL_CACHE_DIR, else "
        "$XDG_CACHE_HOME/accel or ~/.cache/accel); see docs/cache.md."),
})


def _type_ok(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # bool is an int subclass: accept it only where asked for
        return bool in types
    return isinstance(value, types)


def resolve_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Defaults merged with `options`, validated.

    Raises `ValueError` for an unknown key, a wrong type or an invalid value, and
    `NotImplementedError` for a value whose feature is not built yet.
    """
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"options must be a dict, got {type(options).__name__}")
    merged = {name: spec.default for name, spec in OPTIONS.items()}
    for key, value in (options or {}).items():
        spec = OPTIONS.get(key)
        if spec is None:
            raise ValueError(f"unknown option {key!r}; valid options: {', '.join(OPTIONS)}")
        if not _type_ok(value, spec.types):
            names = " or ".join("None" if t is type(None) else t.__name__ for t in spec.types)
            raise ValueError(f"option {key!r} must be {names}, got {type(value).__name__} "
                             f"{value!r}")
        reason = spec.invalid(value)
        if reason:
            raise ValueError(f"option {key!r} {reason}, got {value!r}")
        if not spec.supported(value):
            raise NotImplementedError(f"option {key!r} is not supported yet with value "
                                      f"{value!r} (supported: the default, {spec.default!r})")
        merged[key] = value
    return merged


class CompiledModule:
    """A compiled model: call it with torch tensors (-> tensors) or numpy arrays (-> arrays).

    One output comes back as one tensor/array, several as a tuple. `module` is the imported
    linalg-on-tensors MLIR, `compiled` the `CompiledMLIR` (LLVM IR and friends).
    `save(folder)` writes an artifact that `accel.load(folder)` reloads without compiling;
    a loaded module has no eager `model` (None) and its `module` is the saved MLIR text.
    """

    def __init__(self, model: Any, compiled: Any, module: Any, func_name: str,
                 options: dict[str, Any], mutations: tuple[Any, ...] = ()):
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
        #: The AOT library (`accel.aot.AotLibrary`) when compiled with `aot=True`.
        self.aot_library: Any = None
        #: Mean seconds of one run in the last call (`num_iters` runs are averaged).
        self.last_seconds: float | None = None
        self._fast_fn, self._fast_args = self._fast_setup()

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

    @property
    def module(self) -> Any:
        """The imported linalg-on-tensors MLIR module (text for a loaded artifact)."""
        if self._module is None and self._module_text is not None:
            from accel.context import make_context
            from accel.ir import Module, load_torch_dialects

            ctx = make_context()
            load_torch_dialects(ctx)
            with ctx:
                self._module = Module.parse(self._module_text)
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
        """Write an artifact folder (manifest.json, module.ll, model.mlir); returns its Path."""
        from accel.cache import save_artifact

        if self.mutations:
            raise NotImplementedError("saving a model that updates its buffers or inputs in "
                                      "place is not supported yet")
        mlir = None if self.module is None else str(self.module)
        return save_artifact(folder, self.compiled, entry=self.func_name,
                             options=dict(self.options), model_mlir=mlir)

    def __call__(self, *args: Any) -> Any:
        fn = self._fast_fn
        if fn is not None and fn is self._fn:
            plan = fn.fast
            pointers = self._tensor_pointers(args)
            as_torch = pointers is not None
            if not as_torch:
                pointers = plan.numpy_pointers(args)
            if pointers is not None:
                if self._fast_threads is not None:
                    from accel.backend.parallel import set_num_threads

                    set_num_threads(self._fast_threads)
                shapes = None if plan.all_static else [a.shape for a in args]
                start = perf_counter()
                results = plan.run(pointers, shapes)
                self.last_seconds = perf_counter() - start
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
            from accel.backend.parallel import set_num_threads

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


def compile(model: Any, example_inputs: tuple[Any, ...], *,  # noqa: A001 - the API's name
            options: dict[str, Any] | None = None, dynamic_shapes: Any = None) -> CompiledModule:
    """Compile a `torch.nn.Module` (or a callable on tensors) for the inputs' shapes/dtypes.

    `example_inputs` is a tuple of tensors (numpy arrays are converted). Options: `OPTIONS`.
    `dynamic_shapes` is `torch.export`'s: dimensions marked with `torch.export.Dim` stay
    dynamic in the compiled code (any size at call time), the others are fixed.
    Weights are not copied: the compiled code reads the model's parameters in place.
    Raises `ValueError`/`NotImplementedError` for bad options and `AccelError` when export,
    lowering or compilation fails.
    """
    import torch

    from accel import phases
    from accel.backend.cpu import CODE_OPTIONS, compile_mlir
    from accel.frontend import FrontCache, import_program, model_name

    opts = resolve_options(options)
    if not isinstance(example_inputs, tuple | list):
        raise TypeError(f"example_inputs must be a tuple of inputs, got "
                        f"{type(example_inputs).__name__}")
    inputs = tuple(torch.from_numpy(x) if isinstance(x, np.ndarray) else x
                   for x in example_inputs)
    func_name = "main"
    code_options = {k: opts[k] for k in CODE_OPTIONS}
    rec = phases.current()
    # The front cache skips the import, so not while a recording wants the IR of each phase.
    front = FrontCache(func_name, code_options) if opts["cache"] and \
        (rec is None or not rec.keep_ir) else None
    program = import_program(model, inputs, func_name=func_name, dynamic_shapes=dynamic_shapes,
                             reuse=front.reuse if front is not None else None)
    if program.compiled is not None:  # a front-cache hit
        compiled = program.compiled
        result = CompiledModule(model, compiled, None, func_name, opts, tuple(program.mutations))
        result._module_text = program.module_text
    else:
        assert program.module is not None
        text = program.module.operation.get_asm(enable_debug_info=True)
        compiled = compile_mlir(text, {"cache": opts["cache"],
                                       "filename": f"<{model_name(model)}>", **code_options},
                                weights=program.weights)
        if front is not None:
            front.store(program, text)
        result = CompiledModule(model, compiled, program.module, func_name, opts,
                                tuple(program.mutations))
    if opts["aot"]:
        if program.mutations:
            raise NotImplementedError(f"aot: {model_name(model)} updates buffers or inputs in "
                                      "place, which a library with read-only weights cannot do")
        from accel.aot import build_library

        result.aot_library = build_library(
            compiled, opts["aot_name"], opts["output_folder"] or ".", entry=func_name,
            target_cpu=opts["device"], user_memory=opts["user_memory"],
            opt_level=opts["opt_level"])
    return result
