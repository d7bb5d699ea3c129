"""accel.dialects: accelerator dialects defined in Python (one file per dialect)."""

from __future__ import annotations

from accel.ir import Context

#: Dialect modules loaded into every accel context; each exposes `load(ctx)`.
DIALECT_MODULES: tuple[str, ...] = ()


def load_all(ctx: Context) -> None:
    """Load every accel dialect into `ctx`."""
    import importlib

    for name in DIALECT_MODULES:
        importlib.import_module(f"accel.dialects.{name}").load(ctx)
