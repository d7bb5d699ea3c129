"""Parallel loops, continued: a stack scratch buffer shared by several nests gets one copy
per nest, so that each nest may keep it private to its threads.

Why: affine fusion leaves a small stack buffer for a value a fused nest computes and reads
back (`memref.alloca() : memref<1x1x14x14xf32>`: a 2x2 average pool's backward per image
and channel), and gives several nests the same one. `accel-parallelize-loops` makes such a
buffer private to each iteration only when the loop holds all of its uses, so both nests of
the CNN+BN train step's backward that shared one (2.9 M and 3.3 M of work) stayed serial at
every thread count.

Sound when every top-level op of the block that touches the buffer overwrites it before
reading it (`_overwritten_first`, per iteration of that op when it is a loop): no value
flows through the buffer from one of them to another, so separate buffers compute the
same. Only `memref.alloca` of static shape (no deallocation to split).
"""

from __future__ import annotations

from collections.abc import Callable

from accel.ir import InsertionPoint, Operation, ir
from accel.passes.base import defining_op, ops_named


def split_shared_scratch(loop: Operation, written: list[ir.Value],
                         overwritten_first: Callable[[ir.Value, Operation, int], bool],
                         access_memref: Callable[[Operation], ir.Value]) -> bool:
    """For each buffer of `written` (the memrefs `loop` stores to) that is a static
    `memref.alloca` also used outside `loop`: when every top-level op of `loop`'s block
    touching it overwrites it first, `loop`'s uses get a fresh alloca in front of `loop`.
    Whether any did."""
    block_ops = [op.operation for op in loop.parent.regions[0].blocks[0].operations] \
        if loop.parent is not None else []
    here = next((k for k, top in enumerate(block_ops) if top == loop), None)
    if here is None:
        return False
    changed = False
    for memref in written:
        owner = defining_op(memref, "memref.alloca")
        if owner is None or list(owner.operands) or \
                not ir.MemRefType(memref.type).has_static_shape:
            continue
        touching: dict[int, list[Operation]] = {}
        for k, top in enumerate(block_ops):
            accesses = [a for a in ops_named(top, ("affine.load", "affine.store"))
                        if access_memref(a) == memref]
            if accesses:
                touching[k] = accesses
        if len(touching) < 2 or here not in touching:
            continue
        if sum(len(v) for v in touching.values()) != len(list(memref.uses)):
            continue  # a use that is not an affine access (a call, a view)
        if not all(block_ops[k].name == "affine.for" and
                   overwritten_first(memref, block_ops[k], len(accesses))
                   for k, accesses in touching.items()):
            continue
        fresh = owner.clone(ip=InsertionPoint(loop))
        for access in touching[here]:
            for number, value in enumerate(access.operands):
                if value == memref:
                    access.operands[number] = fresh.results[0]
        changed = True
    return changed
