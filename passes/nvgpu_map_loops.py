"""`accel-nvgpu-map-loops`: each outermost `scf.parallel` -> blocks x threads, coalesced.

Why: `convert-parallel-loops-to-gpu` needs each parallel loop split into a block loop and a
thread loop with a constant extent and a `mapping` attribute. Upstream
`scf-parallel-loop-tiling` + `gpu-map-parallel-loops` give dimension 0 (the outermost,
largest stride) to threadIdx.x, so neighbouring threads read addresses a whole row apart
(uncoalesced, ~10x less bandwidth), and loops of rank > 3 run their extra dimensions
sequentially in every thread. Here every nest is flattened instead: one linear index over
all its iterations, `threads` per block, the innermost dimension varying fastest, so thread
t and t+1 touch neighbouring elements whatever the rank:

    scf.parallel (%i, %j) = (0, 0) to (64, 100) step (1, 1) { body(%i, %j) }
  ->
    scf.parallel (%b) = (0) to (25) step (1) {                       // blockIdx.x
      scf.parallel (%t) = (0) to (256) step (1) {                    // threadIdx.x
        %l = %b * 256 + %t
        scf.if %l < 6400 { body(%l floordiv 100, %l mod 100) } } }

Loops with non-constant bounds or steps, loop-carried reductions (`init` values), and
loops already inside a `scf.parallel` or `gpu.launch` are left alone (a later launch
conversion then leaves them on the host, where the nvgpu target reports them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, ir
from accel.passes.base import FunctionPass, register_pass


def constant_index(value: ir.Value) -> int | None:
    """The value of an `arith.constant` of index type, or None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


def outermost_parallel_loops(func: Operation) -> list[Operation]:
    """`scf.parallel` ops of `func` not nested in another scf.parallel or gpu.launch."""
    found: list[Operation] = []

    def visit(op: Operation, inside: bool) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = child.operation
                    if child.name == "scf.parallel" and not inside:
                        found.append(child)
                    visit(child, inside or child.name in ("scf.parallel", "gpu.launch"))

    visit(func, False)
    return found


def _mapping(processor: str) -> ir.Attribute:
    return ir.Attribute.parse(f"[#gpu.loop_dim_map<processor = {processor}, "
                              "map = (d0) -> (d0), bound = (d0) -> (d0)>]")


@register_pass
@dataclass(frozen=True)
class NvgpuMapLoops(FunctionPass):
    """Flattens each outermost scf.parallel into blocks x threads mapped for the GPU."""

    name = "accel-nvgpu-map-loops"
    #: Threads per block (a multiple of the warp size, 32).
    threads: int = 256

    def apply(self, func: Operation) -> None:
        if self.threads < 32 or self.threads > 1024 or self.threads % 32:
            self.fail(func, f"threads must be a multiple of 32 from 32 to 1024, got "
                      f"{self.threads}")
        for loop in outermost_parallel_loops(func):
            with loop.location:  # new ops and block arguments take the loop's location
                self._rewrite(loop)

    def _rewrite(self, loop: Operation) -> None:
        from accel.ir import arith, scf

        rank = len(loop.regions[0].blocks[0].arguments)
        bounds = [constant_index(v) for v in loop.operands]
        if len(loop.results) or len(loop.operands) != 3 * rank or None in bounds:
            return
        lbs, ubs, steps = bounds[:rank], bounds[rank:2 * rank], bounds[2 * rank:]
        trips = [max(0, -(-(u - lb) // s)) for lb, u, s in zip(lbs, ubs, steps, strict=True)]
        total = math.prod(trips)
        if total == 0:
            return
        index = ir.IndexType.get()
        loc = loop.location

        def const(n: int) -> ir.Value:
            return arith.ConstantOp(index, n, loc=loc).result

        with InsertionPoint(loop), loc:
            c0, c1 = const(0), const(1)
            blocks = scf.ParallelOp([], [c0], [const(-(-total // self.threads))], [c1], [])
        blocks.operation.attributes["mapping"] = _mapping("block_x")
        b_body = blocks.regions[0].blocks.append(index)
        with InsertionPoint(b_body), loc:
            threads = scf.ParallelOp([], [c0], [const(self.threads)], [c1], [])
            scf.ReduceOp([], 0)
        threads.operation.attributes["mapping"] = _mapping("thread_x")
        t_body = threads.regions[0].blocks.append(index)
        with InsertionPoint(t_body), loc:
            linear = arith.AddIOp(arith.MulIOp(b_body.arguments[0], const(self.threads)).result,
                                  t_body.arguments[0]).result
            inside = arith.CmpIOp(arith.CmpIPredicate.ult, linear, const(total)).result
            guard = scf.IfOp(inside)
            scf.ReduceOp([], 0)
        then = guard.then_block
        with InsertionPoint(then), loc:
            stride = total
            old_body = loop.regions[0].blocks[0]
            for k in range(rank):
                stride //= trips[k]
                idx = arith.DivUIOp(linear, const(stride)).result if stride > 1 else linear
                if k > 0:
                    idx = arith.RemUIOp(idx, const(trips[k])).result
                iv = idx if steps[k] == 1 else arith.MulIOp(idx, const(steps[k])).result
                iv = iv if lbs[k] == 0 else arith.AddIOp(iv, const(lbs[k])).result
                old_body.arguments[k].replace_all_uses_with(iv)
            terminator = scf.YieldOp([])
        for op in list(old_body.operations)[:-1]:  # all but the scf.reduce terminator
            op.operation.move_before(terminator)
        loop.erase()
