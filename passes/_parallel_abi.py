"""The fork-join ABI between generated code and the CPU runtime, rendered in one place.

Generated code runs `@name_entry(ctx, lo, hi)` over items [0, n) on threads by calling the
runtime (`python/accel/host/parallel.py`):

    func.func private @accel_parallel_for((!llvm.ptr, index, index) -> (), !llvm.ptr, index)

`ctx` points at a stack struct holding what the entry needs (descriptors, scalars). The
GEMM/conv kernels, flash-attention tiles and accel-parallelize-loops all call it through
`fork_join` below; the runtime itself implements the symbol.
"""

from __future__ import annotations

from accel.host.parallel import NUM_THREADS, PARALLEL_FOR  # the runtime's symbols

#: The type of an entry function: (ctx, lo, hi) -> ().
ENTRY_TYPE = "(!llvm.ptr, index, index) -> ()"
#: The runtime's declaration, for modules that call it.
PARALLEL_FOR_DECL = f"func.func private @{PARALLEL_FOR}({ENTRY_TYPE}, !llvm.ptr, index)"
#: The runtime's thread count, for kernels that choose a path by it (an i32 global).
NUM_THREADS_DECL = f"llvm.mlir.global external @{NUM_THREADS}() {{addr_space = 0 : i32}} : i32"


def fork_join(entry: str, ctx: str, items: str, *, indent: str = "") -> list[str]:
    """Lines that run `@entry(ctx, lo, hi)` over [0, items) on the runtime's threads."""
    return [f"{indent}%f = func.constant @{entry} : {ENTRY_TYPE}",
            f"{indent}func.call @{PARALLEL_FOR}(%f, {ctx}, {items}) : ({ENTRY_TYPE}, "
            "!llvm.ptr, index) -> ()"]
