"""What the frontend hands on: an imported program, its weights and in-place updates.

Light on purpose (no MLIR bindings): the front cache reads these on a warm start without
loading torch-mlir.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accel.runtime.weights import as_array, numpy_view


def model_name(model: Any) -> str:
    """A short name for messages: the module's class or the function's name."""
    import torch

    if isinstance(model, torch.nn.Module):
        return type(model).__name__
    return getattr(model, "__name__", None) or type(model).__name__


@dataclass(frozen=True)
class Mutation:
    """An in-place update the model makes: a buffer (`target` its qualified name) or a user
    input (`target` its position). torch.export returns the new value as an extra output,
    before the model's own outputs; the caller writes it back."""

    kind: str  # "buffer" | "input"
    target: str


@dataclass
class ImportedProgram:
    """A model as linalg-on-tensors MLIR plus its weights (name -> array; accel.frontend.weights).

    With external weights the module reads each weight from an external `memref.global`
    named like its key in `weights`; otherwise `weights` is empty and the module holds them.
    The function's first `len(mutations)` results are the new values of `mutations`.
    """

    module: Any  # an accel.ir Module, or None on a front-cache hit
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    mutations: list[Mutation] = field(default_factory=list)
    #: Weight name -> the exported program's state target (parameter/buffer/constant name)
    #: it reads, when every weight could be traced to one (what the front cache stores).
    weight_sources: dict[str, str] | None = None
    #: Set when `reuse` supplied the compiled code (a front-cache hit): a `CompiledMLIR`,
    #: with `module` None and `module_text` the imported MLIR's text.
    compiled: Any = None
    module_text: str | None = None
    #: What `forward` returns around the flat results (accel.frontend.outputs), or None.
    outputs: Any = None
    #: How a call's arguments map onto the flat tensor arguments (accel.frontend.inputs),
    #: or None for plain positional tensors.
    inputs: Any = None


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


def weight_arrays(exported: Any, sources: dict[str, str]) -> dict[str, np.ndarray] | None:
    """The arrays the weights `sources` names are bound to, from `exported`'s state (as the
    FX import hooks make them); None when one is missing or not a CPU tensor."""
    state = state_tensors(exported)
    arrays = {}
    for name, target in sources.items():
        tensor = state.get(target)
        array = as_array(tensor) if tensor is not None else None
        if array is None:
            return None
        arrays[name] = array
    return arrays


def check_mutations(module: Any, mutations: list[Mutation], weights: dict[str, np.ndarray]
                    ) -> None:
    """`NotImplementedError` unless each mutated buffer is the memory of its bound weight."""
    _check_mutated_buffers_shared(module, mutations, weights, model_name(module))


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
        if shared:
            continue
        if buffer.device.type == "cpu" and buffer.dtype != torch.bool and \
                buffer.numel() == 1:
            # torch-mlir folds arithmetic on one-element constants (`counter + 1` became
            # `1`): the code would store the same value at every call.
            raise NotImplementedError(
                f"{name} updates the one-element buffer '{m.target}' in place (BatchNorm "
                "in training mode counts its calls so), which accel.compile does not support: "
                "call .eval() on the model for inference, or compile training with "
                "accel.compile_train_step or torch.compile(backend=\"accel\")")
        raise NotImplementedError(
            f"{name} updates buffer '{m.target}' ({buffer.dtype}, "
            f"{'contiguous' if buffer.is_contiguous() else 'strided'}, "
            f"{buffer.device.type}) in place; accel supports in-place updates only of "
            "contiguous non-bool CPU buffers")
