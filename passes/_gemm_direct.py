"""The unpacked ("direct") register-tiled GEMM of `accel-matmul-microkernel`, as MLIR text.

For small matmuls whose operands already sit in cache (attention's 64 x 64 score and value
tiles, a conv's 64-filter GEMM on a small image), packing costs as much as the
multiply-adds: a 64 x 64 x 64 tile copies 8192 floats one by one for 262144 FMA lanes'
worth of work. `render_direct_gemm(spec, tiles, name)` returns a private
`func.func @<name>(%A, %B, %C)` computing `C += A @ B` straight from the operands:

    for each NR-wide column panel of C (B[:, n:n+NR] is read in place: K rows of NR floats):
      for each MR-row tile:  MR x NR/VL accumulators loaded from C
        for k: NR/VL vector loads of B's row k, MR broadcasts of A[m+i, k], MR*NR/VL FMAs
        accumulators stored back to C

All sizes are static, so the remainders are straight-line code, not guarded loops: the
last row tile has M % MR rows, the last column panel N % NR columns (whole vectors, then
one `vector.maskedload`/`maskedstore` for the lanes past a multiple of VL). B must have a
unit inner stride along N (not nn.Linear's N x K weight: that is what packing is for);
A may be transposed (broadcasts read single elements either way).
"""

from __future__ import annotations

from collections.abc import Callable

from accel.passes._gemm_epilogue import Epilogue
from accel.passes._gemm_kernel import GemmSpec, Tiles, _Emitter


def direct_fits(spec: GemmSpec, tiles: Tiles, l1: int, l2: int) -> bool:
    """Whether the unpacked kernel suits `spec`: B read along N (not transposed), one
    K x NR panel of B within half of L1 and all of A within half of L2 (A is re-read per
    column panel)."""
    if spec.trans_b:
        return False
    return spec.k * tiles.nr * 4 <= l1 // 2 and spec.m * spec.k * 4 <= l2 // 2


def _chunks(n: int, tiles: Tiles) -> tuple[int, list[tuple[int, int]]]:
    """(full NR panels, the last panel's vectors as (column offset in it, lanes))."""
    full = n // tiles.nr
    rest = n - full * tiles.nr
    return full, [(off, min(tiles.vl, rest - off)) for off in range(0, rest, tiles.vl)]


def conflicting_stride(row_stride: int, k: int) -> bool:
    """Whether K rows of B `row_stride` floats apart fall into few L1 sets: a multiple of
    1 KiB maps them onto at most 4 of 64 sets (32 ways in an 8-way L1) and a 64-row panel
    evicts itself (attention on 1024 keys read K^T rows 4 KiB apart: 57 GFLOP/s against
    70 at 1500 keys)."""
    return k > 16 and (row_stride * 4) % 1024 == 0


def render_direct_gemm(spec: GemmSpec, tiles: Tiles, name: str, copy_b: bool = False,
                       epilogue: Epilogue | None = None) -> str:
    """The private function `@name(%A, %B, %C)`: `C += A @ B` without packing (module
    docstring); per batch index when `spec.batch` > 0. With `copy_b` (B's row stride
    conflicts in L1, `conflicting_stride`), each K x NR panel of B is first copied to a
    contiguous stack buffer with vector loads and stores. With an `epilogue`, `C = A @ B`
    (accumulators start at zero, C is not read), times or divided by its scale if any."""
    t, e = tiles, _Emitter()
    vt = f"vector<{t.vl}xf32>"
    pre = "%bi, " if spec.batch else ""
    c0, c1 = e.c(0), e.c(1)
    masks: dict[int, str] = {}
    scale = epilogue.scale_op if epilogue is not None else None
    row_max = epilogue.row_max if epilogue is not None else None
    if row_max and spec.batch:
        raise ValueError("row maxima of a batched GEMM are not supported")
    rows_padded = -(-spec.m // t.vl) * t.vl
    rm_t = f"memref<{rows_padded}x{t.vl}xf32>"

    def mask(lanes: int) -> str:
        if lanes not in masks:
            masks[lanes] = f"%mask{lanes}"
        return masks[lanes]

    def vload(ref: str, typ: str, lanes: int) -> str:
        if lanes == t.vl:
            return e.op(f"vector.load {ref} : {typ}, {vt}")
        return e.op(f"vector.maskedload {ref}, {mask(lanes)}, %zv : {typ}, "
                    f"vector<{t.vl}xi1>, {vt} into {vt}")

    def vstore(value: str, ref: str, typ: str, lanes: int) -> None:
        if lanes == t.vl:
            e.emit(f"vector.store {value}, {ref} : {typ}, {vt}")
        else:
            e.emit(f"vector.maskedstore {ref}, {mask(lanes)}, {value} : {typ}, "
                   f"vector<{t.vl}xi1>, {vt}")

    def a_ref(m: str, k: str) -> str:
        idx = f"{k}, {m}" if spec.trans_a else f"{m}, {k}"
        return f"%A[{pre}{idx}] : {spec.a_type}"

    bp_t = f"memref<{spec.k}x{t.nr}xf32>"

    def b_ref(k: str, col: str, off: int) -> tuple[str, str]:
        """(B's element reference, its type) for the vector at column `col` (offset `off`
        in the panel)."""
        if copy_b:
            return f"%Bp[{k}, {e.c(off)}]", bp_t
        return f"%B[{pre}{k}, {col}]", spec.b_type

    def copy_panel(n0: str, vecs: list[tuple[int, int]]) -> None:
        e.open_for("%kb", c0, e.c(spec.k), c1)
        for off, lanes in vecs:
            col = n0 if off == 0 else e.add(n0, e.c(off))
            v = vload(f"%B[{pre}%kb, {col}]", spec.b_type, lanes)
            e.emit(f"vector.store {v}, %Bp[%kb, {e.c(off)}] : {bp_t}, {vt}")
        e.close()

    def tile(m0: str, rows: int, n0: str, vecs: list[tuple[int, int]]) -> None:
        """C[m0:+rows, n0 + vector offsets] += A[m0:+rows, :] @ B[:, same columns]."""
        cols = [n0 if off == 0 else e.add(n0, e.c(off)) for off, _ in vecs]
        rows_at = [m0 if i == 0 else e.add(m0, e.c(i)) for i in range(rows)]
        init = [vload(f"%C[{pre}{r}, {c}]", spec.c_type, lanes) if epilogue is None else "%zv"
                for r in rows_at for c, (_, lanes) in zip(cols, vecs, strict=True)]
        ku = t.ku if spec.k % t.ku == 0 else 1
        res = e.fresh("r")
        types = ", ".join([vt] * len(init))
        iters = [f"%acc{i}" for i in range(len(init))]
        e.emit(f"{res}:{len(init)} = scf.for %k = {c0} to {e.c(spec.k)} step {e.c(ku)} "
               f"iter_args({', '.join(f'{a} = {v}' for a, v in zip(iters, init, strict=True))})"
               f" -> ({types}) {{")
        e.indent += 1
        cur = list(iters)
        for u in range(ku):
            k = e.add("%k", e.c(u)) if u else "%k"
            bs = [vload(*b_ref(k, c, off), lanes)
                  for c, (off, lanes) in zip(cols, vecs, strict=True)]
            for i, r in enumerate(rows_at):
                s = e.op(f"memref.load {a_ref(r, k)}", "a")
                sb = e.op(f"vector.broadcast {s} : f32 to {vt}", "a")
                for j, b in enumerate(bs):
                    at = i * len(vecs) + j
                    cur[at] = e.op(f"vector.fma {sb}, {b}, {cur[at]} : {vt}", "f")
        e.emit(f"scf.yield {', '.join(cur)} : {types}")
        e.close()
        for i, r in enumerate(rows_at):
            high = ""  # the row's maximum so far, one vector (row_max)
            for j, (c, (_, lanes)) in enumerate(zip(cols, vecs, strict=True)):
                value = f"{res}#{i * len(vecs) + j}"
                if scale:
                    value = e.op(f"{scale} {value}, %alpha : {vt}", "s")
                vstore(value, f"%C[{pre}{r}, {c}]", spec.c_type, lanes)
                if row_max:  # lanes past N hold zeros: -inf takes no part in the maximum
                    part = value if lanes == t.vl else \
                        e.op(f"arith.select {mask(lanes)}, {value}, %ninf : "
                             f"vector<{t.vl}xi1>, {vt}", "x")
                    high = e.op(f"{row_max} {high}, {part} : {vt}", "x") if high else part
            if row_max:
                old = e.op(f"vector.load %RM[{r}, {c0}] : {rm_t}, {vt}", "x")
                new = e.op(f"{row_max} {old}, {high} : {vt}", "x")
                e.emit(f"vector.store {new}, %RM[{r}, {c0}] : {rm_t}, {vt}")

    def panel(n0: str, vecs: list[tuple[int, int]]) -> None:
        if copy_b:
            copy_panel(n0, vecs)
        full_rows = spec.m // t.mr
        if full_rows:
            e.open_for("%ir", c0, e.c(full_rows), c1)
            tile(e.mul("%ir", e.c(t.mr)), t.mr, n0, vecs)
            e.close()
        if spec.m % t.mr:
            tile(e.c(full_rows * t.mr), spec.m % t.mr, n0, vecs)

    if spec.batch:
        e.open_for("%bi", c0, e.c(spec.batch), c1)
    full, rest = _chunks(spec.n, t)
    if full:
        e.open_for("%jr", c0, e.c(full), c1)
        panel(e.mul("%jr", e.c(t.nr)), [(j * t.vl, t.vl) for j in range(t.nr // t.vl)])
        e.close()
    if rest:
        panel(e.c(full * t.nr), rest)
    if spec.batch:
        e.close()
    if row_max:
        _reduce_rows(e, t.vl, spec.m, rm_t, mask, row_max)
    extra = f", %M: memref<{spec.m}xf32>" if row_max else ""
    head = [f"  func.func private @{name}(%A: {spec.a_type}, %B: {spec.b_type}, "
            f"%C: {spec.c_type}{extra}) {{",
            f"    %zv = arith.constant dense<0.0> : {vt}"]
    if row_max:  # every row's running maximum as one vector, from -inf
        head += [f"    %ninf = arith.constant dense<0xFF800000> : {vt}",
                 f"    %RM = memref.alloca() {{alignment = 64 : i64}} : {rm_t}"]
        z, one, end = e.c(0), e.c(1), e.c(rows_padded)
        rm_init = [f"    scf.for %ri = {z} to {end} step {one} {{",
                   f"      vector.store %ninf, %RM[%ri, {z}] : {rm_t}, {vt}", "    }"]
    head += [f"    {n} = arith.constant {v} : index" for v, n in sorted(e.consts.items())]
    if copy_b:
        head.append(f"    %Bp = memref.alloca() {{alignment = 64 : i64}} : {bp_t}")
    if scale:
        head.append(f"    %alpha = arith.constant dense<{epilogue.scale_literal}> : {vt}")
    head += [f"    {m} = vector.constant_mask [{lanes}] : vector<{t.vl}xi1>"
             for lanes, m in sorted(masks.items())]
    if row_max:
        head += rm_init
    return "\n".join(["module {", *head, *e.lines, "    return", "  }", "}"])


def butterfly(vl: int) -> tuple[list[list[int]], list[int]]:
    """Shuffle masks that reduce `vl` vectors (one row each) to one vector of their
    horizontal results in log2(vl) steps of (two shuffles, one max) per pair, and the
    final permutation putting row r in lane r. Step h pairs vectors x, y: in each block of
    2h lanes (one row's partials), lane w < h of the result takes x's lanes (w, w + h), lane
    w >= h y's; the blocks halve each step. Returns (per step: the `lo` mask then the `hi`
    mask, over concat(x, y)), final permutation)."""
    rows = [[r] * vl for r in range(vl)]
    masks: list[list[int]] = []
    h = vl // 2
    while h >= 1:
        lo, hi = [], []
        for q in range(vl):
            block, w = divmod(q, 2 * h)
            src, w = (0, w) if w < h else (vl, w - h)
            lo.append(src + block * 2 * h + w)
            hi.append(src + block * 2 * h + h + w)
        masks += [lo, hi]
        rows = [[(x + y)[i] for i in lo] for x, y in zip(rows[0::2], rows[1::2], strict=True)]
        h //= 2
    (last,) = rows
    return masks, [last.index(r) for r in range(vl)]


def _reduce_rows(e: _Emitter, vl: int, m: int, rm_t: str, mask: Callable[[int], str],
                 max_op: str) -> None:
    """%M[r] = the maximum (`max_op`) of %RM[r, :], `vl` rows at a time by `butterfly`
    shuffles."""
    vt = f"vector<{vl}xf32>"
    masks, final = butterfly(vl)
    for g in range(0, m, vl):
        vecs = [e.op(f"vector.load %RM[{e.c(g + r)}, {e.c(0)}] : {rm_t}, {vt}", "y")
                for r in range(vl)]
        step = 0
        while len(vecs) > 1:
            lo_mask, hi_mask = masks[2 * step], masks[2 * step + 1]
            nxt = []
            for x, y in zip(vecs[0::2], vecs[1::2], strict=True):
                lo = e.op(f"vector.shuffle {x}, {y} {lo_mask} : {vt}, {vt}", "y")
                hi = e.op(f"vector.shuffle {x}, {y} {hi_mask} : {vt}, {vt}", "y")
                nxt.append(e.op(f"{max_op} {lo}, {hi} : {vt}", "y"))
            vecs, step = nxt, step + 1
        out = e.op(f"vector.shuffle {vecs[0]}, {vecs[0]} {final} : {vt}, {vt}", "y")
        lanes = min(vl, m - g)
        ref, m_t = f"%M[{e.c(g)}]", f"memref<{m}xf32>"
        if lanes == vl:
            e.emit(f"vector.store {out}, {ref} : {m_t}, {vt}")
        else:
            e.emit(f"vector.maskedstore {ref}, {mask(lanes)}, {out} : {m_t}, "
                   f"vector<{vl}xi1>, {vt}")



def dot_fits(spec: GemmSpec) -> bool:
    """Whether `spec` suits the dot-product kernel: B as N x K (transposed: rows along K),
    A as M x K, a tiny output and a long reduction (a convolution's weight gradient: 8 x 9
    outputs over 25088 positions), where MR x NR tiles would be mostly padding."""
    return spec.trans_b and not spec.trans_a and spec.m * spec.n <= 512 and spec.k >= 256 \
        and min(spec.m, spec.n) < 16


#: Rows and columns of C per dot-product tile: 2 x 4 vector accumulators, 6 loads per 8 FMAs.
DOT_ROWS, DOT_COLS = 2, 4


def emit_dot_tile(e: _Emitter, spec: GemmSpec, vl: int, ms: list[str], ns: list[str],
                  pre: str, mask: str) -> None:
    """`C[m, n] += dot(A[m, :], B[n, :])` for every m of `ms` and n of `ns` (index values;
    B stored N x K, `pre` the batch index prefix or ""): len(ms) x len(ns) vector partial
    sums along K, the last K % VL lanes through masked loads (`mask`, a
    `vector.constant_mask` the caller defines), one horizontal sum per output. Shared by
    the dot-product kernel and the matrix-vector kernels (`_gemv_kernel.py`)."""
    vt = f"vector<{vl}xf32>"
    k_full = spec.k // vl * vl
    rows, cols = len(ms), len(ns)
    count = rows * cols

    def loads(k: str, masked: bool) -> list[str]:
        def load(ref: str, typ: str) -> str:
            if masked:
                return e.op(f"vector.maskedload {ref}, {mask}, %zv : {typ}, "
                            f"vector<{vl}xi1>, {vt} into {vt}")
            return e.op(f"vector.load {ref} : {typ}, {vt}")

        return [load(f"%A[{pre}{m}, {k}]", spec.a_type) for m in ms] + \
            [load(f"%B[{pre}{n}, {k}]", spec.b_type) for n in ns]

    def fmas(got: list[str], accs: list[str]) -> list[str]:
        return [e.op(f"vector.fma {got[i]}, {got[rows + j]}, {accs[i * cols + j]} : {vt}", "f")
                for i in range(rows) for j in range(cols)]

    accs = ["%zv"] * count
    if k_full:
        res = e.fresh("r")
        types = ", ".join([vt] * count)
        e.emit(f"{res}:{count} = scf.for %k = {e.c(0)} to {e.c(k_full)} step {e.c(vl)} "
               f"iter_args({', '.join(f'%acc{i} = %zv' for i in range(count))}) -> "
               f"({types}) {{")
        e.indent += 1
        out = fmas(loads("%k", False), [f"%acc{i}" for i in range(count)])
        e.emit(f"scf.yield {', '.join(out)} : {types}")
        e.close()
        accs = [f"{res}#{i}" for i in range(count)]
    if spec.k > k_full:
        accs = fmas(loads(e.c(k_full), True), accs)
    for i, m in enumerate(ms):
        for j, n in enumerate(ns):
            total = e.op(f"vector.reduction <add>, {accs[i * cols + j]} : {vt} into f32")
            old = e.op(f"memref.load %C[{pre}{m}, {n}] : {spec.c_type}")
            new = e.op(f"arith.addf {old}, {total} : f32")
            e.emit(f"memref.store {new}, %C[{pre}{m}, {n}] : {spec.c_type}")


def render_dot_gemm(spec: GemmSpec, tiles: Tiles, name: str) -> str:
    """`@name(%A, %B, %C)`: `C += A @ B^T` for B stored N x K, as RM x RN vector dot
    products along K (whole vectors, then one masked load of the last K % VL), reduced
    horizontally once per output; per batch index when `spec.batch` > 0."""
    t, e = tiles, _Emitter()
    vt = f"vector<{t.vl}xf32>"
    pre = "%bi, " if spec.batch else ""
    c0, c1 = e.c(0), e.c(1)
    k_full = spec.k // t.vl * t.vl
    rest = spec.k - k_full

    def tile(m0: str, rows: int, n0: str, cols: int) -> None:
        ms = [m0 if i == 0 else e.add(m0, e.c(i)) for i in range(rows)]
        ns = [n0 if j == 0 else e.add(n0, e.c(j)) for j in range(cols)]
        emit_dot_tile(e, spec, t.vl, ms, ns, pre, "%mask")

    def row_block(m0: str, rows: int) -> None:
        full = spec.n // DOT_COLS
        if full:
            e.open_for("%jd", c0, e.c(full), c1)
            tile(m0, rows, e.mul("%jd", e.c(DOT_COLS)), DOT_COLS)
            e.close()
        if spec.n % DOT_COLS:
            tile(m0, rows, e.c(full * DOT_COLS), spec.n % DOT_COLS)

    if spec.batch:
        e.open_for("%bi", c0, e.c(spec.batch), c1)
    full_rows = spec.m // DOT_ROWS
    if full_rows:
        e.open_for("%id", c0, e.c(full_rows), c1)
        row_block(e.mul("%id", e.c(DOT_ROWS)), DOT_ROWS)
        e.close()
    if spec.m % DOT_ROWS:
        row_block(e.c(full_rows * DOT_ROWS), spec.m % DOT_ROWS)
    if spec.batch:
        e.close()
    head = [f"  func.func private @{name}(%A: {spec.a_type}, %B: {spec.b_type}, "
            f"%C: {spec.c_type}) {{",
            f"    %zv = arith.constant dense<0.0> : {vt}"]
    if rest:
        head.append(f"    %mask = vector.constant_mask [{rest}] : vector<{t.vl}xi1>")
    head += [f"    {n} = arith.constant {v} : index" for v, n in sorted(e.consts.items())]
    return "\n".join(["module {", *head, *e.lines, "    return", "  }", "}"])
