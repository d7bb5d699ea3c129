"""accel: a Python-first, MLIR-based compiler toolchain for AI accelerators.

Public API (lazy, so `import accel` stays cheap for the CLIs):
- `accel.compile(model, example_inputs, options=None)`: compile a PyTorch model for the CPU
  (`accel.api`; returns a `CompiledModule`, callable with tensors or numpy arrays).
- `accel.load(folder)`: reload a folder written by `CompiledModule.save` (no recompiling).
- `accel.import_torch(model, example_inputs)`: PyTorch -> linalg-on-tensors MLIR module.
- `accel.compile_train_step(model, loss_fn, optimizer, example_batch, options=None)`: a
  compiled training step (forward, backward, optimizer update; docs/training.md).
- `accel.compile_mlir(source, options=None)`: JIT-compile MLIR for the host CPU.
- `accel.set_num_threads(n)` / `accel.get_num_threads()`: threads of compiled parallel loops
  (default: $ACCEL_NUM_THREADS, else all cores available).
- `accel.rdu` (`@accel.rdu.hypersection`, docs/rdu.md) and `accel.mlsdk` (MLSDK's device and
  context API on the emulated MN-Core, docs/mncore.md): submodules imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports on use
    from accel import mlsdk as mlsdk
    from accel import rdu as rdu
    from accel.api import compile as compile  # noqa: A004 - the API's name
    from accel.api import load as load
    from accel.api import load_codegen_dir as load_codegen_dir
    from accel.compiled_module import CompiledModule as CompiledModule
    from accel.context import make_context as make_context
    from accel.frontend import import_torch as import_torch
    from accel.host.compile import compile_mlir as compile_mlir
    from accel.host.jit import CompiledMLIR as CompiledMLIR
    from accel.host.parallel import num_threads as get_num_threads  # noqa: F401
    from accel.host.parallel import set_num_threads as set_num_threads
    from accel.jit_function import jit as jit
    from accel.runtime.symbols import DivisionByZeroError as DivisionByZeroError
    from accel.runtime.symbols import RuntimeAssertionError as RuntimeAssertionError
    from accel.training.compile import compile_train_step as compile_train_step
    from accel.training.step import TrainStep as TrainStep

#: Module -> the public names it provides, imported on first use.
_PROVIDERS = {
    "accel.api": ("compile", "load", "load_codegen_dir"),
    "accel.compiled_module": ("CompiledModule",),
    "accel.frontend": ("import_torch",),
    "accel.host.compile": ("compile_mlir",),
    "accel.host.jit": ("CompiledMLIR",),
    "accel.context": ("make_context",),
    "accel.jit_function": ("jit",),
    "accel.runtime.symbols": ("DivisionByZeroError", "RuntimeAssertionError"),
    "accel.host.parallel": ("set_num_threads",),
    "accel.training.compile": ("compile_train_step",),
    "accel.training.step": ("TrainStep",),
}
#: Public name -> (module, attribute).
_LAZY = {name: (module, name) for module, names in _PROVIDERS.items() for name in names}
_LAZY["get_num_threads"] = ("accel.host.parallel", "num_threads")


#: Submodules users reach as attributes after a plain `import accel` (`@accel.rdu.hypersection`,
#: `accel.mlsdk.Context`), imported on first use.
_SUBMODULES = ("rdu", "mlsdk")


def __getattr__(name: str) -> Any:
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"accel.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'accel' has no attribute {name!r}")
    mod, attr = _LAZY[name]
    return getattr(importlib.import_module(mod), attr)


def __dir__() -> list[str]:
    """`dir(accel)`: the public API too, before its lazy imports have run."""
    return sorted({*globals(), *_LAZY, *_SUBMODULES})


__all__ = ["__version__", *_LAZY]
