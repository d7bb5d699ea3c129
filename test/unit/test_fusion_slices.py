"""Guard 4 of accel-affine-fusion (passes/_fusion_slices.py): reads of a buffer that only
sliced writes (loops bounded by an enclosing loop) computed.

The lit test accel-affine-fusion-slices.mlir holds the GPT-2 part on which MLIR's fusion
did that; here `partial_reads` itself, on small functions: the hazard, and the shapes that
must not count as one (a full write first, a nest that reads what it writes itself, a
buffer that was never written in slices, function arguments)."""

from __future__ import annotations

import pytest
from accel.context import make_context
from accel.ir import ir
from accel.passes._fusion_slices import partial_reads

HEADER = """#lo = affine_map<(d0) -> (d0 * 4)>
#hi = affine_map<(d0) -> (d0 * 4 + 4)>
func.func @f(%x: memref<8xf32>, %y: memref<8xf32>) {
  %m = memref.alloc() : memref<8xf32>
"""


def _reads(body: str) -> set:
    with make_context():
        module = ir.Module.parse(HEADER + body + "  return\n}\n")
        func = next(op.operation for op in module.body.operations
                    if op.operation.name == "func.func")
        alloc = next(op.operation for op in func.regions[0].blocks[0].operations
                     if op.operation.name == "memref.alloc")

        def key(value: ir.Value) -> str | None:
            return "m" if value == alloc.results[0] else None

        return partial_reads(func, key)


SLICED_WRITE = """  affine.for %i = 0 to 2 {
    affine.for %j = #lo(%i) to #hi(%i) {
      %v = affine.load %x[%j] : memref<8xf32>
      affine.store %v, %m[%j] : memref<8xf32>
    }
  }
"""
FULL_WRITE = """  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j] : memref<8xf32>
    affine.store %v, %m[%j] : memref<8xf32>
  }
"""
READ = """  affine.for %j = 0 to 8 {
    %v = affine.load %m[%j] : memref<8xf32>
    affine.store %v, %y[%j] : memref<8xf32>
  }
"""


def test_read_after_only_sliced_writes_is_the_hazard():
    assert _reads(SLICED_WRITE + READ) == {"m"}


@pytest.mark.parametrize("body", [
    FULL_WRITE + SLICED_WRITE + READ,  # a full write came first
    SLICED_WRITE + FULL_WRITE + READ,  # ... or after the slices, before the read
    FULL_WRITE + READ,  # no slices at all
    READ + SLICED_WRITE,  # the read comes before any write
], ids=["full-first", "full-after", "no-slices", "read-first"])
def test_not_a_hazard(body):
    assert _reads(body) == set()


def test_a_nest_that_writes_what_it_reads_is_not_a_reader():
    """A fused nest computes its slice and reads it back in the same top-level loop."""
    same_nest = """  affine.for %i = 0 to 2 {
    affine.for %j = #lo(%i) to #hi(%i) {
      %v = affine.load %x[%j] : memref<8xf32>
      affine.store %v, %m[%j] : memref<8xf32>
    }
    affine.for %j = #lo(%i) to #hi(%i) {
      %v = affine.load %m[%j] : memref<8xf32>
      affine.store %v, %y[%j] : memref<8xf32>
    }
  }
"""
    assert _reads(SLICED_WRITE + same_nest) == set()


def test_untracked_buffers_are_ignored():
    """Arguments (key None) may hold valid data where a slice did not write."""
    into_arg = SLICED_WRITE.replace("%m[%j]", "%y[%j]") + READ.replace("%m[%j]", "%y[%j]")
    assert _reads(into_arg) == set()
