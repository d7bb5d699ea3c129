"""The shared-memory blocked WMMA kernel of `accel-nvgpu-tensor-core-matmul`.

A block of 4 warps owns a 64 x 64 tile of C, each warp a 32 x 32 quarter (2 x 2 WMMA
fragments of 16 x 16). For each 32-wide slice of K the block copies the A slice (64 x 32)
and the B slice (32 x 64) into shared memory, waits at a barrier, and every warp runs its
2 x 2 x (32 / k) products from there: each A/B element comes from DRAM once per block
instead of once per warp tile (4x less traffic than the per-warp kernel), and WMMA loads
from shared memory are cheap.

WMMA pointers must be 256-bit aligned: shared rows are padded to multiples of 32 bytes, and
for int8 (16-byte k-steps) each 16-column chunk of a row is spread over 32 bytes.
"""

from __future__ import annotations

from typing import Any

BM = BN = 64
BK = 32
WARPS = 4
THREADS = 32 * WARPS
#: Bytes per element of each operand type.
_BYTES = {"f16": 2, "f32": 4, "i8": 1}


def fits(m: int, n: int, k: int) -> bool:
    return m % BM == 0 and n % BN == 0 and k % BK == 0


def _layout(operand: str, cols: int) -> tuple[int, int]:
    """(spread, padded row length in elements) of a shared slice with `cols` columns: 16-
    column chunks start 32-byte aligned, rows are multiples of 32 bytes plus a 32-byte pad
    (which moves consecutive rows to other banks)."""
    size = _BYTES[operand]
    spread = 2 if 16 * size < 32 else 1
    return spread, cols * spread + 32 // size


def launch(s: Any, batched: bool, a: str, b: str, out: str, out_type: str, lead: int) -> str:
    """The gpu.launch text of one matmul (`s`: the pass's Spec) writing `out` (`%C` or the
    temporary `%T`) whose row length is `lead`; `%A`, `%B` as in the helper."""
    wg = "#gpu.address_space<workgroup>"
    spread_a, row_a = _layout(s.operand, BK)
    spread_b, row_b = _layout(s.operand, BN)
    sa = f"memref<{BM}x{row_a}x{s.operand}, {wg}>"
    sb = f"memref<{BK}x{row_b}x{s.operand}, {wg}>"
    at = "%bz, " if batched else ""
    fa = f'!gpu.mma_matrix<16x{s.ktile}x{s.fragment}, "AOp">'
    fb = f'!gpu.mma_matrix<{s.ktile}x16x{s.fragment}, "BOp">'
    fc = f'!gpu.mma_matrix<16x16x{s.acc}, "COp">'
    frags = [(i, j) for i in range(2) for j in range(2)]
    types = ", ".join([fc] * 4)
    zero = "0.0" if s.acc.startswith("f") else "0"

    def spread_col(col: str, spread: int, name: str) -> list[str]:
        """Lines making %name the shared column of logical column `col`."""
        if spread == 1:
            return [f"      %{name} = arith.addi {col}, %c0 : index"]
        return [f"      %{name}_q = arith.divui {col}, %c16 : index",
                f"      %{name}_r = arith.remui {col}, %c16 : index",
                f"      %{name}_b = arith.muli %{name}_q, %c{16 * spread} : index",
                f"      %{name} = arith.addi %{name}_b, %{name}_r : index"]

    if s.rounds:
        init = [f"    %zero = arith.constant {zero} : {s.acc}",
                *[f"    %i{i}{j} = gpu.subgroup_mma_constant_matrix %zero : {fc}"
                  for i, j in frags]]
    else:
        init = [f"    %i{i}{j} = gpu.subgroup_mma_load_matrix {out}[{at}%r{i}, %q{j}] "
                f"{{leadDimension = {lead} : index}} : {out_type} -> {fc}" for i, j in frags]
    lines = [
        f"  %bgx = arith.constant {s.n // BN} : index",
        f"  %bgy = arith.constant {s.m // BM} : index",
        f"  %bgz = arith.constant {s.batch} : index",
        f"  %nt = arith.constant {THREADS} : index",
        "  gpu.launch blocks(%bx, %by, %bz) in (%sgx = %bgx, %sgy = %bgy, %sgz = %bgz)",
        "      threads(%tx, %ty, %tz) in (%sx = %nt, %sy = %c1, %sz = %c1)",
        f"      workgroup(%As : {sa}, %Bs : {sb}) {{",
        "    %c2 = arith.constant 2 : index",
        "    %c16 = arith.constant 16 : index",
        "    %c32 = arith.constant 32 : index",
        f"    %cBM = arith.constant {BM} : index",
        f"    %cBK = arith.constant {BK} : index",
        f"    %cK = arith.constant {s.k} : index",
        f"    %ck = arith.constant {s.ktile} : index",
        f"    %nthreads = arith.constant {THREADS} : index",
        f"    %slice_a = arith.constant {BM * BK} : index",
        f"    %slice_b = arith.constant {BK * BN} : index",
        "    %warp = arith.divui %tx, %c32 : index",
        "    %wr = arith.divui %warp, %c2 : index",
        "    %wc = arith.remui %warp, %c2 : index",
        "    %m0 = arith.muli %by, %cBM : index",
        "    %n0 = arith.muli %bx, %cBM : index",
        "    %lr0 = arith.muli %wr, %c32 : index",
        "    %lr1 = arith.addi %lr0, %c16 : index",
        "    %lq0 = arith.muli %wc, %c32 : index",
        "    %lq1 = arith.addi %lq0, %c16 : index",
        "    %r0 = arith.addi %m0, %lr0 : index",
        "    %r1 = arith.addi %m0, %lr1 : index",
        "    %q0 = arith.addi %n0, %lq0 : index",
        "    %q1 = arith.addi %n0, %lq1 : index",
        *init,
        f"    %acc:4 = scf.for %k0 = %c0 to %cK step %cBK iter_args(%s00 = %i00, %s01 = %i01, "
        f"%s10 = %i10, %s11 = %i11) -> ({types}) {{",
        # The block copies the A slice (64 x 32) and the B slice (32 x 64), one element per
        # thread per step, neighbouring threads on neighbouring columns.
        "      scf.for %e = %tx to %slice_a step %nthreads {",
        "        %ar = arith.divui %e, %cBK : index",
        "        %ac = arith.remui %e, %cBK : index",
        "        %agr = arith.addi %m0, %ar : index",
        "        %agc = arith.addi %k0, %ac : index",
        f"        %ax = memref.load %A[{at}%agr, %agc] : {a}",
        *["  " + x for x in spread_col("%ac", spread_a, "asc")],
        f"        memref.store %ax, %As[%ar, %asc] : {sa}",
        "      }",
        "      scf.for %e = %tx to %slice_b step %nthreads {",
        "        %br = arith.divui %e, %cBM : index",
        "        %bc = arith.remui %e, %cBM : index",
        "        %bgr = arith.addi %k0, %br : index",
        "        %bgc = arith.addi %n0, %bc : index",
        f"        %bx_ = memref.load %B[{at}%bgr, %bgc] : {b}",
        *["  " + x for x in spread_col("%bc", spread_b, "bsc")],
        f"        memref.store %bx_, %Bs[%br, %bsc] : {sb}",
        "      }",
        "      gpu.barrier",
        f"      %in:4 = scf.for %kk = %c0 to %cBK step %ck iter_args(%t00 = %s00, "
        f"%t01 = %s01, %t10 = %s10, %t11 = %s11) -> ({types}) {{",
        *spread_col("%kk", spread_a, "kka"),
        *spread_col("%lq0", spread_b, "lqs0"),
        *spread_col("%lq1", spread_b, "lqs1"),
        *[f"        %a{i} = gpu.subgroup_mma_load_matrix %As[%lr{i}, %kka] "
          f"{{leadDimension = {row_a} : index}} : {sa} -> {fa}" for i in range(2)],
        *[f"        %b{j} = gpu.subgroup_mma_load_matrix %Bs[%kk, %lqs{j}] "
          f"{{leadDimension = {row_b} : index}} : {sb} -> {fb}" for j in range(2)],
        *[f"        %d{i}{j} = gpu.subgroup_mma_compute %a{i}, %b{j}, %t{i}{j} : {fa}, {fb} "
          f"-> {fc}" for i, j in frags],
        f"        scf.yield %d00, %d01, %d10, %d11 : {types}",
        "      }",
        "      gpu.barrier",
        f"      scf.yield %in#0, %in#1, %in#2, %in#3 : {types}",
        "    }",
        *[f"    gpu.subgroup_mma_store_matrix %acc#{2 * i + j}, {out}[{at}%r{i}, %q{j}] "
          f"{{leadDimension = {lead} : index}} : {fc}, {out_type}" for i, j in frags],
        "    gpu.terminator",
        "  }",
    ]
    return "\n".join(lines)
