"""IR checks shared by the kernel tests (test_conv_kernels.py, test_matmul_microkernel.py)."""

from __future__ import annotations

import re


def kernel_forks(ir: str) -> int:
    """Kernel functions that call `accel_parallel_for` (a direct conv's calls it up to three
    times: its shared pack, then the items one way or the other), not accel-parallelize-
    loops' `*_par<k>` nests around them, which depend on that pass's thresholds."""
    return sum("call @accel_parallel_for" in chunk
               for chunk in ir.split("func.func ")[1:]
               if re.match(r"(private )?@\w+_par\d+\(", chunk) is None)
