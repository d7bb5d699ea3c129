"""Ahead-of-time C libraries of CPU compilations (docs/aot.md).

`build_library(compiled, name, out_dir, ...)` writes `lib<name>.so`, `<name>.o`, `<name>.h`
and README.txt; `library` drives LLVM and gcc, `csource` renders the C, `memory` plans the
user memory pool.
"""

from accel.targets.cpu.aot.library import (
    DEFAULT_NAME,
    TARGET_CPUS,
    AotLibrary,
    build_library,
)
from accel.targets.cpu.aot.memory import ALIGN, MemoryPlan, plan_memory

__all__ = ["ALIGN", "DEFAULT_NAME", "TARGET_CPUS", "AotLibrary", "MemoryPlan", "build_library",
           "plan_memory"]
