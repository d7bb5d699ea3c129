"""Model weights as buffers: never IR text, bound to the compiled code by address.

torch-mlir's FX importer freezes every parameter into the IR as a `dense_resource` blob (made
through Python lists, slowly), and printing such a module writes each blob out as hex. accel
keeps the bytes out of the IR instead:

1. `WeightHooks` (an FX importer hook) turns each tensor literal into a `dense_resource`
   named `accel_w<N>` whose blob *is* the tensor's memory (a numpy view, no copy), and keeps
   the arrays by name. torch-mlir's pipelines then work on the module as usual.
2. `externalize(module, weights)` replaces every `arith.constant dense_resource<accel_w<N>>`
   left after lowering by a read of an external `memref.global @accel_w<N>`: the module's
   text now holds shapes and names only (and is what the compile cache hashes, so a model
   with new weight values reuses the compiled code).
3. At JIT time `accel.backend.cpu` binds each external global to its array's address
   (`bind`); artifacts store the arrays next to the code (`save` / `load_saved`).

Weights a torch-mlir pass folded into new constants (and 1-element literals, which the
importer keeps as splats) stay inline in the IR: they are small.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.ir import InsertionPoint, Module, Operation, dialects, fx_importer_module, ir

PREFIX = "accel_w"
_RESOURCE = re.compile(r"dense_resource<(" + PREFIX + r"\d+)>")


def numpy_view(tensor: Any) -> np.ndarray:
    """A CPU tensor's memory as a numpy array, no copy; bf16 (which numpy lacks) as its uint16
    bit patterns, the form the accel runtime takes."""
    import torch

    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.uint16).numpy()
    return tensor.numpy()


def _as_array(tensor: Any) -> np.ndarray | None:
    """The tensor's memory as a C-contiguous numpy array (bf16 as its uint16 bits)."""

    try:
        t = tensor.detach()
        if t.device.type != "cpu" or t.is_complex() or t.is_quantized:
            return None
        return numpy_view(t.contiguous())
    except (RuntimeError, TypeError):  # fake or otherwise storage-less tensors
        return None


def make_hooks(weights: dict[str, np.ndarray], always: frozenset[int] = frozenset()) -> Any:
    """FX importer hooks that make tensor literals zero-copy, named blobs kept in `weights`.

    Tensors of one element stay the importer's inline constants, except those whose
    `data_ptr()` is in `always` (buffers the model updates in place must be buffers).
    """
    fx = fx_importer_module()

    class WeightHooks(fx.FxImporterHooks):
        def __init__(self) -> None:
            self.by_tensor: dict[tuple[int, str, tuple[int, ...]], ir.Attribute] = {}

        def resolve_literal(self, gni: Any, literal: Any, info: Any) -> Any:
            import torch

            if not isinstance(literal, torch.Tensor) or literal.numel() == 0:
                return None
            if literal.numel() == 1 and literal.data_ptr() not in always:
                return None  # scalars: the importer's splat constants are better
            key = (literal.data_ptr(), str(literal.dtype), tuple(literal.shape))
            attr = self.by_tensor.get(key)
            if attr is None:
                array = _as_array(literal)
                if array is None:
                    return None
                try:
                    attr = ir.DenseResourceElementsAttr.get_from_buffer(
                        array, f"{PREFIX}{len(weights)}", fx.create_mlir_tensor_type(literal))
                except ValueError:  # a buffer format MLIR does not take: the default path
                    return None
                match = _RESOURCE.match(str(attr))
                if match is None:
                    return None
                weights[match.group(1)] = array  # the name the context gave the blob
                self.by_tensor[key] = attr
            vtype = gni._cc.tensor_to_vtensor_type(literal)
            return ir.Operation.create("torch.vtensor.literal", results=[vtype],
                                       attributes={"value": attr}).result

    return WeightHooks()


def _weight_constants(module: Module) -> list[tuple[Operation, str]]:
    found: list[tuple[Operation, str]] = []

    def visit(op: Operation) -> ir.WalkResult:
        if op.name == "arith.constant":
            match = _RESOURCE.match(str(op.attributes["value"]))
            if match:
                found.append((op.operation, match.group(1)))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def externalize(module: Module, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Replace weight constants by external `memref.global`s; returns the weights still used.

    Call it in the module's context once it is linalg on tensors.
    """
    used: dict[str, np.ndarray] = {}
    body = module.body
    for const, name in _weight_constants(module):
        tensor_type = ir.RankedTensorType(const.results[0].type)
        memref_type = ir.MemRefType.get(tensor_type.shape, tensor_type.element_type,
                                        loc=const.location)
        if name not in used:
            if name not in weights:
                raise AccelError(f"internal error: weight {name} has no buffer")
            used[name] = weights[name]
            decl = Module.parse(f"memref.global @{name} : {memref_type}")
            body.append(decl.body.operations[0].operation)
        with const.location, InsertionPoint(const):
            buffer = dialects.memref.GetGlobalOp(memref_type, name).result
            # restrict: the global is this tensor's only view; not writable: never in place.
            tensor = dialects.bufferization.ToTensorOp(tensor_type, buffer, restrict=True)
        const.results[0].replace_all_uses_with(tensor.result)
        const.erase()
    return used


def check_bindings(specs: Mapping[str, int], weights: Mapping[str, np.ndarray],
                   what: str) -> None:
    """Every external weight the code needs (name -> byte size) has a matching array."""
    for name, nbytes in specs.items():
        array = weights.get(name)
        if array is None:
            raise AccelError(f"{what} needs weight '{name}' ({nbytes} bytes), which was not "
                             "given")
        if array.nbytes != nbytes or not array.flags.c_contiguous:
            raise AccelError(f"{what}: weight '{name}' must be a C-contiguous array of "
                             f"{nbytes} bytes, got {array.nbytes} bytes")


def save(folder: Path, weights: Mapping[str, np.ndarray]) -> dict[str, str]:
    """Write each weight as `weights/<name>.npy`; returns {name: relative path}."""
    out = folder / "weights"
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, array in weights.items():
        path = out / f"{name}.npy"
        np.save(path, array, allow_pickle=False)
        files[name] = str(path.relative_to(folder))
    return files


def load_saved(folder: Path, files: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Memory-map the weights `save` wrote (read-only: the code never writes them)."""
    loaded = {}
    for name, rel in files.items():
        try:
            loaded[name] = np.load(folder / rel, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as err:
            raise AccelError(f"artifact '{folder}': weight file {rel} is unreadable: "
                             f"{err}") from None
    return loaded
