"""`accel-outline-contractions`: each matmul/convolution into a private function of its own.

Why: upstream `linalg-fuse-elementwise-ops` fuses elementwise producers (a transpose, an
upcast, a bias broadcast) into their consumers, and a named matmul or convolution consumer
becomes a `linalg.generic` on the way: after it the tensor-core, SGEMM and im2col passes,
which match the named ops, found no matmul left in a real model (tiny GPT-2: 13 named
contractions before, 0 after). A call is a fusion barrier: outlined, the contractions keep
their names through the fusion, and the `inline` pass after it puts them back in place.

    %r = linalg.matmul ins(%a, %b) outs(%c)       %r = func.call @__accel_contraction_0(%a, %b, %c)
                                             ->  func.func private @__accel_contraction_0(...) {
                                                   linalg.matmul ...  }

Outlined: the two-input named contractions and convolutions on tensors (the ops of
`accel-matmul-precision`).
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Module, Operation, func, ir
from accel.passes.base import ModulePass, register_pass
from accel.passes.matmul_precision import contractions, location_text, named_op

PREFIX = "__accel_contraction_"


@register_pass
@dataclass(frozen=True)
class OutlineContractions(ModulePass):
    """Moves each named matmul/convolution on tensors into a private function and calls it."""

    name = "accel-outline-contractions"

    def apply(self, module: Operation) -> None:
        body = module.regions[0].blocks[0]
        taken = {ir.StringAttr(op.attributes["sym_name"]).value
                 for op in body.operations if "sym_name" in op.attributes}
        count = 0
        for op in contractions(module):
            if len(op.operands) != 3 or len(op.results) != 1 or \
                    not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
                continue
            while f"{PREFIX}{count}" in taken:
                count += 1
            name = f"{PREFIX}{count}"
            taken.add(name)
            types = [str(v.type) for v in op.operands]
            args = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(types))
            loc = location_text(op)
            helper = Module.parse("\n".join([
                f"func.func private @{name}({args}) -> {types[2]} {{",
                named_op(op, ["%arg0", "%arg1", "%arg2"], types, loc),
                f"return %r : {types[2]} {loc}", f"}} {loc}"]))
            helper.body.operations[0].operation.move_before(body.operations[0])
            with InsertionPoint(op), op.location:
                call = func.CallOp([op.results[0].type], ir.FlatSymbolRefAttr.get(name),
                                   list(op.operands))
            op.results[0].replace_all_uses_with(call.results[0])
            op.erase()
