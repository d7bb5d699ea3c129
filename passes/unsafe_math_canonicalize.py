"""`accel-unsafe-math-canonicalize`: algebraic float rewrites that trade bit-stability for speed.

Why: a division costs several times a multiplication, and a reduction LLVM may not reorder
is a serial chain of adds that never vectorises. These rewrites change results by a few
ulp (bounded in `test/unit/test_unsafe_math.py`), which is why the rest of the pipeline
never does them. PolyBlocks turns the same family on by default and off with
`polyblocks_disable_unsafe_math_canonicalizations`; accel's
`disable_unsafe_math_canonicalizations` option leaves this pass out of the pipeline.

Each rewrite has its own option (all on by default), fires on float scalars, vectors and
tensors anywhere (function bodies, loops, `linalg.generic` bodies on tensors or memrefs):

1. `rsqrt`: division by a square root becomes a multiplication by the reciprocal root, when
   every use of the `math.sqrt` is as a divisor (so the sqrt goes away)::

       %s = math.sqrt %y : f32                  %r = math.rsqrt %y : f32
       %q = arith.divf %x, %s : f32       ->    %q = arith.mulf %x, %r : f32

2. `reciprocal`: division by a float constant (scalar or splat) becomes a multiplication by
   its reciprocal, when the (correctly rounded) reciprocal is finite and normal; powers of
   two give an exact reciprocal, other constants add at most one rounding::

       %c = arith.constant 3.0 : f32            %c_r = arith.constant 0.333333343 : f32
       %q = arith.divf %x, %c : f32       ->    %q = arith.mulf %x, %c_r : f32

3. `merge_exp`: a product of two exponentials becomes the exponential of a sum, when the
   product is the only user of both `math.exp`s (repeated to merge chains)::

       %ea = math.exp %a : f32
       %eb = math.exp %b : f32            ->    %s = arith.addf %a, %b : f32
       %p = arith.mulf %ea, %eb : f32           %p = math.exp %s : f32

4. `reassociate_reductions`: the `arith.addf`/`arith.mulf` that accumulates a reduction gets
   `fastmath<reassoc,contract>` (added to the flags it has), so LLVM may reorder and
   vectorise the reduction loop. An accumulation is the op yielding a reduction output of
   a `linalg.generic` with a "reduction" iterator, with that output's block argument as an
   operand, the op yielding into the output of a named contraction (`linalg.matmul`,
   `matvec`, convolutions, ...), or the op yielding an `scf.for`/`affine.for` iter_arg with
   that iter_arg as an operand. The flags survive `convert-linalg-to-loops` and
   `convert-arith-to-llvm` (the LLVM IR says `fadd reassoc contract`)::

       ^bb0(%in: f32, %out: f32):                ^bb0(%in: f32, %out: f32):
         %s = arith.addf %in, %out : f32   ->      %s = arith.addf %in, %out
         linalg.yield %s : f32                          fastmath<reassoc,contract> : f32

Fastmath flags of a replaced op are kept on its replacement (a divf's on the mulf). The
pass matches ops, not dataflow through tensors: a sqrt or exp computed by one
`linalg.generic` and divided or multiplied in another is left alone, so run
`linalg-fuse-elementwise-ops` first to expose those. It never fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.base import ModulePass, defining_op, ops_named, register_pass

#: Smallest positive normal number of each float type the reciprocal rewrite handles.
_MIN_NORMAL = {"f16": 2.0**-14, "bf16": 2.0**-126, "f32": 2.0**-126, "f64": 2.0**-1022}
#: LLVM's fastmath flags in `#arith.fastmath<...>` order; `fast` means all of them.
_FLAGS = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")
_REDUCTION_FLAGS = ("reassoc", "contract")
_ACCUMULATORS = ("arith.addf", "arith.mulf")
#: Named linalg ops whose body accumulates into their single output (a reduction).
_NAMED_REDUCTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.vecmat",
                     "linalg.batch_matvec", "linalg.dot", "linalg.conv_1d_nwc_wcf",
                     "linalg.conv_2d_nhwc_hwcf", "linalg.conv_2d_nchw_fchw",
                     "linalg.conv_3d_ndhwc_dhwcf", "linalg.conv_3d_ncdhw_fcdhw",
                     "linalg.depthwise_conv_2d_nhwc_hwc", "linalg.conv_2d_ngchw_fgchw")
_LOOPS = ("scf.for", "affine.for")


# -- analysis helpers ---------------------------------------------------------------------
def _element_type(t: ir.Type) -> ir.Type:
    """`t` itself, or the element type of a shaped type."""
    return t.element_type if isinstance(t, ir.ShapedType) else t


def _is_float(value: ir.Value) -> bool:
    return isinstance(_element_type(value.type), ir.FloatType)


def _uses(value: ir.Value) -> list[tuple[Operation, int]]:
    return [(use.owner.operation, use.operand_number) for use in value.uses]


def _only_user(value: ir.Value, user: Operation) -> bool:
    """True when every use of `value` is an operand of `user`."""
    uses = _uses(value)
    return bool(uses) and all(owner == user for owner, _ in uses)


def _fastmath(op: Operation) -> ir.Attribute | None:
    return op.attributes["fastmath"] if "fastmath" in op.attributes else None


def _flags(attr: ir.Attribute | None) -> set[str]:
    """The flag names of a `#arith.fastmath<...>` attribute (`fast` expanded)."""
    if attr is None:
        return set()
    inner = str(attr).partition("<")[2].rstrip(">")
    names = {name.strip() for name in inner.split(",")} - {"none", ""}
    return set(_FLAGS) if "fast" in names else names


def _fastmath_attr(flags: set[str]) -> ir.Attribute:
    ordered = [flag for flag in _FLAGS if flag in flags] or ["none"]
    return ir.Attribute.parse(f"#arith.fastmath<{','.join(ordered)}>")


def _reciprocal(constant: Operation) -> ir.Attribute | None:
    """`1/C` as an attribute of the constant's type, or None when it is not finite and normal.

    Python's `1.0 / c` is correctly rounded in f64 and `FloatAttr.get` rounds it once more to
    the element type; for f32/f16/bf16 that double rounding equals one correct rounding.
    """
    value = constant.attributes["value"]
    splat = isinstance(value, ir.DenseElementsAttr)
    if splat and not value.is_splat:
        return None
    scalar = value.get_splat_value() if splat else value
    if not isinstance(scalar, ir.FloatAttr):
        return None
    element = scalar.type
    min_normal = _MIN_NORMAL.get(str(element))
    if min_normal is None or scalar.value == 0.0 or not math.isfinite(scalar.value):
        return None
    inverse = ir.FloatAttr.get(element, 1.0 / scalar.value)
    if not math.isfinite(inverse.value) or abs(inverse.value) < min_normal:
        return None
    return ir.DenseElementsAttr.get_splat(value.type, inverse) if splat else inverse


def _yielded_by(op: Operation, block: ir.Block, terminator: str) -> list[int]:
    """Positions at which the `terminator` of `block` yields `op`'s first result."""
    last = list(block.operations)[-1].operation
    if last.name != terminator:
        return []
    return [i for i, v in enumerate(last.operands) if v == op.results[0]]


def _accumulates(op: Operation, accumulator: ir.Value) -> bool:
    return any(operand == accumulator for operand in op.operands)


def _is_reduction_accumulation(op: Operation) -> bool:
    """True when `op` (addf/mulf) accumulates a reduction of its enclosing generic or loop."""
    parent = op.parent
    block = op.block
    if parent.name == "linalg.generic":
        iterators = str(parent.attributes["iterator_types"])
        if "reduction" not in iterators:
            return False
        num_inputs = _num_inputs(parent)
        return any(_accumulates(op, block.arguments[num_inputs + i])
                   for i in _yielded_by(op, block, "linalg.yield"))
    if parent.name in _NAMED_REDUCTIONS:
        # Named contractions (matmul, matvec, conv, ...): inputs, then the one output.
        return any(_accumulates(op, block.arguments[len(block.arguments) - 1])
                   for _ in _yielded_by(op, block, "linalg.yield"))
    if parent.name in _LOOPS:
        # Block arguments: the induction variable, then one per iter_arg, in yield order.
        terminator = "scf.yield" if parent.name == "scf.for" else "affine.yield"
        return any(_accumulates(op, block.arguments[1 + i])
                   for i in _yielded_by(op, block, terminator))
    return False


def _num_inputs(generic: Operation) -> int:
    """Number of `ins` operands of a `linalg.generic` (from its operand segment sizes)."""
    return list(generic.attributes["operandSegmentSizes"])[0]


# -- rewrites -----------------------------------------------------------------------------
#: What a rewrite returns: True when it changed the IR.
Rewrite = Callable[[Operation], bool]
NO_MATCH = False
REWRITTEN = True


def rewrite_sqrt_divisor(sqrt: Operation) -> bool:
    """`divf x, (math.sqrt y)` -> `mulf x, (math.rsqrt y)`, when the sqrt is only a divisor."""
    root = sqrt.results[0]
    uses = _uses(root)
    if not uses or not _is_float(root):
        return NO_MATCH
    if any(owner.name != "arith.divf" or index != 1 or owner.operands[0] == root
           for owner, index in uses):
        return NO_MATCH
    with sqrt.location, InsertionPoint(sqrt):
        rsqrt = dialects.math.RsqrtOp(sqrt.operands[0], fastmath=_fastmath(sqrt)).result
    for divf, _ in uses:
        _replace_divf(divf, rsqrt)
    sqrt.erase()
    return REWRITTEN


def rewrite_constant_divisor(constant: Operation) -> bool:
    """`divf x, C` -> `mulf x, 1/C` for a float constant C whose reciprocal is normal."""
    result = constant.results[0]
    divisions = [owner for owner, index in _uses(result)
                 if owner.name == "arith.divf" and index == 1 and owner.operands[0] != result]
    if not divisions:
        return NO_MATCH
    with constant.location:
        inverse = _reciprocal(constant)
    if inverse is None:
        return NO_MATCH
    with constant.location, InsertionPoint.after(constant):
        reciprocal = dialects.arith.ConstantOp(result.type, inverse).result
    for divf in divisions:
        _replace_divf(divf, reciprocal)
    if not _uses(result):
        constant.erase()
    return REWRITTEN


def _replace_divf(divf: Operation, factor: ir.Value) -> None:
    with divf.location, InsertionPoint(divf):
        product = dialects.arith.MulFOp(divf.operands[0], factor, fastmath=_fastmath(divf))
    divf.results[0].replace_all_uses_with(product.result)
    divf.erase()


def merge_exp_product(mulf: Operation) -> bool:
    """`mulf (math.exp a), (math.exp b)` -> `math.exp (addf a, b)`, both exps used only here."""
    lhs, rhs = mulf.operands[0], mulf.operands[1]
    exp_a, exp_b = defining_op(lhs, "math.exp"), defining_op(rhs, "math.exp")
    if exp_a is None or exp_b is None or not _is_float(lhs):
        return NO_MATCH
    if not (_only_user(lhs, mulf) and _only_user(rhs, mulf)):
        return NO_MATCH
    flags_a, flags_b = _flags(_fastmath(exp_a)), _flags(_fastmath(exp_b))
    squared = exp_a == exp_b  # exp(a) * exp(a): one op to erase
    with mulf.location, InsertionPoint(mulf):
        total = dialects.arith.AddFOp(exp_a.operands[0], exp_b.operands[0],
                                      fastmath=_fastmath(mulf)).result
        exp = dialects.math.ExpOp(total, fastmath=_fastmath_attr(flags_a & flags_b)).result
    mulf.results[0].replace_all_uses_with(exp)
    mulf.erase()
    exp_a.erase()
    if not squared:
        exp_b.erase()
    return REWRITTEN


def reassociate_reduction(op: Operation) -> bool:
    """Adds `fastmath<reassoc,contract>` to an addf/mulf that accumulates a reduction."""
    if not _is_float(op.results[0]) or not _is_reduction_accumulation(op):
        return NO_MATCH
    flags = _flags(_fastmath(op))
    if flags.issuperset(_REDUCTION_FLAGS):
        return NO_MATCH
    op.attributes["fastmath"] = _fastmath_attr(flags | set(_REDUCTION_FLAGS))
    return REWRITTEN


def _apply_until_stable(root: Operation, names: tuple[str, ...], rewrite: Rewrite) -> None:
    """Applies `rewrite` to every `names` op, re-walking after each round that changed IR.

    A rewrite erases only its root and ops that no other candidate can be, so the handles of
    one walk stay valid for that round.
    """
    changed = True
    while changed:
        changed = False
        for op in ops_named(root, names):
            changed |= rewrite(op)


@register_pass
@dataclass(frozen=True)
class UnsafeMathCanonicalize(ModulePass):
    """Float rewrites that are not bit-stable: rsqrt, reciprocal, exp merge, reassoc reductions."""

    name = "accel-unsafe-math-canonicalize"
    rsqrt: bool = field(default=True, metadata={
        "help": "divf x, sqrt(y) -> mulf x, rsqrt(y)"})
    reciprocal: bool = field(default=True, metadata={
        "help": "divf x, C -> mulf x, 1/C for a float constant C"})
    merge_exp: bool = field(default=True, metadata={
        "help": "mulf exp(a), exp(b) -> exp(addf a, b)"})
    reassociate_reductions: bool = field(default=True, metadata={
        "help": "fastmath<reassoc,contract> on reduction accumulations"})

    def apply(self, module: Operation) -> None:
        if self.rsqrt:
            _apply_until_stable(module, ("math.sqrt",), rewrite_sqrt_divisor)
        if self.reciprocal:
            _apply_until_stable(module, ("arith.constant",), rewrite_constant_divisor)
        if self.merge_exp:
            _apply_until_stable(module, ("arith.mulf",), merge_exp_product)
        if self.reassociate_reductions:
            _apply_until_stable(module, _ACCUMULATORS, reassociate_reduction)
