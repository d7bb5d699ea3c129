"""The packed, register-tiled GEMM of `accel-matmul-microkernel`, as MLIR text.

`render_gemm(spec, name)` returns a private `func.func @<name>(%A, %B, %C)` on memrefs that
computes `C += A @ B` (per batch index when `spec.batch` > 0) GotoBLAS-style:

    for jc in 0..N step NC:                      B block (KC x NC) lives in L3
      for pc in 0..K step KC:
        pack B[pc:+kc, jc:+nc] -> Bp[N/NR][KCp][NR]     (zero-padded in n and k)
        for ic in 0..M step MC:                  A block (MC x KC) lives in L2
          pack A[ic:+mc, pc:+kc] -> Ap[M/MR][KCp][MR]   (zero-padded in m and k)
          for jr: for ir:                        B micro-panel (KC x NR) lives in L1
            micro-kernel: MR x NR accumulators (MR * NR/VL vector registers),
              per k: NR/VL vector loads of Bp, MR broadcasts of Ap, MR * NR/VL vector.fma
            C tile += accumulators (vector load/add/store; edge tiles through a scratch tile)

Zero padding makes every micro-kernel call a full MR x NR x KCp tile (KCp: kc rounded up to
the k-unroll factor), so the hot loop has no remainder code; only the write-back of the
last row/column tile copies the valid part. Operand layouts are the matmul's own memref
types (static strides stay visible to LLVM); `trans_a`/`trans_b` read A as K x M or B as
N x K (nn.Linear's weight) with the packing loops ordered for contiguous reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from accel.passes._epilogue_code import EpilogueCode, emit_epilogue
from accel.passes._parallel_abi import PARALLEL_FOR_DECL, fork_join

#: M within MC: the packed B block sized for L2, not L3 (`render_gemm`).
L2_B_BLOCK = True
#: M past MC: blocks of equal size, or one block when M overshoots MC a little (`_m_block`).
BALANCED_M_BLOCKS = True
#: A row-major B packed row by row (`_pack_b_rows`), PACK_B_GROUP panels at a time.
PACK_B_ROWS = True
PACK_B_GROUP = 8


@dataclass(frozen=True)
class Tiles:
    """Register and cache tile sizes (see docs/cpu-codegen.md for how they are chosen)."""

    vl: int  # f32 lanes per vector register (8: AVX2, 16: AVX-512)
    mr: int  # micro-kernel rows (broadcast A values)
    nr: int  # micro-kernel columns (a multiple of vl)
    kc: int  # k block: a KC x NR panel of B stays in L1
    mc: int  # m block: the packed MC x KC block of A stays in L2
    nc: int  # n block: the packed KC x NC block of B stays in L3
    ku: int = 4  # k-loop unroll of the micro-kernel (KC is rounded up to it)


@dataclass(frozen=True)
class GemmSpec:
    """One matmul: static sizes, operand memref types and transposition."""

    m: int
    n: int
    k: int
    a_type: str
    b_type: str
    c_type: str
    batch: int = 0  # 0: 2-D operands; otherwise the leading batch dim of all three
    trans_a: bool = False  # A is K x M
    trans_b: bool = False  # B is N x K


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class _Emitter:
    """Lines of MLIR with fresh SSA names and interned index constants."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 2
        self.count = 0
        self.consts: dict[int, str] = {}

    def fresh(self, hint: str = "v") -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def op(self, text: str, hint: str = "v") -> str:
        name = self.fresh(hint)
        self.emit(f"{name} = {text}")
        return name

    def c(self, value: int) -> str:
        """An index constant (hoisted to the function entry)."""
        if value not in self.consts:
            self.consts[value] = f"%c{value}"
        return self.consts[value]

    def add(self, a: str, b: str) -> str:
        return self.op(f"arith.addi {a}, {b} : index")

    def sub(self, a: str, b: str) -> str:
        return self.op(f"arith.subi {a}, {b} : index")

    def mul(self, a: str, b: str) -> str:
        return self.op(f"arith.muli {a}, {b} : index")

    def min(self, a: str, b: str) -> str:
        return self.op(f"arith.minsi {a}, {b} : index")

    def cmp(self, pred: str, a: str, b: str) -> str:
        return self.op(f"arith.cmpi {pred}, {a}, {b} : index")

    def round_up(self, a: str, b: int) -> str:
        q = self.op(f"arith.ceildivui {a}, {self.c(b)} : index")
        return self.mul(q, self.c(b))

    def open_for(self, iv: str, lo: str, hi: str, step: str, extra: str = "") -> None:
        self.emit(f"scf.for {iv} = {lo} to {hi} step {step}{extra} {{")
        self.indent += 1

    def close(self, suffix: str = "") -> None:
        self.indent -= 1
        self.emit("}" + suffix)

    def add_into(self, dest: str, part: str) -> None:
        """`dest += part` for two f32 memref elements, each "%M[indices] : memref type"
        (a partial tile added into the output)."""
        old = self.op(f"memref.load {dest}")
        add = self.op(f"memref.load {part}")
        new = self.op(f"arith.addf {old}, {add} : f32")
        self.emit(f"memref.store {new}, {dest}")


@dataclass(frozen=True)
class Split:
    """How a parallel kernel divides its work: items over `dim` ("m": rows of A and C, "n":
    columns of B and C), `group` register tiles (MR rows or NR columns) per item, `per`
    items per batch index (items of batch bi are bi*per .. bi*per + per - 1)."""

    dim: str
    group: int
    per: int
    items: int  # all items (per * batch, or per)


#: Smallest work (M*N*K, times the batch) a kernel runs in parallel. Items (below) cap the
#: threads a kernel wakes, so a small kernel runs on a few threads even on a many-core
#: machine; on PyTorch's OpenMP threads (accel.host.openmp) a fork-join costs a few us.
#: 2^23 left a small CNN's convolutions serial (its train step: 0.64x eager at 2 threads,
#: 0.76x with 2^20 and threaded loops from 2^18: benchmarks/training.py).
PARALLEL_MIN_MACS = 1 << 20
#: Smallest work of one parallel item (a thread gets at least one).
ITEM_MIN_MACS = 1 << 21
#: ...and at the default threshold half of it: 2^19 (~5-10 us on one AVX-512 core).
ITEM_FLOOR_MACS = 1 << 19


def choose_split(spec: GemmSpec, tiles: Tiles, min_macs: int = PARALLEL_MIN_MACS
                 ) -> Split | None:
    """The parallel split of `spec`'s work, or None when it is too small to run in parallel.

    The larger of M and N is split (into whole MR x .. or .. x NR tiles), so the operand
    every thread packs in full (B when splitting M, A when splitting N) is the smaller
    one; items are grouped to at least ITEM_MIN_MACS each (half of `min_macs` when that is
    less; a quarter for a threshold below 2 * ITEM_FLOOR_MACS, as tests use).
    """
    batch = max(spec.batch, 1)
    if spec.m * spec.n * spec.k * batch < min_macs:
        return None
    dim = "m" if spec.m >= spec.n else "n"
    size, tile, other = (spec.m, tiles.mr, spec.n) if dim == "m" else (spec.n, tiles.nr, spec.m)
    tiles_in_dim = _ceil(size, tile)
    # Half the threshold (two items at least), within [ITEM_FLOOR_MACS, ITEM_MIN_MACS];
    # a threshold below the floor (tests) gets small items as asked.
    item_macs = min(ITEM_MIN_MACS, min_macs // 2) if min_macs >= 2 * ITEM_FLOOR_MACS \
        else min_macs // 4
    group = max(1, min(tiles_in_dim, _ceil(item_macs, tile * other * spec.k)))
    per = _ceil(tiles_in_dim, group)
    if per * batch < 2:
        return None
    return Split(dim=dim, group=group, per=per, items=per * batch)


def _descriptor(rank: int) -> str:
    if rank == 0:  # no sizes, no strides
        return "!llvm.struct<(ptr, ptr, i64)>"
    return f"!llvm.struct<(ptr, ptr, i64, array<{rank} x i64>, array<{rank} x i64>)>"


def _rank(memref_type: str) -> int:
    """The rank of a static memref type's text (`memref<4x8xf32, strided<...>>`: 2)."""
    return memref_type.removeprefix("memref<").split(",", 1)[0].count("x")


def _render_dispatch(spec: GemmSpec, name: str, split: Split,
                     extras: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """`@name(A, B, C, extras...)`: the operands' descriptors into a stack context, then
    `accel_parallel_for(@name_entry, ctx, items)`; `@name_entry(ctx, lo, hi)` loads them
    back and calls `@name_body(A, B, C, lo, hi, extras...)`. `extras`: (name, type) of an
    epilogue's inputs (`_epilogue_params`)."""
    names = ["A", "B", "C", *(v for v, _ in extras)]
    types = (spec.a_type, spec.b_type, spec.c_type, *(t for _, t in extras))
    descs = [_descriptor(_rank(t)) for t in types]  # a prepacked A has rank 4
    arr = f"!llvm.array<{len(descs)} x {descs[0]}>" if len(set(descs)) == 1 else \
        f"!llvm.struct<({', '.join(descs)})>"
    params = ", ".join(f"%{v}: {t}" for v, t in zip(names, types, strict=True))
    lines = [f"  func.func private @{name}({params}) {{",
             "    %one = llvm.mlir.constant(1 : i64) : i64",
             f"    %ctx = llvm.alloca %one x {arr} : (i64) -> !llvm.ptr"]
    for i, (v, t, desc) in enumerate(zip(names, types, descs, strict=True)):
        lines += [f"    %d{v} = builtin.unrealized_conversion_cast %{v} : {t} to {desc}",
                  f"    %p{v} = llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> !llvm.ptr, "
                  f"{arr}",
                  f"    llvm.store %d{v}, %p{v} : {desc}, !llvm.ptr"]
    lines += [f"    %items = arith.constant {split.items} : index",
              *fork_join(f"{name}_entry", "%ctx", "%items", indent="    "),
              "    return",
              "  }",
              f"  func.func private @{name}_entry(%ctx: !llvm.ptr, %lo: index, %hi: index) {{"]
    for i, (v, t, desc) in enumerate(zip(names, types, descs, strict=True)):
        lines += [f"    %p{v} = llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> !llvm.ptr, "
                  f"{arr}",
                  f"    %d{v} = llvm.load %p{v} : !llvm.ptr -> {desc}",
                  f"    %{v} = builtin.unrealized_conversion_cast %d{v} : {desc} to {t}"]
    e_args = "".join(f", %{v}" for v, _ in extras)
    e_types = "".join(f", {t}" for _, t in extras)
    lines += [f"    func.call @{name}_body(%A, %B, %C, %lo, %hi{e_args}) : "
              f"({', '.join(types[:3])}, index, index{e_types}) -> ()",
              "    return",
              "  }"]
    return lines


#: vector.shuffle masks of an 8 x 8 f32 transpose in three stages (unpack, 64-bit pairs,
#: 128-bit halves: what LLVM selects as vunpck*ps / vshufps / vperm2f128).
_T8_UNPACK = ([0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15])
_T8_PAIRS = ([0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15])
_T8_HALVES = ([0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15])


def _transpose8(e: _Emitter, rows: list[str]) -> list[str]:
    """The columns of the 8 x 8 block whose rows are the vector<8xf32> values `rows`."""
    vt = "vector<8xf32>"

    def shuffle(a: str, b: str, mask: list[int]) -> str:
        return e.op(f"vector.shuffle {a}, {b} [{', '.join(map(str, mask))}] : {vt}, {vt}", "t")

    a = [shuffle(rows[2 * i], rows[2 * i + 1], _T8_UNPACK[0]) for i in range(4)]
    b = [shuffle(rows[2 * i], rows[2 * i + 1], _T8_UNPACK[1]) for i in range(4)]
    c = [shuffle(x[h], x[h + 1], m) for h in (0, 2) for x in (a, b) for m in _T8_PAIRS]
    return [shuffle(c[q], c[q + 4], _T8_HALVES[half]) for half in (0, 1) for q in range(4)]


def _pack_transposed_8x8(e: _Emitter, b_at: Callable[[str, str], str], n0: str, kc: str, nr: int,
                         bp_t: str) -> str:
    """Pack a full panel of a transposed B (N x K: nn.Linear's weight) 8 x 8 blocks at a
    time: 8 row loads, an in-register transpose, 8 stores, instead of 64 scalar copies that
    each store 4 bytes (the packing was a quarter of ViT's 197 x 384 x 384 GEMMs). Returns
    the first k (a multiple of 8) left to the scalar loop."""
    c0 = e.c(0)
    k8 = e.mul(e.op(f"arith.divui {kc}, {e.c(8)} : index"), e.c(8))
    e.open_for("%p8", c0, k8, e.c(8))
    k = e.add("%pc", "%p8")
    for jb in range(nr // 8):
        rows = []
        for i in range(8):
            ref = b_at(k, e.add(n0, e.c(jb * 8 + i)))
            rows.append(e.op(f"vector.load {ref}, vector<8xf32>", "row"))
        for q, col in enumerate(_transpose8(e, rows)):
            p = e.add("%p8", e.c(q)) if q else "%p8"
            e.emit(f"vector.store {col}, %Bp[%jr, {p}, {e.c(jb * 8)}] : {bp_t}, vector<8xf32>")
    e.close()
    return k8


def _pack_rows_8x8(e: _Emitter, a_at: Callable[[str, str], str], m0: str, kc: str, mr: int,
                   ap_t: str) -> None:
    """Pack the full MR-row panel of A at row m0 (MR <= 8) into Ap[%ir] 8 k at a time: MR
    row loads (zero rows up to 8), the in-register transpose, stores of MR lanes; the last
    kc % 8 columns with scalar copies."""
    c0, c1 = e.c(0), e.c(1)
    vt = "vector<8xf32>"
    zero = e.op(f"arith.constant dense<0.0> : {vt}", "z8")
    k8 = e.mul(e.op(f"arith.divui {kc}, {e.c(8)} : index"), e.c(8))
    e.open_for("%p8", c0, k8, e.c(8))
    k = e.add("%pc", "%p8")
    rows = [e.op(f"vector.load {a_at(e.add(m0, e.c(i)) if i else m0, k)}, {vt}", "row")
            for i in range(mr)] + [zero] * (8 - mr)
    # MR lanes as power-of-two pieces (6 = 4 + 2): plain 16- and 8-byte stores, not a
    # vmaskmovps (microcoded on AMD Zen 2: a tenth of the packing's time went to it).
    pieces, off = [], 0
    for size in (8, 4, 2, 1):
        if mr - off >= size:
            pieces.append((off, size))
            off += size
    for q, col in enumerate(_transpose8(e, rows)):
        p = e.add("%p8", e.c(q)) if q else "%p8"
        for off, size in pieces:
            part = col if size == 8 else e.op(
                f"vector.extract_strided_slice {col} {{offsets = [{off}], sizes = [{size}], "
                f"strides = [1]}} : {vt} to vector<{size}xf32>", "part")
            e.emit(f"vector.store {part}, %Ap[%ir, {p}, {e.c(off)}] : {ap_t}, "
                   f"vector<{size}xf32>")
    e.close()
    e.open_for("%i", c0, e.c(mr), c1)
    e.open_for("%p", k8, kc, c1)
    v = e.op(f"memref.load {a_at(e.add(m0, '%i'), e.add('%pc', '%p'))}")
    e.emit(f"memref.store {v}, %Ap[%ir, %p, %i] : {ap_t}")
    e.close()
    e.close()


def _pack_a(e: _Emitter, spec: GemmSpec, t: Tiles, a_at: Callable[[str, str], str], mp: str,
            m_hi: str, kc: str, kcp: str, ap_t: str) -> None:
    """Ap[ir, p, i] = A[%ic + ir*MR + i, %pc + p] for the `mp` row tiles of the M block at
    %ic and the K block at %pc (`kc` long, `kcp` rounded up to KU), zero outside A."""
    c0, c1 = e.c(0), e.c(1)
    e.open_for("%ir", c0, mp, c1)
    m0 = e.add("%ic", e.mul("%ir", e.c(t.mr)))
    mv = e.min(e.c(t.mr), e.sub(m_hi, m0))
    vector_a = not spec.trans_a and t.mr <= 8 and spec.k >= 8
    if vector_a:  # a full MR-row panel: 8 x 8 blocks (MR rows and zero rows) transposed
        e.emit(f"scf.if {e.cmp('eq', mv, e.c(t.mr))} {{")
        e.indent += 1
        _pack_rows_8x8(e, a_at, m0, kc, t.mr, ap_t)
        e.close(" else {")
        e.indent += 1
    loops = [("%i", c0, mv), ("%p", c0, kc)]
    for iv, lo, hi in (loops[::-1] if spec.trans_a else loops):
        e.open_for(iv, lo, hi, c1)
    m = e.add(m0, "%i")
    k = e.add("%pc", "%p")
    v = e.op(f"memref.load {a_at(m, k)}")
    e.emit(f"memref.store {v}, %Ap[%ir, %p, %i] : {ap_t}")
    e.close()
    e.close()
    if vector_a:
        e.close()
    e.open_for("%i", mv, e.c(t.mr), c1)  # rows past M
    e.open_for("%p", c0, kc, c1)
    e.emit(f"memref.store %zero, %Ap[%ir, %p, %i] : {ap_t}")
    e.close()
    e.close()
    e.open_for("%p", kc, kcp, c1)  # k past the block's end
    e.open_for("%i", c0, e.c(t.mr), c1)
    e.emit(f"memref.store %zero, %Ap[%ir, %p, %i] : {ap_t}")
    e.close()
    e.close()
    e.close()


def _pack_partial_panel(e: _Emitter, t: Tiles, b_at: Callable[[str, str], str], n0: str,
                        n_hi: str, kc: str, bp_t: str) -> None:
    """Panel %jr (first column `n0`) of a block whose columns end at `n_hi` within it:
    column by column, zero past N."""
    c0, c1 = e.c(0), e.c(1)
    nv = e.sub(n_hi, n0)
    e.open_for("%j", c0, e.c(t.nr), c1)
    inside = e.cmp("slt", "%j", nv)
    e.emit(f"scf.if {inside} {{")
    e.indent += 1
    e.open_for("%p", c0, kc, c1)
    k = e.add("%pc", "%p")
    n = e.add(n0, "%j")
    v = e.op(f"memref.load {b_at(k, n)}")
    e.emit(f"memref.store {v}, %Bp[%jr, %p, %j] : {bp_t}")
    e.close()
    e.close(" else {")
    e.indent += 1
    e.open_for("%p", c0, kc, c1)
    e.emit(f"memref.store %zero, %Bp[%jr, %p, %j] : {bp_t}")
    e.close()
    e.close()
    e.close()


def _pack_b_rows(e: _Emitter, t: Tiles, b_at: Callable[[str, str], str], np_: str,
                 n_hi: str, kc: str, kcp: str, bp_t: str) -> None:
    """`_pack_b` for a row-major B, row by row: each k row's columns of the block are read
    in one contiguous run and dealt out NR floats per panel. Panel by panel, each k step
    read one cache line a row stride away (a 1x1 conv's B is its input, C x H*W: 12.5 KB
    apart at 56x56), which the prefetchers do not follow; the last, partial panel is
    packed column by column, zero past N."""
    c0, c1 = e.c(0), e.c(1)
    nvec = t.nr // t.vl
    f32v = f"vector<{t.vl}xf32>"
    full = e.op(f"arith.divui {e.sub(n_hi, '%jc')}, {e.c(t.nr)} : index")
    nf = e.min(full, np_)
    e.open_for("%jg", c0, nf, e.c(PACK_B_GROUP))
    g_hi = e.min(e.add("%jg", e.c(PACK_B_GROUP)), nf)
    e.open_for("%p", c0, kc, c1)
    k = e.add("%pc", "%p")
    e.open_for("%jr", "%jg", g_hi, c1)
    n0 = e.add("%jc", e.mul("%jr", e.c(t.nr)))
    for j in range(nvec):
        n = e.add(n0, e.c(j * t.vl)) if j else n0
        v = e.op(f"vector.load {b_at(k, n)}, {f32v}")
        e.emit(f"vector.store {v}, %Bp[%jr, %p, {e.c(j * t.vl)}] : {bp_t}, {f32v}")
    e.close()
    e.close()
    e.close()
    e.open_for("%jr", nf, np_, c1)  # at most one partial panel
    n0 = e.add("%jc", e.mul("%jr", e.c(t.nr)))
    _pack_partial_panel(e, t, b_at, n0, n_hi, kc, bp_t)
    e.close()
    e.open_for("%jr", c0, np_, c1)  # k past the block's end: zero rows
    e.open_for("%p", kc, kcp, c1)
    for j in range(nvec):
        e.emit(f"vector.store %zv, %Bp[%jr, %p, {e.c(j * t.vl)}] : {bp_t}, {f32v}")
    e.close()
    e.close()


def _pack_b(e: _Emitter, spec: GemmSpec, t: Tiles, b_at: Callable[[str, str], str], np_: str,
            n_hi: str, kc: str, kcp: str, bp_t: str) -> None:
    """Bp[jr, p, j] = B[%pc + p, %jc + jr*NR + j] for the `np_` column panels of the N block
    at %jc and the K block at %pc (`kc` long, `kcp` rounded up to KU), zero outside B."""
    c0, c1 = e.c(0), e.c(1)
    nvec = t.nr // t.vl
    f32v = f"vector<{t.vl}xf32>"
    if not spec.trans_b and PACK_B_ROWS:
        _pack_b_rows(e, t, b_at, np_, n_hi, kc, kcp, bp_t)
        return
    e.open_for("%jr", c0, np_, c1)
    n0 = e.add("%jc", e.mul("%jr", e.c(t.nr)))
    nfull = e.cmp("sle", e.add(n0, e.c(t.nr)), n_hi)
    e.emit(f"scf.if {nfull} {{")
    e.indent += 1
    p_lo = c0
    if spec.trans_b and t.nr % 8 == 0 and spec.k >= 8:
        p_lo = _pack_transposed_8x8(e, b_at, n0, kc, t.nr, bp_t)
    loops = [("%p", p_lo, kc), ("%j", c0, e.c(t.nr))]
    for iv, lo, hi in (loops[::-1] if spec.trans_b else loops):
        e.open_for(iv, lo, hi, c1)
    k = e.add("%pc", "%p")
    n = e.add(n0, "%j")
    v = e.op(f"memref.load {b_at(k, n)}")
    e.emit(f"memref.store {v}, %Bp[%jr, %p, %j] : {bp_t}")
    e.close()
    e.close()
    e.close(" else {")
    e.indent += 1
    _pack_partial_panel(e, t, b_at, n0, n_hi, kc, bp_t)
    e.close()
    e.open_for("%p", kc, kcp, c1)
    for j in range(nvec):
        e.emit(f"vector.store %zv, %Bp[%jr, %p, {e.c(j * t.vl)}] : {bp_t}, {f32v}")
    e.close()
    e.close()


def _prepacked_type(spec: GemmSpec, tiles: Tiles, side: str) -> str:
    t = tiles
    rows, tile = (spec.m, t.mr) if side == "a" else (spec.n, t.nr)
    kcp_max = min(t.kc, _ceil(spec.k, t.ku) * t.ku)
    return f"memref<{_ceil(rows, tile)}x{_ceil(spec.k, t.kc)}x{kcp_max}x{tile}xf32>"


def prepacked_a_type(spec: GemmSpec, tiles: Tiles) -> str:
    """The memref type of A packed once for every block (`render_prepack(side="a")`):
    PA[tile, kb, p, i] = A[tile*MR + i, kb*KC + p] for the ceil(M/MR) row tiles and
    ceil(K/KC) K blocks, each block's KC (the last one's K % KC, rounded up to KU) x MR
    panel, zero outside A."""
    return _prepacked_type(spec, tiles, "a")


def prepacked_b_type(spec: GemmSpec, tiles: Tiles) -> str:
    """Likewise for B: PB[tile, kb, p, j] = B[kb*KC + p, tile*NR + j] for the ceil(N/NR)
    column panels (nn.Linear's weight, transposed or not)."""
    return _prepacked_type(spec, tiles, "b")


def render_prepack(spec: GemmSpec, tiles: Tiles, name: str, side: str) -> str:
    """The private function `@name(%X, %P)` filling `prepacked_{side}_type(spec, tiles)`
    from the operand X = A or B (`side`; not batched): the panels `render_gemm` packs per
    call, block by block, written in place through views of P (no buffer: an AOT
    library's allocation plan stays fixed)."""
    assert not spec.batch and side in ("a", "b")
    t, e = tiles, _Emitter()
    a = side == "a"
    size, tile, step, iv, x_t = (spec.m, t.mr, t.mc, "%ic", spec.a_type) if a else \
        (spec.n, t.nr, t.nc, "%jc", spec.b_type)
    p_t = _prepacked_type(spec, t, side)
    kcp_max = min(t.kc, _ceil(spec.k, t.ku) * t.ku)
    view_t = f"memref<?x{kcp_max}x{tile}xf32, strided<[{_ceil(spec.k, t.kc) * kcp_max * tile}, " \
        f"{tile}, 1], offset: ?>>"

    def a_at(m: str, k: str) -> str:
        return f"%X[{f'{k}, {m}' if spec.trans_a else f'{m}, {k}'}] : {x_t}"

    def b_at(k: str, n: str) -> str:
        return f"%X[{f'{n}, {k}' if spec.trans_b else f'{k}, {n}'}] : {x_t}"

    c0 = e.c(0)
    hi = e.c(size)
    e.open_for("%pc", c0, e.c(spec.k), e.c(t.kc))
    kc = e.min(e.c(t.kc), e.sub(e.c(spec.k), "%pc"))
    kcp = e.round_up(kc, t.ku)
    kb = e.op(f"arith.divui %pc, {e.c(t.kc)} : index")
    e.open_for(iv, c0, hi, e.c(step))
    count = e.op(f"arith.ceildivui {e.min(e.c(step), e.sub(hi, iv))}, {e.c(tile)} : index")
    tile0 = e.op(f"arith.divui {iv}, {e.c(tile)} : index")
    e.emit(f"%{'Ap' if a else 'Bp'} = memref.subview %P[{tile0}, {kb}, 0, 0] [{count}, 1, "
           f"{kcp_max}, {tile}] [1, 1, 1, 1] : {p_t} to {view_t}")
    if a:
        _pack_a(e, spec, t, a_at, count, hi, kc, kcp, view_t)
    else:
        _pack_b(e, spec, t, b_at, count, hi, kc, kcp, view_t)
    e.close()
    e.close()
    head = [f"  func.func private @{name}(%X: {x_t}, %P: {p_t}) {{",
            "    %zero = arith.constant 0.0 : f32",
            f"    %zv = arith.constant dense<0.0> : vector<{t.vl}xf32>"]
    head += [f"    {n} = arith.constant {v} : index" for v, n in sorted(e.consts.items())]
    return "\n".join(["module {", *head, *e.lines, "    return", "  }", "}"])


def epilogue_params(spec: GemmSpec, code: EpilogueCode | None) -> tuple[tuple[str, str], ...]:
    """(name, type) of the GEMM's parameters for an epilogue's inputs: a full one (the
    output's shape) as a view like C's (`%Ef<k>`), a per-channel or scalar one as is."""
    if code is None:
        return ()
    return tuple((f"Ef{k}", spec.c_type) if ex.kind == "full" else (f"E{k}", ex.type)
                 for k, ex in enumerate(code.extras))


def _m_block(m: int, t: Tiles) -> int:
    """MC for M rows past `t.mc`: M rows in one block when they overshoot MC by at most a
    quarter (ResNet's 256 filters with MC = 252 left a 4-row block that read all of the
    packed B again from L3 for 1/43 of the work), else M split into equal blocks."""
    rows = _ceil(m, t.mr) * t.mr
    if rows * 4 <= t.mc * 5:
        return rows
    return _ceil(_ceil(m, _ceil(m, t.mc)), t.mr) * t.mr


def render_gemm(spec: GemmSpec, tiles: Tiles, name: str, *, dealloc: bool = False,
                split: Split | None = None, zero_start: bool = False,
                a_prepacked: bool = False, b_prepacked: bool = False,
                epilogue: EpilogueCode | None = None) -> str:
    """The private GEMM function for `spec` (see the module docstring); `dealloc` frees the
    packing buffers at its end (otherwise the deallocation pipeline must run after).
    `zero_start`: `C = A @ B` (the first K block stores its tiles, C is never read; the
    caller drops the zero fill), else `C += A @ B`. With `a_prepacked`, A (`spec.a_type`) is
    `prepacked_a_type` of the original spec, filled by `render_prepack`: no packing of A;
    `b_prepacked` likewise for B (`prepacked_b_type`). `epilogue` (with `zero_start`, no
    batch; C's rows are output channels): the last K block applies the elementwise chain
    (passes/_epilogue_code.py) to each value it writes, its inputs after C
    (`epilogue_params`).

    With `split`, `@name` runs `@name_body` over the split's items with
    `accel_parallel_for` (through `@name_entry`), and the module also declares that;
    `@name_body(A, B, C, lo, hi)` computes the rows (or columns) of items [lo, hi).
    """
    if epilogue is not None and (not zero_start or spec.batch):
        raise ValueError("a GEMM epilogue needs a zero start and no batch")
    t, e = tiles, _Emitter()
    if BALANCED_M_BLOCKS and spec.m > t.mc:
        t = replace(t, mc=_m_block(spec.m, t))
    if L2_B_BLOCK and not b_prepacked and spec.m <= t.mc and t.nc > t.mc:
        # One M block reads each packed B block once: sized like the A block (half of L2),
        # it is still in L2 when the micro-kernels read it; the L3-sized block was written
        # out to L3 and read back (ResNet-50's 56x56 1x1 convs, 3136 columns: 5-9% at 1
        # thread, AVX2 host, session 22).
        t = replace(t, nc=max(t.nr, t.mc // t.nr * t.nr))
    f32v = f"vector<{t.vl}xf32>"
    nvec = t.nr // t.vl
    extras = epilogue_params(spec, epilogue)
    one_k_block = spec.k <= t.kc
    kcp_max = min(t.kc, _ceil(spec.k, t.ku) * t.ku)
    np_max = _ceil(min(t.nc, spec.n), t.nr)
    mp_max = _ceil(min(t.mc, spec.m), t.mr)
    bp_t = f"memref<{np_max}x{kcp_max}x{t.nr}xf32>"
    ap_t = f"memref<{mp_max}x{kcp_max}x{t.mr}xf32>"
    ct_t = f"memref<{t.mr}x{t.nr}xf32>"
    pre = ["%bi, "] if spec.batch else [""]

    def a_at(m: str, k: str) -> str:
        idx = f"{k}, {m}" if spec.trans_a else f"{m}, {k}"
        return f"%A[{pre[0]}{idx}] : {spec.a_type}"

    def b_at(k: str, n: str) -> str:
        idx = f"{n}, {k}" if spec.trans_b else f"{k}, {n}"
        return f"%B[{pre[0]}{idx}] : {spec.b_type}"

    def c_at(m: str, n: str) -> str:
        return f"%C[{pre[0]}{m}, {n}] : {spec.c_type}"

    c0, c1 = e.c(0), e.c(1)
    if b_prepacked:
        bp_t = spec.b_type
    else:
        e.emit(f"%Bp = memref.alloc() {{alignment = 64 : i64}} : {bp_t}")
    if a_prepacked:
        ap_t = spec.a_type
    else:
        e.emit(f"%Ap = memref.alloc() {{alignment = 64 : i64}} : {ap_t}")
    e.emit(f"%Ct = memref.alloca() {{alignment = 64 : i64}} : {ct_t}")
    # The rows [m_lo, m_hi) and columns [n_lo, n_hi) of C this function computes.
    m_lo, m_hi, n_lo, n_hi = c0, e.c(spec.m), c0, e.c(spec.n)
    if split is None:
        if spec.batch:
            e.open_for("%bi", c0, e.c(spec.batch), c1)
    else:
        per = e.c(split.per)
        lo, hi = "%lo", "%hi"
        if spec.batch:  # the batch indices items [lo, hi) touch, then the items in each
            b_lo = e.op(f"arith.divui %lo, {per} : index")
            b_hi = e.op(f"arith.ceildivui %hi, {per} : index")
            e.open_for("%bi", b_lo, b_hi, c1)
            first = e.mul("%bi", per)
            lo = e.op(f"arith.maxsi {e.sub('%lo', first)}, {c0} : index")
            hi = e.min(e.sub("%hi", first), per)
        size, tile = (spec.m, t.mr) if split.dim == "m" else (spec.n, t.nr)
        step = e.c(split.group * tile)
        r_lo = e.mul(lo, step)
        r_hi = e.min(e.mul(hi, step), e.c(size))
        if split.dim == "m":
            m_lo, m_hi = r_lo, r_hi
        else:
            n_lo, n_hi = r_lo, r_hi
    e.open_for("%jc", n_lo, n_hi, e.c(t.nc))
    nc = e.min(e.c(t.nc), e.sub(n_hi, "%jc"))
    np_ = e.op(f"arith.ceildivui {nc}, {e.c(t.nr)} : index")
    e.open_for("%pc", c0, e.c(spec.k), e.c(t.kc))
    kc = e.min(e.c(t.kc), e.sub(e.c(spec.k), "%pc"))
    first = e.cmp("eq", "%pc", c0)  # the first K block (zero_start: stores, not adds)
    if epilogue is not None and not one_k_block:  # the last K block applies the epilogue
        last = e.cmp("sge", e.add("%pc", e.c(t.kc)), e.c(spec.k))
    kcp = e.round_up(kc, t.ku)
    if a_prepacked or b_prepacked:
        kb = e.op(f"arith.divui %pc, {e.c(t.kc)} : index")
    if b_prepacked:  # the block's first column panel in PB (%jc is a multiple of NR)
        ptile0 = e.op(f"arith.divui %jc, {e.c(t.nr)} : index")

    if not b_prepacked:  # -- pack B: Bp[jr, p, j] = B[pc + p, jc + jr*NR + j], zero outside
        _pack_b(e, spec, t, b_at, np_, n_hi, kc, kcp, bp_t)

    e.open_for("%ic", m_lo, m_hi, e.c(t.mc))
    mc = e.min(e.c(t.mc), e.sub(m_hi, "%ic"))
    mp = e.op(f"arith.ceildivui {mc}, {e.c(t.mr)} : index")
    if a_prepacked:  # the block's first row tile in PA (%ic is a multiple of MR)
        tile0 = e.op(f"arith.divui %ic, {e.c(t.mr)} : index")
        last_tile = e.c(_ceil(spec.m, t.mr) - 1)

    if not a_prepacked:  # -- pack A: Ap[ir, p, i] = A[ic + ir*MR + i, pc + p], zero outside
        _pack_a(e, spec, t, a_at, mp, m_hi, kc, kcp, ap_t)

    # -- micro-kernel over the packed panels ------------------------------------------------
    e.open_for("%jr", c0, np_, c1)
    e.open_for("%ir", c0, mp, c1)
    m0 = e.add("%ic", e.mul("%ir", e.c(t.mr)))
    n0 = e.add("%jc", e.mul("%jr", e.c(t.nr)))
    # The C tile's cache lines are fetched while the k loop runs: C is read once per k
    # block and its rows are a row stride apart, so each tile's write-back missed L2 and
    # stalled on memory (1024^3 on a 2 MB-L2 Xeon: 4% of the kernel's samples).
    last_m, last_n = e.sub(m_hi, c1), e.sub(n_hi, c1)
    for i in range(t.mr):
        mi = e.min(e.add(m0, e.c(i)) if i else m0, last_m)
        for j in range(0, t.nr, 16):
            nj = e.min(e.add(n0, e.c(j)) if j else n0, last_n)
            e.emit(f"memref.prefetch %C[{pre[0]}{mi}, {nj}], write, locality<3>, data : "
                   f"{spec.c_type}")
            for v, ty in extras:  # a residual the epilogue reads with the tile, likewise
                if v.startswith("Ef"):
                    e.emit(f"memref.prefetch %{v}[{mi}, {nj}], read, locality<3>, data : {ty}")
    accs = [[f"%acc_{i}_{j}" for j in range(nvec)] for i in range(t.mr)]
    flat = [a for row in accs for a in row]
    next_ir = e.op(f"arith.minsi {e.add('%ir', c1)}, {e.sub(mp, c1)} : index", "irn")
    if b_prepacked:
        ptile = e.add(ptile0, "%jr")
    if a_prepacked:  # PA's own tiles: the next one may be the next M block's first
        tile = e.add(tile0, "%ir")
        next_ir = f"{e.op(f'arith.minsi {e.add(tile, c1)}, {last_tile} : index', 'irn')}, {kb}"
    results = e.fresh("r")
    inits = ", ".join(f"{a} = %zv" for a in flat)
    types = ", ".join([f32v] * len(flat))
    e.emit(f"{results}:{len(flat)} = scf.for %p = {c0} to {kcp} step {e.c(t.ku)} "
           f"iter_args({inits}) -> ({types}) {{")
    e.indent += 1
    cur = [row[:] for row in accs]
    # The next row tile's A panel (MR x KCp floats, contiguous, in L2) is fetched while
    # this one runs, at the same k offsets: a cache line per 16 floats, so the broadcasts
    # of the next tile do not wait on L2 (with the zero start, 1024^3 at 1 thread 174 ->
    # 183 GFLOP/s, 2048^3 176 -> 193; docs/cpu-codegen.md).
    for u in range(0, t.ku, max(1, 16 // t.mr)):
        pu = e.add("%p", e.c(u)) if u else "%p"
        panels = "%A" if a_prepacked else "%Ap"
        e.emit(f"memref.prefetch {panels}[{next_ir}, {pu}, {e.c(0)}], read, locality<3>, "
               f"data : {ap_t}")
    for u in range(t.ku):
        pu = e.add("%p", e.c(u)) if u else "%p"
        at = f"%B[{ptile}, {kb}" if b_prepacked else "%Bp[%jr"
        bs = [e.op(f"vector.load {at}, {pu}, {e.c(j * t.vl)}] : {bp_t}, {f32v}", "b")
              for j in range(nvec)]
        for i in range(t.mr):
            at = f"%A[{tile}, {kb}" if a_prepacked else "%Ap[%ir"
            s = e.op(f"memref.load {at}, {pu}, {e.c(i)}] : {ap_t}", "a")
            sb = e.op(f"vector.broadcast {s} : f32 to {f32v}", "a")
            for j in range(nvec):
                cur[i][j] = e.op(f"vector.fma {sb}, {bs[j]}, {cur[i][j]} : {f32v}", "f")
    e.emit(f"scf.yield {', '.join(a for row in cur for a in row)} : {types}")
    e.close()
    out = [[f"{results}#{i * nvec + j}" for j in range(nvec)] for i in range(t.mr)]
    mfull = e.cmp("sle", e.add(m0, e.c(t.mr)), m_hi)
    nfull = e.cmp("sle", e.add(n0, e.c(t.nr)), n_hi)
    full = e.op(f"arith.andi {mfull}, {nfull} : i1")
    e.emit(f"scf.if {full} {{")
    e.indent += 1

    def write_full(add: bool, epi: bool = False) -> None:
        for i in range(t.mr):
            mi = e.add(m0, e.c(i)) if i else m0
            row: dict = {}  # the row's channel operands, for all its vectors
            for j in range(nvec):
                nj = e.add(n0, e.c(j * t.vl)) if j else n0
                new = out[i][j]
                if add:
                    old = e.op(f"vector.load {c_at(mi, nj)}, {f32v}")
                    new = e.op(f"arith.addf {old}, {out[i][j]} : {f32v}")
                if epi:
                    new = emit_epilogue(e, epilogue, new, t.vl, mi, f"{mi}, {nj}",
                                        spec.c_type, row)
                e.emit(f"vector.store {new}, {c_at(mi, nj)}, {f32v}")

    def write_edge(add: bool, epi: bool = False) -> None:
        e.open_for("%i", c0, mv, c1)
        e.open_for("%j", c0, nv, c1)
        m = e.add(m0, "%i")
        n = e.add(n0, "%j")
        if add and not epi:
            e.add_into(c_at(m, n), f"%Ct[%i, %j] : {ct_t}")
        else:
            new = e.op(f"memref.load %Ct[%i, %j] : {ct_t}")
            if add:
                new = e.op(f"arith.addf {e.op(f'memref.load {c_at(m, n)}')}, {new} : f32")
            if epi:
                new = emit_epilogue(e, epilogue, new, 1, m, f"{m}, {n}", spec.c_type)
            e.emit(f"memref.store {new}, {c_at(m, n)}")
        e.close()
        e.close()

    def first_or_rest(write: Callable[..., None]) -> None:
        """With `zero_start`, the first K block stores C, the others add to it; with an
        epilogue, the last one (the first too, when K is one block) applies it."""
        if not zero_start:
            write(True)
            return
        if epilogue is not None and one_k_block:
            write(False, True)
            return
        e.emit(f"scf.if {first} {{")
        e.indent += 1
        write(False)
        e.close(" else {")
        e.indent += 1
        if epilogue is None:
            write(True)
        else:
            e.emit(f"scf.if {last} {{")
            e.indent += 1
            write(True, True)
            e.close(" else {")
            e.indent += 1
            write(True)
            e.close()
        e.close()

    first_or_rest(write_full)
    e.close(" else {")
    e.indent += 1
    for i in range(t.mr):
        for j in range(nvec):
            e.emit(f"vector.store {out[i][j]}, %Ct[{e.c(i)}, {e.c(j * t.vl)}] : {ct_t}, {f32v}")
    mv = e.min(e.c(t.mr), e.sub(m_hi, m0))
    nv = e.min(e.c(t.nr), e.sub(n_hi, n0))
    first_or_rest(write_edge)
    e.close()
    e.close()  # ir
    e.close()  # jr
    e.close()  # ic
    e.close()  # pc
    e.close()  # jc
    if spec.batch:
        e.close()
    if dealloc and not b_prepacked:
        e.emit(f"memref.dealloc %Bp : {bp_t}")
        if not a_prepacked:
            e.emit(f"memref.dealloc %Ap : {ap_t}")
    params = f"%A: {spec.a_type}, %B: {spec.b_type}, %C: {spec.c_type}"
    kernel = name if split is None else f"{name}_body"
    if split is not None:
        params += ", %lo: index, %hi: index"
    params += "".join(f", %{v}: {ty}" for v, ty in extras)
    head = [f"  func.func private @{kernel}({params}) {{",
            "    %zero = arith.constant 0.0 : f32",
            f"    %zv = arith.constant dense<0.0> : {f32v}"]
    head += [f"    {n} = arith.constant {v} : index" for v, n in sorted(e.consts.items())]
    body = [*head, *e.lines, "    return", "  }"]
    if split is None:
        return "\n".join(["module {", *body, "}"])
    return "\n".join(["module {", *_render_dispatch(spec, name, split, extras), *body, "}"])


@dataclass(frozen=True)
class ConvSpec:
    """One `linalg.conv_2d_nchw_fchw` on row-major memrefs: x N x C x H x W (already padded),
    w F x C x KH x KW, out N x F x OH x OW; strides (sh, sw), dilations (dh, dw).

    With `groups` G > 1, a `linalg.conv_2d_ngchw_gfchw`: C and F count the channels and
    filters of one group, x is N x G x C x H x W, w G x F x C x KH x KW, out
    N x G x F x OH x OW, and each (image, group) is one im2col + GEMM."""

    n: int
    c: int
    h: int
    w: int
    f: int
    kh: int
    kw: int
    oh: int
    ow: int
    sh: int = 1
    sw: int = 1
    dh: int = 1
    dw: int = 1
    groups: int = 1
    #: With `block` B > 0 (accel-blocked-layout's NCHW8c), out is N x F/B x OH x OW x B, and
    #: with `in_block` B too x is N x C/B x H x W x B; w stays F x C x KH x KW.
    block: int = 0
    in_block: int = 0

    def types(self) -> tuple[str, str, str]:
        g = f"{self.groups}x" if self.groups > 1 else ""
        if self.block:
            b, ib = self.block, self.in_block
            x = f"memref<{self.n}x{self.c // ib}x{self.h}x{self.w}x{ib}xf32>" if ib else \
                f"memref<{self.n}x{self.c}x{self.h}x{self.w}xf32>"
            return (x, f"memref<{self.f}x{self.c}x{self.kh}x{self.kw}xf32>",
                    f"memref<{self.n}x{self.f // b}x{self.oh}x{self.ow}x{b}xf32>")
        return (f"memref<{self.n}x{g}{self.c}x{self.h}x{self.w}xf32>",
                f"memref<{g}{self.f}x{self.c}x{self.kh}x{self.kw}xf32>",
                f"memref<{self.n}x{g}{self.f}x{self.oh}x{self.ow}xf32>")

    def gemm(self) -> GemmSpec:
        """out[n] (F x OH*OW) += w (F x C*KH*KW) @ cols (C*KH*KW x OH*OW), per image (and
        group: then w is one group's slice of the weight)."""
        m, n, k = self.f, self.oh * self.ow, self.c * self.kh * self.kw
        a_type = f"memref<{m}x{k}xf32, strided<[{k}, 1], offset: ?>>" if self.groups > 1 \
            else f"memref<{m}x{k}xf32>"
        return GemmSpec(m=m, n=n, k=k, a_type=a_type,
                        b_type=f"memref<{k}x{n}xf32>",
                        c_type=f"memref<{m}x{n}xf32, strided<[{n}, 1], offset: ?>>")


#: Smallest im2col (C*KH*KW * OH*OW copies per image) whose rows are split across threads.
IM2COL_PARALLEL_MIN = 1 << 18
#: Smallest number of copies of one parallel im2col item.
IM2COL_ITEM_MIN = 1 << 15


def im2col_split(spec: ConvSpec, min_copies: int = IM2COL_PARALLEL_MIN
                 ) -> tuple[int, int] | None:
    """(rows of cols per item, items) of a threaded im2col, or None when it is too small."""
    rows, cols = spec.c * spec.kh * spec.kw, spec.oh * spec.ow
    if rows * cols < min_copies or rows < 2:
        return None
    group = max(1, min(rows, _ceil(min(IM2COL_ITEM_MIN, max(min_copies // 4, 1)), cols)))
    items = _ceil(rows, group)
    return None if items < 2 else (group, items)


def _im2col_rows(e: _Emitter, s: ConvSpec, r_lo: str, r_hi: str, x_at: str, x_t: str,
                 cols_t: str) -> None:
    """cols[r, oh*OW + ow] = X[c, oh*sh + kh*dh, ow*sw + kw*dw] for rows r in [r_lo, r_hi),
    r = c*KH*KW + kh*KW + kw; `x_at` is the index prefix of X (the image, if any)."""
    c0, c1 = e.c(0), e.c(1)
    e.open_for("%r", r_lo, r_hi, c1)
    c = e.op(f"arith.divui %r, {e.c(s.kh * s.kw)} : index")
    rem = e.op(f"arith.remui %r, {e.c(s.kh * s.kw)} : index")
    kh = e.op(f"arith.divui {rem}, {e.c(s.kw)} : index")
    kw = e.op(f"arith.remui {rem}, {e.c(s.kw)} : index")
    h0 = e.mul(kh, e.c(s.dh))
    w0 = e.mul(kw, e.c(s.dw))
    e.open_for("%oh", c0, e.c(s.oh), c1)
    ih = e.add(e.mul("%oh", e.c(s.sh)), h0)
    base = e.mul("%oh", e.c(s.ow))
    e.open_for("%ow", c0, e.c(s.ow), c1)
    iw = e.add(e.mul("%ow", e.c(s.sw)), w0)
    v = e.op(f"memref.load %X[{x_at}{c}, {ih}, {iw}] : {x_t}")
    e.emit(f"memref.store {v}, %cols[%r, {e.add(base, '%ow')}] : {cols_t}")
    for _ in range(3):
        e.close()


def _render_grouped_conv(s: ConvSpec, name: str, gemm: str, dealloc: bool) -> str:
    """`render_conv` for G groups: per image n and group g, the im2col of X[n, g] and
    `@gemm(W[g] viewed as F x C*KH*KW, cols, O[n, g] viewed as F x OH*OW)` (serial im2col;
    the GEMM is threaded as usual)."""
    e = _Emitter()
    x_t, w_t, o_t = s.types()
    g = s.gemm()
    cols_t = g.b_type
    w3_t = f"memref<{s.groups}x{s.f}x{g.k}xf32>"
    o4_t = f"memref<{s.n}x{s.groups}x{s.f}x{g.n}xf32>"
    c0, c1 = e.c(0), e.c(1)
    e.emit(f"%cols = memref.alloc() {{alignment = 64 : i64}} : {cols_t}")
    e.emit(f"%W3 = memref.collapse_shape %Wt [[0], [1], [2, 3, 4]] : {w_t} into {w3_t}")
    e.emit(f"%O4 = memref.collapse_shape %O [[0], [1], [2], [3, 4]] : {o_t} into {o4_t}")
    e.open_for("%n", c0, e.c(s.n), c1)
    e.open_for("%g", c0, e.c(s.groups), c1)
    _im2col_rows(e, s, c0, e.c(g.k), "%n, %g, ", x_t, cols_t)
    wg = e.op(f"memref.subview %W3[%g, 0, 0] [1, {s.f}, {g.k}] [1, 1, 1] : {w3_t} to "
              f"{g.a_type}", "wg")
    on = e.op(f"memref.subview %O4[%n, %g, 0, 0] [1, 1, {s.f}, {g.n}] [1, 1, 1, 1] : {o4_t} "
              f"to {g.c_type}", "on")
    e.emit(f"func.call @{gemm}({wg}, %cols, {on}) : ({g.a_type}, {g.b_type}, {g.c_type}) -> ()")
    e.close()
    e.close()
    return _conv_module(e, s, name, gemm, dealloc, [])


def _parallel_im2col(s: ConvSpec, name: str, group: int, items: int
                     ) -> tuple[list[str], list[str], list[str]]:
    """(setup lines of `@name`, its lines running the im2col of image %n with
    `accel_parallel_for`, the functions `@name_im2col_entry(ctx, lo, hi)` and
    `@name_im2col(Xn, cols, lo, hi)`: rows [lo*group, min(hi*group, C*KH*KW)) of cols)."""
    e = _Emitter()
    x_t = s.types()[0]
    cols_t = s.gemm().b_type
    xn_t = f"memref<{s.c}x{s.h}x{s.w}xf32, strided<[{s.h * s.w}, {s.w}, 1], offset: ?>>"
    dx_t = _descriptor(3)
    dc_t = _descriptor(2)
    ctx_t = f"!llvm.struct<({dx_t}, {dc_t})>"
    gep = "llvm.getelementptr %ctx[0, {}] : (!llvm.ptr) -> !llvm.ptr, " + ctx_t
    setup = ["%one = llvm.mlir.constant(1 : i64) : i64",
             f"%ctx = llvm.alloca %one x {ctx_t} : (i64) -> !llvm.ptr",
             f"%px = {gep.format(0)}", f"%pc = {gep.format(1)}",
             f"%dc = builtin.unrealized_conversion_cast %cols : {cols_t} to {dc_t}",
             f"llvm.store %dc, %pc : {dc_t}, !llvm.ptr",
             f"%items = arith.constant {items} : index",
             *fork_join(f"{name}_im2col_entry", "%ctx", "%items")[:1]]
    call = [f"%xn = memref.subview %X[%n, 0, 0, 0] [1, {s.c}, {s.h}, {s.w}] [1, 1, 1, 1] : "
            f"{x_t} to {xn_t}",
            f"%dx = builtin.unrealized_conversion_cast %xn : {xn_t} to {dx_t}",
            f"llvm.store %dx, %px : {dx_t}, !llvm.ptr",
            *fork_join(f"{name}_im2col_entry", "%ctx", "%items")[1:]]
    funcs = [f"  func.func private @{name}_im2col_entry(%ctx: !llvm.ptr, %lo: index, "
             "%hi: index) {",
             f"    %px = {gep.format(0)}", f"    %pc = {gep.format(1)}",
             f"    %dx = llvm.load %px : !llvm.ptr -> {dx_t}",
             f"    %dc = llvm.load %pc : !llvm.ptr -> {dc_t}",
             f"    %xn = builtin.unrealized_conversion_cast %dx : {dx_t} to {xn_t}",
             f"    %cols = builtin.unrealized_conversion_cast %dc : {dc_t} to {cols_t}",
             f"    func.call @{name}_im2col(%xn, %cols, %lo, %hi) : ({xn_t}, {cols_t}, index, "
             "index) -> ()",
             "    return", "  }"]
    r_lo = e.mul("%lo", e.c(group))
    r_hi = e.min(e.mul("%hi", e.c(group)), e.c(s.c * s.kh * s.kw))
    _im2col_rows(e, s, r_lo, r_hi, "", xn_t, cols_t)
    funcs += [f"  func.func private @{name}_im2col(%X: {xn_t}, %cols: {cols_t}, %lo: index, "
              "%hi: index) {"]
    funcs += [f"    {n} = arith.constant {v} : index" for v, n in sorted(e.consts.items())]
    funcs += [*e.lines, "    return", "  }"]
    return setup, call, funcs


def render_conv(spec: ConvSpec, name: str, gemm: str, *, dealloc: bool = False,
                parallel_min: int | None = None) -> str:
    """`func.func private @name(%X, %Wt, %O)`: `O += conv(X, Wt)` as, per image n, an im2col
    of X[n] into cols[C*KH*KW][OH*OW] (row c*KH*KW + kh*KW + kw, column oh*OW + ow) and
    `@gemm(Wt viewed as F x C*KH*KW, cols, O[n] viewed as F x OH*OW)`. `cols` is one
    `memref.alloc` reused for every image (`dealloc`: freed here, otherwise by the
    deallocation pipeline).

    With `parallel_min` (the smallest im2col, in copies per image, that runs threaded), a
    large enough im2col splits its rows across threads with `accel_parallel_for` through
    `@name_im2col_entry` / `@name_im2col`; the text then also declares
    `accel_parallel_for` (to verify on its own), which the caller must move into a module
    only when that does not declare it yet."""
    s, e = spec, _Emitter()
    if s.groups > 1:
        return _render_grouped_conv(s, name, gemm, dealloc)
    x_t, w_t, o_t = s.types()
    g = s.gemm()
    cols_t = g.b_type
    o3_t = f"memref<{s.n}x{s.f}x{g.n}xf32>"
    split = None if parallel_min is None else im2col_split(spec, parallel_min)
    c0, c1 = e.c(0), e.c(1)
    e.emit(f"%cols = memref.alloc() {{alignment = 64 : i64}} : {cols_t}")
    e.emit(f"%Wm = memref.collapse_shape %Wt [[0], [1, 2, 3]] : {w_t} into {g.a_type}")
    e.emit(f"%O3 = memref.collapse_shape %O [[0], [1], [2, 3]] : {o_t} into {o3_t}")
    funcs: list[str] = []
    if split is not None:
        setup, call, funcs = _parallel_im2col(s, name, *split)
        for line in setup:
            e.emit(line)
    e.open_for("%n", c0, e.c(s.n), c1)
    if split is not None:
        for line in call:
            e.emit(line)
        funcs.append(PARALLEL_FOR_DECL)
    else:
        _im2col_rows(e, s, c0, e.c(s.c * s.kh * s.kw), "%n, ", x_t, cols_t)
    on = e.op(f"memref.subview %O3[%n, 0, 0] [1, {s.f}, {g.n}] [1, 1, 1] : {o3_t} to "
              f"{g.c_type}", "on")
    e.emit(f"func.call @{gemm}(%Wm, %cols, {on}) : ({g.a_type}, {g.b_type}, {g.c_type}) -> ()")
    e.close()
    return _conv_module(e, s, name, gemm, dealloc, funcs)


def _conv_module(e: _Emitter, s: ConvSpec, name: str, gemm: str, dealloc: bool,
                 funcs: list[str]) -> str:
    """The module text of a conv function whose body `e` holds (the GEMM declared, to
    verify on its own, and `funcs` after it); frees `cols` at the end with `dealloc`."""
    x_t, w_t, o_t = s.types()
    g = s.gemm()
    if dealloc:
        e.emit(f"memref.dealloc %cols : {g.b_type}")
    decl = f"  func.func private @{gemm}({g.a_type}, {g.b_type}, {g.c_type})"  # to verify
    head = [decl, f"  func.func private @{name}(%X: {x_t}, %Wt: {w_t}, %O: {o_t}) {{"]
    head += [f"    {n} = arith.constant {v} : index" for v, n in sorted(e.consts.items())]
    return "\n".join(["module {", *head, *e.lines, "    return", "  }", *funcs, "}"])
