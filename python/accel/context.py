"""Creating MLIR contexts with every accel dialect loaded."""

from __future__ import annotations

from accel.ir import Context


def load_accel_dialects(ctx: Context) -> None:
    """Load all accel dialects (Python-defined, IRDL underneath) into `ctx`."""
    from accel.dialects import load_all

    load_all(ctx)


def make_context(*, allow_unregistered: bool = False, multithreaded: bool = True) -> Context:
    """A fresh context with upstream and accel dialects available."""
    ctx = Context()
    ctx.allow_unregistered_dialects = allow_unregistered
    if not multithreaded:
        ctx.enable_multithreading(False)
    load_accel_dialects(ctx)
    return ctx
