"""The shared panel of `accel-conv-kernels`' direct convolutions (`_conv_kernel.py`).

An item of a direct conv packs its filter block into a panel of its own unless its thread
packed that block just before. With more threads than filter blocks, several threads
therefore pack the same block: at 16 threads ResNet-18's 512-channel 3x3 layer packed each
of its 8 blocks twice, and packing was about half of the layer. For large filter blocks the
kernel takes a panel of all blocks from its caller instead. When the runtime's thread count
(`accel_num_threads`) exceeds the blocks, `@name_pack` (rendered here) first packs all of
them into it in parallel, and the items then read their block from there.
"""

from __future__ import annotations

from accel.passes._gemm_kernel import ConvSpec, _ceil, _Emitter
from accel.passes._pack import emit_transposed_pack

#: Most panel rows one item of the shared pack copies (`pack_rows`): 576 = 64 channels of a
#: 3x3 window, 64 x 576 floats (147 KB) per item for a 64-filter block.
PACK_ROWS = 576
#: Smallest filter block (KH*KW*C*FB floats) packed into the shared panel. Measured per
#: layer at 16 threads on a 16-core Xeon (shared against per-thread): ResNet-18's 512-channel
#: 3x3 layer (295K floats a block, 8 blocks) 0.63 vs 0.96 ms, but its 147K-float blocks
#: slower shared: the 256-channel 3x3 (4 blocks) 0.41 vs 0.33 ms, the stride-2 512-filter
#: one (8 blocks) 0.27 vs 0.21 ms. Below this, a thread packs its block faster than the
#: extra fork-join and the reads of a panel another core packed cost.
SHARED_MIN_FLOATS = 1 << 18


def shares_panel(spec: ConvSpec, fb: int) -> bool:
    """Whether a parallel direct conv of this shape, FB filters a block, takes the shared
    panel."""
    return spec.c * spec.kh * spec.kw * fb >= SHARED_MIN_FLOATS


def panel_type(spec: ConvSpec, fb: int) -> str:
    """The shared panel a parallel direct conv takes: every block of FB filters packed."""
    return f"memref<{_ceil(spec.f, fb)}x{spec.c * spec.kh * spec.kw}x{fb}xf32>"


def render_shared_pack(s: ConvSpec, fb_size: int, name: str) -> list[str]:
    """`@name_pack(%Wt, %P, lo, hi)`: items [lo, hi) of (filter block, run of `pack_rows`
    panel rows), each `P[fb, r, f] = W[fb*FB + f, r]` (zero past F; FB = `fb_size`)."""
    k_rows = s.c * s.kh * s.kw
    rows = pack_rows(s)
    runs = k_rows // rows
    w_t = s.types()[1]
    wf_t = f"memref<{s.f}x{k_rows}xf32>"
    pd_t = f"memref<?x{k_rows}x{fb_size}xf32>"
    pv_t = f"memref<{k_rows}x{fb_size}xf32, strided<[{fb_size}, 1], offset: ?>>"
    b = _Emitter()
    c0, c1 = b.c(0), b.c(1)
    b.emit(f"%Wf = memref.collapse_shape %Wt [[0], [1, 2, 3]] : {w_t} into {wf_t}")
    b.emit("%zero = arith.constant 0.0 : f32")
    b.open_for("%it", "%lo", "%hi", c1)
    fb = b.op(f"arith.divui %it, {b.c(runs)} : index")
    r0 = b.mul(b.op(f"arith.remui %it, {b.c(runs)} : index"), b.c(rows))
    pf0 = b.mul(fb, b.c(fb_size))
    pfv = b.min(b.c(fb_size), b.sub(b.c(s.f), pf0))
    view = b.op(f"memref.subview %P[{fb}, 0, 0] [1, {k_rows}, {fb_size}] [1, 1, 1] : {pd_t} to "
                f"{pv_t}", "pv")
    emit_transposed_pack(b, "%Wf", wf_t, view, pv_t, pf0, pfv, rows, r0)
    b.open_for("%pf", pfv, b.c(fb_size), c1)
    b.open_for("%pr", c0, b.c(rows), c1)
    b.emit(f"memref.store %zero, {view}[{b.add(r0, '%pr')}, %pf] : {pv_t}")
    b.close()
    b.close()
    b.close()
    text = [f"  func.func private @{name}_pack(%Wt: {w_t}, %P: {pd_t}, %lo: index, "
            "%hi: index) {"]
    text += [f"    {n} = arith.constant {val} : index" for val, n in sorted(b.consts.items())]
    return [*text, *b.lines, "    return", "  }"]


def pack_rows(spec: ConvSpec) -> int:
    """Rows of the panel (of C*KH*KW) one item of the shared pack copies: the largest
    divisor of C*KH*KW up to PACK_ROWS that is a multiple of 8 (the transposes' width),
    else all of them."""
    k = spec.c * spec.kh * spec.kw
    fits = [r for r in range(8, min(k, PACK_ROWS) + 1, 8) if k % r == 0]
    return fits[-1] if fits else k
