"""Verifier plumbing shared by the Python-defined dialects."""

from collections.abc import Callable
from typing import Any

from accel.ir import Operation, OpView


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
