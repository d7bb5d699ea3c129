"""Epilogues of `accel-matmul-microkernel`: what happens to C around the kernel.

Additive: `C = 0; C += A @ B; D = C + X` becomes `C = X; C += A @ B` with D's uses on C.
Zero start (`fold_zero_fill`, below): `C = 0; C += A @ B` needs no fill.

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

`fold_zero_fill` is BLAS's `beta = 0` (and `alpha`) for the unpacked kernels, which store
every element of C: `C = 0; C += A @ B` needs no fill when the kernel's accumulators start
at zero, and a following `D = C * s` (or `C / s`, s a constant: attention's 1/sqrt(d) on
its score tile) is one multiply of the accumulators before their store:

    linalg.fill ins(0.0) outs(%C)
    linalg.matmul ins(%A, %B) outs(%C)     ->    call @kernel_z<s>(%A, %B, %C)   (C = s*A@B)
    linalg.generic ins(%C) outs(%D) { yield c * s }             (uses of %D -> %C)

Both are bit-exact: the first FMA adds the same +0.0 the fill wrote, and the scale is the
same f32 operation on the same values. Guards: C a fresh allocation of this block, its
fill the last op before the matmul that touches memory (only allocations, constants and
views between), neither operand a view of C; for the scale, C used only by the fill, the
matmul and the generic, D a fresh buffer of C's type not used before the generic.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes._affine import base_buffer
from accel.passes.base import defining_op

#: Ops that write no buffer the epilogue's X could be (views alias but do not write).
_QUIET = ("memref.alloc", "memref.alloca", "memref.get_global", "arith.constant",
          "memref.collapse_shape", "memref.expand_shape", "memref.subview", "memref.cast")


def is_fresh(value: ir.Value) -> bool:
    """`value` is a `memref.alloc` of this function (nobody else's memory)."""
    owner = defining_op(value)
    return owner is not None and owner.name == "memref.alloc"


def fill_value(op: Operation) -> float | None:
    """The float constant `op` fills with, when it is a `linalg.fill` of one, else None."""
    if op.name != "linalg.fill":
        return None
    const = defining_op(op.operands[0])
    if const is None or const.name != "arith.constant":
        return None
    attr = const.attributes["value"]
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def is_zero_fill(op: Operation) -> bool:
    """`op` is a `linalg.fill` of a float constant equal to zero (+0.0 or -0.0)."""
    return fill_value(op) == 0.0


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


@dataclass(frozen=True)
class Epilogue:
    """What a kernel does around its accumulators (`fold_zero_fill`): start them at zero
    instead of loading C (packed kernels: store C in the first K block) and, unpacked
    kernels only, apply a scale (`mulf`/`divf` by an f32) and write the row maxima."""

    scale_op: str | None = None  # "arith.mulf" or "arith.divf"
    scale_bits: int = 0  # the f32 constant's bit pattern
    #: Also write each row's maximum (of the scaled C) to a 4th argument, %M, with this
    #: op (one of ROW_MAX_OPS).
    row_max: str | None = None

    @property
    def suffix(self) -> str:
        """Kernel-name suffix: `_z` (zero start), then `m`/`d` and the constant's bits,
        then `r` for the row maxima."""
        scale = "" if self.scale_op is None else f"{self.scale_op[-4]}{self.scale_bits:08x}"
        row_max = {None: "", "arith.maximumf": "r", "arith.maxnumf": "rn"}[self.row_max]
        return f"_z{scale}{row_max}"

    @property
    def scale_literal(self) -> str:
        """The constant as an MLIR float literal that keeps every bit (hexadecimal)."""
        return f"0x{self.scale_bits:08X}"


def _scale_of(generic: Operation, c: ir.Value) -> tuple[str, int] | None:
    """(op, f32 bits) when `generic` is `D = C * s`, `s * C` or `C / s` with s an f32
    `arith.constant`, elementwise with identity maps; else None."""
    operands = list(generic.operands)
    if len(operands) != 2 or operands[0] != c or len(generic.results):
        return None
    rank = ir.MemRefType(c.type).rank
    identity = ir.AffineMap.get_identity(rank)
    maps = list(ir.ArrayAttr(generic.attributes["indexing_maps"]))
    iters = [str(a) for a in ir.ArrayAttr(generic.attributes["iterator_types"])]
    if any("parallel" not in it for it in iters) or \
            any(ir.AffineMapAttr(m).value != identity for m in maps):
        return None
    block = generic.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(ops) != 2 or ops[0].name not in ("arith.mulf", "arith.divf") or \
            ops[1].name != "linalg.yield" or list(ops[1].operands) != [ops[0].results[0]]:
        return None
    op, c_arg = ops[0], block.arguments[0]
    lhs, rhs = op.operands[0], op.operands[1]
    other = rhs if lhs == c_arg else lhs if op.name == "arith.mulf" and rhs == c_arg else None
    const = None if other is None else defining_op(other)
    if const is None or const.name != "arith.constant" or \
            not isinstance(other.type, ir.F32Type):
        return None
    value = ir.FloatAttr(const.attributes["value"]).value
    return op.name, struct.unpack("<I", struct.pack("<f", value))[0]


def _at(block_ops: list[Operation], op: Operation) -> int:
    """The index in `block_ops` of `op` or of the op there that contains it (-1: none)."""
    while True:
        for i, o in enumerate(block_ops):
            if o == op:
                return i
        parent = op.parent
        if parent is None or parent.name == "builtin.module":
            return -1
        op = parent


#: Maximum ops a row reduction may use: both are commutative and associative (maximumf
#: propagates NaN and orders -0 < +0; maxnumf drops NaN and may return either zero), so
#: the kernel's order of evaluation gives what the loop would.
ROW_MAX_OPS = ("arith.maximumf", "arith.maxnumf")


def _row_max_of(generic: Operation, c: ir.Value) -> str | None:
    """The max op when `generic` is `M[i] = max(M[i], C[i, j])` over a 2-D C (rows
    reduced with one of ROW_MAX_OPS), else None."""
    operands = list(generic.operands)
    if len(operands) != 2 or operands[0] != c or len(generic.results) or \
            ir.MemRefType(c.type).rank != 2:
        return None
    maps = [str(ir.AffineMapAttr(m).value)
            for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    iters = [str(a) for a in ir.ArrayAttr(generic.attributes["iterator_types"])]
    if maps != ["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0)"] or \
            iters != ["#linalg.iterator_type<parallel>", "#linalg.iterator_type<reduction>"]:
        return None
    block = generic.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(ops) != 2 or ops[0].name not in ROW_MAX_OPS or ops[1].name != "linalg.yield" or \
            list(ops[1].operands) != [ops[0].results[0]] or \
            {*ops[0].operands} != {*block.arguments}:
        return None
    return ops[0].name


def _reads_only(op: Operation, buffer: ir.Value) -> bool:
    """`op` reads `buffer` and does not write it: a return, a copy from it, or a generic
    with one output that is not it."""
    if op.name == "func.return":
        return True
    if op.name == "memref.copy":
        return op.operands[1] != buffer
    return op.name == "linalg.generic" and len(op.results) == 0 and \
        list(op.operands)[-1] != buffer and \
        list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[1] == 1


def _fold_row_max(matmul: Operation, c: ir.Value, ops: list[Operation]
                  ) -> tuple[ir.Value, str] | None:
    """Erase the row-maximum generic reading C (and its buffer's -inf fill) when the
    kernel can write the maxima instead: (their buffer, the max op), or None (nothing
    changed)."""
    at_mm = position(ops, matmul)
    users = [u.owner.operation for u in c.uses if u.owner.operation != matmul]
    found = [u for u in users if u.name == "linalg.generic" and _row_max_of(u, c)]
    if len(found) != 1 or found[0].block != matmul.block:
        return None
    generic = found[0]
    max_op = _row_max_of(generic, c)
    at_gen = position(ops, generic)
    # C's other users must not write it; they may run before or after the generic.
    if at_gen < at_mm or not all(_reads_only(u, c) for u in users if u != generic):
        return None
    m = generic.operands[1]
    if not is_fresh(m) or defining_op(m).block != matmul.block or \
            len(defining_op(m).operands):  # a static allocation can move up to the call
        return None
    m_users = [u.owner.operation for u in m.uses if u.owner.operation != generic]
    fills = [u for u in m_users if _at(ops, u) < at_gen]
    if len(fills) != 1 or fill_value(fills[0]) != float("-inf") or fills[0].block != matmul.block:
        return None
    fills[0].erase()
    generic.erase()
    if position(ops, defining_op(m)) > at_mm:
        defining_op(m).move_before(matmul)
    return m, max_op


def fold_zero_fill(matmul: Operation, row_max: bool = False, scale: bool = True
                   ) -> tuple[Epilogue, list[ir.Value]] | None:
    """Drop `matmul`'s zero fill and (with `scale`) fold a following constant scale
    (module docstring) for a kernel that stores all of C; with `row_max`, also a
    row-maximum reduction of the (scaled) C. Returns the epilogue and the kernel's extra
    operands (the maxima's buffer), or None (nothing changed) when a guard fails."""
    c = matmul.operands[2]
    if not is_fresh(c) or defining_op(c).block != matmul.block:
        return None
    if any(base_buffer(x) == c for x in list(matmul.operands)[:2]):
        return None
    ops = [o.operation for o in matmul.block.operations]
    at_mm = position(ops, matmul)
    fill = next((o for o in reversed(ops[:at_mm]) if o.name not in _QUIET), None)
    if fill is None or not is_zero_fill(fill) or fill.operands[1] != c:
        return None
    folded = None  # (op, f32 bits) of the scale folded into the kernel
    users = [u.owner.operation for u in c.uses]
    generics = [u for u in users if u.name == "linalg.generic"]
    if scale and len(users) == 3 and len(generics) == 1 and \
            generics[0].block == matmul.block:
        generic = generics[0]
        folded = _scale_of(generic, c)
        d = generic.operands[1] if folded else None
        if d is not None and (d.type != c.type or not is_fresh(d) or any(
                _at(ops, u.owner.operation) < position(ops, generic)
                for u in d.uses if u.owner.operation != generic)):
            folded = None
        if folded is not None and position(ops, generic) > at_mm:
            d_alloc = defining_op(d)
            generic.erase()
            d.replace_all_uses_with(c)
            d_alloc.erase()
        else:
            folded = None
    fill.erase()
    ops = [o.operation for o in matmul.block.operations]
    found = _fold_row_max(matmul, c, ops) if row_max else None
    scale_op, bits = folded if folded else (None, 0)
    if found is None:
        return Epilogue(scale_op, bits), []
    return Epilogue(scale_op, bits, found[1]), [found[0]]
