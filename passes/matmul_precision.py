"""`accel-matmul-precision`: matmul and convolution arithmetic at a chosen precision.

Why: PolyBlocks' `mm_conv_precision_mode` sets the precision of the multiplies and adds of
matmuls and convolutions, whatever the model's dtypes: `mixed_fp16_fp32` feeds f16
operands to an f32 accumulator (what tensor cores do), `tf32` rounds f32 operands to
TensorFloat-32, `mixed_int8_int32` multiplies int8 and sums in int32. Writing that into the
IR once, on tensors, gives every target the same numerics: the CPU target runs the casts
and the mixed-type linalg op as loops, the nvgpu target maps the same ops to WMMA
(f16/tf32/int8), and the result is cast back to the model's dtype, so the graph around the
op is unchanged:

    %r = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>)
                       outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  -> (mode=mixed_fp16_fp32)
    %a1 = linalg.generic ... arith.truncf : f32 to f16       // operands
    %b1 = linalg.generic ... arith.truncf : f32 to f16
    %r = linalg.matmul ins(%a1, %b1 : tensor<64x32xf16>, tensor<32x48xf16>)
                       outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>

| mode | operands | accumulator |
| --- | --- | --- |
| fp32 / fp16 / bf16 | f32 / f16 / bf16 | the same |
| tf32 | f32 rounded to 10 mantissa bits (to nearest, ties away: PTX `cvt.rna.tf32.f32`) | f32 |
| mixed_fp16_fp32 / mixed_bf16_fp32 | f16 / bf16 | f32 |
| int32 / mixed_int8_int32 | i32 / i8 (wrapping, as torch's `.to(torch.int8)`) | i32 |

Ops: the two-input linalg contractions and convolutions (matmul, batch_matmul and their
transposed forms, matvec, vecmat, dot, conv_*, depthwise_conv_*) on tensors. A float mode
on an integer op, or an integer mode on a float op, is an error naming the op: the mode
cannot mean anything there, and ignoring it would hide that. Runs before any pass that
rewrites matmuls (reduce-reduce fusion, the GEMM kernels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from accel.ir import Module, Operation, ir
from accel.passes.base import ModulePass, ops_named, register_pass, replace_with_function_body

Mode = Literal["fp32", "tf32", "fp16", "bf16", "mixed_fp16_fp32", "mixed_bf16_fp32", "int32",
               "mixed_int8_int32"]

#: mode -> (kind, operand type, accumulator type); "tf32" is f32 rounded to 10 mantissa bits.
MODES: dict[str, tuple[str, str, str]] = {
    "fp32": ("float", "f32", "f32"),
    "tf32": ("float", "tf32", "f32"),
    "fp16": ("float", "f16", "f16"),
    "bf16": ("float", "bf16", "bf16"),
    "mixed_fp16_fp32": ("float", "f16", "f32"),
    "mixed_bf16_fp32": ("float", "bf16", "f32"),
    "int32": ("integer", "i32", "i32"),
    "mixed_int8_int32": ("integer", "i8", "i32"),
}

#: The named ops whose multiplies and adds the mode governs (quantized variants, with
#: zero-point operands, have four inputs and are not matched).
CONTRACTIONS = re.compile(
    r"linalg\.((batch_)?(matmul|matvec|vecmat|reduce_matmul)(_transpose_[ab])?|"
    r"dot|contract|(depthwise_)?conv_\w+)")


def contractions(root: Operation) -> list[Operation]:
    """The named contractions under `root`, collected before any is rewritten. A pass that
    iterated every op and rewrote the contractions on the way went on to the erased ops'
    bodies (arith.mulf, linalg.yield): freed memory behind still-valid handles, a flaky
    segfault in `accel-outline-contractions` (and under MALLOC_PERTURB_ a certain one)."""
    return [op for op in ops_named(root) if CONTRACTIONS.fullmatch(op.name)]


_FLOATS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
#: Attributes the custom syntax derives itself.
_DERIVED = ("operandSegmentSizes", "linalg.memoized_indexing_maps", "indexing_maps")


def _bits(elt: str) -> int | None:
    match = re.fullmatch(r"i(\d+)", elt)
    return int(match.group(1)) if match else None


def _cast_body(src: str, dst: str) -> list[str]:
    """Lines computing `%y : dst` from `%x : src` (block arguments of a linalg.generic)."""
    if dst == "tf32":
        lines = [] if src == "f32" else \
            [f"%x32 = arith.{'extf' if _FLOATS[src] < 32 else 'truncf'} %x : {src} to f32"]
        x = "%x" if src == "f32" else "%x32"
        # Round to nearest, ties away from zero, on the magnitude bits (sign-magnitude):
        # add half an ulp of tf32 and clear the 13 low bits; Inf and NaN pass unchanged.
        return lines + [
            f"%bits = arith.bitcast {x} : f32 to i32",
            "%expmask = arith.constant 2139095040 : i32",
            "%half = arith.constant 4096 : i32",
            "%keep = arith.constant -8192 : i32",
            "%exp = arith.andi %bits, %expmask : i32",
            "%finite = arith.cmpi ne, %exp, %expmask : i32",
            "%up = arith.addi %bits, %half : i32",
            "%cut = arith.andi %up, %keep : i32",
            "%sel = arith.select %finite, %cut, %bits : i32",
            "%y = arith.bitcast %sel : i32 to f32"]
    if src in _FLOATS:
        if _FLOATS[src] == _FLOATS[dst]:  # f16 <-> bf16: through f32
            return [f"%w = arith.extf %x : {src} to f32", f"%y = arith.truncf %w : f32 to {dst}"]
        op = "extf" if _FLOATS[src] < _FLOATS[dst] else "truncf"
        return [f"%y = arith.{op} %x : {src} to {dst}"]
    op = "extsi" if (_bits(src) or 0) < (_bits(dst) or 0) else "trunci"
    return [f"%y = arith.{op} %x : {src} to {dst}"]


def _tensor(shape: list[int], elt: str) -> str:
    dims = "".join(("?" if d == ir.ShapedType.get_dynamic_size() else str(d)) + "x"
                   for d in shape)
    return f"tensor<{dims}{'f32' if elt == 'tf32' else elt}>"


def _cast(name: str, value: str, t: ir.RankedTensorType, dst: str, loc: str) -> tuple[
        list[str], str]:
    """Lines making `%name` = `value` (of type t) cast elementwise to `dst`."""
    src, shape = str(t.element_type), list(t.shape)
    rank = len(shape)
    dims = ", ".join(f"d{i}" for i in range(rank))
    identity = f"affine_map<({dims}) -> ({dims})>"
    iters = ", ".join(['"parallel"'] * rank)
    lines, sizes = [], []
    for i, d in enumerate(shape):
        if d == ir.ShapedType.get_dynamic_size():
            lines += [f"%{name}_i{i} = arith.constant {i} : index {loc}",
                      f"%{name}_d{i} = tensor.dim {value}, %{name}_i{i} : {t} {loc}"]
            sizes.append(f"%{name}_d{i}")
    out = _tensor(shape, dst)
    dst_elt = "f32" if dst == "tf32" else dst
    body = [f"    {line} {loc}" for line in _cast_body(src, dst)]
    lines += [f"%{name}_e = tensor.empty({', '.join(sizes)}) : {out} {loc}",
              f"%{name} = linalg.generic {{indexing_maps = [{identity}, {identity}], "
              f"iterator_types = [{iters}]}} ins({value} : {t}) outs(%{name}_e : {out}) {{",
              f"  ^bb0(%x: {src}, %o: {dst_elt}):", *body,
              f"    linalg.yield %y : {dst_elt} {loc}", f"}} -> {out} {loc}"]
    return lines, out


def location_text(op: Operation) -> str:
    """`op`'s location as MLIR text, to put after the ops that replace it."""
    text = str(op.location)
    return text if text.startswith("loc(") else f"loc({text})"


def named_op(op: Operation, ins: list[str], types: list[str], loc: str) -> str:
    """`op` re-stated in custom syntax on new operands/types (the parser rebuilds its body
    with the casts the mixed types need)."""
    attrs = [f"{n} = {op.attributes[n]}" for n in op.attributes if n not in _DERIVED]
    maps = f" indexing_maps = {op.attributes['indexing_maps']}" \
        if "indexing_maps" in op.attributes else ""
    attr_dict = f" {{{', '.join(attrs)}}}" if attrs else ""
    return (f"%r = {op.name}{maps}{attr_dict} ins({ins[0]}, {ins[1]} : {types[0]}, "
            f"{types[1]}) outs({ins[2]} : {types[2]}) -> {types[2]} {loc}")


@register_pass
@dataclass(frozen=True)
class MatmulPrecision(ModulePass):
    """Casts the operands and accumulator of matmuls/convolutions to a precision mode's types."""

    name = "accel-matmul-precision"
    #: The precision (PolyBlocks' mm_conv_precision_mode values).
    mode: Mode = "mixed_fp16_fp32"

    def apply(self, module: Operation) -> None:
        for op in contractions(module):
            self._rewrite(op)

    def _rewrite(self, op: Operation) -> None:
        kind, operand, acc = MODES[self.mode]
        values = list(op.operands)
        if any(isinstance(v.type, ir.MemRefType) for v in values):
            self.fail(op, f"accel-matmul-precision runs on tensors, before bufferization; "
                          f"{op.name} is on {values[0].type}")
        if len(values) != 3 or len(op.results) != 1 or \
                not all(isinstance(v.type, ir.RankedTensorType) for v in values):
            return  # quantized forms (zero points), unranked tensors
        types = [ir.RankedTensorType(v.type) for v in values]
        elts = [str(t.element_type) for t in types]
        for elt in elts:
            is_float, is_int = elt in _FLOATS, _bits(elt) is not None
            if (kind == "float" and not is_float) or (kind == "integer" and not is_int):
                self.fail(op, f"mm_conv_precision_mode={self.mode} is for {kind} matmuls and "
                              f"convolutions; {op.name} computes in {elt}")
        if self.mode != "tf32" and elts[:2] == [operand, operand] and elts[2] == acc:
            return  # already at this precision
        loc = location_text(op)
        lines: list[str] = []
        new_values, new_types = [], []
        for i, (t, dst) in enumerate(zip(types, (operand, operand, acc), strict=True)):
            if elts[i] == dst:
                new_values.append(f"%arg{i}")
                new_types.append(str(t))
                continue
            cast, cast_type = _cast(f"v{i}", f"%arg{i}", t, dst, loc)
            lines += cast
            new_values.append(f"%v{i}")
            new_types.append(cast_type)
        lines.append(named_op(op, new_values, new_types, loc))
        result = "%r"
        if new_types[2] != str(types[2]):
            back, _ = _cast("back", "%r", ir.RankedTensorType.parse(new_types[2]), elts[2], loc)
            lines += back
            result = "%back"
        args = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(types))
        text = "\n".join([f"func.func private @h({args}) -> {types[2]} {{", *lines,
                          f"return {result} : {types[2]}", "}"])
        replace_with_function_body(op, Module.parse(text))

