"""The direct convolution kernel of `accel-conv-kernels`, as MLIR text.

`render_direct_conv(spec, tile, name)` returns a private `func.func @<name>(%X, %Wt, %O)`
on memrefs computing `O += conv(X, Wt)` for one `linalg.conv_2d_nchw_fchw` (X already
padded, NCHW; W FCHW; O NFHW), without im2col:

    for n, fb in 0..F/FB, group of TG tiles:              P = OH*OW output positions
      (fb outer, n inner on small maps: `filter_major`)
      if first group (or first item): Wp[C][KH*KW][FB] = W[fb*FB:+FB] (zero past F)
        (shared panel: P[fb] instead, packed before the items by @name_pack)
     [for each block of CB input channels (CHANNEL_BLOCK_BYTES; off by default):]
     for t in the group's tiles (PT positions each):
      p0 = min(t*PT, P - PT)                              the last tile overlaps
      off[j] = (p/OW)*sh*W + (p%OW)*sw for p = p0 + j     input offset of position j
      acc[FV][PT] = 0 (blocks: S[t], zeroed per item)      FV*PT vector registers (FB lanes)
      for c in 0..C (or the block):                       KH*KW taps unrolled in the body
        for tap (kh, kw):
          w[v] = vector.load Wp[c, tap, v*VL]             FV loads
          for j: x = broadcast X[n, c, off[j] + kh*dh*W + kw*dw]
                 acc[v][j] = fma(w[v], x, acc[v][j])
      (blocks: S[t] = acc but after the last block)
      tile[PT][FB] = acc; O[n, fb*FB + f, p0 + j] += tile[j][f] (valid f, new positions)

The accumulators are vectors over output channels (as oneDNN's blocked kernels), so every
output size, stride and dilation runs full vectors: positions are the flattened OH*OW,
the input read per position is a scalar broadcast. The write-back transposes the tile in
registers, 8 x 8 blocks (`_write_back`; the last tile of an item element by element), PT*FB
stores per C*KH*KW*FV*PT vector FMAs. Items (image, filter block, group of tiles; about ITEMS of
them) run across threads with `parallel` (`accel_parallel_for` through `@name_entry`,
`@name_body`); each body call packs a filter block's weights into its own panel, or, for
large filter blocks when the threads outnumber the blocks, reads them from a panel of all
blocks the caller passes and `@name_pack` fills first, in parallel (`render_direct_conv`).
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.passes._conv_shared_panel import (
    pack_rows,
    panel_type,
    render_shared_pack,
    shares_panel,
)
from accel.passes._epilogue_code import EpilogueCode, emit_epilogue
from accel.passes._frozen_weights import repack_guard
from accel.passes._gemm_kernel import ConvSpec, _ceil, _descriptor, _Emitter, _rank
from accel.passes._pack import emit_transposed_pack, transpose8
from accel.passes._parallel_abi import NUM_THREADS, NUM_THREADS_DECL, PARALLEL_FOR_DECL, fork_join


@dataclass(frozen=True)
class ConvTile:
    """Register tile of the direct kernel: FV vectors of VL output channels x PT positions."""

    vl: int
    fv: int
    pt: int

    @property
    def fb(self) -> int:
        return self.vl * self.fv


def choose_conv_tile(spec: ConvSpec, vl: int) -> ConvTile:
    """FV*PT accumulators + FV weight vectors + 1 broadcast in the vector registers (16 with
    AVX2, 32 with AVX-512), FV in 1, 2 (and 4 with 32 registers), PT at most 14 and never
    more positions than the output has. The cheapest by `tile_cost`: AVX2 takes 2 x 6
    (16 filters) when F > 8, else 1 x 14; AVX-512 4 x 6 (64 filters, 4 weight vectors and
    6 broadcasts per 24 FMAs: 180 against 161 GFLOP/s for 2 x 13 on ResNet's 64-channel
    layer, 1 thread) where F fills 64 filters, 2 x 13-14 where it fills 32; up to 2 fewer
    positions where the last, overlapping tile then wastes less (7x7 maps: 4 x 5)."""
    regs = 32 if vl >= 16 else 16
    p = spec.oh * spec.ow
    best: tuple[float, int, int] | None = None
    for fv in (1, 2, 4) if regs == 32 else (1, 2):
        if fv > 1 and spec.f <= (fv // 2) * vl:
            continue  # fewer filters than half the tile's: a smaller FV wastes less
        most = min((regs - fv - 1) // fv, 14, p)
        for pt in range(max(1, most - 2), most + 1):
            cost = tile_cost(spec, vl, fv, pt)
            if best is None or (cost, -fv, -pt) < (best[0], -best[1], -best[2]):
                best = (cost, fv, pt)
    assert best is not None
    return ConvTile(vl=vl, fv=best[1], pt=best[2])


def tile_cost(spec: ConvSpec, vl: int, fv: int, pt: int) -> float:
    """Relative cost of a tile: filters computed (F rounded up to FV*VL) times positions
    computed (the last tile overlaps: 7x7 maps with PT = 6 compute 54 of 49) times the
    loads per FMA (FV + PT loads per FV*PT FMAs) weighted by half."""
    p = spec.oh * spec.ow
    return _ceil(spec.f, fv * vl) * fv * vl * _ceil(p, pt) * pt \
        * (1 + 0.5 * (fv + pt) / (fv * pt))


#: Bytes of packed weights one channel block may take (stays in L1 while its tiles run);
#: 0: no channel blocks. Between blocks a tile's sums wait as vectors in a scratch
#: (`%S`), and only the last block writes O. Off: on ResNet's 512-channel 7x7 layers
#: (weights from memory) 16 and 32 KB blocks measured the same as none (2-core Xeon,
#: AVX-512, 1 thread; the earlier version, which added each block's sums into O, was
#: 1.1-1.3x slower on the AMD host).
CHANNEL_BLOCK_BYTES = 0
#: With 16 lanes (AVX-512) too, the write-back goes through registers: each accumulator's
#: two 8-filter halves through the 8 x 8 transposes AVX2 uses (`_write_back`).
REGISTER_WRITE_BACK_16 = True
#: Windows of more taps than this run a loop over their rows (the columns unrolled)
#: instead of every tap unrolled: ViT's 16x16 patch embedding (256 taps) made 3 s of
#: the 8.5 s compile of the zoo's quick ViT.
ROLL_TAPS = 64

#: `group_major` on (blocked 1x1 convolutions with frozen weights).
GROUP_MAJOR_POINTWISE = True
#: Work items aimed at (image x filter block x tile group): enough for many threads...
ITEMS = 64
#: ...but none under this many multiply-adds where the conv is big enough for two: the
#: runtime starts at most one thread per item, so a small conv wakes a few threads on a
#: many-core machine, each with ~5-10 us of work (`_gemm_kernel.ITEM_FLOOR_MACS`).
ITEM_FLOOR_MACS = 1 << 19


def conv_blocking(spec: ConvSpec, tile: ConvTile) -> tuple[int, int, int]:
    """(channels per block CB, tiles per item TG, channel unroll) for `spec`: an item runs
    its TG tiles once per block of CB input channels, so the block's CB*KH*KW*FB packed
    weights stay in L1 across the tiles (ResNet's 512-channel layers: 295 KB per filter
    block otherwise streamed from L2 per tile)."""
    taps = spec.kh * spec.kw
    unroll = 4 if taps == 1 and spec.c % 4 == 0 else (2 if taps < 4 and spec.c % 2 == 0
                                                       else 1)
    cb = max(unroll, CHANNEL_BLOCK_BYTES // (taps * tile.fb * 4) // unroll * unroll) \
        if CHANNEL_BLOCK_BYTES else spec.c
    ntiles = _ceil(spec.oh * spec.ow, tile.pt)
    tile_items = spec.n * _ceil(spec.f, tile.fb) * ntiles
    macs = spec.n * spec.f * spec.oh * spec.ow * spec.c * taps
    target = min(ITEMS, max(2, macs // ITEM_FLOOR_MACS))
    tg = min(ntiles, max(1, _ceil(tile_items, target)))
    return min(cb, spec.c), tg, unroll


def group_major(spec: ConvSpec, frozen: bool) -> bool:
    """Whether items run tile group by tile group, every filter block of a group in turn:
    a blocked 1x1 convolution (`spec.block`) reads C floats per position and does only C
    multiply-adds with each, so reading the input once per filter block from memory cost
    more than the kernel (ResNet-50's 256 -> 64 at 56x56: 2.2x the GEMM's time); group by
    group, a group's inputs stay in L2 for the other blocks. Only with every block packed
    once (`frozen`): the order changes blocks every item."""
    return frozen and spec.block > 0 and spec.kh * spec.kw == 1 and GROUP_MAJOR_POINTWISE


def filter_major(spec: ConvSpec, tile: ConvTile) -> bool:
    """Whether items run filter block by filter block (all images of a block, then the
    next) rather than image by image. Each change of (image, block) repacks the block's
    C*KH*KW*FB weights, one scalar each, against C*KH*KW*FB*OH*OW multiply-adds at 32 per
    cycle: on small maps the packing was most of the kernel (a ResNet training batch's
    8x128x4x4 layer: 10 GFLOP/s). Block-major packs each block once per thread, but reads
    every image's C*H*W inputs once per block: taken where that costs less than the
    repacking (an input float from L3 counted a quarter of a packed weight)."""
    return spec.n > 1 and 4 * spec.kh * spec.kw * tile.fb > spec.h * spec.w


def conv_items(spec: ConvSpec, tile: ConvTile) -> int:
    """Independent work items: (image, filter block, group of position tiles)."""
    _, tg, _ = conv_blocking(spec, tile)
    return spec.n * _ceil(spec.f, tile.fb) * _ceil(_ceil(spec.oh * spec.ow, tile.pt), tg)


def _lanes(b: _Emitter, acc: str, h: int, width: int, vl: int) -> str:
    """Lanes [h*width, +width) of the vl-lane accumulator `acc` (itself when vl == width)."""
    if vl == width:
        return acc
    return b.op(f"vector.extract_strided_slice {acc} {{offsets = [{h * width}], "
                f"sizes = [{width}], strides = [1]}} : vector<{vl}xf32> to "
                f"vector<{width}xf32>", "h")


def _put(b: _Emitter, value: str, at: str, mem_t: str, vt: str, store: bool,
         guard: str | None) -> None:
    """`value` (a `vt` vector) stored at `%Of[at]` (or added into it without `store`),
    under `scf.if guard` when there is one (filters past F)."""
    if guard is not None:
        b.emit(f"scf.if {guard} {{")
        b.indent += 1
    if not store:
        old = b.op(f"vector.load %Of[{at}] : {mem_t}, {vt}")
        value = b.op(f"arith.addf {old}, {value} : {vt}")
    b.emit(f"vector.store {value}, %Of[{at}] : {mem_t}, {vt}")
    if guard is not None:
        b.close()


def _write_back(b: _Emitter, s: ConvSpec, t: ConvTile, res: str, n: str, fb: str, p0: str,
                skip: str, not_last: str, *, store: bool,
                epilogue: EpilogueCode | None = None) -> None:
    """The tile's accumulators `res` into O (`=` with `store`, else `+=`); with
    `epilogue` (store only) each value goes through the chain first (passes/_conv_epilogue.py).

    A tile followed by another of its item (the same thread, later), with PT rounded up
    to 8 positions left in the map, goes through registers: per 8 filters of a filter
    vector (both halves of a 16-lane one) and per 8 positions, an 8 x 8 transpose of those
    accumulators (zeros past PT) gives each filter's outputs as one vector, written (or
    added) as 8 floats; lanes past PT write zeros (or add zeros) to the next tile's first
    positions, which that tile then writes itself. Every other tile (the last of an item,
    the map's overlapping last tile) goes through the PT x FB scratch tile, one element at
    a time. (AVX-512 went through the scratch tile for every tile before session 22.)
    """
    c0, c1 = b.c(0), b.c(1)
    tl_t, of_t = f"memref<{t.pt}x{t.fb}xf32>", f"memref<{s.n}x{s.f}x{s.oh * s.ow}xf32>"
    f32v = f"vector<{t.vl}xf32>"
    f0 = b.mul(fb, b.c(t.fb))
    groups = -(-t.pt // 8)  # 8 positions per transposed block
    vector = t.vl % 8 == 0 and (t.vl == 8 or REGISTER_WRITE_BACK_16)
    if vector:
        fits = b.cmp("ule", b.add(p0, b.c(8 * groups)), b.c(s.oh * s.ow))
        b.emit(f"scf.if {b.op(f'arith.andi {not_last}, {fits} : i1')} {{")
        b.indent += 1
        v8 = "vector<8xf32>"
        for v in range(t.fv):
            for h in range(t.vl // 8):  # 8 of the vector's filters
                def part(j: int, v: int = v, h: int = h) -> str:
                    return _lanes(b, f"{res}#{v * t.pt + j}", h, 8, t.vl)

                for g in range(groups):
                    js = range(8 * g, min(8 * g + 8, t.pt))
                    rows = [part(j) for j in js] + ["%zv8"] * (8 - len(js))
                    pg = b.add(p0, b.c(8 * g)) if g else p0
                    for k, col in enumerate(transpose8(b, rows)):
                        f = b.add(f0, b.c(v * t.vl + h * 8 + k))
                        guard = b.cmp('ult', f, b.c(s.f)) if s.f % t.fb else None
                        if guard is not None:  # the epilogue's loads inside the guard too
                            b.emit(f"scf.if {guard} {{")
                            b.indent += 1
                        if store and epilogue is not None:  # lanes past PT: the next tile's
                            col = emit_epilogue(b, epilogue, col, 8, f, f"{n}, {f}, {pg}",
                                                of_t)
                        _put(b, col, f"{n}, {f}, {pg}", of_t, v8, store, None)
                        if guard is not None:
                            b.close()
        b.close(" else {")
        b.indent += 1
    for v in range(t.fv):
        for j in range(t.pt):
            b.emit(f"vector.store {res}#{v * t.pt + j}, %T[{b.c(j)}, {b.c(v * t.vl)}] : "
                   f"{tl_t}, {f32v}")
    fvalid = b.min(b.c(t.fb), b.sub(b.c(s.f), f0))
    b.open_for("%fl", c0, fvalid, c1)
    fo = b.add(f0, "%fl")
    b.open_for("%j", skip, b.c(t.pt), c1)
    po = b.add(p0, "%j")
    if store:
        val = b.op(f"memref.load %T[%j, %fl] : {tl_t}")
        if epilogue is not None:
            val = emit_epilogue(b, epilogue, val, 1, fo, f"{n}, {fo}, {po}", of_t)
        b.emit(f"memref.store {val}, %Of[{n}, {fo}, {po}] : {of_t}")
    else:
        b.add_into(f"%Of[{n}, {fo}, {po}] : {of_t}", f"%T[%j, %fl] : {tl_t}")
    b.close()
    b.close()
    if vector:
        b.close()


def _write_back_blocked(b: _Emitter, s: ConvSpec, t: ConvTile, res: str, n: str, fb: str,
                        p0: str, skip: str, *, store: bool) -> None:
    """The tile's accumulators `res` into a blocked O (`s.block` channels innermost): each
    accumulator is B consecutive floats of O (two runs for a 16-lane vector over 8-channel
    blocks), stored (or added) as it is, no transpose. Positions before `skip` (the
    overlapping last tile's, which the tile before wrote) are left alone."""
    bk = s.block
    ob_t = f"memref<{s.n}x{s.f // bk}x{s.oh * s.ow}x{bk}xf32>"
    vb = f"vector<{bk}xf32>"
    blk0 = b.mul(fb, b.c(t.fb // bk))
    for j in range(t.pt):
        b.emit(f"scf.if {b.cmp('uge', b.c(j), skip)} {{")
        b.indent += 1
        pj = b.add(p0, b.c(j))
        for v in range(t.fv):
            for h in range(t.vl // bk):
                acc = _lanes(b, f"{res}#{v * t.pt + j}", h, bk, t.vl)
                blk = b.add(blk0, b.c((v * t.vl + h * bk) // bk))
                guard = b.cmp('ult', blk, b.c(s.f // bk)) if s.f % t.fb else None
                _put(b, acc, f"{n}, {blk}, {pj}, {b.c(0)}", ob_t, vb, store, guard)
        b.close()


def render_direct_conv(spec: ConvSpec, tile: ConvTile, name: str, *,
                       parallel: bool = False, dealloc: bool = False,
                       store: bool = False, frozen: bool = False,
                       epilogue: EpilogueCode | None = None) -> str:
    """The module text of `@name(%X, %Wt, %O)` (see the module docstring); with `parallel`
    its items run through `accel_parallel_for` (the text then declares it, to verify on
    its own), and when `shares_panel` it takes a fourth operand, the shared panel
    (`panel_type`), which the caller allocates. The packed panel of one filter block (per
    body call: per thread) is a `memref.alloc` freed there with `dealloc`, else by the
    deallocation pipeline. With
    `store` the kernel writes O (`O = conv`: the caller dropped a zero fill of O) instead
    of adding into it.

    Shared panel: when the runtime's thread count exceeds the filter blocks, several
    threads would each pack the same block (at 16 threads ResNet-18's 512-channel layer
    packed every block twice, and packing was half its time). Then `@name_pack` first packs
    all blocks into `%P` in parallel, each item a run of PACK_ROWS rows of one block, and
    the items read their block from there (`@name_sentry`); otherwise each thread packs
    as before (`@name_entry`).

    `frozen` (a frozen weight, passes/_frozen_weights.py): `@name(%X, %Wt, %O, %Ps, %SRC)`
    with %Ps the shared panel type, packed by `@name_pack` only when %Wt's address differs
    from the one in %SRC (the first call); every item reads its block from there.

    `epilogue` (with `store`): the elementwise chain after the conv, applied as it writes O
    (passes/_conv_epilogue.py); its extra inputs `%E<k>` come last in every signature."""
    if epilogue is not None and not store:
        raise ValueError("a conv epilogue needs a kernel that stores its output")
    if spec.block and (epilogue is not None or tile.vl % spec.block
                       or tile.fb % spec.block or spec.c % (spec.in_block or 1)):
        raise ValueError("a blocked conv needs whole blocks of vectors, filters and "
                         "channels, and no epilogue")
    s, t = spec, tile
    xs = s.in_block or 1  # floats between neighbouring positions of one channel
    x_t, w_t, o_t = s.types()
    fblocks = _ceil(s.f, t.fb)
    taps = s.kh * s.kw
    k_rows = s.c * taps
    p = s.oh * s.ow
    ntiles = _ceil(p, t.pt)
    cb, tg, unroll = conv_blocking(s, t)
    ngroups = _ceil(ntiles, tg)
    items = s.n * fblocks * ngroups
    wp_t = f"memref<{s.c}x{taps}x{t.fb}xf32>"
    wp2_t = f"memref<{k_rows}x{t.fb}xf32>"
    wsel_t = f"memref<{k_rows}x{t.fb}xf32, strided<[{t.fb}, 1], offset: ?>>"
    pd_t = f"memref<?x{k_rows}x{t.fb}xf32>"
    wf_t = f"memref<{s.f}x{k_rows}xf32>"
    xf_t = f"memref<{s.n}x{s.c * s.h * s.w}xf32>"
    of_t = f"memref<{s.n}x{s.f // s.block}x{p}x{s.block}xf32>" if s.block \
        else f"memref<{s.n}x{s.f}x{p}xf32>"
    tl_t = f"memref<{t.pt}x{t.fb}xf32>"
    f32v = f"vector<{t.vl}xf32>"
    extras = epilogue.extras if epilogue is not None else ()
    args = [("X", x_t, _rank(x_t)), ("Wt", w_t, 4), ("O", o_t, _rank(o_t)), ("P", pd_t, 3)] + \
        [(f"E{k}", ex.type, _rank(ex.type)) for k, ex in enumerate(extras)]
    ctx_t = "!llvm.struct<(" + ", ".join(_descriptor(r) for _, _, r in args) + ")>"
    e_sig = "".join(f", {ex.type}" for ex in extras)
    e_args = "".join(f", %E{k}" for k in range(len(extras)))
    e_params = "".join(f", %E{k}: {ex.type}" for k, ex in enumerate(extras))
    body_sig = f"{x_t}, {w_t}, {o_t}, {pd_t}, i1, index, index{e_sig}"

    # -- @name: the items, serially or on threads ----------------------------------------
    e = _Emitter()
    c0 = e.c(0)
    shared = frozen or (parallel and shares_panel(s, t.fb))
    if frozen:  # the panel of every block, packed once
        npack = e.c(fblocks * (k_rows // pack_rows(s)))
        e.emit(f"%P = memref.cast %Ps : {panel_type(s, t.fb)} to {pd_t}")
        for line in repack_guard("%Wt", w_t, f"func.call @{name}_pack(%Wt, %P, {c0}, {npack})"
                                 f" : ({w_t}, {pd_t}, index, index) -> ()", c0):
            e.emit(line)
    elif not shared:
        e.emit(f"%P0 = memref.alloca() : memref<0x{k_rows}x{t.fb}xf32>")
        e.emit(f"%P = memref.cast %P0 : memref<0x{k_rows}x{t.fb}xf32> to {pd_t}")
    if parallel:
        if shared and not frozen:
            e.emit(f"%P = memref.cast %Ps : {panel_type(s, t.fb)} to {pd_t}")
        e.emit("%one = llvm.mlir.constant(1 : i64) : i64")
        e.emit(f"%ctx = llvm.alloca %one x {ctx_t} : (i64) -> !llvm.ptr")
        for i, (val, ty, rank) in enumerate(args):
            d = e.op(f"builtin.unrealized_conversion_cast %{val} : {ty} to "
                     f"{_descriptor(rank)}")
            ptr = e.op(f"llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {ctx_t}")
            e.emit(f"llvm.store {d}, {ptr} : {_descriptor(rank)}, !llvm.ptr")
        if frozen:
            for line in fork_join(f"{name}_sentry", "%ctx", e.c(items)):
                e.emit(line)
        elif shared:  # the shared panel when the threads outnumber the filter blocks
            e.emit(f"%ntp = llvm.mlir.addressof @{NUM_THREADS} : !llvm.ptr")
            e.emit("%nt32 = llvm.load %ntp : !llvm.ptr -> i32")
            e.emit("%nt = arith.index_cast %nt32 : i32 to index")
            e.emit(f"scf.if {e.cmp('ugt', '%nt', e.c(fblocks))} {{")
            for entry, n_items, tag in ((f"{name}_pack_entry",
                                         e.c(fblocks * (k_rows // pack_rows(s))), "%fp"),
                                        (f"{name}_sentry", e.c(items), "%fs")):
                for line in fork_join(entry, "%ctx", n_items):
                    e.emit("  " + line.replace("%f ", f"{tag} ").replace("(%f,", f"({tag},"))
            e.emit("} else {")
        if not frozen:
            for line in fork_join(f"{name}_entry", "%ctx", e.c(items)):
                e.emit(("  " if shared else "") + line)
        if shared and not frozen:
            e.emit("}")
    else:
        e.emit(f"%from_panel = arith.constant {'true' if frozen else 'false'}")
        e.emit(f"func.call @{name}_body(%X, %Wt, %O, %P, %from_panel, {c0}, {e.c(items)}"
               f"{e_args}) : ({body_sig}) -> ()")
    params = f"%X: {x_t}, %Wt: {w_t}, %O: {o_t}" + \
        (f", %Ps: {panel_type(s, t.fb)}" if shared else "") + \
        (", %SRC: memref<1xi64>" if frozen else "") + e_params
    head = [f"  func.func private @{name}({params}) {{"]
    head += [f"    {n} = arith.constant {val} : index" for val, n in sorted(e.consts.items())]
    text = [*head, *e.lines, "    return", "  }"]
    if parallel:
        def load_ctx(which: list[int]) -> list[str]:
            lines = []
            for i in which:
                val, ty, rank = args[i]
                lines += [f"    %p{val} = llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> "
                          f"!llvm.ptr, {ctx_t}",
                          f"    %d{val} = llvm.load %p{val} : !llvm.ptr -> {_descriptor(rank)}",
                          f"    %{val} = builtin.unrealized_conversion_cast %d{val} : "
                          f"{_descriptor(rank)} to {ty}"]
            return lines

        entries = ([] if frozen else [(f"{name}_entry", "false")]) + \
            ([(f"{name}_sentry", "true")] if shared else [])
        for entry, flag in entries:
            text += [f"  func.func private @{entry}(%ctx: !llvm.ptr, %lo: index, "
                     "%hi: index) {", *load_ctx(list(range(len(args)))),
                     f"    %shared = arith.constant {flag}",
                     f"    func.call @{name}_body(%X, %Wt, %O, %P, %shared, %lo, %hi{e_args}) "
                     f": ({body_sig}) -> ()", "    return", "  }"]
        if shared and not frozen:
            text += [f"  func.func private @{name}_pack_entry(%ctx: !llvm.ptr, %lo: index, "
                     "%hi: index) {", *load_ctx([1, 3]),
                     f"    func.call @{name}_pack(%Wt, %P, %lo, %hi) : ({w_t}, {pd_t}, "
                     "index, index) -> ()", "    return", "  }"]
            text += render_shared_pack(s, t.fb, name)
    if frozen:  # packs every block, serially, on the first call
        text += render_shared_pack(s, t.fb, name)

    # -- @name_body: items [lo, hi) -------------------------------------------------------
    b = _Emitter()
    c0, c1 = b.c(0), b.c(1)
    # N x C/B x H x W x B has the same flat size per image as N x C x H x W.
    b.emit(f"%Xf = memref.collapse_shape %X [[0], [1, 2, 3{', 4' if s.in_block else ''}]] : "
           f"{x_t} into {xf_t}")
    if s.block:
        b.emit(f"%Of = memref.collapse_shape %O [[0], [1], [2, 3], [4]] : {o_t} into {of_t}")
    else:
        b.emit(f"%Of = memref.collapse_shape %O [[0], [1], [2, 3]] : {o_t} into {of_t}")
    for k, ex in enumerate(extras):
        if ex.kind == "full":
            b.emit(f"%Ef{k} = memref.collapse_shape %E{k} [[0], [1], [2, 3]] : {ex.type} into "
                   f"{of_t}")
    b.emit(f"%T = memref.alloca() {{alignment = 64 : i64}} : {tl_t}")
    b.emit(f"%zv = arith.constant dense<0.0> : {f32v}")
    b.emit("%zv8 = arith.constant dense<0.0> : vector<8xf32>")
    b.emit("%zero = arith.constant 0.0 : f32")
    b.emit("%true = arith.constant true")
    b.emit(f"%Wp = memref.alloc() {{alignment = 64 : i64}} : {wp_t}")
    b.emit(f"%Wf = memref.collapse_shape %Wt [[0], [1, 2, 3]] : {w_t} into {wf_t}")
    b.emit(f"%Wp2 = memref.collapse_shape %Wp [[0, 1], [2]] : {wp_t} into {wp2_t}")
    blocks = cb < s.c
    acc_t = f"memref<{tg}x{t.fv * t.pt}x{t.vl}xf32>"
    if blocks:  # the group's accumulators between channel blocks
        b.emit(f"%S = memref.alloca() {{alignment = 64 : i64}} : {acc_t}")
    b.open_for("%it", "%lo", "%hi", c1)
    if group_major(s, frozen):  # item = (n * ngroups + group) * fblocks + fb
        fb = b.op(f"arith.remui %it, {b.c(fblocks)} : index")
        ng = b.op(f"arith.divui %it, {b.c(fblocks)} : index")
        tgi = b.op(f"arith.remui {ng}, {b.c(ngroups)} : index")
        n = b.op(f"arith.divui {ng}, {b.c(ngroups)} : index")
        first = b.cmp("eq", fb, c0)
    else:
        tgi = b.op(f"arith.remui %it, {b.c(ngroups)} : index")
        nf = b.op(f"arith.divui %it, {b.c(ngroups)} : index")
        first = b.cmp("eq", tgi, c0)
        if filter_major(s, t):  # item = (fb * N + n) * ngroups + group
            n = b.op(f"arith.remui {nf}, {b.c(s.n)} : index")
            fb = b.op(f"arith.divui {nf}, {b.c(s.n)} : index")
            first = b.op(f"arith.andi {first}, {b.cmp('eq', n, c0)} : i1")
        else:  # item = (n * fblocks + fb) * ngroups + group
            fb = b.op(f"arith.remui {nf}, {b.c(fblocks)} : index")
            n = b.op(f"arith.divui {nf}, {b.c(fblocks)} : index")
    # The filter block's panel Wp[c][tap][FB] (zero past F), packed by the first item of
    # each block (of each (image, block) image by image) and by this call's first item.
    need = b.op(f"arith.ori {b.cmp('eq', '%it', '%lo')}, {first} : i1")
    need = b.op(f"arith.andi {need}, {b.op('arith.xori %shared, %true : i1')} : i1")
    b.emit(f"scf.if {need} {{")
    b.indent += 1
    pf0 = b.mul(fb, b.c(t.fb))
    pfv = b.min(b.c(t.fb), b.sub(b.c(s.f), pf0))
    emit_transposed_pack(b, "%Wf", wf_t, "%Wp2", wp2_t, pf0, pfv, s.c * taps)
    b.open_for("%pf", pfv, b.c(t.fb), c1)
    b.open_for("%pr", c0, b.c(s.c * taps), c1)
    b.emit(f"memref.store %zero, %Wp2[%pr, %pf] : {wp2_t}")
    b.close()
    b.close()
    b.close()
    # This block's panel: the shared one's, or the one this thread packed.
    wsel = b.fresh("wsel")
    b.emit(f"{wsel} = scf.if %shared -> ({wsel_t}) {{")
    b.indent += 1
    view = b.op(f"memref.subview %P[{fb}, 0, 0] [1, {k_rows}, {t.fb}] [1, 1, 1] : {pd_t} to "
                f"{wsel_t}", "sv")
    b.emit(f"scf.yield {view} : {wsel_t}")
    b.close(" else {")
    b.indent += 1
    own = b.op(f"memref.cast %Wp2 : {wp2_t} to {wsel_t}", "own")
    b.emit(f"scf.yield {own} : {wsel_t}")
    b.close()
    t_lo = b.mul(tgi, b.c(tg))
    t_hi = b.min(b.add(t_lo, b.c(tg)), b.c(ntiles))
    c_lo, c_hi = c0, b.c(s.c)
    if blocks:
        b.open_for("%sz", c0, b.c(tg), c1)
        for a in range(t.fv * t.pt):
            b.emit(f"vector.store %zv, %S[%sz, {b.c(a)}, {c0}] : {acc_t}, {f32v}")
        b.close()
        b.open_for("%cb", c0, b.c(s.c), b.c(cb))
        c_lo, c_hi = "%cb", b.min(b.add("%cb", b.c(cb)), b.c(s.c))
    b.open_for("%tt", t_lo, t_hi, c1)
    start = b.mul("%tt", b.c(t.pt))
    p0 = b.min(start, b.c(p - t.pt))
    skip = b.sub(start, p0)  # positions of the tile an earlier tile wrote
    offs = []
    for j in range(t.pt):
        pj = b.add(p0, b.c(j))
        oh = b.op(f"arith.divui {pj}, {b.c(s.ow)} : index")
        ow = b.op(f"arith.remui {pj}, {b.c(s.ow)} : index")
        off = b.add(b.mul(oh, b.c(s.sh * s.w)), b.mul(ow, b.c(s.sw)))
        offs.append(b.mul(off, b.c(xs)) if xs > 1 else off)
    accs = [f"%a{v}_{j}" for v in range(t.fv) for j in range(t.pt)]
    if blocks:  # the sums of the channel blocks before (zeros for the first)
        slot = b.sub("%tt", t_lo)
        init = ", ".join(f"{a} = " + b.op(f"vector.load %S[{slot}, {b.c(i)}, {c0}] : "
                                          f"{acc_t}, {f32v}", "s")
                         for i, a in enumerate(accs))
    else:
        init = ", ".join(f"{a} = %zv" for a in accs)
    types = ", ".join([f32v] * len(accs))
    res = b.fresh("r")
    # A blocked input: a loop over channel blocks around one over a block's channels, so
    # that channel cb*B + ci is read at cb * H*W*B + ci (no division in the address).
    nested = s.in_block > 0 and not blocks and s.in_block % unroll == 0
    if nested:
        outer = ", ".join(f"%o{v}_{j} = %zv" for v in range(t.fv) for j in range(t.pt))
        b.emit(f"{res}:{len(accs)} = scf.for %cbk = {c0} to {b.c(s.c // s.in_block)} step "
               f"{c1} iter_args({outer}) -> ({types}) {{")
        b.indent += 1
        inner_res = b.fresh("ri")
        carried_in = ", ".join(f"%a{v}_{j} = %o{v}_{j}" for v in range(t.fv)
                               for j in range(t.pt))
        b.emit(f"{inner_res}:{len(accs)} = scf.for %ci = {c0} to {b.c(s.in_block)} step "
               f"{b.c(unroll)} iter_args({carried_in}) -> ({types}) {{")
        b.indent += 1
        b.emit(f"%c = arith.addi {b.mul('%cbk', b.c(s.in_block))}, %ci : index")
    else:
        b.emit(f"{res}:{len(accs)} = scf.for %c = {c_lo} to {c_hi} step {b.c(unroll)} "
               f"iter_args({init}) -> ({types}) {{")
        b.indent += 1
    cur = {(v, j): f"%a{v}_{j}" for v in range(t.fv) for j in range(t.pt)}
    order = [(v, j) for v in range(t.fv) for j in range(t.pt)]
    roll = taps > ROLL_TAPS
    for u in range(unroll):
        cu = b.add("%c", b.c(u)) if u else "%c"
        if nested:  # cb * H*W*B + ci + u
            cbase = b.add(b.mul("%cbk", b.c(s.h * s.w * s.in_block)), "%ci")
            if u:
                cbase = b.add(cbase, b.c(u))
        elif s.in_block:  # channel c at (c / B) * H*W*B + c % B (a shift and a mask)
            cbase = b.add(b.mul(b.op(f"arith.divui {cu}, {b.c(s.in_block)} : index"),
                                b.c(s.h * s.w * s.in_block)),
                          b.op(f"arith.remui {cu}, {b.c(s.in_block)} : index"))
        else:
            cbase = b.mul(cu, b.c(s.h * s.w))
        if roll:  # a loop over the window's rows, its columns unrolled
            inner = b.fresh("k")
            carried = ", ".join(f"%k{v}_{j} = {cur[v, j]}" for v, j in order)
            b.emit(f"{inner}:{len(order)} = scf.for %kh = {c0} to {b.c(s.kh)} step {c1} "
                   f"iter_args({carried}) -> ({types}) {{")
            b.indent += 1
            cur = {(v, j): f"%k{v}_{j}" for v, j in order}
            rows = [(b.mul("%kh", b.c(s.dh * s.w * xs)), b.mul("%kh", b.c(s.kw)))]
        else:  # (input offset, first tap) of each row
            rows = [(b.c(kh_ * s.dh * s.w * xs), b.c(kh_ * s.kw)) for kh_ in range(s.kh)]
        for row_off, row_tap in rows:
            for kw_ in range(s.kw):
                base = b.add(b.add(cbase, row_off), b.c(kw_ * s.dw * xs))
                k = b.add(row_tap, b.c(kw_))
                row = b.add(b.mul(cu, b.c(taps)), k)
                ws = [b.op(f"vector.load {wsel}[{row}, {b.c(v * t.vl)}] : {wsel_t}, "
                           f"{f32v}", "w") for v in range(t.fv)]
                for j in range(t.pt):
                    x = b.op(f"memref.load %Xf[{n}, {b.add(base, offs[j])}] : {xf_t}", "x")
                    xb = b.op(f"vector.broadcast {x} : f32 to {f32v}", "xb")
                    for v in range(t.fv):
                        cur[v, j] = b.op(f"vector.fma {ws[v]}, {xb}, {cur[v, j]} : {f32v}",
                                         "a")
        if roll:
            b.emit(f"scf.yield {', '.join(cur[o] for o in order)} : {types}")
            b.close()
            cur = {o: f"{inner}#{i}" for i, o in enumerate(order)}
    b.emit(f"scf.yield {', '.join(cur[o] for o in order)} : {types}")
    b.close()
    if nested:
        b.emit(f"scf.yield {', '.join(f'{inner_res}#{i}' for i in range(len(order)))} : "
               f"{types}")
        b.close()
    if blocks:  # the last block writes the sums back, the others keep them in S
        b.emit(f"scf.if {b.cmp('uge', b.add('%cb', b.c(cb)), b.c(s.c))} {{")
        b.indent += 1
    if s.block:
        _write_back_blocked(b, s, t, res, n, fb, p0, skip, store=store)
    else:
        _write_back(b, s, t, res, n, fb, p0, skip, b.cmp("ult", b.add("%tt", c1), t_hi),
                    store=store, epilogue=epilogue)
    if blocks:
        b.close(" else {")
        b.indent += 1
        for i in range(len(accs)):
            b.emit(f"vector.store {res}#{i}, %S[{slot}, {b.c(i)}, {c0}] : {acc_t}, {f32v}")
        b.close()
    b.close()
    b.close()
    if cb < s.c:
        b.close()
    if dealloc:
        b.emit(f"memref.dealloc %Wp : {wp_t}")
    text += [f"  func.func private @{name}_body(%X: {x_t}, %Wt: {w_t}, %O: {o_t}, "
             f"%P: {pd_t}, %shared: i1, %lo: index, %hi: index{e_params}) {{"]
    text += [f"    {n_} = arith.constant {val} : index" for val, n_ in sorted(b.consts.items())]
    text += [*b.lines, "    return", "  }"]
    decl = ([f"  {PARALLEL_FOR_DECL}"] if parallel else []) + \
        ([f"  {NUM_THREADS_DECL}"] if shared and not frozen else [])
    return "\n".join(["module {", *decl, *text, "}"])
