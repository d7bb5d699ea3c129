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
- *full* once some op stores to it under loops with constant bounds only, and
- *partial* when every store to it so far sits under a loop whose bounds depend on an
  enclosing loop (a fused slice).
A read of a partial buffer by a later op that does not write the buffer itself is the
hazard. `affine_fusion` keeps a function unfused when fusion adds such a read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from accel.ir import Operation, ir
from accel.passes.base import ops_named


def _constant_bounds(loop: Operation) -> bool:
    return len(loop.operands) == 0  # affine.for bounds with no operands are constants


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


def partial_reads(func: Operation,
                  key: Callable[[ir.Value], Hashable | None]) -> set[Hashable]:
    """Keys (`key(memref)`; None: not tracked) of buffers that some top-level op of `func`
    reads while every earlier write to them was a partial one (see the module docstring)."""
    full: set[Hashable] = set()
    partial: set[Hashable] = set()
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
            if k is not None:
                (full if _full_store(access, top) else partial).add(k)
    return hazards
