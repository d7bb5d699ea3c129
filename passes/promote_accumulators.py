"""`accel-promote-accumulators`: a sum kept in memory across a loop becomes a loop-carried value.

Why: after fusion a reduction into a buffer element (BatchNorm backward's per-channel sums,
a row sum) reads and writes that element every iteration:

    affine.for %c = 0 to 8 {                       affine.for %c = 0 to 8 {
      affine.for %w = 0 to 28 {                      %init = affine.load %acc[%c]
        %x = ...                           ->        %s = affine.for %w = 0 to 28
        %a = affine.load %acc[%c]                        iter_args(%a = %init) -> (f32) {
        %s = arith.addf %x, %a                         %x = ...
        affine.store %s, %acc[%c]                      %t = arith.addf %x, %a
      } }                                              affine.yield %t }
                                                     affine.store %s, %acc[%c] }

LLVM keeps such a sum in a register only when it can prove no other store in the loop
writes the element. Once `accel-parallelize-loops` outlines the nest, every buffer is a
function argument and it cannot: the sum went through memory each iteration (a 5-cycle
store-to-load chain) and the loop did not vectorise. The CNN+BN training step spent 39% of
its time at 2 threads in two such nests. As a loop-carried value the reduction vectorises
(the adds carry `reassoc`), and the order of the adds, so the result, is what it was
without vectorisation.

Rewrites an `affine.for` L (no results yet, at least one iteration) for each buffer B with
exactly two accesses in L, an `affine.load` followed by an `affine.store` directly in L's
body, with the same map and indices, all defined outside L, when:
- B's root is a function argument, a `memref.alloc`/`alloca` or a global (as in
  `accel-parallelize-loops`, different arguments are taken not to alias), and no other
  memref used anywhere in L (including views, calls and non-affine ops) has that root;
- the value stored is a float, integer or index scalar.
Inner loops first, so a sum over a whole nest moves out one loop at a time and in the end
is read once before the nest and written once after it. Run it after
`accel-affine-fusion` and the loop passes that need loops without results, before
`accel-parallelize-loops`.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes import _affine as af
from accel.passes.base import FunctionPass, ops_named, register_pass
from accel.passes.parallelize_loops import _root


def _memref_operands(loop: Operation) -> list[tuple[Operation, ir.Value]]:
    """(op, memref operand) for every op inside `loop`, nested ones included."""
    found = []
    for op in ops_named(loop):
        for value in op.operands:
            if isinstance(value.type, ir.MemRefType):
                found.append((op, value))
    return found


def _root_key(memref: ir.Value) -> object | None:
    root = _root(memref)
    return None if root is None else root[0]


def candidates(loop: Operation) -> list[tuple[Operation, Operation]]:
    """The (load, store) pairs of `loop` that may become loop-carried values."""
    if loop.name != "affine.for" or list(loop.results) or not af.trip_count(loop):
        return []
    body = af.body(loop)
    uses: dict[object, list[Operation]] = {}
    unknown = False
    for op, memref in _memref_operands(loop):
        key = _root_key(memref)
        if key is None:
            unknown = True  # an opaque memref may be anything: no buffer is safe
            continue
        uses.setdefault(key, []).append(op)
    if unknown:
        return []
    pairs = []
    for ops in uses.values():
        if len(ops) != 2 or [op.name for op in ops] != ["affine.load", "affine.store"]:
            continue
        load, store = ops
        at_load = next((i for i, op in enumerate(body) if op == load), None)
        at_store = next((i for i, op in enumerate(body) if op == store), None)
        if at_load is None or at_store is None or at_load > at_store:
            continue  # nested deeper, or stored before it is read
        if af.access_key(load) != af.access_key(store) or \
                af.memref_and_indices(load)[0] != af.memref_and_indices(store)[0]:
            continue
        if any(af.value_inside(v, loop) for v in af.memref_and_indices(load)[1]):
            continue  # a different element each iteration
        t = store.operands[0].type
        if not (isinstance(t, ir.FloatType | ir.IntegerType | ir.IndexType)):
            continue
        pairs.append((load, store))
    return pairs


def promote(loop: Operation, pairs: list[tuple[Operation, Operation]]) -> Operation:
    """Rewrite `loop` with one iter_arg per pair; returns the new loop."""
    affine = dialects.affine
    lo = ir.AffineMapAttr(loop.attributes["lowerBoundMap"]).value
    hi = ir.AffineMapAttr(loop.attributes["upperBoundMap"]).value
    operands = list(loop.operands)
    lo_ops, hi_ops = operands[:lo.n_inputs], operands[lo.n_inputs:lo.n_inputs + hi.n_inputs]
    with InsertionPoint(loop), loop.location:
        inits = [load.clone() for load, _ in pairs]
        new = affine.AffineForOp(lo, hi, ir.IntegerAttr(loop.attributes["step"]).value,
                                 [i.results[0] for i in inits], lower_bound_operands=lo_ops,
                                 upper_bound_operands=hi_ops)
    new_body = new.body
    with InsertionPoint(new_body), loop.location:
        yield_op = affine.AffineYieldOp([store.operands[0] for _, store in pairs])
    old_body = loop.regions[0].blocks[0]
    for op in af.body(loop):
        op.move_before(yield_op.operation)
    old_body.arguments[0].replace_all_uses_with(new.induction_variable)
    for (load, _), carried in zip(pairs, list(new_body.arguments)[1:], strict=True):
        load.results[0].replace_all_uses_with(carried)
        load.erase()
    last = new.operation
    for (_, store), result in zip(pairs, new.results, strict=True):
        store.move_after(last)
        store.operands[0] = result
        last = store
    loop.erase()
    return new.operation


@register_pass
@dataclass(frozen=True)
class PromoteAccumulators(FunctionPass):
    """Sums kept in a buffer element across a loop become the loop's iter_args."""

    name = "accel-promote-accumulators"

    def apply(self, func: Operation) -> None:
        # Inner loops first: each rewrite leaves a load before and a store after the new
        # loop, which makes the enclosing loop a candidate in turn.
        for loop in reversed(ops_named(func, ("affine.for",))):
            pairs = candidates(loop)
            if pairs:
                promote(loop, pairs)
