"""The shared-memory tiled f32 GEMM kernel of `accel-nvgpu-register-tile-matmul`.

The classic SGEMM blocking: a block of 256 threads owns a BM x BN tile of C; for each
BK-slice of K the block copies the A and B slices into shared memory (A transposed, so a
thread's TM rows are contiguous), waits at a barrier, and each thread accumulates its
TM x TN sub-tile in registers from shared memory: TM + TN shared loads per TM * TN FMAs,
and every A/B element is read from DRAM once per block instead of once per thread row.

    grid (N / BN, M / BM, batch), 256 threads: thread t owns rows (t / (BN/TN)) * TM + r
    and columns (t % (BN/TN)) * TN + c of the tile; C's values start the sums (C += A @ B).

`CONFIGS` are tried in order; a matmul none fits keeps the 4x4 register tiles.
"""

from __future__ import annotations

from dataclasses import dataclass

THREADS = 256


@dataclass(frozen=True)
class Config:
    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    #: Padding of the transposed A slice's rows (in floats): keeps rows 16-byte aligned
    #: and moves the transposing stores off a single bank.
    pad: int = 4

    def fits(self, m: int, n: int, k: int) -> bool:
        return m % self.bm == 0 and n % self.bn == 0 and k % self.bk == 0


#: 128 x 128 tiles of 8 x 8 per thread (the usual SGEMM shape), then 64 x 64 of 4 x 4.
CONFIGS = (Config(128, 128, 8, 8, 8), Config(64, 64, 16, 4, 4))


def config_for(m: int, n: int, k: int) -> Config | None:
    return next((c for c in CONFIGS if c.fits(m, n, k)), None)


def render(name: str, cfg: Config, batch: int, m: int, n: int, k: int, batched: bool) -> str:
    """A private function `@name(%A, %B, %C)` doing C += A @ B with one gpu.launch."""
    assert (cfg.bm // cfg.tm) * (cfg.bn // cfg.tn) == THREADS
    pre = f"{batch}x" if batched else ""
    ta, tb, tc = (f"memref<{pre}{m}x{k}xf32>", f"memref<{pre}{k}x{n}xf32>",
                  f"memref<{pre}{m}x{n}xf32>")
    at = "%bz, " if batched else ""
    wg = "#gpu.address_space<workgroup>"
    sa = f"memref<{cfg.bk}x{cfg.bm + cfg.pad}xf32, {wg}>"
    sb = f"memref<{cfg.bk}x{cfg.bn}xf32, {wg}>"
    rc = [(r, c) for r in range(cfg.tm) for c in range(cfg.tn)]
    acc_types = ", ".join(["f32"] * len(rc))
    lines = [
        f"func.func private @{name}(%A: {ta}, %B: {tb}, %C: {tc}) {{",
        "  %c1 = arith.constant 1 : index",
        f"  %gx = arith.constant {n // cfg.bn} : index",
        f"  %gy = arith.constant {m // cfg.bm} : index",
        f"  %gz = arith.constant {batch} : index",
        f"  %nt = arith.constant {THREADS} : index",
        "  gpu.launch blocks(%bx, %by, %bz) in (%sgx = %gx, %sgy = %gy, %sgz = %gz)",
        "      threads(%tx, %ty, %tz) in (%sx = %nt, %sy = %c1, %sz = %c1)",
        f"      workgroup(%As : {sa}, %Bs : {sb}) {{",
        "    %c0 = arith.constant 0 : index",
        "    %one = arith.constant 1 : index",
        f"    %BM = arith.constant {cfg.bm} : index",
        f"    %BN = arith.constant {cfg.bn} : index",
        f"    %BK = arith.constant {cfg.bk} : index",
        f"    %K = arith.constant {k} : index",
        f"    %TM = arith.constant {cfg.tm} : index",
        f"    %TN = arith.constant {cfg.tn} : index",
        f"    %cols = arith.constant {cfg.bn // cfg.tn} : index",
        f"    %NT = arith.constant {THREADS} : index",
        "    %trow = arith.divui %tx, %cols : index",
        "    %tcol = arith.remui %tx, %cols : index",
        "    %m0 = arith.muli %by, %BM : index",
        "    %n0 = arith.muli %bx, %BN : index",
        "    %lr = arith.muli %trow, %TM : index",
        "    %lc = arith.muli %tcol, %TN : index",
        "    %gr = arith.addi %m0, %lr : index",
        "    %gc = arith.addi %n0, %lc : index",
    ]
    for t in range(max(cfg.tm, cfg.tn)):
        lines.append(f"    %o{t} = arith.constant {t} : index")
    for r in range(cfg.tm):
        lines += [f"    %row{r} = arith.addi %gr, %o{r} : index",
                  f"    %srow{r} = arith.addi %lr, %o{r} : index"]
    for c in range(cfg.tn):
        lines += [f"    %col{c} = arith.addi %gc, %o{c} : index",
                  f"    %scol{c} = arith.addi %lc, %o{c} : index"]
    lines += [f"    %i{r}_{c} = memref.load %C[{at}%row{r}, %col{c}] : {tc}" for r, c in rc]
    inits = ", ".join(f"%s{r}_{c} = %i{r}_{c}" for r, c in rc)
    lines.append(f"    %res:{len(rc)} = scf.for %k0 = %c0 to %K step %BK iter_args({inits})"
                 f" -> ({acc_types}) {{")
    # The block copies the A slice (BM x BK, stored transposed) and the B slice (BK x BN).
    for what, count, src, dst, typ in (
            ("a", cfg.bm * cfg.bk // THREADS, "%A", "%As", ta),
            ("b", cfg.bk * cfg.bn // THREADS, "%B", "%Bs", tb)):
        for n_ in range(count):
            v = f"%{what}{n_}"
            lines += [f"      {v}_off = arith.constant {n_ * THREADS} : index",
                      f"      {v}_e = arith.addi %tx, {v}_off : index",
                      f"      {v}_r = arith.divui {v}_e, %{'BK' if what == 'a' else 'BN'} : index",
                      f"      {v}_c = arith.remui {v}_e, %{'BK' if what == 'a' else 'BN'} : index"]
            if what == "a":  # A[m0 + r, k0 + c] -> As[c, r]
                lines += [f"      {v}_gr = arith.addi %m0, {v}_r : index",
                          f"      {v}_gc = arith.addi %k0, {v}_c : index",
                          f"      {v}_x = memref.load {src}[{at}{v}_gr, {v}_gc] : {typ}",
                          f"      memref.store {v}_x, {dst}[{v}_c, {v}_r] : {sa}"]
            else:  # B[k0 + r, n0 + c] -> Bs[r, c]
                lines += [f"      {v}_gr = arith.addi %k0, {v}_r : index",
                          f"      {v}_gc = arith.addi %n0, {v}_c : index",
                          f"      {v}_x = memref.load {src}[{at}{v}_gr, {v}_gc] : {typ}",
                          f"      memref.store {v}_x, {dst}[{v}_r, {v}_c] : {sb}"]
    lines.append("      gpu.barrier")
    sums = ", ".join(f"%t{r}_{c} = %s{r}_{c}" for r, c in rc)
    lines.append(f"      %in:{len(rc)} = scf.for %kk = %c0 to %BK step %one iter_args({sums})"
                 f" -> ({acc_types}) {{")
    lines += [f"        %a{r} = memref.load %As[%kk, %srow{r}] : {sa}" for r in range(cfg.tm)]
    lines += [f"        %b{c} = memref.load %Bs[%kk, %scol{c}] : {sb}" for c in range(cfg.tn)]
    for r, c in rc:
        lines += [f"        %p{r}_{c} = arith.mulf %a{r}, %b{c} : f32",
                  f"        %n{r}_{c} = arith.addf %t{r}_{c}, %p{r}_{c} : f32"]
    lines.append("        scf.yield " + ", ".join(f"%n{r}_{c}" for r, c in rc) +
                 f" : {acc_types}")
    lines += ["      }", "      gpu.barrier"]
    lines.append("      scf.yield " + ", ".join(f"%in#{i}" for i in range(len(rc))) +
                 f" : {acc_types}")
    lines.append("    }")
    lines += [f"    memref.store %res#{i}, %C[{at}%row{r}, %col{c}] : {tc}"
              for i, (r, c) in enumerate(rc)]
    lines += ["    gpu.terminator", "  }", "  return", "}"]
    return "\n".join(lines)
