"""Matrix-vector kernels of `accel-matmul-microkernel`: matmuls of at most GEMV_MAX_ROWS rows.

Why: a KV-cache decode step multiplies one token (M = 1) by every weight matrix, and so
does a classifier head at batch 1. Such a matmul is below the GEMM kernels' `min-size`;
as loops, affine fusion made one dot product per output column of `x @ W`, reading W
(K x N) down its columns one float per cache line: GPT-2's decode ran at 0.09x eager's
tokens/s (a 1 x 3072 x 768 `addmm` 14.7 ms against eager's 0.34). nn.Linear's N x K weight
(Llama, ResNet's head) was first transposed into a copy every call (ResNet-50's 1000 x
2048 head: 2.8 ms of 71). Both kernels below read W once, in order, and threads split its
columns.

`render_gemv(spec, vl, name, parallel_min)` returns private functions computing
`C += A @ B` (C is M x N, M <= GEMV_MAX_ROWS) over items of `ch` columns of C:

- nn, B stored K x N (read along N):

      for each item (columns n0 .. n0 + ch):         that part of C stays in L1
        for k in steps of KU:                        KU rows of B, streamed in order
          a[i][u] = broadcast A[i, k + u]
          for each vector of the item's columns:     C[i, n:+VL] += sum_u a[i][u] * B[k+u, n:+VL]
        (the last K % KU rows one at a time; the last N % VL columns masked)

  Each output still sums its K products in order, as a loop would.
- nt, B stored N x K (nn.Linear's weight, read along K): per tile of M rows x COLS
  columns, M * COLS vector partial sums along K (one masked load of the last K % VL),
  reduced horizontally once per output, as the dot-product kernel (`_gemm_direct.py`).

With more than `parallel_min` multiply-adds the items run on the runtime's threads
(`accel_parallel_for`), at least ITEM_FLOOR_MACS of work each.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.passes._gemm_direct import emit_dot_tile
from accel.passes._gemm_kernel import (
    ITEM_FLOOR_MACS,
    GemmSpec,
    Split,
    _ceil,
    _Emitter,
    _render_dispatch,
)
from accel.passes._parallel_abi import PARALLEL_FOR_DECL

#: Largest M given a matrix-vector kernel: below 16 rows (`min-size`, from where the GEMM
#: kernels take over). Rows go in groups (`_groups`) that reuse each loaded piece of B from
#: registers: a decode step at batch 8 multiplies 8 rows by every weight.
GEMV_MAX_ROWS = 15
#: Smallest B (N*K floats) given one: 64 KB, past L1. Below it the loops read B from L1
#: whatever their order, and affine fusion keeps an MLP layer's bias and activation in the
#: same nest as its product (a kernel call ends the nest).
GEMV_MIN_WEIGHTS = 1 << 14
#: Bytes of C one nn item keeps in L1 while B's rows stream past it.
_C_BYTES = 16 << 10
#: Most items of one kernel (as the GEMM kernels' splits).
_MAX_ITEMS = 64


@dataclass(frozen=True)
class GemvPlan:
    """Items of `ch` columns of C (`chunks` of them; the last may be shorter), run in
    parallel when `parallel`."""

    ch: int
    chunks: int
    parallel: bool


def takes_weight(n: int, k: int, trans_b: bool) -> bool:
    """Whether a B of N x K (`trans_b`) or K x N gets a matrix-vector kernel: past L1, and
    for N x K a reduction at most 4x as long as the output is wide. (A longer one, 8
    filters x 147 taps over 2048 positions, is a convolution's weight gradient: it stays
    with the loops the zoo's training tolerances were validated on; with this kernel's
    vector partial sums ResNet-50's train step ended 7% past the bound on one parameter.)
    `accel-fold-matvec-transposes` folds a weight's transpose only where this holds."""
    return n * k >= GEMV_MIN_WEIGHTS and (not trans_b or k <= 4 * n)


def gemv_fits(spec: GemmSpec, vl: int) -> bool:
    """Whether `spec` gets a matrix-vector kernel: 2-D, A not transposed, at most
    GEMV_MAX_ROWS rows, and a whole vector along the dimension it reads B by."""
    if spec.batch or spec.trans_a or spec.m > GEMV_MAX_ROWS:
        return False
    if not takes_weight(spec.n, spec.k, spec.trans_b):
        return False
    return spec.k >= vl if spec.trans_b else spec.n >= vl


def _groups(m: int, vl: int) -> list[list[int]]:
    """A's rows in groups of at most 8 (AVX-512: 32 registers) or 4 (AVX2: 16), as even
    as they come: each group reads its operand pieces of B once."""
    size = 8 if vl >= 16 else 4
    count = _ceil(m, size)
    bounds = [m * g // count for g in range(count + 1)]
    return [list(range(bounds[g], bounds[g + 1])) for g in range(count)]


def _cols(m: int, vl: int) -> int:
    """Columns per nt tile for groups of at most `m` rows: M x COLS accumulators + M +
    COLS loads within the registers (32 with AVX-512, 16 with AVX2)."""
    if vl >= 16:
        return 4 if m <= 4 else 2
    return 4 if m <= 2 else 3 if m == 3 else 2


def _ku(m: int, vl: int) -> int:
    """Rows of B per nn step for a group of `m` rows: M x KU broadcasts + KU loads + 1
    accumulator in registers (one row of A with AVX-512: 8 rows, one C load and store per
    8 FMAs; GPT-2's 1 x 3072 x 768 at 1 thread 0.44 -> 0.34 ms with the item split below)."""
    if vl >= 16:
        return 8 if m == 1 else 4 if m <= 4 else 2
    return 4 if m <= 2 else 2


def plan_gemv(spec: GemmSpec, vl: int, parallel_min: int | None) -> GemvPlan:
    """Items for `spec`: one unless its work reaches `parallel_min` (None: serial)."""
    unit = _cols(len(_groups(spec.m, vl)[0]), vl) if spec.trans_b else vl
    macs = spec.m * spec.n * spec.k
    items = 1
    if parallel_min is not None and macs >= parallel_min:
        # Items of ITEM_FLOOR_MACS at least; a threshold below twice that (tests) gets
        # items of a quarter of it, as the GEMM kernels' splits do.
        floor = ITEM_FLOOR_MACS if parallel_min >= 2 * ITEM_FLOOR_MACS \
            else max(1, parallel_min // 4)
        items = max(1, min(_MAX_ITEMS, macs // floor, _ceil(spec.n, unit)))
    ch = min(_ceil(_ceil(spec.n, items), unit) * unit, spec.n)
    chunks = _ceil(spec.n, ch)
    return GemvPlan(ch=ch, chunks=chunks, parallel=chunks >= 2)


def _nn_span(e: _Emitter, spec: GemmSpec, vl: int, n0: str, n1: str, rows: list[int]
             ) -> None:
    """C[rows, n0:n1] += A[rows] @ B[:, n0:n1] for B stored K x N: n0 is a multiple of
    VL, n1 too or N (then the last N % VL columns go masked, in a pass of their own)."""
    vt = f"vector<{vl}xf32>"
    ku = _ku(len(rows), vl)
    nvec = e.op(f"arith.divui {e.sub(n1, n0)}, {e.c(vl)} : index")

    def k_loops(columns: str | None) -> None:
        """Every row of B over the span's whole vectors (`columns` None) or over the masked
        vector at `columns`."""
        def step(k: str, count: int) -> None:
            ks = [k if u == 0 else e.add(k, e.c(u)) for u in range(count)]
            def broadcast(i: int, k: str) -> str:
                scalar = e.op(f"memref.load %A[{e.c(i)}, {k}] : {spec.a_type}")
                return e.op(f"vector.broadcast {scalar} : f32 to {vt}", "a")

            a = [[broadcast(i, kk) for kk in ks] for i in rows]

            def vector(n: str, masked: bool) -> None:
                def load(ref: str, typ: str) -> str:
                    if masked:
                        return e.op(f"vector.maskedload {ref}, %mask, %zv : {typ}, "
                                    f"vector<{vl}xi1>, {vt} into {vt}")
                    return e.op(f"vector.load {ref} : {typ}, {vt}")

                bs = [load(f"%B[{kk}, {n}]", spec.b_type) for kk in ks]
                for r, i in enumerate(rows):
                    ref = f"%C[{e.c(i)}, {n}]"
                    acc = load(ref, spec.c_type)
                    for u in range(count):
                        acc = e.op(f"vector.fma {a[r][u]}, {bs[u]}, {acc} : {vt}", "f")
                    if masked:
                        e.emit(f"vector.maskedstore {ref}, %mask, {acc} : {spec.c_type}, "
                               f"vector<{vl}xi1>, {vt}")
                    else:
                        e.emit(f"vector.store {acc}, {ref} : {spec.c_type}, {vt}")

            if columns is None:
                e.open_for("%v", e.c(0), nvec, e.c(1))
                vector(e.add(n0, e.mul("%v", e.c(vl))), False)
                e.close()
            else:
                vector(columns, True)

        k_main = spec.k // ku * ku
        if k_main:
            e.open_for("%k", e.c(0), e.c(k_main), e.c(ku))
            step("%k", ku)
            e.close()
        if spec.k > k_main:
            e.open_for("%kr", e.c(k_main), e.c(spec.k), e.c(1))
            step("%kr", 1)
            e.close()

    k_loops(None)
    if spec.n % vl:
        e.emit(f"scf.if {e.cmp('eq', n1, e.c(spec.n))} {{")
        e.indent += 1
        k_loops(e.c(spec.n - spec.n % vl))
        e.close()


def _nt_span(e: _Emitter, spec: GemmSpec, vl: int, n0: str, n1: str, rows: list[int],
             cols: int) -> None:
    """C[rows, n0:n1] += A[rows] @ B[n0:n1, :]^T for B stored N x K: n0 is a multiple
    of COLS, n1 too or N (then the last N % COLS columns make a narrower tile)."""

    def tile(n: str, count: int) -> None:
        ns = [n if j == 0 else e.add(n, e.c(j)) for j in range(count)]
        emit_dot_tile(e, spec, vl, [e.c(i) for i in rows], ns, "", "%kmask")

    full = e.op(f"arith.divui {e.sub(n1, n0)}, {e.c(cols)} : index")
    e.open_for("%t", e.c(0), full, e.c(1))
    tile(e.add(n0, e.mul("%t", e.c(cols))), cols)
    e.close()
    if spec.n % cols:
        e.emit(f"scf.if {e.cmp('eq', n1, e.c(spec.n))} {{")
        e.indent += 1
        tile(e.c(spec.n - spec.n % cols), spec.n % cols)
        e.close()


def render_gemv(spec: GemmSpec, vl: int, name: str, plan: GemvPlan) -> str:
    """The module text of `@name(%A, %B, %C)` (module docstring) and its helpers.

    `@name_body(A, B, C, lo, hi)` computes items lo .. hi as one span of columns (the
    runtime hands each thread one contiguous range of items, so one thread runs the whole
    width at once); nn spans go in parts of at most _C_BYTES of C."""
    e = _Emitter()
    e.indent = 2
    n0 = e.mul("%lo", e.c(plan.ch))
    n1 = e.min(e.mul("%hi", e.c(plan.ch)), e.c(spec.n))
    groups = _groups(spec.m, vl)
    if spec.trans_b:
        cols = _cols(len(groups[0]), vl)
        for rows in groups:
            _nt_span(e, spec, vl, n0, n1, rows, cols)
    else:  # parts of the span whose C stays in L1 while B's rows stream past
        part = max(vl, _C_BYTES // (4 * spec.m) // vl * vl)
        e.open_for("%s0", n0, n1, e.c(part))
        end = e.min(e.add("%s0", e.c(part)), n1)
        for rows in groups:
            _nn_span(e, spec, vl, "%s0", end, rows)
        e.close()
    vt = f"vector<{vl}xf32>"
    types = f"%A: {spec.a_type}, %B: {spec.b_type}, %C: {spec.c_type}"
    head = [f"  func.func private @{name}_body({types}, %lo: index, %hi: index) {{",
            f"    %zv = arith.constant dense<0.0> : {vt}"]
    if not spec.trans_b and spec.n % vl:
        head.append(f"    %mask = vector.constant_mask [{spec.n % vl}] : vector<{vl}xi1>")
    if spec.trans_b and spec.k % vl:
        head.append(f"    %kmask = vector.constant_mask [{spec.k % vl}] : vector<{vl}xi1>")
    head += [f"    {n} = arith.constant {v} : index" for v, n in sorted(e.consts.items())]
    body = [*head, *e.lines, "    return", "  }"]
    if plan.parallel:
        split = Split(dim="n", group=1, per=plan.chunks, items=plan.chunks)
        entry = _render_dispatch(spec, name, split)
        return "\n".join(["module {", PARALLEL_FOR_DECL, *entry, *body, "}"])
    call = [f"  func.func private @{name}({types}) {{",
            "    %c0 = arith.constant 0 : index",
            f"    %n = arith.constant {plan.chunks} : index",
            f"    func.call @{name}_body(%A, %B, %C, %c0, %n) : ({spec.a_type}, {spec.b_type}, "
            f"{spec.c_type}, index, index) -> ()",
            "    return", "  }"]
    return "\n".join(["module {", *call, *body, "}"])
