"""`mncore-plan-layouts`: give every tensor an MN-Core layout and insert the relayouts.

Why: MN-Core's code generator needs a layout (`accel.dialects.mncore_layout`) for every
tensor, and converting between two layouts is data movement the cost model must see. This
pass runs the mncore target's layout planner (`accel.targets.mncore.layouts`: `lpz`,
`bidi` or `legacy`, option `planner`) over each function's layer graph and writes its
decisions into the IR: an `mncore.annotate` after every tensor's definition (function
arguments, weights, layer results) and an `mncore.relayout` in front of each operand whose
consumer wants another layout than its producer gave. The IR stays executable:
`mncore-strip-layouts` folds both ops away.

    %0 = linalg.matmul ins(%a, %b) outs(%c) -> tensor<4x64xf32>
    %1 = linalg.generic {reduction over the last dim} ins(%0) ...
        ->
    %a1 = "mncore.annotate"(%a) {layout = <row>, memory = "lm"}
    %0 = linalg.matmul ins(%a1, %b1) outs(%c)
    %01 = "mncore.annotate"(%0) {layout = <row>}
    %r = "mncore.relayout"(%01) {src = <row>, dst = <col>}    // the reduction wants col
    %1 = linalg.generic ins(%r) ...

Precondition: statically shaped tensors (dynamic ones are not layers). Not handled: layers
inside nested regions (only a function body's top-level ops are layers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accel.ir import Block, InsertionPoint, Operation, ir
from accel.passes.base import ModulePass, register_pass


def annotate_plan(func: Operation, planner: str) -> tuple[int, int]:
    """Plan `func` with `planner` and write annotations and relayouts into it; returns
    (annotations, relayouts) inserted."""
    from accel.dialects import mncore
    from accel.targets.mncore import graph, layouts

    g = graph.from_function(func)
    plan = layouts.plan(g, planner, [], {})
    block: Block = func.regions[0].blocks[0]
    annotated: dict[str, ir.Value] = {}
    for name, value in g.handles.items():
        owner = value.owner
        if isinstance(owner, ir.Block):
            first = block.operations[0]
            ip = InsertionPoint(first)
            loc = func.location
        else:
            ip = InsertionPoint.after(owner)
            loc = owner.location
        new = mncore.annotate(value, plan.layouts[name], "lm", loc=loc, ip=ip)
        value.replace_all_uses_except(new, new.owner.operation)
        annotated[name] = new
    layers = {layer.name: layer for layer in g.layers}
    for value, at, index, src, dst, _nbytes in plan.relayouts:
        layer = layers[at]
        op = layer.op
        moved = mncore.relayout(annotated[value], src, dst, "lm", loc=op.location,
                                ip=InsertionPoint(op))
        op.operands[layer.operand_index[index]] = moved
    return len(annotated), len(plan.relayouts)


@register_pass
@dataclass(frozen=True)
class PlanLayouts(ModulePass):
    """Annotates every tensor with an MN-Core layout and inserts the relayouts."""

    name = "mncore-plan-layouts"
    planner: str = field(default="lpz", metadata={"help": "lpz, bidi or legacy"})

    def apply(self, module: Operation) -> None:
        from accel.targets.mncore.layouts import PLANNERS

        if self.planner not in PLANNERS:
            self.fail(module, f"unknown planner '{self.planner}' (choose from "
                              f"{', '.join(PLANNERS)})")
        for op in module.regions[0].blocks[0].operations:
            if op.operation.name == "func.func" and op.regions[0].blocks:
                annotate_plan(op.operation, self.planner)
