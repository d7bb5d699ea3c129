"""The one module that imports the MLIR Python bindings.

accel uses the upstream MLIR Python bindings bundled in the `torch-mlir` wheel. Every other
module imports from here (`from accel.ir import ir, PassManager, dialects`), so switching the
binding provider (e.g. to a standalone `mlir` wheel) touches only this file.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any

from torch_mlir import ir, rewrite
from torch_mlir._mlir_libs._mlir import globals as _mlir_globals
from torch_mlir.ir import (
    Attribute,
    Block,
    Context,
    InsertionPoint,
    Location,
    MLIRError,
    Module,
    Operation,
    OpView,
    Type,
    Value,
)
from torch_mlir.passmanager import ExternalPass, PassDisplayMode, PassManager

from accel.versions import PROVIDER, provider_version

# The bindings import a dialect's Python module (`<prefix>.<namespace>`) the first time they
# wrap one of its ops, and retry on every op when none is found: each `rdu.*` op touched
# cost a failed import (200 000 of them, ~20 s, in a -o0 train step of a tiny GPT-2).
# accel's own dialects (`accel.dialects.rdu`, ...) are found here instead, once.
if "accel.dialects" not in _mlir_globals.dialect_search_modules:
    _mlir_globals.append_dialect_search_prefix("accel.dialects")


#: The upstream dialect modules accel uses, imported on first use (`from accel.ir import
#: linalg`, `dialects.linalg`): importing all of them costs ~0.45 s (linalg's OpDSL alone
#: ~0.25 s), paid by every `accel-opt` run, which mostly touches a few. The bindings import
#: a dialect's module themselves when they first wrap one of its ops, so nothing needs them
#: loaded ahead.
_DIALECTS = frozenset({
    "affine", "arith", "bufferization", "builtin", "cf", "ext", "func", "irdl", "linalg",
    "llvm", "math", "memref", "scf", "tensor", "transform", "ub", "vector"})


def _dialect(name: str) -> ModuleType:
    module = importlib.import_module(f"torch_mlir.dialects.{name}")
    globals()[name] = module  # later lookups skip __getattr__
    return module


def __getattr__(name: str) -> ModuleType:
    if name in _DIALECTS:
        return _dialect(name)
    raise AttributeError(f"module 'accel.ir' has no attribute '{name}'")


def walk(op: Any, visit: Any, order: Any = None) -> None:
    """`op.walk(visit, order)` (pre-order by default) with Ctrl-C deferred to its end.

    An exception raised inside a callback from C++ leaves the walk as a `RuntimeError`
    ("Exception raised in callback"), so `accel.interrupts` must not raise a pending
    interrupt inside `visit`: a Ctrl-C during a walk (the dialect verifier runs one after
    each pass) came out as that RuntimeError's traceback. It is raised when the walk ends.
    """
    from accel import interrupts

    with interrupts.deferred():
        op.walk(visit, ir.WalkOrder.PRE_ORDER if order is None else order)


def translate_to_llvmir(module: Module) -> str:
    """Translate a module in the LLVM dialect to LLVM IR text (upstream syntax)."""
    return _dialect("llvm").translate_module_to_llvmir(module.operation)


def apply_transform_script(payload: Any, script: Module) -> None:
    """Run `script`'s first named sequence (a `transform.with_named_sequence` module) on
    `payload` with the transform dialect's interpreter (upstream pattern sets and
    transforms that have no pass of their own, e.g. data-layout propagation)."""
    from torch_mlir.dialects.transform import interpreter

    entry = script.body.operations[0]
    interpreter.apply_named_sequence(payload, entry, script.operation)


def torch_importer() -> tuple[Any, Any]:
    """`(torch_mlir.fx, OutputType)`: torch-mlir's FX importer, imported on first use.

    Lazy because it imports torch (seconds), which the CLIs and most of accel never need.
    """
    from torch_mlir import fx as torch_fx
    from torch_mlir.compiler_utils import OutputType

    return torch_fx, OutputType


def fx_importer_module() -> Any:
    """torch-mlir's FX importer module (`FxImporterHooks`, `create_mlir_tensor_type`, ...)."""
    from torch_mlir.extras import fx_importer

    return fx_importer


def torch_decompositions() -> dict[Any, Any]:
    """torch-mlir's default decomposition table for `torch.export` programs (a copy)."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    return dict(get_decomposition_table())


@functools.cache
def enable_torch_mlir_extensions() -> None:
    """Register torch-mlir's own passes (e.g. `tm-tensor-bufferize`, `tm-tensor-to-loops`).

    The Python bindings register only upstream passes and torch-mlir's torch pipelines; the
    CAPI library exports `torchMlirRegisterAllPasses`, which adds the rest (TMTensor too) to
    the same process-wide registry. Idempotent; called by the pipelines that need them.
    """
    _capi_library().torchMlirRegisterAllPasses()


def load_torch_dialects(ctx: Context) -> None:
    """Load torch-mlir's dialects (torch, torch_c, tm_tensor) into `ctx`.

    The Python `register_dialect` registers only `torch`, and the CAPI's registry filler hangs
    when called through ctypes; a pass manager loads its passes' dependent dialects into the
    context before running, so running torch-mlir's TMTensor conversion on an empty module
    loads exactly the dialects its output can contain.
    """
    enable_torch_mlir_extensions()
    with ctx, Location.unknown():
        PassManager.parse("builtin.module(func.func(convert-torch-to-tmtensor))").run(
            Module.create().operation)


@functools.cache
def _capi_library() -> Any:
    """The bindings' aggregate CAPI library (the copy already loaded), through ctypes."""
    import ctypes
    import glob
    import os

    libs = sorted(glob.glob(os.path.join(bindings_libs_dir(), "lib*CAPI*.so*")),
                  key=os.path.getsize)
    if not libs:
        raise RuntimeError(f"no CAPI library in {bindings_libs_dir()}")
    return ctypes.CDLL(libs[-1], mode=os.RTLD_NOLOAD | os.RTLD_NOW)


def bindings_libs_dir() -> str:
    """Folder of the bindings' native libraries (`_mlir_libs`: the CAPI `.so`, the `*-opt` tool)."""
    import os

    from torch_mlir import _mlir_libs

    return os.path.dirname(os.path.abspath(_mlir_libs.__file__))


def bindings_opt_tool() -> str:
    """Path of the `*-opt` binary that ships with the bindings (used only by probes)."""
    import os

    return os.path.join(bindings_libs_dir(), "torch-mlir-opt")


class _Dialects:
    """Namespace of the upstream dialect modules accel uses (`dialects.func`), each
    imported on first use."""

    def __getattr__(self, name: str) -> ModuleType:
        if name in _DIALECTS:
            return _dialect(name)
        raise AttributeError(f"accel.ir.dialects has no dialect module '{name}'")

    def __dir__(self) -> list[str]:
        return sorted(_DIALECTS)


dialects = _Dialects()


__all__ = [
    "Attribute",
    "Block",
    "Context",
    "ExternalPass",
    "PassDisplayMode",
    "InsertionPoint",
    "Location",
    "MLIRError",
    "Module",
    "OpView",
    "Operation",
    "PassManager",
    "PROVIDER",
    "Type",
    "Value",
    "bindings_libs_dir",
    "bindings_opt_tool",
    "dialects",
    "enable_torch_mlir_extensions",
    "fx_importer_module",
    "load_torch_dialects",
    "ir",
    "provider_version",
    "rewrite",
    "torch_decompositions",
    "torch_importer",
    "translate_to_llvmir",
]
