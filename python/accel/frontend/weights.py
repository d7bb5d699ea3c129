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
3. At JIT time the CPU target binds each external global to its array's address
   (`accel.runtime.weights.check_bindings` first); artifacts store the arrays next to the
   code (`accel.artifact`).

Weights a torch-mlir pass folded into new constants (and 1-element literals, which the
importer keeps as splats) stay inline in the IR: they are small.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.ir import InsertionPoint, Module, Operation, dialects, fx_importer_module, ir, walk
from accel.runtime.weights import as_array

PREFIX = "accel_w"
_RESOURCE = re.compile(r"dense_resource<(" + PREFIX + r"\d+)>")


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
                array = as_array(literal)
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

    walk(module.operation, visit)
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
