"""PyTorch -> MLIR: `import_torch(model, example_inputs) -> Module` (linalg on tensors).

    module = import_torch(torch.nn.Linear(4, 2), (torch.randn(3, 4),))

Steps: `torch.export` (through torch-mlir's FX importer, parameters frozen into the graph as
`dense_resource` constants, so weights never become IR text), then torch-mlir's two pass
pipelines, run here rather than inside torch-mlir so that a failure keeps its diagnostics:
FX IR -> torch backend IR -> linalg on tensors. Every failure is an `AccelError` with a
one-line message (the op that could not be lowered, or the `torch.export` error).
"""

from __future__ import annotations

import contextlib
import re
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from accel import interrupts, phases
from accel.diagnostics import AccelError
from accel.frontend import hf_cache
from accel.frontend.data_dependent import check_data_dependent, rewrite_masked_reductions
from accel.frontend.decompositions import decompositions
from accel.frontend.fast_decompose import fast_decompositions
from accel.frontend.inputs import describe as describe_inputs
from accel.frontend.outputs import describe as describe_outputs
from accel.frontend.program import (
    ImportedProgram,
    Mutation,
    _check_mutated_buffers_shared,
    _same_memory,
    model_name,
    state_tensors,
)
from accel.frontend.provenance import annotate as annotate_provenance
from accel.frontend.signedness import mark_unsigned, unsigned_positions
from accel.frontend.weights import externalize, make_hooks
from accel.ir import Module, torch_importer
from accel.pipeline import RunConfig, run_pipeline

_EXPORT_LOCK = threading.RLock()
#: torch-mlir's pipelines (as in `torch_mlir.fx.export_and_import`), FX IR -> linalg.
#: `backend-legal-ops` as torch-mlir's own FxImporterTestConfig for linalg: its lowering of
#: adaptive_max_pool2d is direct; the decomposition into max_pool2d fails on most shapes.
TORCH_TO_BACKEND = ("builtin.module(func.func(torch-match-quantized-custom-ops),"
                    "torchdynamo-export-to-torch-backend-pipeline{"
                    "backend-legal-ops=aten.adaptive_max_pool2d extra-library=})")
BACKEND_TO_LINALG = ("builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline"
                     "{allow-non-finites=True})")


@contextlib.contextmanager
def _persistent_buffers(model: Any) -> Iterator[None]:
    """Make non-persistent buffers persistent while exporting; restore them afterwards.

    torch-mlir's FX importer finds no state for non-persistent buffers (BERT's
    `embeddings.position_ids`): "Could not find state mapping for buffer" (torch-mlir issue
    4744). Same tensors, same numerics; the user's module is left as it was.
    """
    changed = [(m, name) for m in model.modules() for name in list(m._non_persistent_buffers_set)]
    for module, name in changed:
        module.register_buffer(name, getattr(module, name), persistent=True)
    try:
        yield
    finally:
        for module, name in changed:
            module.register_buffer(name, getattr(module, name), persistent=False)


def _as_module(model: Any) -> Any:
    """`torch.export` needs an `nn.Module`: wrap a plain callable in one."""
    import torch

    if isinstance(model, torch.nn.Module):
        return model
    if not callable(model):
        raise TypeError(f"model must be a torch.nn.Module or a callable, got "
                        f"{type(model).__name__}")
    fn: Callable[..., Any] = model

    class _Wrapped(torch.nn.Module):
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

    return _Wrapped()


def _unaliased(inputs: tuple[Any, ...] | list[Any]) -> tuple[Any, ...]:
    """`inputs` with a tensor that shares memory with an earlier one cloned.

    torch.export gives two example inputs that are one tensor a single placeholder, so
    `f(a, a)` would compile `x / y` as `x / x` and return ones for any later inputs: each
    parameter of the compiled function must be its own input.
    """
    import torch

    seen: list[Any] = []
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            if any(_shares_memory(x, y) for y in seen):
                x = x.clone()
            seen.append(x)
        out.append(x)
    return tuple(out)


def _shares_memory(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return _same_memory(a, b)
    except RuntimeError:  # fake/functional tensors (AOTAutograd's inputs) have no storage
        return False


def _export(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
            dynamic_shapes: Any) -> Any:
    """`torch.export.export`, non-strict; strict (dynamo) where non-strict tracing needed a
    data-dependent value (`int(x)`, `x.item()` used as a Python number): dynamo captures
    those as graph ops. When both fail, the non-strict error is raised. (torch prints the
    partial graph of a failed export to sys.stderr: accel reports the error itself.)"""
    import io

    import torch

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return torch.export.export(module, args, kwargs=kwargs,
                                       dynamic_shapes=dynamic_shapes, strict=False)
    except Exception as err:  # noqa: BLE001 - re-raised unless strict export works
        if type(err).__name__ != "GuardOnDataDependentSymNode":
            raise
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                return torch.export.export(module, args, kwargs=kwargs,
                                           dynamic_shapes=dynamic_shapes, strict=True)
        except Exception:  # noqa: BLE001 - the first error says more about the model
            raise err from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def import_torch(model: Any, example_inputs: tuple[Any, ...], *,
                 dynamic_shapes: Any = None, func_name: str = "main") -> Module:
    """Export `model` (an `nn.Module` or a callable) at `example_inputs` to linalg on tensors.

    The result is one public `func.func @<func_name>` in the module's own context (with the
    torch dialect registered); parameters and buffers are `dense_resource` constants.
    `dynamic_shapes` is passed to `torch.export.export`. Raises `AccelError` when export,
    import or lowering fails, `TypeError` for a bad `model`/`example_inputs`.
    """
    return import_program(model, example_inputs, dynamic_shapes=dynamic_shapes,
                          func_name=func_name, external_weights=False).module


def import_program(model: Any, example_inputs: tuple[Any, ...], *, dynamic_shapes: Any = None,
                   func_name: str = "main", external_weights: bool = True,
                   reuse: Callable[[Any, Any], ImportedProgram | None] | None = None,
                   provenance: bool = False,
                   example_kwargs: dict[str, Any] | None = None) -> ImportedProgram:
    """`import_torch`, with the weights kept out of the IR when `external_weights` is set.

    `example_kwargs` are keyword arguments of the call to export (`model(*example_inputs,
    **example_kwargs)`); inputs and outputs may be nested (tuples, dicts, HF caches): the
    program's `inputs`/`outputs` structures say how calls map onto the flat function.

    `reuse(module, exported)` is called right after `torch.export` with the exported
    program (before decompositions and the FX import); a program it returns is returned as
    it is (the front compile cache, `accel.api.compile`). `provenance`: every op's location
    also names its torch operator and modules (`accel.frontend.provenance`).
    """
    if not isinstance(example_inputs, tuple | list):
        raise TypeError(f"example_inputs must be a tuple of inputs, got "
                        f"{type(example_inputs).__name__}")
    name = model_name(model)
    module = _as_module(model)
    example_inputs = _unaliased(example_inputs)
    if module is not model and isinstance(dynamic_shapes, tuple | list):
        dynamic_shapes = (tuple(dynamic_shapes),)  # the wrapper's one `*args` parameter

    torch_fx, output_type = torch_importer()
    weights: dict[str, np.ndarray] = {}
    hf_cache.register()  # HF KV caches as pytree nodes, if transformers is in use
    exported = None  # set once torch.export succeeded: later failures are not the model's
    try:
        # torch.export (tracing, fake tensors, the FX importer's context) is not thread-safe:
        # concurrent compiles from threads take turns here, and all succeed.
        with _EXPORT_LOCK, phases.phase("export"), warnings.catch_warnings(), \
                _persistent_buffers(module), _quiet_fake_tensor_log(), interrupts.guarded():
            # torch.export's own deprecation noise (LeafSpec), not actionable for users.
            warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
            exported = _export(module, tuple(example_inputs), dict(example_kwargs or {}),
                               dynamic_shapes)
            _stable_locations(exported)
            inputs = describe_inputs(exported)
            reused = reuse(module, exported) if reuse is not None else None
            if reused is None:
                rewrite_masked_reductions(exported)  # x[mask].sum(): no data-dependent size
                # Decomposing also functionalises: in-place updates become extra outputs.
                with fast_decompositions(exported):
                    exported = exported.run_decompositions(decompositions())
                check_data_dependent(exported, name)
                mutations = _mutations(exported)
                structure = describe_outputs(exported)
                if provenance:
                    annotate_provenance(exported.graph, module)
                mutated = frozenset(module.get_buffer(m.target).data_ptr() for m in mutations
                                    if m.kind == "buffer")
                literals: dict[str, Any] = {}
                imported = torch_fx.export_and_import(
                    exported, output_type=output_type.RAW, func_name=func_name,
                    decomposition_table={}, hooks=_tracking(make_hooks(weights, mutated),
                                                            weights, literals))
    except AccelError:  # already one clear line (an op accel cannot lower)
        raise
    except SystemExit as err:  # the model's own code must not end the user's process
        raise AccelError(f"torch.export of {name} failed: its code called sys.exit("
                         f"{err.code!r}) while being traced") from None
    except RecursionError:
        raise AccelError(f"torch.export of {name} failed: the model nests too deeply (Python's "
                         "recursion limit was reached while tracing it)") from None
    except MemoryError as err:
        raise MemoryError(f"torch.export of {name} ran out of memory"
                          f"{': ' + str(err) if str(err) else ''}") from None
    except Exception as err:  # noqa: BLE001 - torch.export raises many unrelated types
        if exported is not None:  # the model traced: decomposing or importing it failed
            raise AccelError(f"lowering {name} failed after torch.export: "
                             f"{type(err).__name__}: {_first_line(err)} (the model exported "
                             "fine: a gap in accel's or torch-mlir's decompositions or "
                             "importer; please report it)") from err
        raise _export_error(name, err, model, example_inputs) from err
    if reused is not None:
        reused.inputs = inputs
        return reused
    phases.snapshot("export", imported)
    with imported.context:
        unsigned = unsigned_positions(imported, func_name)
    for stage, phase_name, pipeline in (("torch backend IR", "torch-backend", TORCH_TO_BACKEND),
                                        ("linalg on tensors", "linalg", BACKEND_TO_LINALG)):
        try:
            with phases.phase(phase_name), imported.context:
                # torch-mlir's own passes on IR from torch: no accel-dialect ops to verify.
                run_pipeline(imported, _expanded(pipeline), label=stage,
                             cfg=RunConfig(filename=f"<{name}>", verify_dialects=False))
        except AccelError as err:
            first = err.diagnostics[0]
            first.message = f"lowering {name} to {stage} failed: {_summarise(first)}"
            first.notes = [n for n in first.notes if "see current operation" not in n.message]
            raise AccelError(first.message, diagnostics=err.diagnostics) from None
        phases.snapshot(phase_name, imported)
    with imported.context:
        mark_unsigned(imported, func_name, unsigned)
    if not external_weights:
        return ImportedProgram(imported, mutations=mutations, outputs=structure, inputs=inputs)
    with imported.context:
        used = externalize(imported, weights)
    _check_mutated_buffers_shared(module, mutations, used, name)
    return ImportedProgram(imported, used, mutations,
                           weight_sources=_weight_sources(exported, used, literals),
                           outputs=structure, inputs=inputs)


_EXPANDED: dict[str, str] = {}
_DEFAULT_INLINER = re.compile(r"inline\{default-pipeline=canonicalize "
                              r"inlining-threshold=4294967295 max-iterations=4 ?\}")


def _expanded(pipeline: str) -> str:
    """`pipeline` with torch-mlir's named pipelines spelled out pass by pass (as MLIR prints
    a parsed pass manager), so that Ctrl-C stops the run between two of their passes
    (`accel.pass_run`); `pipeline` itself if it cannot be expanded. Needs a context."""
    from accel.ir import PassManager

    if pipeline not in _EXPANDED:
        try:
            text = str(PassManager.parse(pipeline))
        except ValueError:
            return pipeline
        # The inliner printed with its default options, whose nested pipeline would make
        # accel run it in a child process (accel.upstream_passes.PIPELINE_OPTIONS).
        text = _DEFAULT_INLINER.sub("inline", text)
        _EXPANDED[pipeline] = pipeline if "pipeline=" in text else text
    return _EXPANDED[pipeline]


_GENERATED = re.compile(r"<eval_with_key>\.\d+")


def _stable_locations(exported: Any) -> None:
    """Drop the counter from the file name of generated code in source locations.

    torch.fx names the code of every GraphModule it creates `<eval_with_key>.N`, N counting
    up per process: the same graph compiled twice (train-step phase graphs, torch.compile's
    graphs) would give different IR locations and so miss every compile-cache key."""
    for gm in exported.graph_module.modules():
        graph = getattr(gm, "graph", None)
        for node in graph.nodes if graph is not None else ():
            trace = node.meta.get("stack_trace")
            if isinstance(trace, str) and "<eval_with_key>" in trace:
                node.meta["stack_trace"] = _GENERATED.sub("<eval_with_key>", trace)


def _tracking(hooks: Any, weights: dict[str, np.ndarray], literals: dict[str, Any]) -> Any:
    """`hooks` that also note, for each weight they create, the tensor it came from."""
    resolve = hooks.resolve_literal

    def resolve_literal(gni: Any, literal: Any, info: Any) -> Any:
        before = len(weights)
        result = resolve(gni, literal, info)
        if len(weights) > before:
            literals[next(reversed(weights))] = literal
        return result

    hooks.resolve_literal = resolve_literal
    return hooks


def _weight_sources(exported: Any, used: dict[str, np.ndarray],
                    literals: dict[str, Any]) -> dict[str, str] | None:
    """Each used weight's state target (None if one cannot be traced: no front entry)."""
    import torch

    state = state_tensors(exported)
    sources = {}
    for name in used:
        literal = literals.get(name)
        if not isinstance(literal, torch.Tensor):
            return None
        target = next((t for t, v in state.items()
                       if isinstance(v, torch.Tensor) and _same_memory(v, literal)), None)
        if target is None:
            return None
        sources[name] = target
    return sources


def _mutations(exported: Any) -> list[Mutation]:
    """The in-place updates torch.export turned into leading extra outputs, in order."""
    from torch.export.graph_signature import InputKind, OutputKind

    user_inputs = [spec.arg.name for spec in exported.graph_signature.input_specs
                   if spec.kind == InputKind.USER_INPUT]
    found = []
    for spec in exported.graph_signature.output_specs:
        if spec.kind == OutputKind.BUFFER_MUTATION:
            found.append(Mutation("buffer", spec.target))
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            found.append(Mutation("input", str(user_inputs.index(spec.target))))
        elif spec.kind != OutputKind.USER_OUTPUT:
            raise AccelError(f"torch.export output of kind {spec.kind.name} ({spec.target}) "
                             "is not supported yet (inference models only)")
    return found


_TORCH_OPERATOR = re.compile(r'name = "torch\.(?P<op>[\w.]+)"')
_ILLEGAL = re.compile(r"failed to legalize operation '(?P<op>[\w.]+)'")


def _summarise(diag: Any) -> str:
    """A lowering error as users need it: the unsupported op and where the model uses it,
    instead of the MLIR op dump torch-mlir's message ends with."""
    message = diag.message
    where = f" at {diag.file}:{diag.line}" if diag.file and diag.line else ""
    illegal = _ILLEGAL.search(message)
    if illegal:
        op = illegal.group("op")
        operator = _TORCH_OPERATOR.search(message)
        if op == "torch.operator" and operator:
            op = operator.group("op")
        op = op.removeprefix("torch.")
        return f"unsupported op {op}{where}: torch-mlir has no lowering for it"
    return message.split(": %", 1)[0] + where


#: torch's words for an input whose shape or dtype the model's operators refuse.
_SHAPE_ERROR = re.compile(r"shape|size|dim|cannot be multiplied|broadcast|expected input|"
                          r"must match|mismatch|Expected .* to have|channels", re.IGNORECASE)
#: Frames of torch's shape checking (meta kernels, refs, decompositions, fake tensors).
_SHAPE_CHECKERS = ("_meta_registrations", "_prims_common", "/_refs/", "/_decomp/",
                   "fake_tensor", "/nn/functional", "/nn/modules/")


def _describe_inputs(model: Any, inputs: tuple[Any, ...]) -> str:
    """`name: dtype[shape]` for each example input, named after forward's parameters."""
    import inspect

    try:
        fn = getattr(model, "forward", model)
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError, AttributeError):
        params = []
    parts = []
    for i, value in enumerate(inputs):
        label = params[i] if i < len(params) else f"input {i}"
        shape = getattr(value, "shape", None)
        dtype = str(getattr(value, "dtype", "")).removeprefix("torch.")
        parts.append(f"{label}: {dtype}{list(shape)}" if shape is not None
                     else f"{label}: {type(value).__name__}")
    return ", ".join(parts) or "no inputs"


def _is_shape_error(err: BaseException) -> bool:
    """Whether `err` is torch refusing the example inputs' shapes (or dtypes)."""
    import traceback

    if not isinstance(err, RuntimeError | ValueError | IndexError | TypeError):
        return False
    if "data-dependent" in str(err) or "DataDependent" in type(err).__name__:
        return False  # control flow on values: the export hint applies, not the inputs
    frames = " ".join(f.filename for f in traceback.extract_tb(err.__traceback__))
    return bool(_SHAPE_ERROR.search(_first_line(err))) and any(
        checker in frames for checker in _SHAPE_CHECKERS)


@contextlib.contextmanager
def _quiet_fake_tensor_log() -> Iterator[None]:
    """torch logs a traceback for every meta kernel that raises (an example input of the
    wrong shape): accel reports the error itself, in one line."""
    import logging

    # symbolic_shapes: a non-strict export that needs a data-dependent value logs the graph
    # before accel retries it strictly (`_export`).
    loggers = [logging.getLogger(name) for name in ("torch._subclasses.fake_tensor",
                                                    "torch.fx.experimental.symbolic_shapes")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


#: torch.export's words for a `dynamic_shapes` dimension the model's code made constant.
_SPECIALIZED = re.compile(r"You marked (?P<dim>\w+) as dynamic but your code specialized it "
                          r"to be a constant \((?P<value>-?\d+)\)")


def _constraint(err: BaseException) -> str:
    """The first violated constraint of torch.export's message, shortened."""
    for line in str(err).splitlines():
        line = line.strip()
        if line.startswith("- "):
            return line[2:] if len(line) < 240 else line[2:237] + "..."
    return _first_line(err)


def _export_error(name: str, err: BaseException, model: Any = None,
                  inputs: tuple[Any, ...] = ()) -> AccelError:
    """torch.export's error summarised in one line, with what to try next."""
    if model is not None and _is_shape_error(err):
        return AccelError(f"{name} does not accept its example inputs "
                          f"({_describe_inputs(model, tuple(inputs))}): "
                          f"{_first_line(err)}")
    fixed = _SPECIALIZED.search(str(err))
    if fixed:  # a dynamic dimension torch.export had to fix: say which and why
        return AccelError(f"torch.export of {name} failed: dynamic dimension "
                          f"'{fixed.group('dim')}' is fixed at {fixed.group('value')} by the "
                          "model's code (torch.export specialises example sizes 0 and 1: give "
                          "example inputs where that size is at least 2, or leave it static)")
    if "Constraints violated" in str(err):  # a Dim range torch.export cannot prove
        return AccelError(f"torch.export of {name} failed: {_constraint(err)} (hint: mark "
                          "the dimension torch.export.Dim.DYNAMIC instead of a named Dim: "
                          "torch.export then works out its range and relations itself)")
    return AccelError(f"torch.export of {name} failed: {type(err).__name__}: "
                      f"{_first_line(err)} (hint: accel already uses non-strict export, "
                      "strict=False; make that code traceable: no data-dependent Python "
                      "control flow, or mark varying sizes with dynamic_shapes)")
