"""`accel-fold-matmul-upcasts`: matmul/conv operands read through exact float upcasts read
the narrow tensor instead.

Why: torch's CPU decompositions compute half-precision matmuls in f32
(`pw_cast_for_opmath`): an f16 `addmm` or `bmm` arrives as `linalg.generic {extf f16 ->
f32}` on each operand, then an f32 `linalg.matmul`. The f32 matmul cannot use f16 tensor
cores, and its operands are extra f32 copies. A named contraction whose operand is f16
and whose accumulator is f32 extends each element to f32 in its own body, so

    %a32 = linalg.generic {extf} ins(%a : f16)     linalg.matmul ins(%a, %b : f16, f16)
    %b32 = linalg.generic {extf} ins(%b : f16)  ->               outs(%c : f32)
    linalg.matmul ins(%a32, %b32) outs(%c : f32)

computes exactly the same numbers (every f16/bf16 value is an f32 value; the products and
sums are the same f32 operations), and the nvgpu target then puts it on tensor cores.

Matched: an operand of a two-input named contraction/convolution (the ops of
`accel-matmul-precision`) on tensors produced by a `linalg.generic` with one input, identity
maps, all-parallel iterators and a body that is only `arith.extf` from f16 or bf16 to the
accumulator's type. The upcast stays for its other users; unused, it is erased.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import Module, Operation, ir
from accel.passes.base import ModulePass, register_pass, replace_with_function_body
from accel.passes.matmul_precision import contractions, location_text, named_op


def upcast_source(value: ir.Value, acc: ir.Type) -> ir.Value | None:
    """The f16/bf16 tensor `value` is an elementwise `extf` of (to `acc`), else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "linalg.generic":
        return None
    op = owner.operation
    if len(op.operands) != 2 or len(op.results) != 1:
        return None
    maps = [m.value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    rank = ir.RankedTensorType(value.type).rank
    if any(m != ir.AffineMap.get_identity(rank) for m in maps) or \
            any("parallel" not in str(it) for it in ir.ArrayAttr(op.attributes["iterator_types"])):
        return None
    block = op.regions[0].blocks[0]
    body = [o.operation for o in block.operations]
    if len(body) != 2 or body[0].name != "arith.extf" or \
            body[0].operands[0] != block.arguments[0] or \
            body[1].operands[0] != body[0].results[0]:
        return None
    source = op.operands[0]
    if not isinstance(source.type, ir.RankedTensorType):
        return None
    narrow = ir.RankedTensorType(source.type).element_type
    if not isinstance(narrow, ir.F16Type | ir.BF16Type) or body[0].results[0].type != acc:
        return None
    return source


@register_pass
@dataclass(frozen=True)
class FoldMatmulUpcasts(ModulePass):
    """Reads f16/bf16 matmul/conv operands directly instead of through extf copies."""

    name = "accel-fold-matmul-upcasts"

    def apply(self, module: Operation) -> None:
        for op in contractions(module):
            if len(op.operands) != 3 or len(op.results) != 1:
                continue
            if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
                continue
            acc = ir.RankedTensorType(op.operands[2].type).element_type
            sources = [upcast_source(op.operands[i], acc) for i in range(2)]
            # Both or neither: a mixed f16 x f32 op would keep one f32 copy anyway.
            if sources[0] is None or sources[1] is None:
                continue
            if ir.RankedTensorType(sources[0].type).element_type != \
                    ir.RankedTensorType(sources[1].type).element_type:
                continue
            producers = [op.operands[i].owner for i in range(2)]
            types = [str(sources[0].type), str(sources[1].type), str(op.operands[2].type)]
            args = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(types))
            text = "\n".join([f"func.func private @h({args}) -> {types[2]} {{",
                              named_op(op, ["%arg0", "%arg1", "%arg2"], types,
                                       location_text(op)),
                              f"return %r : {types[2]}", "}"])
            replace_with_function_body(op, Module.parse(text),
                                       [sources[0], sources[1], op.operands[2]])
            for producer in producers:
                producer = producer.operation
                if producer.parent is not None and \
                        not any(list(r.uses) for r in producer.results):
                    producer.erase()
