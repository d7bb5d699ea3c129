"""The `rdu` dialect: dataflow sections of a SambaNova Reconfigurable Dataflow Unit.

Hardware concept. An RDU is a grid of PCUs (pattern compute units) and PMUs (pattern memory
units: on-chip SRAM). The graph compiler cuts a model into *sections*: a section is the unit
the chip runs at one time, a subgraph whose ops are pipelined spatially over the PCUs and
PMUs it occupies. Sections run one after another, in `index` order, and exchange tensors
through DRAM. A *hypersection* is a repeating section body (e.g. one transformer layer)
compiled once; the sections that run it are instances that carry no copy of the body.
Inside a section, tensors streamed from one pipeline stage to the next go through PMU
buffers (`rdu.stage_buffer`, e.g. depth 2 for double buffering).

Ops (generic form when printed):

- `rdu.section`: operands = tensors entering the section (block arguments inside), results =
  tensors leaving it, one region with one block ending in `rdu.yield`. Attributes: `sym_name`,
  `index` (execution order), `phase` (forward | backward | allreduce | grad_norm |
  optimizer), `pcus`, `pmus` (units it occupies); optional `hypersection = @name` makes it
  an instance with an empty region.
- `rdu.hypersection`: a module-level symbol holding a reusable body; `function_type` is its
  signature.
- `rdu.stage_buffer`: identity on its tensor; marks a PMU buffer of `depth` slots.
- `rdu.yield`: terminator of section and hypersection bodies.
- `#rdu.arch<"sn40l">`: the target, placed on the module as `rdu.arch`; an optional module
  attribute `rdu.resource_scaling = [f, b, o]` (or 4 floats) mirrors SambaFlow's
  `--resources-scaling-factors`.

Invariants (IRDL checks attribute kinds and operand counts; the rest is verified here):
a body has one block whose arguments match the operands and whose `rdu.yield` matches the
results (hypersection: its `function_type`); an instance section has an empty region;
`phase` is known; `index`, `pcus`, `pmus` are non-negative; `stage_buffer` depth >= 1 and it
sits in a section body; `yield` sits in a section or hypersection. Module-wide (`verify`):
`rdu.arch` names a known target and `rdu.resource_scaling` is well formed; section resources
fit the target times the phase's scaling factor; section indices are unique among sibling
sections; a hypersection reference resolves and its signature matches the instance.

    module attributes {rdu.arch = #rdu.arch<"sn40l">} {
      func.func @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {
        %0 = "rdu.section"(%arg0) ({
        ^bb0(%arg1: tensor<4xf32>):
          %1 = "rdu.stage_buffer"(%arg1) {depth = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
          "rdu.yield"(%1) : (tensor<4xf32>) -> ()
        }) {index = 0 : i64, pcus = 12 : i64, phase = "forward", pmus = 8 : i64,
            sym_name = "s0"} : (tensor<4xf32>) -> tensor<4xf32>
        return %0 : tensor<4xf32>
      }
    }
"""

# No `from __future__ import annotations`: ext reads the field annotations as live types.
from collections.abc import Sequence
from typing import Any, TypeVar

from accel.dialects._verify import guarded as _guarded
from accel.dialects._verify import load_once as _load_once
from accel.dialects._verify import op_error as _error
from accel.dialects._verify import parent_is as _parent_is
from accel.dialects.rdu_arch import (
    ARCHS,
    PHASES,
    lookup_arch,
    resource_limit,
    scaling_error,
    scaling_for,
)
from accel.ir import (
    Context,
    InsertionPoint,
    Location,
    Operation,
    OpView,
    Type,
    Value,
    dialects,
    ir,
    walk,
)

ext = dialects.ext

#: Module attribute holding the target `#rdu.arch<"...">`.
ARCH_ATTR = "rdu.arch"
#: Module attribute holding 3 or 4 resource scaling factors (floats).
SCALING_ATTR = "rdu.resource_scaling"
#: Section attribute naming the hypersection it instances.
HYPERSECTION_ATTR = "hypersection"
#: Ops whose body an `rdu.yield` / `rdu.stage_buffer` may sit in.
BODY_OPS = ("rdu.section", "rdu.hypersection")

_T = TypeVar("_T", bound=ir.RankedTensorType)


class RDU(ext.Dialect, name="rdu"):
    """Sections of a Reconfigurable Dataflow Unit."""


def _whole_variadics(cls: type) -> type:
    """ext reads a lone variadic operand/result group through `operandSegmentSizes`, which
    IRDL does not need and parsed IR lacks: read whole lists, and build ops without it."""
    variadic = [f for f in cls._fields  # type: ignore[attr-defined]
                if isinstance(f, ext.OperandDef | ext.ResultDef)
                and f.variadicity.name == "variadic"]
    if len([f for f in variadic if isinstance(f, ext.OperandDef)]) > 1 or \
            len([f for f in variadic if isinstance(f, ext.ResultDef)]) > 1:
        raise TypeError(f"{cls.__name__}: more than one variadic group needs segment sizes")
    build = cls.__init__

    def __init__(self: OpView, *args: Any, **kwargs: Any) -> None:
        build(self, *args, **kwargs)
        for name in ("operandSegmentSizes", "resultSegmentSizes"):
            if name in self.operation.attributes:
                del self.operation.attributes[name]

    __init__.__signature__ = build.__signature__  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[misc]
    for field in variadic:
        if isinstance(field, ext.OperandDef):
            setattr(cls, field.name, property(lambda self: list(self.operation.operands)))
        else:
            setattr(cls, field.name, property(lambda self: list(self.operation.results)))
    return cls


def _int(op: OpView | Operation, name: str) -> int | None:
    attr = op.attributes[name] if name in op.attributes else None
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


def _str(op: OpView | Operation, name: str) -> str | None:
    attr = op.attributes[name] if name in op.attributes else None
    return attr.value if isinstance(attr, ir.StringAttr) else None


def _types(values: Sequence[Value]) -> list[Type]:
    return [v.type for v in values]


def _signature(inputs: Sequence[Type], results: Sequence[Type]) -> str:
    return str(ir.FunctionType.get(list(inputs), list(results)))


def _check_body(op: OpView | Operation, inputs: Sequence[Type], results: Sequence[Type],
                what: str) -> bool:
    """One block, arguments typed like `inputs`, ending in `rdu.yield` typed like `results`."""
    blocks = list(op.regions[0].blocks)
    if len(blocks) != 1:
        return _error(op, f"body must have exactly one block, found {len(blocks)}")
    block = blocks[0]
    args = _types(block.arguments)
    if args != list(inputs):
        return _error(op, f"body arguments ({', '.join(map(str, args))}) do not match the "
                          f"{what} ({', '.join(map(str, inputs))})")
    ops = list(block.operations)
    last = ops[-1].operation if ops else None
    if last is None or last.name != "rdu.yield":
        found = f"'{last.name}'" if last is not None else "an empty block"
        return _error(op, f"body must end with 'rdu.yield', found {found}")
    yielded = _types(last.operands)
    if yielded != list(results):
        return _error(op, f"yields ({', '.join(map(str, yielded))}) but its results are "
                          f"({', '.join(map(str, results))})")
    return True


def _check_counts(op: OpView | Operation) -> bool:
    phase = _str(op, "phase")
    if phase is not None and phase not in PHASES:
        return _error(op, f"phase must be one of {', '.join(PHASES)}; got '{phase}'")
    for name, what in (("index", "index"), ("pcus", "PCU count"), ("pmus", "PMU count")):
        value = _int(op, name)
        if value is not None and value < 0:
            return _error(op, f"{what} must be non-negative, got {value}")
    return True


# -- attributes -------------------------------------------------------------------------------
class ArchAttr(RDU.Attribute, name="arch"):
    """`#rdu.arch<"sn40l">`: an RDU target from `accel.dialects.rdu_arch.ARCHS`."""

    target: ir.StringAttr


# -- structure --------------------------------------------------------------------------------
@_whole_variadics
class SectionOp(RDU.Operation, name="section", traits=[ir.IsIsolatedFromAboveTrait]):
    """A section: the subgraph the chip runs at one time, pipelined over `pcus` and `pmus`.

        %0 = "rdu.section"(%a) ({
        ^bb0(%x: tensor<4xf32>):
          "rdu.yield"(%x) : (tensor<4xf32>) -> ()
        }) {index = 0 : i64, pcus = 4 : i64, phase = "forward", pmus = 2 : i64,
            sym_name = "s0"} : (tensor<4xf32>) -> tensor<4xf32>

    With `hypersection = @hs` the region is empty: the body is the hypersection's.
    """

    inputs: Sequence[ext.Operand[ir.RankedTensorType]]
    index: ir.IntegerAttr
    pcus: ir.IntegerAttr
    phase: ir.StringAttr
    pmus: ir.IntegerAttr
    sym_name: ir.StringAttr
    outputs: Sequence[ext.Result[ir.RankedTensorType]] = ext.result()
    body: ext.Region

    @_guarded
    def verify_region_invariants(op: OpView) -> bool:  # noqa: N805 - called on the op
        if not _check_counts(op):
            return False
        if HYPERSECTION_ATTR in op.attributes:
            ref = op.attributes[HYPERSECTION_ATTR]
            if not isinstance(ref, ir.FlatSymbolRefAttr):
                return _error(op, f"'{HYPERSECTION_ATTR}' must be a flat symbol reference "
                                  f"(@name), got {ref}")
            if len(op.regions[0].blocks):
                return _error(op, f"instance of hypersection @{ref.value} must have an empty "
                                  "region (the body is the hypersection's)")
            return True
        return _check_body(op, _types(op.operands), _types(op.results), "section operands")

    @property
    def entry(self) -> ir.Block:
        """The body block (sections that instance a hypersection have none)."""
        return self.regions[0].blocks[0]


class HypersectionOp(RDU.Operation, name="hypersection", traits=[ir.IsIsolatedFromAboveTrait]):
    """A reusable section body compiled once; instance sections refer to it by symbol.

        "rdu.hypersection"() ({
        ^bb0(%x: tensor<4xf32>):
          "rdu.yield"(%x) : (tensor<4xf32>) -> ()
        }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "layer"} : () -> ()
    """

    function_type: ir.TypeAttr
    sym_name: ir.StringAttr
    body: ext.Region

    @_guarded
    def verify_region_invariants(op: OpView) -> bool:  # noqa: N805 - called on the op
        attr = op.attributes["function_type"] if "function_type" in op.attributes else None
        signature = attr.value if isinstance(attr, ir.TypeAttr) else None
        if not isinstance(signature, ir.FunctionType):
            return _error(op, f"function_type must be a function type, got {signature}")
        parent = op.operation.parent
        if parent is None or parent.name != "builtin.module":
            found = f"'{parent.name}'" if parent is not None else "nothing"
            return _error(op, f"must be directly inside a 'builtin.module', found {found}")
        return _check_body(op, signature.inputs, signature.results, "function_type inputs")

    @property
    def entry(self) -> ir.Block:
        return self.regions[0].blocks[0]


# -- data movement ----------------------------------------------------------------------------
class StageBufferOp(RDU.Operation, name="stage_buffer", traits=[ext.Pure]):
    """A tensor streamed between pipeline stages through a PMU buffer of `depth` slots.

        %1 = "rdu.stage_buffer"(%0) {depth = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    """

    source: ext.Operand[_T]
    depth: ir.IntegerAttr
    output: ext.Result[_T] = ext.result()

    @_guarded
    def verify_invariants(op: OpView) -> bool:  # noqa: N805 - called on the op
        depth = _int(op, "depth")
        if depth is not None and depth < 1:
            return _error(op, f"depth must be at least 1, got {depth}")
        return _parent_is(op, BODY_OPS,
                          "must be inside an 'rdu.section' or 'rdu.hypersection' body")


# -- terminators ------------------------------------------------------------------------------
@_whole_variadics
class YieldOp(RDU.Operation, name="yield", traits=[ir.IsTerminatorTrait]):
    """Ends a section or hypersection body; its operands leave the section.

        "rdu.yield"(%1) : (tensor<4xf32>) -> ()
    """

    values: Sequence[ext.Operand[ir.RankedTensorType]]

    @_guarded
    def verify_invariants(op: OpView) -> bool:  # noqa: N805 - called on the op
        return _parent_is(op, BODY_OPS,
                          "must terminate an 'rdu.section' or 'rdu.hypersection' body")


# -- loading and module-wide verification -----------------------------------------------------
def load(ctx: Context) -> None:
    """Register `rdu` in `ctx` (idempotent per context)."""
    _load_once(ctx, RDU)


def verify(root: Operation | OpView) -> list[tuple[Location, str]]:
    """Cross-op invariants: target and scaling, resources, unique indices, hypersections."""
    root = root.operation
    errors: list[tuple[Location, str]] = []
    modules: list[Operation] = []
    sections: list[Operation] = []

    def visit(op: Operation) -> ir.WalkResult:
        if op.name == "builtin.module":
            modules.append(op)
        elif op.name == "rdu.section":
            sections.append(op)
        return ir.WalkResult.ADVANCE

    walk(root, visit)
    for module in modules:
        errors += _verify_target(module)
    errors += _verify_indices(sections)
    for section in sections:
        errors += _verify_resources(section)
        errors += _verify_instance(section)
    return errors


def _located(op: Operation, message: str) -> list[tuple[Location, str]]:
    return [(op.location, f"'{op.name}' op {message}")]


def _verify_target(module: Operation) -> list[tuple[Location, str]]:
    if ARCH_ATTR in module.attributes:
        arch = module.attributes[ARCH_ATTR]
        if not isinstance(arch, ArchAttr):
            return _located(module, f"'{ARCH_ATTR}' must be an #rdu.arch<\"...\"> attribute, "
                                    f"got {arch}")
        name = ir.StringAttr(arch.params[0]).value
        if lookup_arch(name) is None:
            return _located(module, f"unknown RDU architecture '{name}' (known: "
                                    f"{', '.join(ARCHS)})")
    if SCALING_ATTR in module.attributes:
        factors = _scaling(module)
        if factors is None:
            return _located(module, f"'{SCALING_ATTR}' must be an array of floats, got "
                                    f"{module.attributes[SCALING_ATTR]}")
        problem = scaling_error(factors)
        if problem:
            return _located(module, f"'{SCALING_ATTR}' {problem}")
    return []


def _scaling(module: Operation) -> list[float] | None:
    attr = module.attributes[SCALING_ATTR] if SCALING_ATTR in module.attributes else None
    if attr is None:
        return []
    if not isinstance(attr, ir.ArrayAttr) or not all(isinstance(a, ir.FloatAttr) for a in attr):
        return None
    return [a.value for a in attr]


def _enclosing_module(op: Operation) -> Operation | None:
    parent = op.parent
    while parent is not None and parent.name != "builtin.module":
        parent = parent.parent
    return parent.operation if parent is not None else None


def _verify_indices(sections: Sequence[Operation]) -> list[tuple[Location, str]]:
    errors: list[tuple[Location, str]] = []
    seen: dict[tuple[Any, int], str] = {}
    for section in sections:
        index = _int(section, "index")
        if index is None:
            continue
        key = (section.block, index)
        if key in seen:
            errors += _located(section, f"index {index} is already used by section "
                                        f"\"{seen[key]}\" in the same block")
            continue
        seen[key] = _str(section, "sym_name") or "?"
    return errors


def _verify_resources(section: Operation) -> list[tuple[Location, str]]:
    module = _enclosing_module(section)
    if module is None or ARCH_ATTR not in module.attributes:
        return []
    arch_attr = module.attributes[ARCH_ATTR]
    if not isinstance(arch_attr, ArchAttr):
        return []
    arch = lookup_arch(ir.StringAttr(arch_attr.params[0]).value)
    factors = _scaling(module)
    phase = _str(section, "phase")
    if arch is None or factors is None or phase not in PHASES:
        return []  # reported by _verify_target / the op verifier
    if factors and scaling_error(factors):
        return []
    for resource, unit in (("pcus", "PCUs"), ("pmus", "PMUs")):
        used = _int(section, resource)
        limit = resource_limit(arch, resource, phase, factors)
        if used is not None and used > limit:
            factor = scaling_for(phase, factors)
            scaled = f" ({arch.units(resource)} x {factor:g} {phase} scaling)" if factors else ""
            return _located(section, f"needs {used} {unit} but {arch.name} offers {limit}"
                                     f"{scaled}")
    return []


def _verify_instance(section: Operation) -> list[tuple[Location, str]]:
    ref = section.attributes[HYPERSECTION_ATTR] if HYPERSECTION_ATTR in section.attributes \
        else None
    if not isinstance(ref, ir.FlatSymbolRefAttr):
        return []
    module = _enclosing_module(section)
    target = _lookup_hypersection(module, ref.value) if module is not None else None
    if target is None:
        return _located(section, f"hypersection @{ref.value} does not name an "
                                 "'rdu.hypersection' in the enclosing module")
    attr = target.attributes["function_type"]
    expected = attr.value if isinstance(attr, ir.TypeAttr) else None
    if not isinstance(expected, ir.FunctionType):
        return []  # reported by the hypersection's verifier
    actual = (_types(section.operands), _types(section.results))
    if actual != (list(expected.inputs), list(expected.results)):
        return _located(section, f"signature {_signature(*actual)} does not match "
                                 f"hypersection @{ref.value} {expected}")
    return []


def _lookup_hypersection(module: Operation, name: str) -> Operation | None:
    for op in module.regions[0].blocks[0].operations:
        if op.operation.name == "rdu.hypersection" and _str(op, "sym_name") == name:
            return op.operation
    return None


# -- builders ---------------------------------------------------------------------------------
def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def arch(name: str) -> ArchAttr:
    """`#rdu.arch<"name">` (in the current context)."""
    return ArchAttr.get(ir.StringAttr.get(name))


def set_target(module: Operation | OpView, name: str,
               scaling: Sequence[float] | None = None) -> None:
    """Mark `module` with `rdu.arch` (and `rdu.resource_scaling` when given)."""
    op = module.operation
    op.attributes[ARCH_ATTR] = arch(name)
    if scaling is not None:
        f64 = ir.F64Type.get()
        op.attributes[SCALING_ATTR] = ir.ArrayAttr.get([ir.FloatAttr.get(f64, s)
                                                         for s in scaling])


def section(inputs: Sequence[Value], result_types: Sequence[Type], *, name: str, index: int,
            phase: str = "forward", pcus: int = 0, pmus: int = 0,
            hypersection: str | None = None, loc: Location | None = None,
            ip: InsertionPoint | None = None) -> SectionOp:
    """An `rdu.section`; unless it instances `hypersection`, its (empty) body block is created
    with arguments typed like `inputs`: fill `op.entry` and end it with `yield_`."""
    op = SectionOp(list(inputs), index=_i64(index), pcus=_i64(pcus),
                   phase=ir.StringAttr.get(phase), pmus=_i64(pmus),
                   sym_name=ir.StringAttr.get(name), outputs=list(result_types), loc=loc, ip=ip)
    if hypersection is not None:
        op.operation.attributes[HYPERSECTION_ATTR] = ir.FlatSymbolRefAttr.get(hypersection)
        return op
    op.regions[0].blocks.append(*_types(inputs))
    return op


def hypersection(name: str, inputs: Sequence[Type], results: Sequence[Type], *,
                 loc: Location | None = None,
                 ip: InsertionPoint | None = None) -> HypersectionOp:
    """An `rdu.hypersection` with an empty body block: fill `op.entry`, end with `yield_`."""
    signature = ir.FunctionType.get(list(inputs), list(results))
    op = HypersectionOp(function_type=ir.TypeAttr.get(signature),
                        sym_name=ir.StringAttr.get(name), loc=loc, ip=ip)
    op.regions[0].blocks.append(*inputs)
    return op


def stage_buffer(value: Value, depth: int = 2, *, loc: Location | None = None,
                 ip: InsertionPoint | None = None) -> Value:
    """Stream `value` through a PMU buffer of `depth` slots; returns the buffered value."""
    return StageBufferOp(value, _i64(depth), output=value.type, loc=loc, ip=ip).results[0]


def yield_(values: Sequence[Value], *, loc: Location | None = None,
           ip: InsertionPoint | None = None) -> YieldOp:
    """End a section or hypersection body with `values`."""
    return YieldOp(list(values), loc=loc, ip=ip)


__all__ = [
    "ARCH_ATTR",
    "HYPERSECTION_ATTR",
    "RDU",
    "SCALING_ATTR",
    "ArchAttr",
    "HypersectionOp",
    "SectionOp",
    "StageBufferOp",
    "YieldOp",
    "arch",
    "hypersection",
    "load",
    "section",
    "set_target",
    "stage_buffer",
    "verify",
    "yield_",
]
