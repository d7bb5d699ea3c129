"""Stores every iteration of a loop repeats, moved in front of it (for accel-parallelize-loops).

Fusion recomputes a per-channel value (a BatchNorm's scale) inside the loop over images
that it fused the value's consumers into, and keeps storing it there:

    affine.for %n = 0 to 32 {                     affine.for %c = 0 to 8 {
      affine.for %c = 0 to 8 {                      %s = f(%g[%c], %v[%c])
        %s = f(%g[%c], %v[%c])              ->      affine.store %s, %scale[0, %c]
        affine.store %s, %scale[0, %c]            }
        ... %s used by the image's nest ...       affine.for %n = 0 to 32 {
                                                    affine.for %c = 0 to 8 {
                                                      %s = f(%g[%c], %v[%c])
                                                      ... %s used as before ...

Every image writes the same values to the same elements, a write all iterations share, so
the loop over images stayed serial (a small CNN's training forward and backward at 2
threads). The store moves into a copy of the loops around it, in front of the loop, and
the values stay computed where they are used. Only a store whose buffer the loop never
reads, whose value and indices come from the loops around it (not the loop's own
variable), from outside, and from loads of buffers the loop does not write, in a loop of
affine, arith and math ops only that runs at least once: the buffer then ends with the
same contents.
"""

from __future__ import annotations

from accel.ir import InsertionPoint, Operation, ir
from accel.passes._affine import base_buffer, iv, trip_count, value_inside
from accel.passes.base import is_inside, ops_named

#: Ops a loop may hold for its stores to move (no calls, no other memory effects).
_PURE_PREFIXES = ("affine.", "arith.", "math.")


def _slice(store: Operation, loop: Operation, written: set[ir.Value], chain: list[Operation]
           ) -> list[Operation] | None:
    """The ops inside `loop` that the store's value and indices come from, or None if one
    depends on `loop`'s variable or a loop outside `chain`, or reads a buffer `loop` writes."""
    allowed_ivs = [iv(c) for c in chain]
    found: list[Operation] = []
    frontier = list(store.operands)[:1] + list(store.operands)[2:]
    while frontier:
        value = frontier.pop()
        if not value_inside(value, loop):
            continue
        owner = value.owner
        if isinstance(owner, ir.Block):
            if not any(value == a for a in allowed_ivs):  # `loop`'s own, or another loop's
                return None
            continue
        op = owner.operation
        if any(op == f for f in found):  # wrappers are new objects: compare, not id()
            continue
        if op.name == "affine.load":
            if base_buffer(op.operands[0]) in written:
                return None
        elif not op.name.startswith(("arith.", "math.")) and op.name != "affine.apply":
            return None
        if not any(op.parent == c for c in chain):
            return None  # computed elsewhere in the loop: not movable with the store
        found.append(op)
        frontier += list(op.operands)
    return found


def _chain(store: Operation, loop: Operation) -> list[Operation] | None:
    """The loops between `loop` and `store`, outermost first, if all are plain affine.for
    loops with constant bounds that run at least once."""
    chain = []
    parent = store.parent
    while parent is not None and parent.operation != loop:
        op = parent.operation
        if op.name != "affine.for" or list(op.results) or not trip_count(op):
            return None
        chain.append(op)
        parent = op.parent
    return chain[::-1] if parent is not None and chain else None


def hoist_invariant_stores(loop: Operation) -> bool:
    """Move the stores of `loop` that every iteration repeats in front of it (see the
    module docstring); whether any moved."""
    if not trip_count(loop) or any(not op.name.startswith(_PURE_PREFIXES)
                                   for op in ops_named(loop) if op != loop):
        return False
    stores = [(s, base_buffer(s.operands[1])) for s in ops_named(loop, ("affine.store",))]
    written = {target for _, target in stores}
    read = [base_buffer(a.operands[0]) for a in ops_named(loop, ("affine.load",))]
    moved = False
    for store, target in stores:
        if target in read or sum(t == target for _, t in stores) != 1:
            continue
        chain = _chain(store, loop)
        if chain is None:
            continue
        deps = _slice(store, loop, written, chain)
        if deps is None:
            continue
        _copy_in_front(loop, chain, deps, store)
        store.erase()
        moved = True
    return moved


def _copy_in_front(loop: Operation, chain: list[Operation], deps: list[Operation],
                   store: Operation) -> None:
    """A copy of `chain` in front of `loop` holding only `deps` and `store`."""
    keep = [*chain, *deps, store]
    outer = chain[0]
    with InsertionPoint(loop):
        copy = outer.clone()
    # The copy mirrors the original op for op: walk both in the same order.
    originals, copies = ops_named(outer), ops_named(copy.operation)
    drop = [c for o, c in zip(originals, copies, strict=True)
            if c.name != "affine.yield" and not any(o == k for k in keep)]
    # Only the outermost: erasing an op erases what it holds, and an inner loop's yield
    # (kept above) would otherwise outlive the values it yields (a reduction carried in
    # iter_args): a use of a freed value, which corrupted the heap.
    roots: list[Operation] = []
    for op in drop:  # the walk's order: an op's ancestors come before it
        if not any(is_inside(op, root) for root in roots):
            roots.append(op)
    for op in reversed(roots):  # users (later in the walk) before their definitions
        op.erase()
