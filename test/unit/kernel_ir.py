"""IR checks shared by the kernel tests (test_conv_kernels.py, test_matmul_microkernel.py)."""

from __future__ import annotations

import re


def kernel_forks(ir: str) -> int:
    """`accel_parallel_for` calls in the kernels' functions (not accel-parallelize-loops'
    `*_par<k>` nests around them, which depend on that pass's thresholds)."""
    return sum(chunk.count("call @accel_parallel_for")
               for chunk in ir.split("func.func ")[1:]
               if re.match(r"(private )?@\w+_par\d+\(", chunk) is None)
