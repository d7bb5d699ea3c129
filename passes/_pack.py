"""Transposing weight packing for the direct convolution kernel, as MLIR text.

`emit_transposed_pack` writes `Dst[r, f] = Src[row0 + f, r]` (f < nrows, r < ncols): the
filter-major F x C*KH*KW weights into the kernel's C*KH*KW x FB panel. Element by element
that is a strided store per float (~4 cycles each: 3.3 of the 6.0 ms of ResNet-18's
512-channel 3x3 layer at 1 thread went into it, since the panel is packed on every call:
the weights are the model's parameters, read in place, and may change between calls). So
8 x 8 blocks go through vector registers: 8 row loads, the usual AVX 8 x 8 transpose
(unpack lo/hi, shuffle, 128-bit permute: 24 `vector.shuffle`s that LLVM matches to single
instructions) and 8 column stores; the filters and columns left over (F or C*KH*KW not a
multiple of 8) are copied one by one.
"""

from __future__ import annotations

from accel.passes._gemm_kernel import _Emitter

_LO = [0, 8, 1, 9, 4, 12, 5, 13]  # unpacklo_ps per 128-bit lane
_HI = [2, 10, 3, 11, 6, 14, 7, 15]  # unpackhi_ps
_S44 = [0, 1, 8, 9, 4, 5, 12, 13]  # shuffle_ps imm 0x44
_SEE = [2, 3, 10, 11, 6, 7, 14, 15]  # shuffle_ps imm 0xEE
_P20 = [0, 1, 2, 3, 8, 9, 10, 11]  # permute2f128 imm 0x20: both low halves
_P31 = [4, 5, 6, 7, 12, 13, 14, 15]  # imm 0x31: both high halves


def transpose8(b: _Emitter, rows: list[str]) -> list[str]:
    """The 8 columns of the 8 x 8 block whose rows are `rows` (vector<8xf32> values)."""
    v8 = "vector<8xf32>, vector<8xf32>"

    def shuf(x: str, y: str, mask: list[int]) -> str:
        return b.op(f"vector.shuffle {x}, {y} {mask} : {v8}", "t")

    t = []
    for i in range(4):
        t += [shuf(rows[2 * i], rows[2 * i + 1], _LO), shuf(rows[2 * i], rows[2 * i + 1], _HI)]
    u = []
    for a, c in ((0, 2), (1, 3), (4, 6), (5, 7)):
        u += [shuf(t[a], t[c], _S44), shuf(t[a], t[c], _SEE)]
    return [shuf(u[k], u[k + 4], _P20) for k in range(4)] + \
        [shuf(u[k], u[k + 4], _P31) for k in range(4)]


def emit_transposed_pack(b: _Emitter, src: str, src_t: str, dst: str, dst_t: str,
                         row0: str, nrows: str, ncols: int, col0: str | None = None) -> None:
    """`dst[r, f] = src[row0 + f, r]` for f in [0, nrows) (an index value), r in [0, ncols);
    with `col0` (an index value) the columns col0 + r instead, in both."""
    c0, c1, c8 = b.c(0), b.c(1), b.c(8)
    cols8 = ncols // 8 * 8
    rows8 = b.mul(b.op(f"arith.divui {nrows}, {c8} : index"), c8)
    if cols8:
        b.open_for("%pk_f", c0, rows8, c8)
        srow = b.add(row0, "%pk_f")
        b.open_for("%pk_r", c0, b.c(cols8), c8)
        r0 = b.add(col0, "%pk_r") if col0 else "%pk_r"
        rows = [b.op(f"vector.load {src}[{b.add(srow, b.c(i)) if i else srow}, {r0}] : "
                     f"{src_t}, vector<8xf32>", "row") for i in range(8)]
        for k, col in enumerate(transpose8(b, rows)):
            r = b.add(r0, b.c(k)) if k else r0
            b.emit(f"vector.store {col}, {dst}[{r}, %pk_f] : {dst_t}, vector<8xf32>")
        b.close()
        b.close()
    # What the blocks left: every filter's last ncols % 8 columns, then whole left-over rows.
    for f_lo, f_hi, r_lo in ((c0, rows8, cols8), (rows8, nrows, 0)):
        if r_lo == ncols:
            continue
        b.open_for("%pk_f", f_lo, f_hi, c1)
        srow = b.add(row0, "%pk_f")
        b.open_for("%pk_r", b.c(r_lo), b.c(ncols), c1)
        r0 = b.add(col0, "%pk_r") if col0 else "%pk_r"
        val = b.op(f"memref.load {src}[{srow}, {r0}] : {src_t}")
        b.emit(f"memref.store {val}, {dst}[{r0}, %pk_f] : {dst_t}")
        b.close()
        b.close()
