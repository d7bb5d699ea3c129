"""Guard 4 of `accel-affine-fusion`: a buffer that fusion left only partly computed.

Why: MLIR's producer-consumer fusion computes, inside the consumer, the slice of the
producer that the consumer reads. It may then remove the producer nest even though other
nests still read the rest of its buffer. Seen on a GPT-2 layer: the QKV projection writes
a 10x96 buffer; the nest that writes the key cache reads columns 32..64, and the value and
query nests read 64..96 and 0..32. After fusion the projection ran only inside the key
nest, for its 32 columns per head (`affine.for %c = #map(%h) to #map1(%h)`). The value
and query nests then read memory that nothing had written.

The check works per top-level op of a function, in program order. A buffer the function
allocates is
- *full* once some op stores to it under loops with constant bounds only, or once its
  sliced stores (loops whose bounds depend on an enclosing loop) have together written
  every element: the iterations are enumerated with numpy, up to `MOST_POINTS` (a ReLU
  fused into a 2x2 max pool writes its rows two at a time, all of them);
- *partial* while only sliced stores that miss some element (or cannot be enumerated)
  wrote it.
A read of a partial buffer by a later op that does not write the buffer itself is the
hazard. `affine_fusion` keeps a function unfused when fusion adds such a read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
from accel.ir import Operation, ir
from accel.passes.base import ops_named

#: Most iteration points (or buffer elements) a coverage check enumerates; beyond, a sliced
#: write counts as partial (the function stays unfused: always correct).
MOST_POINTS = 1 << 22


def _constant_bounds(loop: Operation) -> bool:
    return len(loop.operands) == 0  # affine.for bounds with no operands are constants


def _loops(store: Operation, top: Operation) -> list[Operation] | None:
    """The `affine.for`s around `store` up to `top`, outermost first (None: another op with
    a region is in between)."""
    loops: list[Operation] = []
    op = store.parent
    while op is not None:
        if op.name != "affine.for":
            return None
        loops.append(op)
        if op == top:
            return loops[::-1]
        op = op.parent
    return None


def _full_store(store: Operation, top: Operation) -> bool:
    """Whether every loop around `store`, up to and including `top`, has constant bounds."""
    op = store.parent
    while op is not None:
        if op.name == "affine.for" and not _constant_bounds(op):
            return False
        if op == top:
            return True
        op = op.parent
    return True


def _evaluate(expr: ir.AffineExpr, dims: list[np.ndarray]) -> np.ndarray | None:
    """`expr` over arrays of dim values (None: a symbol)."""
    e = expr.maybe_downcast()
    if isinstance(e, ir.AffineConstantExpr):
        return np.full(dims[0].shape if dims else (1,), e.value, dtype=np.int64)
    if isinstance(e, ir.AffineDimExpr):
        return dims[e.position]
    if isinstance(e, ir.AffineSymbolExpr):
        return None
    lhs, rhs = _evaluate(e.lhs, dims), _evaluate(e.rhs, dims)
    if lhs is None or rhs is None:
        return None
    if isinstance(e, ir.AffineAddExpr):
        return lhs + rhs
    if isinstance(e, ir.AffineMulExpr):
        return lhs * rhs
    if isinstance(e, ir.AffineModExpr):
        return np.mod(lhs, rhs)
    if isinstance(e, ir.AffineFloorDivExpr):
        return np.floor_divide(lhs, rhs)
    if isinstance(e, ir.AffineCeilDivExpr):
        return -np.floor_divide(-lhs, rhs)
    return None


def _map_values(amap: ir.AffineMap, operands: list[ir.Value], ivs: list[ir.Value],
                points: np.ndarray) -> list[np.ndarray] | None:
    """Each result of `amap` at every point (columns of `points` are `ivs`' values)."""
    if amap.n_symbols:
        return None
    dims = []
    for value in operands:
        column = next((i for i, v in enumerate(ivs) if v == value), None)
        if column is None:
            return None
        dims.append(points[:, column])
    out = []
    for expr in amap.results:
        values = _evaluate(expr, dims)
        if values is None:
            return None
        out.append(np.broadcast_to(values, (len(points),)))
    return out


def _points(loops: list[Operation]) -> np.ndarray | None:
    """Every iteration (one row, a column per loop's induction variable) of `loops`."""
    points = np.zeros((1, 0), dtype=np.int64)
    ivs: list[ir.Value] = []
    for loop in loops:
        lo_map = ir.AffineMapAttr(loop.attributes["lowerBoundMap"]).value
        hi_map = ir.AffineMapAttr(loop.attributes["upperBoundMap"]).value
        operands = list(loop.operands)
        if len(operands) != lo_map.n_inputs + hi_map.n_inputs:
            return None  # loop-carried values
        lows = _map_values(lo_map, operands[:lo_map.n_inputs], ivs, points)
        highs = _map_values(hi_map, operands[lo_map.n_inputs:], ivs, points)
        if lows is None or highs is None:
            return None
        lo = np.max(np.stack(lows), axis=0)
        hi = np.min(np.stack(highs), axis=0)
        step = ir.IntegerAttr(loop.attributes["step"]).value
        counts = np.maximum(0, -np.floor_divide(lo - hi, step))
        total = int(counts.sum())
        if total > MOST_POINTS:
            return None
        rows = np.repeat(np.arange(len(points)), counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        inner = np.repeat(lo, counts) + (np.arange(total) - starts) * step
        points = np.concatenate([points[rows], inner[:, None]], axis=1)
        ivs.append(loop.regions[0].blocks[0].arguments[0])
    return points


def _mark(store: Operation, top: Operation, written: np.ndarray) -> bool:
    """Mark in `written` (the buffer's elements, flat) what `store` writes over all
    iterations of `top`; False when that cannot be worked out."""
    loops = _loops(store, top)
    shape = ir.MemRefType(store.operands[1].type).shape
    if loops is None:
        return False
    points = _points(loops)
    if points is None:
        return False
    ivs = [loop.regions[0].blocks[0].arguments[0] for loop in loops]
    amap = ir.AffineMapAttr(store.attributes["map"]).value
    indices = _map_values(amap, list(store.operands)[2:], ivs, points)
    if indices is None or len(indices) != len(shape):
        return False
    flat = np.zeros(len(points), dtype=np.int64)
    for index, size in zip(indices, shape, strict=True):
        if len(index) and (index.min() < 0 or index.max() >= size):
            return False
        flat = flat * size + index
    written[flat] = True
    return True


def partial_reads(func: Operation,
                  key: Callable[[ir.Value], Hashable | None]) -> set[Hashable]:
    """Keys (`key(memref)`; None: not tracked) of buffers that some top-level op of `func`
    reads while the earlier writes to them did not write every element: only sliced
    writes (loops bounded by an enclosing loop) whose union misses some element, or that
    cannot be enumerated (see the module docstring)."""
    full: set[Hashable] = set()
    partial: dict[Hashable, np.ndarray | None] = {}  # key -> elements written (None: unknown)
    hazards: set[Hashable] = set()
    for top in func.regions[0].blocks[0].operations:
        top = top.operation
        accesses = ops_named(top, ("affine.load", "affine.store"))
        written = {key(a.operands[1]) for a in accesses if a.name == "affine.store"}
        for access in accesses:
            if access.name != "affine.load":
                continue
            k = key(access.operands[0])
            if k is not None and k not in written and k in partial and k not in full:
                hazards.add(k)
        for access in accesses:
            if access.name != "affine.store":
                continue
            k = key(access.operands[1])
            if k is None or k in full:
                continue
            if _full_store(access, top):
                full.add(k)
                continue
            memref = ir.MemRefType(access.operands[1].type)
            size = int(np.prod(memref.shape)) if memref.shape else 1
            fresh = np.zeros(size, dtype=bool) if memref.has_static_shape and \
                size <= MOST_POINTS else None  # a dynamic shape: unknown, partial
            mask = partial.get(k, fresh)
            if mask is not None and not _mark(access, top, mask):
                mask = None
            partial[k] = mask
            if mask is not None and mask.all():
                full.add(k)  # the slices together write every element
    return hazards
