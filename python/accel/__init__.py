"""accel: a Python-first, MLIR-based compiler toolchain for AI accelerators.

Public API (lazy, so `import accel` stays cheap for the CLIs):
- `accel.compile(model, example_inputs, options=None)`: compile a PyTorch model for the CPU
  (`accel.api`; returns a `CompiledModule`, callable with tensors or numpy arrays).
- `accel.load(folder)`: reload a folder written by `CompiledModule.save` (no recompiling).
- `accel.import_torch(model, example_inputs)`: PyTorch -> linalg-on-tensors MLIR module.
- `accel.compile_mlir(source, options=None)`: JIT-compile MLIR for the host CPU.
- `accel.set_num_threads(n)` / `accel.get_num_threads()`: threads of compiled parallel loops
  (default: $ACCEL_NUM_THREADS, else all cores available).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: Public name -> (module, attribute), imported on first use.
_LAZY = {name: (module, attr) for module, pairs in (
    ("accel.api", ("compile", "load", "load_codegen_dir")),
    ("accel.compiled_module", ("CompiledModule",)),
    ("accel.frontend", ("import_torch",)),
    ("accel.targets.cpu.compile", ("compile_mlir",)),
    ("accel.targets.cpu.jit", ("CompiledMLIR",)),
    ("accel.context", ("make_context",)),
    ("accel.jit_function", ("jit",)),
    ("accel.runtime.symbols", ("RuntimeAssertionError",)),
    ("accel.targets.cpu.parallel", ("set_num_threads", ("get_num_threads", "num_threads"))),
) for entry in pairs for name, attr in [entry if isinstance(entry, tuple) else (entry, entry)]}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'accel' has no attribute {name!r}")
    import importlib

    mod, attr = _LAZY[name]
    return getattr(importlib.import_module(mod), attr)


__all__ = ["__version__", *_LAZY]
