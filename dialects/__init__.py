"""accel.dialects: accelerator dialects defined in Python (one file per dialect).

Each dialect module listed in `DIALECT_MODULES` exposes:
- `load(ctx)`: register the dialect in a context (IRDL underneath, via the bindings' `ext`);
- optionally `verify(op) -> list[tuple[Location, str]]`: invariants IRDL cannot express
  (cross-op and semantic checks). `verify_module` runs them after parsing and after passes.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from accel.ir import Context, Location, Operation

#: Dialect modules loaded into every accel context.
DIALECT_MODULES: tuple[str, ...] = ("rdu", "mncore")


def _modules() -> list[ModuleType]:
    return [importlib.import_module(f"accel.dialects.{name}") for name in DIALECT_MODULES]


def load_all(ctx: Context) -> None:
    """Load every accel dialect into `ctx`."""
    for module in _modules():
        module.load(ctx)


def verify_module(op: Operation) -> list[tuple[Location, str]]:
    """Run every dialect's Python verifier over `op`; returns (location, message) errors."""
    errors: list[tuple[Location, str]] = []
    for module in _modules():
        check = getattr(module, "verify", None)
        if check is not None:
            errors.extend(check(op))
    return errors
