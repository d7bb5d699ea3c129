"""`accel-prepare-one-shot`: make a partially bufferized function safe for One-Shot Bufferize.

Why: torch-mlir's `tm-tensor-bufferize` (tm_tensor scan, scatter, sort and topk have no
One-Shot interface) bufferizes those ops alone and leaves two things One-Shot gets wrong:

1. `bufferization.to_buffer %t` placed early and shared by the later users of `%t`.
   One-Shot reads `%t` only where the `to_buffer` is, so a tensor op between it and a user
   may overwrite `%t`'s buffer in place, and the user reads clobbered data (two sorts
   sharing an iota index tensor got the other sort's indices; a cumsum's zero-filled init,
   made from the same `tensor.empty` as its input, zeroed the input first). Each user gets
   its own `to_buffer` right before it (the early one goes), so every read is where
   One-Shot sees it.
2. `bufferization.to_tensor %alloc` without `restrict`, which One-Shot refuses ("not
   supported by One-Shot Analysis"). A `to_tensor` of a fresh `memref.alloc`/`alloca` that no
   other `to_tensor` views is exactly what `restrict` promises.
3. One `tensor.empty` or zero-filled `linalg.fill` as the destination of several ops
   (torch-mlir CSEs them: two matmuls of one shape share one accumulator). One-Shot then
   copies the fill for one user and lets another write it in place, so a later nest
   overwrites a buffer an earlier nest only read: an anti-dependence `affine-loop-fusion`
   misses. Each user gets its own fill and empty (its own buffer; the deallocation
   pipeline frees each after its last use).

    %b = bufferization.to_buffer %t            %b0 = bufferization.to_buffer %t
    memref.copy %b, %x                   ->    memref.copy %b0, %x
    %u = linalg.generic outs(%e) ...           %u = linalg.generic outs(%e) ...
    memref.copy %b, %y                         %b1 = bufferization.to_buffer %t
                                               memref.copy %b1, %y

Leaves alone: `to_tensor` of arguments, globals, views, or of a
buffer that has a second tensor view.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, ir
from accel.passes.base import FunctionPass, ops_named, register_pass

_FRESH = ("memref.alloc", "memref.alloca")


def _ancestor_in(op: Operation, block: ir.Block) -> Operation | None:
    """`op` or the ancestor of `op` that sits directly in `block` (None if outside it)."""
    current: Operation | None = op
    while current is not None:
        if current.block == block:
            return current
        parent = current.parent
        current = parent.operation if parent is not None and \
            parent.name != "builtin.module" else None
    return None


def _defining_op_name(value: ir.Value) -> str | None:
    owner = value.owner
    return owner.name if isinstance(owner, ir.OpView | ir.Operation) else None


@register_pass
@dataclass(frozen=True)
class PrepareOneShot(FunctionPass):
    """One to_buffer and one tensor.empty per user; marks fresh to_tensor views restrict."""

    name = "accel-prepare-one-shot"

    def apply(self, func: Operation) -> None:
        # Fills first: a shared zero-filled accumulator becomes one fill (and empty) per user.
        for name in ("linalg.fill", "tensor.empty"):
            for op in ops_named(func, (name,)):
                self._one_per_user_clone(op)
        for to_buffer in ops_named(func, ("bufferization.to_buffer",)):
            self._one_per_user(to_buffer)
        to_tensors = ops_named(func, ("bufferization.to_tensor",))
        views: dict[ir.Value, int] = {}
        for op in to_tensors:
            views[op.operands[0]] = views.get(op.operands[0], 0) + 1
        for op in to_tensors:
            buffer = op.operands[0]
            if _defining_op_name(buffer) in _FRESH and views[buffer] == 1:
                op.attributes["restrict"] = ir.UnitAttr.get()

    @staticmethod
    def _one_per_user_clone(op: Operation) -> None:
        """Give each user of `op`'s single result its own copy of `op`, right before it."""
        if len(op.results) != 1:  # a fill on memrefs: nothing to share
            return
        uses = [(use.owner, use.operand_number) for use in op.results[0].uses]
        if len(uses) < 2:
            return
        for owner, index in uses:  # each right before its user, in program order
            clone = op.clone(InsertionPoint(owner.operation))
            owner.operation.operands[index] = clone.results[0]
        op.erase()

    @staticmethod
    def _one_per_user(to_buffer: Operation) -> None:
        result = to_buffer.results[0]
        uses = [(use.owner, use.operand_number) for use in result.uses]
        if not uses:
            return
        for owner, index in uses:
            anchor = _ancestor_in(owner.operation, to_buffer.block)
            if anchor is None:  # a user outside this block keeps the shared buffer
                continue
            clone = to_buffer.clone(InsertionPoint(anchor))
            owner.operation.operands[index] = clone.results[0]
        if not list(result.uses):
            to_buffer.erase()
