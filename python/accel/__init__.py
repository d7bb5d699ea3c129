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

_LAZY = {
    "compile": ("accel.api", "compile"),
    "CompiledModule": ("accel.compiled_module", "CompiledModule"),
    "load": ("accel.api", "load"),
    "load_codegen_dir": ("accel.api", "load_codegen_dir"),
    "import_torch": ("accel.frontend", "import_torch"),
    "compile_mlir": ("accel.targets.cpu.compile", "compile_mlir"),
    "CompiledMLIR": ("accel.targets.cpu.jit", "CompiledMLIR"),
    "make_context": ("accel.context", "make_context"),
    "jit": ("accel.jit_function", "jit"),
    "RuntimeAssertionError": ("accel.runtime.symbols", "RuntimeAssertionError"),
    "set_num_threads": ("accel.targets.cpu.parallel", "set_num_threads"),
    "get_num_threads": ("accel.targets.cpu.parallel", "num_threads"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'accel' has no attribute {name!r}")
    import importlib

    mod, attr = _LAZY[name]
    return getattr(importlib.import_module(mod), attr)


__all__ = ["__version__", *_LAZY]
