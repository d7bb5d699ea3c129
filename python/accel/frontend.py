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
import hashlib
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accel import phases
from accel.decompositions import decompositions
from accel.diagnostics import AccelError
from accel.ir import Module, torch_importer
from accel.pipeline import run_pipeline
from accel.weights import externalize, make_hooks, numpy_view

#: torch-mlir's pipelines (as in `torch_mlir.fx.export_and_import`), FX IR -> linalg.
TORCH_TO_BACKEND = ("builtin.module(func.func(torch-match-quantized-custom-ops),"
                    "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})")
BACKEND_TO_LINALG = ("builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline"
                     "{allow-non-finites=True})")


def model_name(model: Any) -> str:
    """A short name for messages: the module's class or the function's name."""
    import torch

    if isinstance(model, torch.nn.Module):
        return type(model).__name__
    return getattr(model, "__name__", None) or type(model).__name__


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
        def forward(self, *args: Any) -> Any:
            return fn(*args)

    return _Wrapped()


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@dataclass(frozen=True)
class Mutation:
    """An in-place update the model makes: a buffer (`target` its qualified name) or a user
    input (`target` its position). torch.export returns the new value as an extra output,
    before the model's own outputs; the caller writes it back."""

    kind: str  # "buffer" | "input"
    target: str


@dataclass
class ImportedProgram:
    """A model as linalg-on-tensors MLIR plus its weights (name -> array; see accel.weights).

    With external weights the module reads each weight from an external `memref.global`
    named like its key in `weights`; otherwise `weights` is empty and the module holds them.
    The function's first `len(mutations)` results are the new values of `mutations`.
    """

    module: Module | None
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    mutations: list[Mutation] = field(default_factory=list)
    #: Weight name -> the exported program's state target (parameter/buffer/constant name)
    #: it reads, when every weight could be traced to one (what the front cache stores).
    weight_sources: dict[str, str] | None = None
    #: Set when `reuse` supplied the compiled code (a front-cache hit): a `CompiledMLIR`,
    #: with `module` None and `module_text` the imported MLIR's text.
    compiled: Any = None
    module_text: str | None = None


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
                   reuse: Callable[[Any, Any], ImportedProgram | None] | None = None
                   ) -> ImportedProgram:
    """`import_torch`, with the weights kept out of the IR when `external_weights` is set.

    `reuse(module, exported)` is called right after `torch.export` with the exported
    program (before decompositions and the FX import); a program it returns is returned as
    it is (the front compile cache, `accel.api.compile`).
    """
    if not isinstance(example_inputs, tuple | list):
        raise TypeError(f"example_inputs must be a tuple of inputs, got "
                        f"{type(example_inputs).__name__}")
    name = model_name(model)
    module = _as_module(model)
    if module is not model and isinstance(dynamic_shapes, tuple | list):
        dynamic_shapes = (tuple(dynamic_shapes),)  # the wrapper's one `*args` parameter
    import torch

    torch_fx, output_type = torch_importer()
    weights: dict[str, np.ndarray] = {}
    try:
        with phases.phase("export"), warnings.catch_warnings(), _persistent_buffers(module):
            # torch.export's own deprecation noise (LeafSpec), not actionable for users.
            warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
            exported = torch.export.export(module, tuple(example_inputs),
                                           dynamic_shapes=dynamic_shapes, strict=False)
            reused = reuse(module, exported) if reuse is not None else None
            if reused is None:
                # Decomposing also functionalises: in-place updates become extra outputs.
                exported = exported.run_decompositions(decompositions())
                mutations = _mutations(exported)
                mutated = frozenset(module.get_buffer(m.target).data_ptr() for m in mutations
                                    if m.kind == "buffer")
                literals: dict[str, Any] = {}
                imported = torch_fx.export_and_import(
                    exported, output_type=output_type.RAW, func_name=func_name,
                    decomposition_table={}, hooks=_tracking(make_hooks(weights, mutated),
                                                            weights, literals))
    except Exception as err:  # noqa: BLE001 - torch.export raises many unrelated types
        raise _export_error(name, err) from err
    if reused is not None:
        return reused
    phases.snapshot("export", imported)
    for stage, phase_name, pipeline in (("torch backend IR", "torch-backend", TORCH_TO_BACKEND),
                                        ("linalg on tensors", "linalg", BACKEND_TO_LINALG)):
        try:
            with phases.phase(phase_name), imported.context:
                run_pipeline(imported, pipeline, filename=f"<{name}>", label=stage)
        except AccelError as err:
            first = err.diagnostics[0]
            first.message = f"lowering {name} to {stage} failed: {_summarise(first)}"
            first.notes = [n for n in first.notes if "see current operation" not in n.message]
            raise AccelError(first.message, diagnostics=err.diagnostics) from None
        phases.snapshot(phase_name, imported)
    if not external_weights:
        return ImportedProgram(imported, mutations=mutations)
    with imported.context:
        used = externalize(imported, weights)
    _check_mutated_buffers_shared(module, mutations, used, name)
    return ImportedProgram(imported, used, mutations,
                           weight_sources=_weight_sources(exported, used, literals))


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


def state_tensors(exported: Any) -> dict[str, Any]:
    """The exported program's parameters, buffers and lifted constants by target name."""
    from torch.export.graph_signature import InputKind

    found = {}
    for spec in exported.graph_signature.input_specs:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            found[spec.target] = exported.state_dict.get(spec.target)
            if found[spec.target] is None:  # non-persistent buffers are constants
                found[spec.target] = exported.constants.get(spec.target)
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            found[spec.target] = exported.constants.get(spec.target)
    return found


def _same_memory(a: Any, b: Any) -> bool:
    return (a is b or (a.data_ptr() == b.data_ptr() and a.dtype == b.dtype
                       and tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()))


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


def weight_arrays(exported: Any, sources: dict[str, str]) -> dict[str, np.ndarray] | None:
    """The arrays the weights `sources` names are bound to, from `exported`'s state (as the
    FX import hooks make them); None when one is missing or not a CPU tensor."""
    from accel.weights import _as_array

    state = state_tensors(exported)
    arrays = {}
    for name, target in sources.items():
        tensor = state.get(target)
        array = _as_array(tensor) if tensor is not None else None
        if array is None:
            return None
        arrays[name] = array
    return arrays


def check_mutations(module: Any, mutations: list[Mutation], weights: dict[str, np.ndarray]
                    ) -> None:
    """`NotImplementedError` unless each mutated buffer is the memory of its bound weight."""
    _check_mutated_buffers_shared(module, mutations, weights, model_name(module))



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


def _check_mutated_buffers_shared(module: Any, mutations: list[Mutation],
                                  weights: dict[str, np.ndarray], name: str) -> None:
    """The code reads each mutated buffer through its bound array: they must be one memory,
    or writing the update back into the buffer would not reach the next call."""
    import torch

    for m in mutations:
        if m.kind != "buffer":
            continue
        buffer = module.get_buffer(m.target).detach()
        shared = False
        if buffer.device.type == "cpu" and buffer.dtype != torch.bool:
            memory = numpy_view(buffer)
            shared = any(np.shares_memory(memory, a) for a in weights.values())
        if not shared:
            raise NotImplementedError(
                f"{name} updates buffer '{m.target}' ({buffer.dtype}, "
                f"{'contiguous' if buffer.is_contiguous() else 'strided'}) in place; accel "
                "supports in-place updates only of contiguous non-bool CPU buffers")


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


def _export_error(name: str, err: BaseException) -> AccelError:
    """torch.export's error summarised in one line, with what to try next."""
    return AccelError(f"torch.export of {name} failed: {type(err).__name__}: "
                      f"{_first_line(err)} (hint: accel already uses non-strict export, "
                      "strict=False; make that code traceable: no data-dependent Python "
                      "control flow, or mark varying sizes with dynamic_shapes)")

# -- the front compile cache ------------------------------------------------------------------
#: Above this many bytes of parameters, buffers and constants the front cache is skipped:
#: hashing them would cost about what it saves (such models still hit the MLIR-level cache).
FRONT_MAX_STATE_BYTES = 256 << 20
_INPUT_KINDS = ("USER_INPUT", "PARAMETER", "BUFFER", "CONSTANT_TENSOR")


def _describe(value: Any) -> str:
    """A node's `meta["val"]` as text: shape, dtype, strides, device of fake tensors."""
    import torch

    if isinstance(value, torch.Tensor):
        return (f"T({value.dtype},{tuple(value.shape)},{tuple(value.stride())},"
                f"{value.device.type},{value.requires_grad})")
    if isinstance(value, list | tuple):
        return "(" + ",".join(_describe(v) for v in value) + ")"
    return f"{type(value).__name__}:{value}"


def program_fingerprint(exported: Any, func_name: str) -> str | None:
    """SHA-256 of everything in a `torch.export` program (before decompositions) that the
    imported MLIR depends on, or None when the program cannot be fingerprinted safely.

    Covered: the torch version; the Python code and every node (op, target, shape/dtype/
    strides of its value, source location) of the graph and of its subgraphs; the graph
    signature, range constraints (dynamic shapes) and call specs; and every parameter,
    buffer and lifted constant: name, dtype, shape, strides, which ones share memory, and a
    SHA-256 of its *values* (small tensors are inlined into the IR as constants, so values
    matter; hashing all of them is what makes a front hit safe).
    """
    import torch

    digest = hashlib.sha256()

    def put(text: str) -> None:
        digest.update(text.encode())
        digest.update(b"\0")

    try:
        put(f"torch {torch.__version__} {torch.version.git_version} {func_name}")
        for spec in exported.graph_signature.input_specs:
            if spec.kind.name not in _INPUT_KINDS:
                return None  # script objects, tokens: state the hash would not see
        for path, gm in exported.graph_module.named_modules():
            if not isinstance(gm, torch.fx.GraphModule):
                return None
            put(f"graph {path}")
            put(gm.code)
            for node in gm.graph.nodes:
                put(f"{node.op} {node.name} {node.target} {_describe(node.meta.get('val'))} "
                    f"{node.meta.get('stack_trace')}")
        put(str(exported.graph_signature))
        put(str(exported.range_constraints))
        put(str(exported.module_call_graph))
        total = 0
        seen: dict[tuple[int, Any, tuple[int, ...]], str] = {}
        for target, tensor in sorted(state_tensors(exported).items()):
            if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu" or \
                    tensor.layout != torch.strided or tensor.is_quantized:
                return None
            total += tensor.numel() * tensor.element_size()
            if total > FRONT_MAX_STATE_BYTES:
                return None
            alias = (tensor.data_ptr(), tensor.dtype, tuple(tensor.shape))
            put(f"state {target} {tensor.dtype} {tuple(tensor.shape)} {tensor.stride()} "
                f"same-as:{seen.setdefault(alias, target)}")
            values = numpy_view(tensor.detach().contiguous())
            digest.update(values.reshape(-1).view(np.uint8))
    except Exception:  # noqa: BLE001 - anything unusual: no front cache, the full path runs
        return None
    return digest.hexdigest()


class FrontCache:
    """The front compile cache: an exported program -> compiled code, skipping
    decompositions, the FX import, torch-mlir's pipelines and the MLIR-level key.

    `reuse` is `import_program`'s hook; after a miss and a successful compile, `store`
    records the program under the key `reuse` computed. See docs/cache.md.
    """

    def __init__(self, func_name: str, code_options: dict[str, Any]):
        self.func_name = func_name
        self.code_options = dict(code_options)
        self.key: str | None = None

    def reuse(self, module: Any, exported: Any) -> ImportedProgram | None:
        from accel import cache

        fingerprint = program_fingerprint(exported, self.func_name)
        if fingerprint is None:
            return None
        self.key = cache.front_key(fingerprint, self.code_options)
        try:
            found = self._lookup(module, exported, self.key)
        except Exception as err:  # noqa: BLE001 - never worse than no cache: the full path runs
            cache.log.warning("accel cache: front entry %s not used: %s", self.key, err)
            found = None
        cache.STATS["front_hit" if found is not None else "front_miss"] += 1
        if found is not None:
            cache.log.info("accel cache: front hit %s", self.key)
        return found

    def _lookup(self, module: Any, exported: Any, key: str) -> ImportedProgram | None:
        from accel import cache

        entry = cache.lookup_front(key)
        if entry is None:
            return None
        try:
            weights = weight_arrays(exported, entry["weights"])
            if weights is None:
                return None
            mutations = [Mutation(str(kind), str(target)) for kind, target in entry["mutations"]]
            check_mutations(module, mutations, weights)
            compiled = cache.compiled_from_entry(entry["mlir_key"],
                                                 self.code_options["opt_level"], weights)
        except (AccelError, NotImplementedError, KeyError, TypeError, ValueError):
            return None  # the full path runs (and reports any real error itself)
        if compiled is None:
            return None
        return ImportedProgram(None, weights, mutations, compiled=compiled,
                               module_text=entry["mlir"])

    def store(self, program: ImportedProgram, mlir_text: str) -> None:
        """Record `program` (imported, compiled with the MLIR-level cache on) under `key`."""
        from accel import cache

        if self.key is None or program.weight_sources is None:
            return
        cache.store_front(self.key, {
            "mlir_key": cache.cache_key(mlir_text, self.code_options),
            "weights": program.weight_sources,
            "mutations": [[m.kind, m.target] for m in program.mutations],
            "mlir": mlir_text,
        })
