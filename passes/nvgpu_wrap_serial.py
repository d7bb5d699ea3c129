"""`accel-nvgpu-wrap-serial`: loop nests and scalar code with no parallel loop -> a
one-iteration `scf.parallel`, so they become (one-thread) kernels too.

Why: `convert-linalg-to-parallel-loops` makes a reduction over every dimension (a full
sum) a plain `scf.for` nest in the host function, and a rank-0 op (filling a scalar) a
bare `memref.load`/`memref.store`; left there, the host would have to touch device memory.
Wrapped, each run of such ops is a kernel like every other nest (one thread: slow for big
inputs, but correct and on the GPU):

    scf.for %k = %c0 to %c64 step %c1 { ... }
    memref.store %cst, %sum[] : memref<f32>
  ->
    scf.parallel (%u) = (%c0) to (%c1) step (%c1) {
      scf.for %k = ... { ... }
      memref.store %cst, %sum[] : memref<f32> }

A run is the longest sequence of consecutive ops in the function body other than the host
side's own (allocation, globals, views, constants, parallel loops, launches, return) whose
results are used only inside the run; a run whose values escape is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, ir
from accel.passes.base import FunctionPass, register_pass

#: Ops that stay in the host function (the kernel sequence's vocabulary).
HOST_OPS = frozenset({
    "arith.constant", "memref.alloc", "memref.alloca", "memref.dealloc", "memref.get_global",
    "memref.expand_shape", "memref.collapse_shape", "memref.cast", "memref.subview",
    "memref.reinterpret_cast", "memref.copy", "scf.parallel", "gpu.launch",
    "gpu.launch_func", "func.return",
})


def _runs(block: ir.Block) -> list[list[Operation]]:
    runs: list[list[Operation]] = [[]]
    for op in block.operations:
        op = op.operation
        if op.name in HOST_OPS:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(op)
    return [r for r in runs if r]


def _escapes(run: list[Operation]) -> bool:
    inside = {id(op) for op in run}
    for op in run:
        for result in op.results:
            for use in result.uses:
                owner = use.owner
                while owner is not None and id(owner) not in inside:
                    owner = owner.parent if owner.name != "func.func" else None
                    if owner is not None:
                        owner = owner.operation
                if owner is None:
                    return True
    return False


@register_pass
@dataclass(frozen=True)
class NvgpuWrapSerial(FunctionPass):
    """Wraps each run of serial code of a function body in a one-iteration scf.parallel."""

    name = "accel-nvgpu-wrap-serial"

    def apply(self, func: Operation) -> None:
        from accel.ir import arith, scf

        for region in func.regions:
            for block in region.blocks:
                for run in _runs(block):
                    if _escapes(run):
                        continue
                    index = ir.IndexType.get()
                    with InsertionPoint(run[0]), run[0].location:
                        c0 = arith.ConstantOp(index, 0).result
                        c1 = arith.ConstantOp(index, 1).result
                        wrapper = scf.ParallelOp([], [c0], [c1], [c1], [])
                        body = wrapper.regions[0].blocks.append(index)
                    with InsertionPoint(body), run[0].location:
                        reduce = scf.ReduceOp([], 0)
                    for op in run:
                        op.move_before(reduce)
