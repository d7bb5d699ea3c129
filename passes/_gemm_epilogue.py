"""Additive epilogues of `accel-matmul-microkernel`: `C = 0; C += A @ B; D = C + X` becomes
`C = X; C += A @ B` with D's uses on C.

Why: nn.Linear's bias (and a residual added to a projection) is one more pass over the
whole output after the GEMM: read C, read X, write D, a fresh buffer that page-faults in
when it is large. Starting the accumulation from X instead of zero is what BLAS's
`beta = 1` does for `addmm` (eager PyTorch copies the bias into the output first too): the
zero fill becomes the copy of X and the pass after the GEMM goes. A 1500 x 1536 output
(Whisper-base's fc1) is 9 MB, two of the three passes over it.

    %C = memref.alloc                          %C = memref.alloc
    linalg.fill ins(0.0) outs(%C)              linalg.generic ins(%X) outs(%C) { yield x }
    linalg.matmul ins(%A, %B) outs(%C)   ->    linalg.matmul ins(%A, %B) outs(%C)
    %D = memref.alloc
    linalg.generic ins(%C, %X) outs(%D) { yield c + x }          (uses of %D -> %C)

Guards (all in one block, on memrefs after bufferization): C and D are fresh allocations
of one type; C has no user but the fill, the matmul and the generic; the generic is
elementwise over D (all loops parallel, identity maps for C and D) and its body is one
`arith.addf` of C's and X's elements; X (any broadcast map) is defined before the fill and
nothing between the fill and the generic may write it (only allocations, constants,
views, other fills and the matmul itself lie between); D is written by nothing else.
"""

from __future__ import annotations

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.base import defining_op

#: Ops that write no buffer the epilogue's X could be (views alias but do not write).
_QUIET = ("memref.alloc", "memref.alloca", "memref.get_global", "arith.constant",
          "memref.collapse_shape", "memref.expand_shape", "memref.subview", "memref.cast")


def is_fresh(value: ir.Value) -> bool:
    """`value` is a `memref.alloc` of this function (nobody else's memory)."""
    owner = defining_op(value)
    return owner is not None and owner.name == "memref.alloc"


def is_zero_fill(op: Operation) -> bool:
    """`op` is a `linalg.fill` of a float constant equal to zero (+0.0 or -0.0)."""
    if op.name != "linalg.fill":
        return False
    const = defining_op(op.operands[0])
    if const is None or const.name != "arith.constant":
        return False
    attr = const.attributes["value"]
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def _addf_of(generic: Operation, c_index: int) -> int | None:
    """The input index of X when the generic's body is `yield addf(c, x)` (either order)
    with c the block argument of input `c_index`, else None."""
    block = generic.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(ops) != 2 or ops[0].name != "arith.addf" or ops[1].name != "linalg.yield":
        return None
    add, yielded = ops
    if len(yielded.operands) != 1 or yielded.operands[0] != add.results[0]:
        return None
    args = list(block.arguments)
    lhs, rhs = add.operands[0], add.operands[1]
    for c_arg, x_arg in ((lhs, rhs), (rhs, lhs)):
        if c_arg == args[c_index] and x_arg in args[:-1] and x_arg != args[c_index]:
            return args.index(x_arg)
    return None


def position(block_ops: list[Operation], op: Operation) -> int:
    """`op`'s index in `block_ops` (its block's operations, listed once by the caller)."""
    return next(i for i, o in enumerate(block_ops) if o == op)


def fold_additive_epilogue(matmul: Operation) -> bool:
    """Rewrite `matmul`'s zero fill and following `+ X` generic as in the module docstring;
    False (nothing changed) when a guard fails."""
    c = matmul.operands[2]
    if not is_fresh(c) or defining_op(c).block != matmul.block:
        return False
    users = [u.owner.operation for u in c.uses]
    fills = [u for u in users if u.name == "linalg.fill"]
    generics = [u for u in users if u.name == "linalg.generic"]
    if len(fills) != 1 or len(generics) != 1 or len(users) != 3 or \
            sum(u == matmul for u in users) != 1:
        return False
    fill, generic = fills[0], generics[0]
    if not is_zero_fill(fill) or fill.block != matmul.block or generic.block != matmul.block:
        return False
    ops = [o.operation for o in matmul.block.operations]
    at_fill, at_mm, at_gen = (position(ops, o) for o in (fill, matmul, generic))
    if not at_fill < at_mm < at_gen:
        return False
    operands = list(generic.operands)
    if len(generic.results) or operands[-1] == c or operands.count(c) != 1:
        return False
    d = operands[-1]
    if d.type != c.type or not is_fresh(d) or len(list(d.uses)) < 1:
        return False
    if any(u.owner.operation != generic and position(ops, u.owner.operation) < at_gen
           for u in d.uses):
        return False  # D is used (written) before the generic
    maps = list(ir.ArrayAttr(generic.attributes["indexing_maps"]))
    iters = [str(a) for a in ir.ArrayAttr(generic.attributes["iterator_types"])]
    rank = ir.MemRefType(c.type).rank
    identity = ir.AffineMap.get_identity(rank)
    c_index = operands.index(c)
    if any("parallel" not in it for it in iters) or \
            ir.AffineMapAttr(maps[c_index]).value != identity or \
            ir.AffineMapAttr(maps[-1]).value != identity:
        return False
    x_index = _addf_of(generic, c_index)
    if x_index is None or len(operands) != 3:
        return False
    x = operands[x_index]
    x_owner = defining_op(x)
    if x_owner is not None and x_owner.block == matmul.block and \
            position(ops, x_owner) > at_fill:
        return False
    if any(o.name not in _QUIET and o.name != "linalg.fill" for o in ops[at_fill + 1:at_gen]
           if o != matmul):
        return False
    if any(o.name == "linalg.fill" and o.operands[1] == x for o in ops[at_fill + 1:at_gen]):
        return False
    _emit_copy(fill, x, maps[x_index], c, generic.attributes["iterator_types"])
    fill.erase()
    d_alloc = defining_op(d)
    generic.erase()
    d.replace_all_uses_with(c)
    d_alloc.erase()
    return True


def _emit_copy(before: Operation, x: ir.Value, x_map: ir.Attribute, c: ir.Value,
               iterator_types: ir.Attribute) -> None:
    """`linalg.generic ins(x) outs(c) { yield x }` (x through `x_map`) before `before`."""
    linalg = dialects.linalg
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(ir.MemRefType(c.type).rank))
    with InsertionPoint(before), before.location:
        op = linalg.GenericOp(
            result_tensors=[], inputs=[x], outputs=[c],
            indexing_maps=ir.ArrayAttr.get([x_map, identity]), iterator_types=iterator_types)
        element = ir.MemRefType(c.type).element_type
        block = op.regions[0].blocks.append(element, element)
        with InsertionPoint(block):
            linalg.YieldOp([block.arguments[0]])
