"""The e2e suite's test configs for accel and for torch-mlir's RefBackend (docs/e2e.md).

Three configs, one harness:

- `accel-mlir`: torch-mlir's `FxImporterTestConfig` path (strict `torch.export`, the FX
  importer, torch-mlir's pipeline to linalg on tensors) with `AccelLinalgBackend`:
  `compile(module) -> accel.compile_mlir(module)`, `load(artifact) -> invoker`,
  `getattr(invoker, name)(*numpy_arrays)`.
- `refbackend`: the same path with torch-mlir's own `RefBackendLinalgOnTensorsBackend`
  (the suite's refbackend.py on the wheel's ExecutionEngine), run in this same harness.
- `accel-torch`: `accel.compile(module, inputs)` called with the trace's tensors (accel's
  own non-strict export, decompositions and lowering).

Each config records the stage a test reached (`stage`): `export`, `linalg` (lowering to
linalg on tensors), `run` (backend compile, load and call); the worker adds `eager` and
`match`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch_mlir_e2e_test.framework import TestConfig, Trace, TraceItem

#: Options for accel in the e2e runs: the default optimisation level, no compile cache (a
#: cache hit would skip the stages this harness reports).
ACCEL_OPTIONS: dict[str, Any] = {"cache": False}


class StagedConfig(TestConfig):
    """A TestConfig that remembers the stage it reached (reset by `compile`)."""

    stage = "export"

    def compile(self, program: torch.nn.Module, verbose: bool = False) -> torch.nn.Module:
        self.stage = "export"
        return program


# -- the FxImporterTestConfig path ------------------------------------------------------------
class FxFront:
    """torch.export and the FX import of the test being run, shared by the FX configs of one
    worker: `accel-mlir` and `refbackend` lower the same module, so the second config of a
    test parses the first one's text instead of exporting and importing again (both steps
    are deterministic: each `compile_and_run_test` reseeds and builds the module anew)."""

    def __init__(self) -> None:
        self.test: str | None = None
        self.items: dict[int, tuple[str, Any, Any]] = {}

    def begin(self, test: str) -> None:
        if test != self.test:
            self.test, self.items = test, {}

    def lookup(self, index: int) -> tuple[Any, Any] | None:
        """(module, the exported program's output specs) of trace item `index`, if known."""
        hit = self.items.get(index)
        if hit is None:
            return None
        from torch_mlir.ir import Module

        text, context, specs = hit
        return Module.parse(text, context), specs

    def store(self, index: int, module: Any, specs: Any) -> None:
        if self.test is not None:
            text = module.operation.get_asm(enable_debug_info=True)
            self.items[index] = (text, module.context, specs)


class LoweringCrashed(RuntimeError):
    """torch-mlir's pipeline to linalg did not return (it crashed the forked child)."""


def _lower_isolated(raw: Any, output_type: str, legal_ops: list[str]) -> Any:
    """`export_and_import`'s lowering (torch-mlir's pipelines, what `output_type` names)
    of the imported module `raw`, run in a forked child: some inputs crash torch-mlir's
    passes (AtenMmInt8ZeroK: SIGSEGV after "unimplemented: for conversion to byte or char
    type"), which would take the test runner down. Same passes, same result otherwise."""
    from accel.ir import load_torch_dialects
    from accel.isolation import IsolatedFailure, run_isolated
    from torch_mlir import fx, ir
    from torch_mlir.compiler_utils import BackendLoweringOptions, OutputType
    from torch_mlir.dialects import torch as torch_d

    text = raw.operation.get_asm(enable_debug_info=True)

    def work() -> bytes:
        context = ir.Context()
        context.enable_multithreading(False)  # the parent's thread pool is not in the child
        torch_d.register_dialect(context)
        module = ir.Module.parse(text, context)
        fx._module_lowering(False, False, OutputType.get(output_type), module,
                            fx.FxImportOptions(backend_legal_ops=legal_ops),
                            BackendLoweringOptions())
        return module.operation.get_asm(enable_debug_info=True).encode()

    try:
        lowered = run_isolated(work, timeout=600).decode()
    except IsolatedFailure as err:
        if err.signal is not None:
            raise LoweringCrashed(f"torch-mlir's lowering to {output_type} crashed "
                                  f"({err.signal})") from None
        raise RuntimeError(str(err)) from None
    # The child's pass manager loaded tm_tensor (scan, scatter, sort) into its context; the
    # parent's needs it too to parse the result.
    load_torch_dialects(raw.context)
    return ir.Module.parse(lowered, raw.context)


class StagedFxConfig(StagedConfig):
    """torch-mlir's `FxImporterTestConfig._export_run` (its default, non-torch.compile
    path), step for step, with the stage marked before each step."""

    def __init__(self, backend: Any, output_type: str = "linalg-on-tensors",
                 front: FxFront | None = None):
        from torch_mlir.compiler_utils import OutputType
        from torch_mlir_e2e_test.configs.fx_importer_backend import BACKEND_LEGAL_OPS

        super().__init__()
        self._backend = backend
        self._output_type = output_type
        self._backend_legal_ops = BACKEND_LEGAL_OPS.get(OutputType.get(output_type), [])
        self._front = front or FxFront()

    def _import(self, index: int, artifact: torch.nn.Module, inputs: list[Any]
                ) -> tuple[Any, Any]:
        from torch_mlir import fx

        hit = self._front.lookup(index)
        if hit is not None:
            return hit
        self.stage = "export"
        prog = torch.export.export(artifact, tuple(inputs), strict=True)
        self.stage = "linalg"
        raw = fx.export_and_import(
            prog, output_type="raw", func_name=artifact.__class__.__name__,
            # As FxImporterTestConfig: the tests have no symbolic shapes, but keep the path.
            import_symbolic_shape_expressions=True)
        module = _lower_isolated(raw, self._output_type, self._backend_legal_ops)
        specs = prog.graph_signature.output_specs
        self._front.store(index, module, specs)
        return module, specs

    def run(self, artifact: torch.nn.Module, trace: Trace) -> Trace:
        from torch.export.graph_signature import OutputKind
        from torch_mlir_e2e_test.configs.fx_importer_backend import refine_result_type
        from torch_mlir_e2e_test.configs.utils import recursively_convert_to_numpy

        result: Trace = []
        for index, item in enumerate(trace):
            module, specs = self._import(index, artifact, item.inputs)
            self.stage = "run"
            module = self._backend.compile(module)
            backend_module = self._backend.load(module)
            with torch.no_grad():
                numpy_inputs = recursively_convert_to_numpy(item.inputs)
            outputs = getattr(backend_module, artifact.__class__.__name__)(*numpy_inputs)
            output = refine_result_type(outputs)
            if isinstance(output, tuple | list):
                output = tuple(val for val, spec in zip(output, specs, strict=False)
                               if spec.kind == OutputKind.USER_OUTPUT)
            result.append(TraceItem(symbol=item.symbol, inputs=item.inputs, output=output))
        return result


class AccelLinalgBackend:
    """A linalg-on-tensors backend for `FxImporterTestConfig`: accel's CPU JIT."""

    def __init__(self, options: dict[str, Any] | None = None):
        self.options = {**ACCEL_OPTIONS, **(options or {})}

    def compile(self, module: Any) -> Any:
        import accel

        return accel.compile_mlir(module, self.options)

    def load(self, artifact: Any) -> AccelInvoker:
        return AccelInvoker(artifact)


class AccelInvoker:
    """`getattr(invoker, name)(*numpy_arrays)` calls the compiled function `name`.

    As torch-mlir's RefBackendInvoker does, scalar results (a function returning `i64`,
    `f64`, `i1`: `int(x)` in the model) come back as Python numbers, which the suite
    compares with eager's Python numbers; accel returns them as 0-d arrays."""

    def __init__(self, compiled: Any):
        self._compiled = compiled

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/pickle probes; the suite's modules may start with "_"
            raise AttributeError(name)
        fn = self._compiled[name]
        scalar = [r.kind == "scalar" for r in self._compiled.functions[name].results]
        if not any(scalar):
            return fn

        def call(*args: Any) -> Any:
            out = fn(*args)
            if len(scalar) == 1:
                return out.item()
            return tuple(v.item() if s else v for v, s in zip(out, scalar, strict=True))

        return call


def refbackend() -> Any:
    """torch-mlir's reference backend (the suite's refbackend.py)."""
    from torch_mlir_e2e_test.linalg_on_tensors_backends.refbackend import (
        RefBackendLinalgOnTensorsBackend,
    )

    return RefBackendLinalgOnTensorsBackend()


# -- accel.compile ----------------------------------------------------------------------------
#: accel's compile phases (accel.phases) -> the harness's stages.
_PHASE_STAGE = {"export": "export", "torch-backend": "linalg", "linalg": "linalg"}


class AccelTorchConfig(StagedConfig):
    """`accel.compile(module, inputs)` per trace item, called with (copies of) the item's
    tensors; its outputs come back in eager's structure."""

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__()
        self.options = {**ACCEL_OPTIONS, **(options or {})}

    def _phase(self, name: str) -> None:
        self.stage = _PHASE_STAGE.get(name, "run")

    def run(self, artifact: torch.nn.Module, trace: Trace) -> Trace:
        import accel
        from accel import phases

        result: Trace = []
        for item in trace:
            self.stage = "export"
            with phases.recording(keep_ir=False, on_phase_start=self._phase):
                compiled = accel.compile(artifact, tuple(item.inputs), options=self.options)
            self.stage = "run"
            # Copies: the compiled module writes in-place updates back, as eager does, and
            # the trace's inputs must stay as recorded.
            args = [x.clone() if isinstance(x, torch.Tensor) else x for x in item.inputs]
            output = getattr(compiled, item.symbol)(*args) if item.symbol != "forward" \
                else compiled(*args)
            result.append(TraceItem(symbol=item.symbol, inputs=item.inputs,
                                    output=_as_torch(output)))
        return result


def _as_torch(value: Any) -> Any:
    """numpy leaves as tensors (the reporting compares tensors), containers kept."""
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, tuple | list):
        return type(value)(_as_torch(v) for v in value)
    return value


CONFIGS = ("accel-mlir", "accel-torch", "refbackend")


def make_config(name: str, options: dict[str, Any] | None = None,
                front: FxFront | None = None) -> StagedConfig:
    """The config called `name` (one of `CONFIGS`); FX configs given one `front` share it."""
    if name == "accel-mlir":
        return StagedFxConfig(AccelLinalgBackend(options), front=front)
    if name == "accel-torch":
        return AccelTorchConfig(options)
    if name == "refbackend":
        return StagedFxConfig(refbackend(), front=front)
    raise ValueError(f"unknown config '{name}' (one of {', '.join(CONFIGS)})")
