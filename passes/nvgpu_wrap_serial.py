"""`accel-nvgpu-wrap-serial`: a loop nest with no parallel loop -> a one-iteration one.

Why: `convert-linalg-to-parallel-loops` makes a reduction over every dimension (a full
sum, a dot product) a plain `scf.for` nest in the host function; left there, it would need
the host to read device memory. Wrapped in a one-iteration `scf.parallel`, it becomes a
one-thread kernel like every other nest (slow for big inputs, but correct and on the GPU):

    scf.for %k = %c0 to %c64 step %c1 { ... }
  ->
    scf.parallel (%u) = (%c0) to (%c1) step (%c1) { scf.for %k = ... { ... } }

Only `scf.for` ops directly in the function body are wrapped.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, ir
from accel.passes.base import FunctionPass, register_pass


@register_pass
@dataclass(frozen=True)
class NvgpuWrapSerial(FunctionPass):
    """Wraps each top-level scf.for nest of a function in a one-iteration scf.parallel."""

    name = "accel-nvgpu-wrap-serial"

    def apply(self, func: Operation) -> None:
        from accel.ir import arith, scf

        for region in func.regions:
            for block in region.blocks:
                for op in [o.operation for o in block.operations if o.name == "scf.for"]:
                    index = ir.IndexType.get()
                    with InsertionPoint(op), op.location:
                        c0 = arith.ConstantOp(index, 0).result
                        c1 = arith.ConstantOp(index, 1).result
                        wrapper = scf.ParallelOp([], [c0], [c1], [c1], [])
                    with op.location:
                        body = wrapper.regions[0].blocks.append(index)
                    with InsertionPoint(body), op.location:
                        reduce = scf.ReduceOp([], 0)
                    op.move_before(reduce)
