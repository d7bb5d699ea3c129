"""`accel-nvgpu-conv-to-matmul`: tensor-core-sized NCHW convolutions -> im2col + batch_matmul.

Why: tensor cores multiply matrices, and the loop path runs a convolution on the scalar
units with one thread per output element. Rewritten as im2col (a copy, by one affine
`linalg.generic`) and a batched matmul, a convolution takes the WMMA kernels of
`accel-nvgpu-tensor-core-matmul` like any matmul; the output keeps NCHW without a
transpose because the weights are the left operand:

    out[n] (F x OH*OW) = W (F x C*KH*KW) @ col[n] (C*KH*KW x OH*OW)

    %r = linalg.conv_2d_nchw_fchw {strides, dilations} ins(%x, %w) outs(%init)
  ->
    %col = linalg.generic ins(%x) outs(N x C x KH x KW x OH x OW)    // x[n, c, oh*s + kh*d, ...]
    %wb  = linalg.broadcast ins(collapse(%w) : F x CKK) outs(N x F x CKK)
    %r   = linalg.batch_matmul ins(%wb, collapse(%col)) outs(collapse(%init))
    expand_shape %r to N x F x OH x OW

Matched (else the convolution is left to the loop path): static `conv_2d_nchw_fchw` on
tensors whose types tensor cores take (f16 -> f16/f32, int8 -> int32; f32 -> f32 with
`tf32`), F and OH*OW multiples of 16, C*KH*KW a multiple of the WMMA k (16; 8 for tf32).
The im2col buffer costs KH*KW times the input's memory. Runs after tensor-level fusion
(whose reshape propagation would turn the batch_matmul into a generic) and before
bufferization.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import Module, Operation, ir
from accel.passes.base import ModulePass, ops_named, register_pass, replace_with_function_body

TILE = 16


def _ints(attr: ir.Attribute) -> list[int]:
    return [int(v) for v in ir.DenseIntElementsAttr(attr)]


def _fits(x: str, w: str, o: str, tf32: bool) -> int | None:
    """The WMMA k for these element types, or None when tensor cores do not take them."""
    if x != w:
        return None
    if x == "f16" and o in ("f16", "f32") or x == "i8" and o == "i32":
        return TILE
    return 8 if tf32 and x == o == "f32" else None


@register_pass
@dataclass(frozen=True)
class NvgpuConvToMatmul(ModulePass):
    """Rewrites tensor-core-sized NCHW convolutions as im2col + batch_matmul on tensors."""

    name = "accel-nvgpu-conv-to-matmul"
    #: f32 convolutions too (mm_conv_precision_mode=tf32 runs f32 matmuls on tensor cores).
    tf32: bool = False

    def apply(self, module: Operation) -> None:
        for op in ops_named(module, ("linalg.conv_2d_nchw_fchw",)):
            text = self._helper(op)
            if text is not None:
                replace_with_function_body(op, Module.parse(text))

    def _helper(self, op: Operation) -> str | None:
        if len(op.operands) != 3 or len(op.results) != 1:
            return None
        types = [v.type for v in op.operands]
        if not all(isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t)
                   .has_static_shape for t in types):
            return None
        tx, tw, to = (ir.RankedTensorType(t) for t in types)
        ex, ew, eo = (str(t.element_type) for t in (tx, tw, to))
        ktile = _fits(ex, ew, eo, self.tf32)
        n, c, _, _ = tx.shape
        f, _, kh, kw = tw.shape
        _, _, oh, ow = to.shape
        ckk, ohow = c * kh * kw, oh * ow
        if ktile is None or f % TILE or ohow % TILE or ckk % ktile:
            return None
        sh, sw = _ints(op.attributes["strides"])
        dh, dw = _ints(op.attributes["dilations"])
        loc = str(op.location)
        col6 = f"tensor<{n}x{c}x{kh}x{kw}x{oh}x{ow}x{ex}>"
        col, wc = f"tensor<{n}x{ckk}x{ohow}x{ex}>", f"tensor<{f}x{ckk}x{ex}>"
        wb, acc = f"tensor<{n}x{f}x{ckk}x{ex}>", f"tensor<{n}x{f}x{ohow}x{eo}>"
        dims = "(n, c, kh, kw, oh, ow)"
        window = f"(n, c, oh * {sh} + kh * {dh}, ow * {sw} + kw * {dw})"
        par = ", ".join(['"parallel"'] * 6)
        return "\n".join([
            f"func.func private @h(%x: {tx}, %w: {tw}, %init: {to}) -> {to} {{",
            f"  %e = tensor.empty() : {col6} {loc}",
            f"  %col6 = linalg.generic {{indexing_maps = [affine_map<{dims} -> {window}>, "
            f"affine_map<{dims} -> {dims}>], iterator_types = [{par}]}} ins(%x : {tx}) "
            f"outs(%e : {col6}) {{",
            f"  ^bb0(%in: {ex}, %out: {ex}):",
            f"    linalg.yield %in : {ex} {loc}",
            f"  }} -> {col6} {loc}",
            f"  %col = tensor.collapse_shape %col6 [[0], [1, 2, 3], [4, 5]] : {col6} into "
            f"{col} {loc}",
            f"  %wc = tensor.collapse_shape %w [[0], [1, 2, 3]] : {tw} into {wc} {loc}",
            f"  %eb = tensor.empty() : {wb} {loc}",
            f"  %wb = linalg.broadcast ins(%wc : {wc}) outs(%eb : {wb}) dimensions = [0] {loc}",
            f"  %ic = tensor.collapse_shape %init [[0], [1], [2, 3]] : {to} into {acc} {loc}",
            f"  %r = linalg.batch_matmul ins(%wb, %col : {wb}, {col}) outs(%ic : {acc}) -> "
            f"{acc} {loc}",
            f"  %o = tensor.expand_shape %r [[0], [1], [2, 3]] output_shape [{n}, {f}, {oh}, "
            f"{ow}] : {acc} into {to} {loc}",
            f"  return %o : {to} {loc}", "}"])
