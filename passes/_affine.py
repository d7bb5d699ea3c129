"""Affine loop and access helpers shared by the loop passes (interchange, transposes,
parallel loops, fusion): what a loop's bounds are, what an access indexes with, which ops
make a second name for a buffer."""

from __future__ import annotations

from accel.ir import Operation, ir
from accel.passes.base import is_inside

ACCESS_OPS = ("affine.load", "affine.store")
#: Ops that make a second SSA name for (part of) a buffer: MLIR's affine dependence
#: analysis compares memrefs by SSA value, so an access through one hides a dependence.
VIEW_OPS = ("memref.expand_shape", "memref.collapse_shape", "memref.subview",
            "memref.reinterpret_cast", "memref.cast", "memref.transpose", "memref.view")


def base_buffer(value: ir.Value) -> ir.Value:
    """The buffer under a chain of views."""
    while isinstance(value.owner, ir.OpView | ir.Operation) and value.owner.name in VIEW_OPS:
        value = value.owner.operation.operands[0]
    return value


def value_inside(value: ir.Value, ancestor: Operation) -> bool:
    """`value` is defined in `ancestor` (by an op nested in it, or as an argument of one of
    its blocks or of a nested op's)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        parent = owner.owner
        return parent is not None and is_inside(parent.operation, ancestor)
    return is_inside(owner.operation, ancestor)


def body(loop: Operation) -> list[Operation]:
    """The ops of a loop's body, without its terminator."""
    return [op.operation for op in loop.regions[0].blocks[0].operations][:-1]


def iv(loop: Operation) -> ir.Value:
    """A loop's induction variable."""
    return loop.regions[0].blocks[0].arguments[0]


def simple(loop: Operation) -> bool:
    """Constant bounds (no operands) and no loop-carried values."""
    return len(loop.operands) == 0 and len(loop.results) == 0


def constant(expr: ir.AffineExpr) -> int | None:
    """The value of a constant affine expression, else None."""
    expr = expr.maybe_downcast()
    return expr.value if isinstance(expr, ir.AffineConstantExpr) else None


def bounds(loop: Operation) -> tuple[int, int, int] | None:
    """(lower, upper, step) of an `affine.for` with constant bounds, else None."""
    lo = ir.AffineMapAttr(loop.attributes["lowerBoundMap"]).value
    hi = ir.AffineMapAttr(loop.attributes["upperBoundMap"]).value
    if lo.n_inputs or hi.n_inputs or len(lo.results) != 1 or len(hi.results) != 1:
        return None
    lb, ub = constant(lo.results[0]), constant(hi.results[0])
    if lb is None or ub is None:
        return None
    return lb, ub, ir.IntegerAttr(loop.attributes["step"]).value


def trip_count(loop: Operation) -> int | None:
    """Iterations of an `affine.for` with constant bounds, else None."""
    b = bounds(loop)
    if b is None:
        return None
    lb, ub, step = b
    return max(0, -(-(ub - lb) // step))


def memref_and_indices(access: Operation) -> tuple[ir.Value, list[ir.Value]]:
    """(memref, map operands) of an affine.load / affine.store."""
    first = 0 if access.name == "affine.load" else 1
    return access.operands[first], list(access.operands)[first + 1:]


def index_dims(access: Operation) -> list[ir.Value | None]:
    """Per index of the access: the value it is exactly (a plain dim result), else None."""
    amap = ir.AffineMapAttr(access.attributes["map"]).value
    _, operands = memref_and_indices(access)
    return [operands[e.position] if isinstance(e, ir.AffineDimExpr) else None
            for e in amap.results]


def access_key(access: Operation) -> tuple[str, tuple[ir.Value, ...]]:
    """An access's index list: its map and map operands."""
    _, operands = memref_and_indices(access)
    return str(access.attributes["map"]), tuple(operands)


def pure(op: Operation) -> bool:
    """An affine load/store or a region-free arith/math op: nothing else touches memory."""
    if op.name in ACCESS_OPS:
        return True
    if op.regions or op.name.startswith(("memref.", "func.", "affine.")):
        return False
    return op.name.startswith(("arith.", "math."))


def plain_accesses(accesses: list[Operation], outer: Operation,
                   allowed: list[ir.Value] | None = None) -> bool:
    """No access goes through a view, and every index is one of `allowed` (default: the
    variables of `outer` and of the loops directly in it) or a value defined outside
    `outer` (an enclosing loop's variable, an argument, ...)."""
    if allowed is None:
        inner = [op for op in body(outer) if op.name == "affine.for"]
        allowed = [iv(outer), *(iv(loop) for loop in inner)]
    for access in accesses:
        memref, indices = memref_and_indices(access)
        owner = memref.owner
        if isinstance(owner, ir.OpView | ir.Operation) and owner.name in VIEW_OPS:
            return False
        for value in indices:
            if any(value == a for a in allowed):
                continue
            v_owner = value.owner
            where = v_owner.owner if isinstance(v_owner, ir.Block) else v_owner.operation
            if where is not None and is_inside(where, outer):
                return False
    return True
