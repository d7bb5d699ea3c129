"""The depthwise convolution kernel of `accel-conv-kernels`, as MLIR text.

`render_depthwise(spec, vl, name)` returns a private `func.func @<name>(%X, %Wt, %O)` on
memrefs computing `O += depthwise_conv(X, Wt)` for one `linalg.depthwise_conv_2d_nchw_chw`
(X N x C x H x W already padded, Wt C x KH x KW, O N x C x OH x OW), vectorised along
the output row (NCHW keeps it contiguous):

    for item in (image, channel):                 items run on threads when large
      w[kh][kw] = broadcast Wt[c, kh, kw]          KH*KW registers, once per channel
      for oh, for each VL-wide block of the row (the last one masked):
        acc = O[n, c, oh, ow0 : +VL]
        for kh, kw: acc = fma(w[kh][kw], X[n, c, oh*sh + kh*dh, (ow0 + i)*sw + kw*dw], acc)
        O[n, c, oh, ow0 : +VL] = acc

Stride 1 reads each input vector with one (unaligned) load; stride 2 with two loads, at
the block's start and VL - 1 further, and one shuffle taking the even elements of the
first and the odd ones of the second (so no load reaches past the last element the block
needs). The row's last partial block uses masked loads and stores.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.passes._gemm_kernel import _descriptor, _Emitter
from accel.passes._parallel_abi import PARALLEL_FOR_DECL, fork_join


@dataclass(frozen=True)
class DepthwiseSpec:
    """One static f32 `linalg.depthwise_conv_2d_nchw_chw` on row-major memrefs."""

    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    oh: int
    ow: int
    sh: int = 1
    sw: int = 1
    dh: int = 1
    dw: int = 1
    #: The weight as torch's C x 1 x KH x KW (the buffer under torch-mlir's collapse_shape:
    #: a view passed to the call would keep affine fusion off the whole function).
    w4: bool = False

    def types(self) -> tuple[str, str, str]:
        one = "1x" if self.w4 else ""
        return (f"memref<{self.n}x{self.c}x{self.h}x{self.w}xf32>",
                f"memref<{self.c}x{one}{self.kh}x{self.kw}xf32>",
                f"memref<{self.n}x{self.c}x{self.oh}x{self.ow}xf32>")

    def macs(self) -> int:
        return self.n * self.c * self.oh * self.ow * self.kh * self.kw


def _mask(e: _Emitter, vl: int, lanes: int) -> str:
    bits = ", ".join("true" if i < lanes else "false" for i in range(vl))
    return e.op(f"arith.constant dense<[{bits}]> : vector<{vl}xi1>", "m")


def _row_block(e: _Emitter, s: DepthwiseSpec, vl: int, ws: list[str], ow0: str,
               lanes: int) -> None:
    """acc = O[n, c, oh, ow0 : +lanes] + sum of taps; stored back (masked if lanes < vl)."""
    f32v = f"vector<{vl}xf32>"
    x_t, _, o_t = s.types()
    full = lanes == vl
    mask = None if full else _mask(e, vl, lanes)
    o_at = f"%O[%n, %c, %oh, {ow0}]"
    if full:
        acc = e.op(f"vector.load {o_at} : {o_t}, {f32v}", "acc")
    else:
        acc = e.op(f"vector.maskedload {o_at}, {mask}, %zv : {o_t}, {vector_i1(vl)}, "
                   f"{f32v} into {f32v}", "acc")
    iw0 = e.mul(ow0, e.c(s.sw))
    for kh in range(s.kh):
        ih = e.add("%ih0", e.c(kh * s.dh)) if kh else "%ih0"
        for kw in range(s.kw):
            iw = e.add(iw0, e.c(kw * s.dw)) if kw else iw0
            at = f"%X[%n, %c, {ih}, {iw}]"
            if s.sw == 1:
                x = _load(e, at, x_t, vl, mask)
            else:  # stride 2: evens of [iw, iw+VL), odds of [iw+VL-1, iw+2VL-1)
                need = 2 * (lanes - 1) + 1  # elements from iw the block reads
                a = _load(e, at, x_t, vl, None if need >= vl else _mask(e, vl, need))
                rest = need - vl  # elements past the first vector, from iw + VL
                if rest > 0:
                    at_b = f"%X[%n, %c, {ih}, {e.add(iw, e.c(vl - 1))}]"
                    b = _load(e, at_b, x_t, vl, None if rest + 1 >= vl
                              else _mask(e, vl, rest + 1))
                else:
                    b = "%zv"
                picks = [2 * i for i in range(vl // 2)] + [vl + 2 * i + 1 for i in range(vl // 2)]
                x = e.op(f"vector.shuffle {a}, {b} [{', '.join(map(str, picks))}] : "
                         f"{f32v}, {f32v}", "x")
            acc = e.op(f"vector.fma {ws[kh * s.kw + kw]}, {x}, {acc} : {f32v}", "acc")
    if full:
        e.emit(f"vector.store {acc}, {o_at} : {o_t}, {f32v}")
    else:
        e.emit(f"vector.maskedstore {o_at}, {mask}, {acc} : {o_t}, {vector_i1(vl)}, {f32v}")


def vector_i1(vl: int) -> str:
    return f"vector<{vl}xi1>"


def _load(e: _Emitter, at: str, x_t: str, vl: int, mask: str | None) -> str:
    f32v = f"vector<{vl}xf32>"
    if mask is None:
        return e.op(f"vector.load {at} : {x_t}, {f32v}", "x")
    return e.op(f"vector.maskedload {at}, {mask}, %zv : {x_t}, {vector_i1(vl)}, {f32v} "
                f"into {f32v}", "x")


def render_depthwise(spec: DepthwiseSpec, vl: int, name: str, *,
                     parallel: bool = False) -> str:
    """The module text of `@name(%X, %Wt, %O)` (see the module docstring); with `parallel`
    the (image, channel) items run through `accel_parallel_for` (the text then declares
    it, to verify on its own)."""
    s = spec
    if s.sw not in (1, 2):
        raise ValueError("depthwise kernel: stride along the width must be 1 or 2")
    x_t, w_t, o_t = s.types()
    f32v = f"vector<{vl}xf32>"
    items = s.n * s.c
    desc = _descriptor(4)
    wdesc = _descriptor(4 if s.w4 else 3)
    arr = f"!llvm.struct<({desc}, {wdesc}, {desc})>"
    args = (("X", x_t, desc), ("Wt", w_t, wdesc), ("O", o_t, desc))
    text = [f"  func.func private @{name}(%X: {x_t}, %Wt: {w_t}, %O: {o_t}) {{",
            "    %c0 = arith.constant 0 : index", f"    %items = arith.constant {items} : index"]
    if parallel:
        text += ["    %one = llvm.mlir.constant(1 : i64) : i64",
                 f"    %ctx = llvm.alloca %one x {arr} : (i64) -> !llvm.ptr"]
        for i, (v, t, d) in enumerate(args):
            text += [f"    %d{v} = builtin.unrealized_conversion_cast %{v} : {t} to {d}",
                     f"    %p{v} = llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> !llvm.ptr, "
                     f"{arr}",
                     f"    llvm.store %d{v}, %p{v} : {d}, !llvm.ptr"]
        text += fork_join(f"{name}_entry", "%ctx", "%items", indent="    ")
    else:
        text += [f"    func.call @{name}_body(%X, %Wt, %O, %c0, %items) : ({x_t}, {w_t}, "
                 f"{o_t}, index, index) -> ()"]
    text += ["    return", "  }"]
    if parallel:
        text += [f"  func.func private @{name}_entry(%ctx: !llvm.ptr, %lo: index, "
                 "%hi: index) {"]
        for i, (v, t, d) in enumerate(args):
            text += [f"    %p{v} = llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> !llvm.ptr, "
                     f"{arr}",
                     f"    %d{v} = llvm.load %p{v} : !llvm.ptr -> {d}",
                     f"    %{v} = builtin.unrealized_conversion_cast %d{v} : {d} to {t}"]
        text += [f"    func.call @{name}_body(%X, %Wt, %O, %lo, %hi) : ({x_t}, {w_t}, {o_t}, "
                 "index, index) -> ()", "    return", "  }"]

    e = _Emitter()
    c1 = e.c(1)
    e.emit(f"%zv = arith.constant dense<0.0> : {f32v}")
    e.open_for("%it", "%lo", "%hi", c1)
    e.emit(f"%n = arith.divui %it, {e.c(s.c)} : index")
    e.emit(f"%c = arith.remui %it, {e.c(s.c)} : index")
    ws = []
    for kh in range(s.kh):
        for kw in range(s.kw):
            at = f"%c, {e.c(0)}, " if s.w4 else "%c, "
            w = e.op(f"memref.load %Wt[{at}{e.c(kh)}, {e.c(kw)}] : {w_t}", "w")
            ws.append(e.op(f"vector.broadcast {w} : f32 to {f32v}", "wb"))
    e.open_for("%oh", e.c(0), e.c(s.oh), c1)
    e.emit(f"%ih0 = arith.muli %oh, {e.c(s.sh)} : index")
    full = s.ow // vl
    if full:
        e.open_for("%ob", e.c(0), e.c(full * vl), e.c(vl))
        _row_block(e, s, vl, ws, "%ob", vl)
        e.close()
    if s.ow % vl:
        _row_block(e, s, vl, ws, e.c(full * vl), s.ow % vl)
    e.close()
    e.close()
    text += [f"  func.func private @{name}_body(%X: {x_t}, %Wt: {w_t}, %O: {o_t}, "
             "%lo: index, %hi: index) {"]
    text += [f"    {n} = arith.constant {v} : index" for v, n in sorted(e.consts.items())]
    text += [*e.lines, "    return", "  }"]
    decl = [f"  {PARALLEL_FOR_DECL}"] if parallel else []
    return "\n".join(["module {", *decl, *text, "}"])


def items_of(spec: DepthwiseSpec) -> int:
    """Independent work items: (image, channel) pairs."""
    return spec.n * spec.c

