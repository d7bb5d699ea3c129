"""Verifier plumbing shared by the Python-defined dialects."""

from collections.abc import Callable
from typing import Any

from accel.ir import Context, Location, Operation, OpView


def op_error(op: OpView | Operation, message: str) -> bool:
    """Emit `'<op>' op <message>` at the op; returns False for the verifier."""
    op.location.emit_error(f"'{op.name}' op {message}")
    return False


def guarded(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A Python verifier that never raises: a bug becomes a located error, not a traceback."""

    def verify(op: Any) -> bool:
        try:
            return check(op)
        except Exception as err:  # noqa: BLE001 - the tool must not crash inside MLIR
            return op_error(op, f"verifier failed internally: {type(err).__name__}: {err}")

    return staticmethod(verify)  # type: ignore[return-value]


def load_once(ctx: Context, dialect: Any) -> None:
    """Register an IRDL-defined dialect class in `ctx` (idempotent per context)."""
    if ctx.is_dialect_loaded(dialect.DIALECT_NAMESPACE):
        return
    with ctx, Location.unknown(ctx):
        dialect.load()


def parent_is(op: OpView, kinds: tuple[str, ...], what: str) -> bool:
    """True if `op` sits directly in an op of `kinds`; else a located error saying `what`
    (e.g. "must be inside an 'rdu.section' body") and which op it found."""
    parent = op.operation.parent
    if parent is None or parent.name not in kinds:
        found = f"'{parent.name}'" if parent is not None else "nothing"
        return op_error(op, f"{what}, found {found}")
    return True
