"""`accel-aligned-pointer-provenance`: heap buffers' aligned pointers keep their provenance.

Why: `finalize-memref-to-llvm` aligns each `malloc`ed buffer with integer arithmetic and
turns the result back into a pointer:

    %p = llvm.call @malloc(%bytes)                %p = llvm.call @malloc(%bytes)
    %i = llvm.ptrtoint %p : !llvm.ptr to i64      %i = llvm.ptrtoint %p : !llvm.ptr to i64
    %b = llvm.add %i, %bump : i64                 %b = llvm.add %i, %bump : i64
    %r = llvm.urem %b, %align : i64         ->    %r = llvm.urem %b, %align : i64
    %a = llvm.sub %b, %r : i64                    %a = llvm.sub %b, %r : i64
    %q = llvm.inttoptr %a : i64 to !llvm.ptr      %d = llvm.sub %a, %i : i64
                                                  %q = llvm.getelementptr %p[%d] : i8

LLVM's alias analysis cannot trace an `inttoptr` back to the `malloc` call, so any two
such buffers "may alias": a reduction that accumulates into one buffer while the same loop
stores into another (BatchNorm's variance next to the centred input, after fusion) kept its
accumulator in memory, one dependent load and store per element, and was not vectorised
(BatchNorm forward on 32x8x28x28: 0.52 ms, 0.16 ms with this pass). The GEP addresses the
same byte and is based on `%p`: each buffer is known distinct from every other allocation.

Only this idiom is rewritten: `%a` lies in [`%i`, `%i + %bump`], inside the allocation
(which `finalize-memref-to-llvm` pads by the alignment), so the GEP stays in its object.
Any other `inttoptr` is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.base import ModulePass, defining_op, ops_named, register_pass


def aligned_base(inttoptr: Operation) -> tuple[ir.Value, ir.Value] | None:
    """(the allocated pointer %p, its integer %i) when `inttoptr` converts `(%i + bump) -
    ((%i + bump) urem align)` with `%i = ptrtoint %p`; None for any other operand."""
    sub = defining_op(inttoptr.operands[0], "llvm.sub")
    if sub is None:
        return None
    bumped, rem = sub.operands
    urem = defining_op(rem, "llvm.urem")
    add = defining_op(bumped, "llvm.add")
    if urem is None or add is None or urem.operands[0] != bumped:
        return None
    for side in add.operands:
        ptrtoint = defining_op(side, "llvm.ptrtoint")
        if ptrtoint is not None:
            return ptrtoint.operands[0], side
    return None


#: `rawConstantIndices` entry for an index taken from `dynamicIndices` (MLIR's
#: `LLVM::GEPOp::kDynamicIndex`, INT32_MIN).
DYNAMIC_INDEX = -(1 << 31)


@register_pass
@dataclass(frozen=True)
class AlignedPointerProvenance(ModulePass):
    """Aligned heap pointers as GEPs from malloc's result instead of inttoptr."""

    name = "accel-aligned-pointer-provenance"

    def apply(self, module: Operation) -> None:
        i8 = ir.IntegerType.get_signless(8)
        for op in ops_named(module, ("llvm.inttoptr",)):
            found = aligned_base(op)
            if found is None:
                continue
            pointer, integer = found
            result = op.results[0]
            if result.type != pointer.type:  # another address space: leave it
                continue
            with op.location, InsertionPoint(op):
                delta = dialects.llvm.SubOp(op.operands[0], integer, 0).result
                gep = dialects.llvm.GEPOp(result.type, pointer, [delta], [DYNAMIC_INDEX], i8,
                                          0).result
            result.replace_all_uses_with(gep)
            op.erase()
