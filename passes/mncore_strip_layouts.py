"""`mncore-strip-layouts`: fold `mncore.annotate` and `mncore.relayout` away.

Why: both ops are identity on values; they carry MN-Core placement for the layout planner
and the cost model. A CPU lowering has no use for them (and the upstream conversions do not
know the ops), so the CPU pipeline strips them before bufferization.

    %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
        : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "mncore.relayout"(%0) {...} : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
        ->
    return %a : tensor<4xf32>

Every use of a result is replaced by the op's operand, then the op is erased. Layout
attributes elsewhere (e.g. on function arguments) are left alone: they are inert.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import Operation, OpView, ir, walk
from accel.passes.base import ModulePass, register_pass

#: The ops this pass folds away: identities on their single operand.
LAYOUT_OPS = ("mncore.annotate", "mncore.relayout")


def layout_ops(root: Operation | OpView) -> list[Operation]:
    """Every `mncore.annotate` / `mncore.relayout` under `root`, in program order."""
    found: list[Operation] = []

    def visit(op: Operation) -> ir.WalkResult:
        if op.name in LAYOUT_OPS:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    walk(root.operation, visit)
    return found


def strip_layouts(root: Operation | OpView) -> int:
    """Replace each layout op by its operand and erase it; returns how many were removed."""
    ops = layout_ops(root)
    for op in ops:
        op.results[0].replace_all_uses_with(op.operands[0])
    for op in reversed(ops):  # users before producers: nothing erased is still used
        op.erase()
    return len(ops)


@register_pass
@dataclass(frozen=True)
class StripLayouts(ModulePass):
    """Folds mncore.annotate and mncore.relayout into their operands (for CPU lowering)."""

    name = "mncore-strip-layouts"

    def apply(self, module: Operation) -> None:
        strip_layouts(module)
