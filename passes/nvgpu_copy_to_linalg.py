"""`accel-nvgpu-copy-to-linalg`: `memref.copy` -> `linalg.copy`, so copies become kernels.

Why: bufferization writes `memref.copy` for padding (`tensor.insert_slice` into a filled
buffer), concatenation and copies before in-place updates. Between strided views such a
copy is a loop nest, which on the host would have to read device memory; as a
`linalg.copy` it goes through the same parallel-loop -> kernel path as every other op:

    memref.copy %a, %sub : memref<2x3x8x8xf32> to memref<2x3x8x8xf32, strided<...>>
  ->
    linalg.copy ins(%a : memref<2x3x8x8xf32>) outs(%sub : memref<2x3x8x8xf32, strided<...>>)
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation
from accel.passes.base import FunctionPass, register_pass


@register_pass
@dataclass(frozen=True)
class NvgpuCopyToLinalg(FunctionPass):
    """Rewrites every memref.copy of a function as a linalg.copy."""

    name = "accel-nvgpu-copy-to-linalg"

    def apply(self, func: Operation) -> None:
        from accel.ir import linalg

        copies: list[Operation] = []

        def visit(op: Operation) -> None:
            for region in op.regions:
                for block in region.blocks:
                    for child in block.operations:
                        if child.name == "memref.copy":
                            copies.append(child.operation)
                        visit(child.operation)

        visit(func)
        for op in copies:
            src, dst = op.operands
            with InsertionPoint(op), op.location:
                linalg.copy(src, outs=[dst])
            op.erase()
