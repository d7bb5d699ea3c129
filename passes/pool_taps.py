"""`accel-pool-taps`: a max pool's window taps become the inputs of one all-parallel generic.

Why: `linalg.pooling_nchw_max` lowers to loops over the window around the output's row, a
read-modify-write of each output row per tap (9 passes for a 3x3 window), after a fill
of -inf. ResNet's stem (BatchNorm, ReLU and a 3x3/2 max pool over 64 x 112 x 112) ran as
one fused nest of 1.5 ms at 1 thread on the AVX2 host, 16% of the stem; onnxruntime's
pool takes 0.2 ms. With one input per tap the maxima stay in registers and each output
is stored once, and the fill of -inf goes:

    %f = linalg.fill ins(%ninf) outs(%e)
    %y = linalg.pooling_nchw_max {strides = [2, 2], dilations = [1, 1]}
           ins(%x, %window : tensor<1x64x114x114xf32>, tensor<3x3xf32>) outs(%f)
  ->
    %y = linalg.generic {indexing_maps = [(n, c, h, w) -> (n, c, h * 2 + i, w * 2 + j)
                                          for each tap (i, j), (n, c, h, w) -> (n, c, h, w)],
                         iterator_types = [parallel x 4]}
           ins(%x, ... : ...) outs(%e) {
             max(max(t0, t1), ...) }

The maxima are taken in the named op's order, starting from the init unless it is a fill
of -inf (then from the first tap: the same values, NaN propagated the same way).

Matched: a `linalg.pooling_nchw_max` on static f32 tensors with a static 2-D window of at
most `max-taps` taps (a global pool over a 7 x 7 map stays as it is: 49 inputs of one
generic) and strides of at least 2 (at stride 1 a tap's map would be the loop itself, and
linalg would take the loop's extent from the larger input). With `conv_layout="nchwc"`,
pools over blocked channels are rewritten by `accel-blocked-layout` first.

In the default CPU pipeline at opt_level >= 1 (`accel.host.pipelines.POOL_TAPS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.base import ModulePass, defining_op, ops_named, register_pass
from accel.passes.matmul_microkernel import _pair

_POOL = "linalg.pooling_nchw_max"


def _static_f32(value: ir.Value, rank: int) -> ir.RankedTensorType | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(t)
    if t.rank != rank or not t.has_static_shape or not isinstance(t.element_type, ir.F32Type):
        return None
    return t


def _negative_infinity_fill(value: ir.Value) -> Operation | None:
    """The `linalg.fill` of -inf that produced `value` (used only there), or None."""
    fill = defining_op(value, "linalg.fill")
    if fill is None or len(list(fill.results[0].uses)) != 1:
        return None
    constant = defining_op(fill.operands[0], "arith.constant")
    if constant is None or not isinstance(constant.attributes["value"], ir.FloatAttr):
        return None
    scalar = ir.FloatAttr(constant.attributes["value"]).value
    return fill if math.isinf(scalar) and scalar < 0 else None


@register_pass
@dataclass(frozen=True)
class PoolTaps(ModulePass):
    """Max pools as one all-parallel generic with an input per window tap."""

    name = "accel-pool-taps"

    #: Larger windows stay named ops (a generic of that many inputs compiles slowly).
    max_taps: int = field(default=25, metadata={"help": "largest KH*KW rewritten"})

    def __post_init__(self) -> None:
        if self.max_taps < 1:
            raise ValueError("max-taps must be at least 1")

    def apply(self, module: Operation) -> None:
        for op in ops_named(module, (_POOL,)):
            self._rewrite(op)

    def _rewrite(self, op: Operation) -> None:
        if len(op.operands) != 3 or len(op.results) != 1:
            return
        x_t, o_t = _static_f32(op.operands[0], 4), _static_f32(op.operands[2], 4)
        window = op.operands[1].type
        if x_t is None or o_t is None or not isinstance(window, ir.ShapedType):
            return
        window = ir.ShapedType(window)
        if window.rank != 2 or not window.has_static_shape:
            return
        kh, kw = window.shape
        strides, dilations = _pair(op, "strides"), _pair(op, "dilations")
        if strides is None or dilations is None or kh * kw > self.max_taps:
            return
        if min(strides) < 2:
            return  # a tap at offset 0 would index the input by the loop alone: linalg
            # would take the loop's extent from the (larger) input
        (sh, sw), (dh, dw) = strides, dilations
        fill = _negative_infinity_fill(op.operands[2])
        f32 = x_t.element_type
        d = [ir.AffineDimExpr.get(i) for i in range(4)]
        taps = kh * kw
        with op.location, InsertionPoint(op):
            maps = [ir.AffineMap.get(4, 0, [d[0], d[1], d[2] * sh + i * dh, d[3] * sw + j * dw])
                    for i in range(kh) for j in range(kw)]
            maps.append(ir.AffineMap.get_identity(4))
            init = op.operands[2] if fill is None else \
                dialects.tensor.EmptyOp(o_t.shape, f32).result
            parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
            generic = dialects.linalg.GenericOp(
                [o_t], [op.operands[0]] * taps, [init],
                ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                ir.ArrayAttr.get([parallel] * 4))
            block = generic.regions[0].blocks.append(*([f32] * (taps + 1)))
            # nsz: which of +0 and -0 wins a tie is not kept (eager keeps the first), the
            # value is; without it LLVM adds two blends per maximum to order the zeros.
            nsz = ir.Attribute.parse("#arith.fastmath<nsz>")
            with InsertionPoint(block):
                args = list(block.arguments)
                acc = args[0] if fill is not None else args[-1]
                for tap in args[1 if fill is not None else 0:taps]:
                    acc = dialects.arith.MaximumFOp(acc, tap, fastmath=nsz).result
                dialects.linalg.YieldOp([acc])
        op.results[0].replace_all_uses_with(generic.result)
        op.erase()
        if fill is not None:
            empty = defining_op(fill.operands[1], "tensor.empty")
            fill.erase()
            if empty is not None and not list(empty.results[0].uses):
                empty.erase()
