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
#hi = affine_map<(d0) -> (d0 * 4 + 2)>
#tile = affine_map<(d0) -> (d0 * 4 + 4)>
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


#: Half of each 4-element tile: elements 2, 3, 6 and 7 are never written.
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


def test_slices_that_together_write_everything_are_not_a_hazard():
    """A ReLU fused into a 2x2 max pool writes its output two rows at a time, every row:
    the later reader (the pool's indices, the backward) reads written memory."""
    tiles = SLICED_WRITE.replace("#hi(%i)", "#tile(%i)")
    assert _reads(tiles + READ) == set()


def test_slices_and_a_partial_second_pass_accumulate():
    """Two sliced nests, each half of every tile, write everything together."""
    other_half = SLICED_WRITE.replace("#lo(%i) to #hi(%i)", "#hi(%i) to #tile(%i)")
    assert _reads(SLICED_WRITE + other_half + READ) == set()
    assert _reads(SLICED_WRITE + SLICED_WRITE + READ) == {"m"}


def test_untracked_buffers_are_ignored():
    """Arguments (key None) may hold valid data where a slice did not write."""
    into_arg = SLICED_WRITE.replace("%m[%j]", "%y[%j]") + READ.replace("%m[%j]", "%y[%j]")
    assert _reads(into_arg) == set()


def test_dynamically_shaped_buffers_count_as_partial():
    """No element count to enumerate against: a sliced write stays partial."""
    with make_context():
        module = ir.Module.parse("""#lo = affine_map<(d0) -> (d0 * 4)>
#hi = affine_map<(d0) -> (d0 * 4 + 4)>
func.func @f(%x: memref<8xf32>, %y: memref<8xf32>, %n: index) {
  %m = memref.alloc(%n) : memref<?xf32>
  affine.for %i = 0 to 2 {
    affine.for %j = #lo(%i) to #hi(%i) {
      %v = affine.load %x[%j] : memref<8xf32>
      affine.store %v, %m[%j] : memref<?xf32>
    }
  }
  affine.for %j = 0 to 8 {
    %v = affine.load %m[%j] : memref<?xf32>
    affine.store %v, %y[%j] : memref<8xf32>
  }
  return
}
""")
        func = next(op.operation for op in module.body.operations)
        alloc = next(op.operation for op in func.regions[0].blocks[0].operations
                     if op.operation.name == "memref.alloc")
        assert partial_reads(func, lambda v: "m" if v == alloc.results[0] else None) == {"m"}
