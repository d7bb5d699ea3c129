"""`accel-guard-division`: integer division never traps; division by zero is reported.

Why: `llvm.sdiv`/`udiv`/`srem`/`urem` by zero, and `sdiv`/`srem` of INT_MIN by -1, are
undefined behaviour that x86 executes as a SIGFPE: one bad input value killed the Python
process (or the program linking an AOT library). Eager PyTorch raises `RuntimeError:
ZeroDivisionError` for every integer division by zero (`div` with rounding, `//`,
`remainder`, `fmod`) and wraps INT_MIN / -1 to INT_MIN (remainder 0). This pass makes
each signed and unsigned integer division and remainder (`arith` and `index` dialects:
divsi, divui, remsi, remui, floordivsi, ceildivsi, ceildivui) safe and records a division
by zero in a flag that every return of the function checks:

    %q = arith.divsi %a, %b : i64            %z = arith.cmpi eq, %b, %c0
                                             %o = (%a == INT_MIN) & (%b == -1)
                                      ->     %s = arith.select (%z | %o), %c1, %b
                                             %q = arith.divsi %a, %s
                                             flag |= %z               (a stack slot)
    return %q                                cf.assert !flag, "integer division by zero"
                                             return %q

A divisor of 1 gives eager's results for INT_MIN / -1 (INT_MIN; floor and ceil division
too, remainder 0) and a value that is thrown away for a zero divisor:
`accel-assert-to-error-return` turns the assert into a reported failure and the runtime
raises `accel.DivisionByZeroError` (the AOT library returns status 1). Everything is
selects and an `or`, no branch in loops: the flag lives in a stack slot that LLVM promotes
to a register (an or-reduction in vectorised loops). Divisors that are constants other
than 0 (and -1 for signed ops) need no guard and get none, as index arithmetic mostly has.

The assert carries the division's location when all guarded divisions of the function
share one. Float division is untouched. Run it after `convert-scf-to-cf` (or anywhere the
function's returns are in its body) and before `accel-assert-to-error-return`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accel.ir import InsertionPoint, Location, Operation, dialects, ir
from accel.passes.base import ModulePass, ops_named, register_pass
from accel.runtime.symbols import DIVISION_BY_ZERO

#: Ops whose operand 1 divides operand 0, by signedness.
SIGNED = ("arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi",
          "index.divs", "index.rems", "index.floordivs", "index.ceildivs")
UNSIGNED = ("arith.divui", "arith.remui", "arith.ceildivui",
            "index.divu", "index.remu", "index.ceildivu")


def _element(t: ir.Type) -> ir.Type:
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


def _width(t: ir.Type) -> int:
    element = _element(t)
    return 64 if isinstance(element, ir.IndexType) else ir.IntegerType(element).width


def _constant(t: ir.Type, value: int) -> ir.Value:
    """`value` of integer, index or integer-vector type `t` (a splat for vectors)."""
    element = _element(t)
    attr = ir.IntegerAttr.get(element, value)
    if isinstance(t, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(t, attr)
    return dialects.arith.ConstantOp(t, attr).result


def _known(value: ir.Value) -> int | None:
    """The integer a constant `value` holds (a splat for vectors), or None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation):
        return None
    op = owner.operation
    if op.name not in ("arith.constant", "index.constant", "llvm.mlir.constant") or \
            "value" not in op.attributes:
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    if isinstance(attr, ir.DenseIntElementsAttr) and attr.is_splat:
        return ir.IntegerAttr(attr.get_splat_value()).value
    return None


def _signed(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if width > 1 and value >> (width - 1) else value


def _any(bits: ir.Value) -> ir.Value:
    """An i1 that is true when `bits` (i1 or a vector of i1) has a true lane."""
    if not isinstance(bits.type, ir.VectorType):
        return bits
    return dialects.vector.ReductionOp(ir.IntegerType.get_signless(1),
                                       dialects.vector.CombiningKind.OR, bits).result


def _file_location(loc: Location) -> str | None:
    text = str(loc)
    return text if '"' in text and ":" in text else None


@register_pass
@dataclass(frozen=True)
class GuardDivision(ModulePass):
    """Integer division/remainder by zero is reported and INT_MIN / -1 wraps: no SIGFPE."""

    name = "accel-guard-division"

    def apply(self, module: Operation) -> None:
        for func in ops_named(module, ("func.func",)):
            if func.regions[0].blocks:
                self._guard_function(func)

    def _guard_function(self, func: Operation) -> None:
        divisions = [op for op in ops_named(func, SIGNED + UNSIGNED)
                     if self._needs_guard(op)]
        if not divisions:
            return
        i1 = ir.IntegerType.get_signless(1)
        entry = func.regions[0].blocks[0]
        slot: list[ir.Value] = []

        def flag() -> ir.Value:
            """The function's division-by-zero flag (a stack slot, false on entry)."""
            if not slot:
                with func.location, InsertionPoint.at_block_begin(entry):
                    slot.append(dialects.memref.AllocaOp(ir.MemRefType.get([], i1), [],
                                                         []).result)
                    dialects.memref.StoreOp(_constant(i1, 0), slot[0], [])
            return slot[0]

        for op in divisions:
            self._guard(op, flag)
        if not slot:  # only INT_MIN / -1 guards: nothing can fail
            return
        locations = {str(op.location) for op in divisions}
        where = divisions[0].location if len(locations) == 1 and \
            _file_location(divisions[0].location) else Location.unknown()
        for ret in ops_named(func, ("func.return",)):
            with where, InsertionPoint(ret):
                failed = dialects.memref.LoadOp(slot[0], []).result
                ok = dialects.arith.XOrIOp(failed, _constant(i1, 1)).result
                dialects.cf.AssertOp(ok, DIVISION_BY_ZERO)

    @staticmethod
    def _needs_guard(op: Operation) -> bool:
        divisor = _known(op.operands[1])
        if divisor is None:
            return True
        width = _width(op.operands[1].type)
        divisor = _signed(divisor, width)
        return divisor == 0 or (op.name in SIGNED and divisor == -1)

    @staticmethod
    def _guard(op: Operation, flag: Callable[[], ir.Value]) -> None:
        """Make `op`'s divisor safe; record a zero divisor in `flag()`."""
        a, b = op.operands[0], op.operands[1]
        t = b.type
        width = _width(t)
        pred = dialects.arith.CmpIPredicate
        known = _known(b)
        with op.location, InsertionPoint(op):
            zero = None
            if known is None or _signed(known, width) == 0:
                zero = dialects.arith.CmpIOp(pred.eq, b, _constant(t, 0)).result
            bad = zero
            if op.name in SIGNED and width > 1 and (known is None or
                                                    _signed(known, width) == -1):
                lowest = _constant(t, -(1 << (width - 1)))
                overflow = dialects.arith.AndIOp(
                    dialects.arith.CmpIOp(pred.eq, a, lowest).result,
                    dialects.arith.CmpIOp(pred.eq, b, _constant(t, -1)).result).result
                bad = overflow if bad is None else dialects.arith.OrIOp(bad, overflow).result
            if bad is None:
                return
            op.operands[1] = dialects.arith.SelectOp(bad, _constant(t, 1), b).result
            if zero is not None:
                cell = flag()
                seen = dialects.memref.LoadOp(cell, []).result
                dialects.memref.StoreOp(dialects.arith.OrIOp(seen, _any(zero)).result, cell, [])
