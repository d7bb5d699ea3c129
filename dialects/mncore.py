"""The `mncore` dialect: tensor layouts on Preferred Networks' MN-Core 2.

Hardware concept. MN-Core 2 is a SIMD hierarchy: 8 L2B (4 groups x 2), 8 L1B per L2B, 16 MAB
per L1B, 4 PE per MAB (4096 PEs); every PE owns local memory (LM, 2Ki 64-bit long words per
bank) and a long word holds several lanes (`W`) of narrow elements. Data also moves over
*time*: a tensor too big for one pass is processed in sequential steps. The vendor SDK writes
where each element lives as a layout string; the layout planner picks one per tensor, and
converting between two layouts is real data movement the cost model must see.

    ((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])

The notation's semantics (one group per dimension, factors outermost first, `N_LEVEL:S`
and bare `N:S` address factors, `; B@[...]` replication) are modelled in
`accel.dialects.mncore_layout` and documented in docs/dialects/mncore.md.

Attributes and ops (generic form when printed):

- `#mncore.layout<"...">`: a layout in the vendor notation, kept verbatim (a string
  parameter), so it prints back exactly as written.
- `mncore.annotate`: gives a tensor value a `layout` and the `memory` it lives in
  (`lm` | `dram`); identity on the value.
- `mncore.relayout`: converts a tensor from layout `src` to layout `dst` (result in
  `memory`); identity on the value, data movement for the cost model.

Both ops fold away when lowering to the CPU (pass `mncore-strip-layouts`).

Invariants (IRDL: attribute kinds, result type == operand type, a ranked tensor; the rest
here): every layout parses (errors name the column and what was expected); `memory` is
known; the layout fits the tensor (rank, coverage with padding, hierarchy sizes, `W` against
the element width, no two elements on one slot, addresses within `memory`); a relayout's
`src` equals the layout of its operand when another mncore op set it. Module-wide
(`verify`): layouts in other ops' attributes (e.g. function argument attributes) parse.

    %0 = "mncore.annotate"(%arg0) {layout = #mncore.layout<"((4_PE:1), (2_W:1))">,
        memory = "lm"} : (tensor<4x2xf32>) -> tensor<4x2xf32>
    %1 = "mncore.relayout"(%0) {dst = #mncore.layout<"((2_PE:1, 2:1), (2_W:1))">,
        memory = "lm", src = #mncore.layout<"((4_PE:1), (2_W:1))">}
        : (tensor<4x2xf32>) -> tensor<4x2xf32>
"""

# No `from __future__ import annotations`: ext reads the field annotations as live types.
from collections.abc import Iterator
from typing import TypeVar

from accel.dialects._verify import guarded as _guarded
from accel.dialects._verify import load_once as _load_once
from accel.dialects._verify import op_error as _error
from accel.dialects.mncore_layout import (
    HIERARCHY,
    LEVELS,
    MEMORY_WORDS,
    Factor,
    Footprint,
    Layout,
    LayoutReport,
    LayoutSyntaxError,
    Placement,
)
from accel.ir import Context, InsertionPoint, Location, Operation, OpView, Value, dialects, ir, walk

ext = dialects.ext

#: Ops that carry layouts (attribute names of their layouts).
LAYOUT_OPS: dict[str, tuple[str, ...]] = {"mncore.annotate": ("layout",),
                                          "mncore.relayout": ("src", "dst")}

_T = TypeVar("_T", bound=ir.RankedTensorType)


class MNCore(ext.Dialect, name="mncore"):
    """Tensor layouts on MN-Core 2."""


def element_bits(element_type: ir.Type) -> int | None:
    """Width in bits of an integer or float element type (None for anything else)."""
    if isinstance(element_type, ir.IntegerType | ir.FloatType):
        return max(8, element_type.width)  # i1 is stored as a byte
    return None


def layout_text(attr: ir.Attribute) -> str | None:
    """The layout string of a `#mncore.layout<"...">` attribute (None for other attributes)."""
    if not isinstance(attr, LayoutAttr):
        return None
    return ir.StringAttr(attr.params[0]).value


class _Check:
    """Collects a verifier's verdict: `error` emits a located message and fails the op."""

    def __init__(self, op: OpView | Operation):
        self.op = op
        self.ok = True

    def error(self, message: str) -> None:
        self.ok = _error(self.op, message)


def _memory(check: _Check) -> str | None:
    """The op's `memory`, if it is a known one (unknown names are reported)."""
    attr = check.op.attributes["memory"] if "memory" in check.op.attributes else None
    if not isinstance(attr, ir.StringAttr):
        return None  # IRDL reports the missing or mistyped attribute
    if attr.value not in MEMORY_WORDS:
        check.error(f"memory must be one of {', '.join(MEMORY_WORDS)}; got '{attr.value}'")
        return None
    return attr.value


def _layout(check: _Check, name: str, memory: str | None) -> Layout | None:
    """Parse the layout attribute `name` and check it against the operand tensor."""
    op = check.op
    attr = op.attributes[name] if name in op.attributes else None
    text = layout_text(attr) if attr is not None else None
    if text is None or len(op.operands) != 1:
        return None  # IRDL reports the missing or mistyped attribute or operand
    label = "layout" if name == "layout" else f"{name} layout"
    try:
        parsed = Layout.parse(text)
    except LayoutSyntaxError as err:
        check.error(f"malformed {label} \"{text}\": {err}")
        return None
    tensor = op.operands[0].type
    if not isinstance(tensor, ir.RankedTensorType):
        return None  # IRDL reports it
    if not tensor.has_static_shape:
        check.error(f"needs a statically shaped tensor, got {tensor}")
        return None
    bits = element_bits(tensor.element_type)
    if bits is None:
        check.error(f"has no element width for {tensor.element_type}")
        return None
    report = parsed.check(list(tensor.shape), bits, memory)
    for problem in report.errors:
        check.error(f"{label} does not fit {tensor}: {problem}")
    return parsed if report.ok else None


# -- attributes -------------------------------------------------------------------------------
class LayoutAttr(MNCore.Attribute, name="layout"):
    """`#mncore.layout<"((4_PE:1), (2_W:1))">`: a layout in the vendor notation, verbatim."""

    text: ir.StringAttr


# -- data placement ---------------------------------------------------------------------------
class AnnotateOp(MNCore.Operation, name="annotate", traits=[ext.Pure]):
    """Gives a tensor value a layout and the memory it lives in; identity on the value.

        %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
            : (tensor<4xf32>) -> tensor<4xf32>
    """

    input: ext.Operand[_T]
    layout: LayoutAttr
    memory: ir.StringAttr
    output: ext.Result[_T] = ext.result()

    @_guarded
    def verify_invariants(op: OpView) -> bool:  # noqa: N805 - called on the op
        check = _Check(op)
        _layout(check, "layout", _memory(check))
        return check.ok


# -- data movement ----------------------------------------------------------------------------
class RelayoutOp(MNCore.Operation, name="relayout", traits=[ext.Pure]):
    """Converts a tensor from layout `src` to layout `dst` (result in `memory`).

    Identity on the value; the conversion is data movement the cost model charges for.

        %1 = "mncore.relayout"(%0) {dst = #mncore.layout<"((2_PE:1, 2:1))">, memory = "lm",
            src = #mncore.layout<"((4_PE:1))">} : (tensor<4xf32>) -> tensor<4xf32>
    """

    input: ext.Operand[_T]
    dst: LayoutAttr
    memory: ir.StringAttr
    src: LayoutAttr
    output: ext.Result[_T] = ext.result()

    @_guarded
    def verify_invariants(op: OpView) -> bool:  # noqa: N805 - called on the op
        check = _Check(op)
        memory = _memory(check)
        src = _layout(check, "src", None)  # where the source lives is its producer's business
        _layout(check, "dst", memory)
        producer = producer_layout(op.operands[0]) if src is not None else None
        if producer is not None and producer != src:
            check.error(f"src layout {src} differs from the layout of its operand, {producer}")
        return check.ok


def producer_layout(value: Value) -> Layout | None:
    """The layout an `mncore.annotate` / `mncore.relayout` gave `value` (None otherwise)."""
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView):
        return None  # a block argument
    owner = owner.operation
    if owner.name not in LAYOUT_OPS:
        return None
    name = LAYOUT_OPS[owner.name][-1]
    text = layout_text(owner.attributes[name]) if name in owner.attributes else None
    if text is None:
        return None
    try:
        return Layout.parse(text)
    except LayoutSyntaxError:
        return None  # reported at the producer


# -- loading and module-wide verification -----------------------------------------------------
def load(ctx: Context) -> None:
    """Register `mncore` in `ctx` (idempotent per context)."""
    _load_once(ctx, MNCore)


def verify(root: Operation | OpView) -> list[tuple[Location, str]]:
    """Layouts outside mncore ops (e.g. `{mncore.layout = ...}` on function arguments) parse."""
    errors: list[tuple[Location, str]] = []

    def visit(op: Operation) -> ir.WalkResult:
        own = LAYOUT_OPS.get(op.name, ())
        for name in op.attributes:
            if name in own:
                continue
            for text in _layouts_in(op.attributes[name]):
                try:
                    Layout.parse(text)
                except LayoutSyntaxError as err:
                    errors.append((op.location, f"'{op.name}' op malformed layout \"{text}\" in "
                                                f"attribute '{name}': {err}"))
        return ir.WalkResult.ADVANCE

    walk(root.operation, visit)
    return errors


def _layouts_in(attr: ir.Attribute) -> Iterator[str]:
    """Layout strings inside `attr`, looking through arrays and dictionaries (with a stack,
    not recursion: attributes may nest thousands deep)."""
    stack = [attr]
    while stack:
        current = stack.pop()
        text = layout_text(current)
        if text is not None:
            yield text
        elif isinstance(current, ir.ArrayAttr):
            stack.extend(reversed(list(current)))
        elif isinstance(current, ir.DictAttr):
            stack.extend(current[i].attr for i in reversed(range(len(current))))


# -- builders ---------------------------------------------------------------------------------
def layout(text: str | Layout) -> LayoutAttr:
    """`#mncore.layout<"text">` (a `Layout` is printed in its canonical form)."""
    return LayoutAttr.get(ir.StringAttr.get(str(text)))


def annotate(value: Value, layout_: str | Layout, memory: str = "lm", *,
             loc: Location | None = None, ip: InsertionPoint | None = None) -> Value:
    """Give `value` a layout in `memory`; returns the annotated value."""
    op = AnnotateOp(value, layout=layout(layout_), memory=ir.StringAttr.get(memory),
                    output=value.type, loc=loc, ip=ip)
    return op.results[0]


def relayout(value: Value, src: str | Layout, dst: str | Layout, memory: str = "lm", *,
             loc: Location | None = None, ip: InsertionPoint | None = None) -> Value:
    """Convert `value` from layout `src` to `dst` (in `memory`); returns the converted value."""
    op = RelayoutOp(value, dst=layout(dst), memory=ir.StringAttr.get(memory), src=layout(src),
                    output=value.type, loc=loc, ip=ip)
    return op.results[0]


__all__ = [
    "HIERARCHY",
    "LAYOUT_OPS",
    "LEVELS",
    "MEMORY_WORDS",
    "AnnotateOp",
    "Factor",
    "Footprint",
    "Layout",
    "LayoutAttr",
    "LayoutReport",
    "LayoutSyntaxError",
    "MNCore",
    "Placement",
    "RelayoutOp",
    "annotate",
    "element_bits",
    "layout",
    "layout_text",
    "load",
    "producer_layout",
    "relayout",
    "verify",
]
