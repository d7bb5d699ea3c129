"""The tensor-core (WMMA) flash-attention kernel of `accel-nvgpu-flash-attention`.

For f16 models (V an upcast of f16, sizes fitting the tiles): Q, K^T and V are rounded to
f16 once (as the GPU's own SDPA computes), and a block of 4 warps owns 64 query rows, each
warp 16 rows, for every tile of 32 keys:

    S (16 x 32, f32)  = Q_w (16 x d) @ K^T (d x 32)           WMMA from global memory
    per lane (2 per row, 16 scores each): the chain's score ops, row max via shared memory,
      m' = max(m, rowmax), alpha = e^(m - m'), P = e^(S - m') (f16), rescale its O half
    O_w (16 x dv, f32) += P (16 x 32) @ V (32 x dv)           WMMA, O kept in shared memory
    out = O / l

S, P, O, and the row maxima and sums live in shared memory (the fragments' element
layout is the hardware's secret, so the per-row softmax works on stored tiles); barriers
separate the phases. Extra memory: the f16 copies of Q, K^T, V (O(S * d)).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ROWS = 64        # query rows per block (4 warps x 16)
KEYS = 32        # keys per tile
THREADS = 128


#: Static shared memory a block may use without the opt-in for more (CUDA: 48 KiB).
SHARED_LIMIT = 48 * 1024


def shared_bytes(dv: int) -> int:
    """Shared memory of one block: S (f32), P (f16), O (f32) tiles, row maxima and sums."""
    return ROWS * ((KEYS + 8) * 4 + (KEYS + 16) * 2 + (dv + 8) * 4 + 2 * 2 * 4)


def fits(m: int, n: int, d: int, dv: int) -> bool:
    return m % ROWS == 0 and n % KEYS == 0 and d % 16 == 0 and dv % 16 == 0 and \
        shared_bytes(dv) <= SHARED_LIMIT


def _cast(name: str, value: str, shape: list[int], src: str, dst: str, op: str) -> list[str]:
    """Lines making %name = `value` cast elementwise (`arith.<op>`) from src to dst."""
    rank = len(shape)
    dims = ", ".join(f"d{i}" for i in range(rank))
    identity = f"affine_map<({dims}) -> ({dims})>"
    tin = "tensor<" + "".join(f"{x}x" for x in shape) + f"{src}>"
    tout = "tensor<" + "".join(f"{x}x" for x in shape) + f"{dst}>"
    par = ", ".join(['"parallel"'] * rank)
    return [f"  %{name}_e = tensor.empty() : {tout}",
            f"  %{name} = linalg.generic {{indexing_maps = [{identity}, {identity}], "
            f"iterator_types = [{par}]}} ins({value} : {tin}) outs(%{name}_e : {tout}) {{",
            f"  ^bb0(%x: {src}, %o: {dst}):", f"    %y = arith.{op} %x : {src} to {dst}",
            f"    linalg.yield %y : {dst}", f"  }} -> {tout}"]


def render(s: Any, score_lines: Callable[[str], tuple[list[str], str]], index_lines: list[str],
           extra_args: str, extra_buffers: str, guard: bool) -> str:
    """The kernel as a private function on tensors; `s` the pass's _Shape, `score_lines`
    the chain's score ops on a loaded score `%dot` (at `%row`, `%j`)."""
    pre = [s.batch] if s.batched else []
    b = "%by, " if s.batched else ""
    f32 = {"q": [*pre, s.m, s.d], "kt": [*pre, s.d, s.n], "v": [*pre, s.n, s.dv],
           "o": [*pre, s.m, s.dv]}

    def t(kind: str, shape_of: str, elt: str) -> str:
        return f"{kind}<" + "".join(f"{x}x" for x in f32[shape_of]) + f"{elt}>"

    wg = "#gpu.address_space<workgroup>"
    ss, ps = f"memref<{ROWS}x{KEYS + 8}xf32, {wg}>", f"memref<{ROWS}x{KEYS + 16}xf16, {wg}>"
    os_, st = f"memref<{ROWS}x{s.dv + 8}xf32, {wg}>", f"memref<{ROWS}x2xf32, {wg}>"
    fa, fb = '!gpu.mma_matrix<16x16xf16, "AOp">', '!gpu.mma_matrix<16x16xf16, "BOp">'
    fc = '!gpu.mma_matrix<16x16xf32, "COp">'
    mq, mk, mv = t("memref", "q", "f16"), t("memref", "kt", "f16"), t("memref", "v", "f16")
    mo = t("memref", "o", "f32")
    half = s.dv // 2
    lines = [f"func.func private @flash(%q: {t('tensor', 'q', 'f32')}, %kt: "
             f"{t('tensor', 'kt', 'f32')}, %v: {t('tensor', 'v', 'f32')}{extra_args}) -> "
             f"{t('tensor', 'o', 'f32')} {{", extra_buffers]
    for name, kind in (("q16", "q"), ("k16", "kt"), ("v16", "v")):
        source = {"q": "%q", "kt": "%kt", "v": "%v"}[kind]
        lines += _cast(name, source, f32[kind], "f32", "f16", "truncf")
    lines += [
        f"  %Q = bufferization.to_buffer %q16 read_only : {t('tensor', 'q', 'f16')} to {mq}",
        f"  %K = bufferization.to_buffer %k16 read_only : {t('tensor', 'kt', 'f16')} to {mk}",
        f"  %V = bufferization.to_buffer %v16 read_only : {t('tensor', 'v', 'f16')} to {mv}",
        f"  %O = memref.alloc() : {mo}",
        "  %one_ = arith.constant 1 : index",
        f"  %gx = arith.constant {s.m // ROWS} : index",
        f"  %gy = arith.constant {s.batch} : index",
        f"  %nt = arith.constant {THREADS} : index",
        "  gpu.launch blocks(%bx, %by, %bz) in (%sgx = %gx, %sgy = %gy, %sgz = %one_)",
        "      threads(%tx, %ty, %tz) in (%sx = %nt, %sy = %one_, %sz = %one_)",
        f"      workgroup(%Ss : {ss}, %Ps : {ps}, %Os : {os_}, %Mx : {st}, %Sx : {st}) {{",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        "    %c2 = arith.constant 2 : index",
        "    %c16 = arith.constant 16 : index",
        "    %c32 = arith.constant 32 : index",
        f"    %cROWS = arith.constant {ROWS} : index",
        f"    %cN = arith.constant {s.n} : index",
        f"    %chalf = arith.constant {half} : index",
        "    %zero = arith.constant 0.0 : f32",
        "    %ninf = arith.constant 0xFF800000 : f32",
        *[f"    {x}" for x in index_lines],
        "    %warp = arith.divui %tx, %c32 : index",
        "    %lane = arith.remui %tx, %c32 : index",
        "    %wrow = arith.muli %warp, %c16 : index",
        "    %b0 = arith.muli %bx, %cROWS : index",
        "    %row0 = arith.addi %b0, %wrow : index",
        "    %r = arith.divui %lane, %c2 : index",
        "    %h = arith.remui %lane, %c2 : index",
        "    %lrow = arith.addi %wrow, %r : index",
        "    %row = arith.addi %row0, %r : index",
        "    %cb = arith.muli %h, %c16 : index",
        "    %ob = arith.muli %h, %chalf : index",
        "    %oe = arith.addi %ob, %chalf : index",
        "    scf.for %c = %ob to %oe step %c1 {",
        f"      memref.store %zero, %Os[%lrow, %c] : {os_}",
        "    }",
    ]
    for c in range(s.d // 16):
        lines += [f"    %dq{c} = arith.constant {16 * c} : index",
                  f"    %qa{c} = gpu.subgroup_mma_load_matrix %Q[{b}%row0, %dq{c}] "
                  f"{{leadDimension = {s.d} : index}} : {mq} -> {fa}"]
    lines += ["    gpu.barrier",
              "    %fin:2 = scf.for %j0 = %c0 to %cN step %c32 iter_args(%m = %ninf, %l = %zero)"
              " -> (f32, f32) {"]
    def chain(name: str, acc: str, terms: list[tuple[str, str]]) -> str:
        """Lines adding A x B of each (A fragment, B memref access) to `acc`; the sum."""
        for i, (a, b_ref) in enumerate(terms):
            lines.extend([
                f"      %{name}b{i} = gpu.subgroup_mma_load_matrix {b_ref} -> {fb}",
                f"      %{name}_{i} = gpu.subgroup_mma_compute {a}, %{name}b{i}, {acc} : "
                f"{fa}, {fb} -> {fc}"])
            acc = f"%{name}_{i}"
        return acc

    # S = Q K^T, two 16-key fragments, into the warp's rows of Ss.
    for n in range(2):
        lines += [f"      %kn{n} = arith.constant {16 * n} : index",
                  f"      %jn{n} = arith.addi %j0, %kn{n} : index",
                  f"      %s{n}_init = gpu.subgroup_mma_constant_matrix %zero : {fc}"]
        acc = chain(f"s{n}", f"%s{n}_init", [
            (f"%qa{c}", f"%K[{b}%dq{c}, %jn{n}] {{leadDimension = {s.n} : index}} : {mk}")
            for c in range(s.d // 16)])
        lines.append(f"      gpu.subgroup_mma_store_matrix {acc}, %Ss[%wrow, %kn{n}] "
                     f"{{leadDimension = {KEYS + 8} : index}} : {fc}, {ss}")
    steps, value = score_lines("%dot")
    lines += [
        "      gpu.barrier",
        # Each lane: 16 scores of its row, the chain's score ops, their max.
        "      %lmax = scf.for %cc = %c0 to %c16 step %c1 iter_args(%mx = %ninf) -> (f32) {",
        "        %col = arith.addi %cb, %cc : index",
        "        %j = arith.addi %j0, %col : index",
        f"        %dot = memref.load %Ss[%lrow, %col] : {ss}",
        *[f"        {x}" for x in steps],
        f"        memref.store {value}, %Ss[%lrow, %col] : {ss}",
        f"        %mx2 = arith.maximumf %mx, {value} : f32",
        "        scf.yield %mx2 : f32",
        "      }",
        f"      memref.store %lmax, %Mx[%lrow, %h] : {st}",
        "      gpu.barrier",
        f"      %ma = memref.load %Mx[%lrow, %c0] : {st}",
        f"      %mb = memref.load %Mx[%lrow, %c1] : {st}",
        "      %tmax = arith.maximumf %ma, %mb : f32",
        "      %mnew = arith.maximumf %m, %tmax : f32",
        "      %isinf = arith.cmpf oeq, %mnew, %ninf : f32",
        "      %msafe = arith.select %isinf, %zero, %mnew : f32",
        "      %dm = arith.subf %m, %msafe : f32",
        "      %alpha = math.exp %dm : f32",
        "      %lsum = scf.for %cc = %c0 to %c16 step %c1 iter_args(%ls = %zero) -> (f32) {",
        "        %col = arith.addi %cb, %cc : index",
        f"        %sj = memref.load %Ss[%lrow, %col] : {ss}",
        "        %ds = arith.subf %sj, %msafe : f32",
        "        %p = math.exp %ds : f32",
        "        %p16 = arith.truncf %p : f32 to f16",
        f"        memref.store %p16, %Ps[%lrow, %col] : {ps}",
        "        %ls2 = arith.addf %ls, %p : f32",
        "        scf.yield %ls2 : f32",
        "      }",
        f"      memref.store %lsum, %Sx[%lrow, %h] : {st}",
        "      scf.for %c = %ob to %oe step %c1 {",
        f"        %o = memref.load %Os[%lrow, %c] : {os_}",
        "        %o2 = arith.mulf %o, %alpha : f32",
        f"        memref.store %o2, %Os[%lrow, %c] : {os_}",
        "      }",
        "      gpu.barrier",
        f"      %sa = memref.load %Sx[%lrow, %c0] : {st}",
        f"      %sb = memref.load %Sx[%lrow, %c1] : {st}",
        "      %sab = arith.addf %sa, %sb : f32",
        "      %la = arith.mulf %l, %alpha : f32",
        "      %lnew = arith.addf %la, %sab : f32",
    ]
    # O += P V, dv / 16 output fragments over the tile's two 16-key halves.
    lines += [f"      %pa{kb} = gpu.subgroup_mma_load_matrix %Ps[%wrow, %kn{kb}] "
              f"{{leadDimension = {KEYS + 16} : index}} : {ps} -> {fa}" for kb in range(2)]
    for n in range(s.dv // 16):
        lines += [f"      %dn{n} = arith.constant {16 * n} : index",
                  f"      %o{n}_in = gpu.subgroup_mma_load_matrix %Os[%wrow, %dn{n}] "
                  f"{{leadDimension = {s.dv + 8} : index}} : {os_} -> {fc}"]
        acc = chain(f"o{n}", f"%o{n}_in", [
            (f"%pa{kb}", f"%V[{b}%jn{kb}, %dn{n}] {{leadDimension = {s.dv} : index}} : {mv}")
            for kb in range(2)])
        lines.append(f"      gpu.subgroup_mma_store_matrix {acc}, %Os[%wrow, %dn{n}] "
                     f"{{leadDimension = {s.dv + 8} : index}} : {fc}, {os_}")
    # SDPA's guard: a row whose scores were all -inf is 0 (eager's naive softmax: NaN).
    finish = ["%allinf = arith.cmpf oeq, %fin#0, %ninf : f32",
              "%safe = arith.select %allinf, %zero, %o : f32"] if guard else []
    result = "%safe" if guard else "%o"
    lines += [
        "      gpu.barrier",
        "      scf.yield %mnew, %lnew : f32, f32",
        "    }",
        "    scf.for %c = %ob to %oe step %c1 {",
        f"      %acc = memref.load %Os[%lrow, %c] : {os_}",
        "      %o = arith.divf %acc, %fin#1 : f32",
        *[f"      {x}" for x in finish],
        f"      memref.store {result}, %O[{b}%row, %c] : {mo}",
        "    }",
        "    gpu.terminator",
        "  }",
        f"  %out = bufferization.to_tensor %O restrict writable : {mo} to "
        f"{t('tensor', 'o', 'f32')}",
        f"  return %out : {t('tensor', 'o', 'f32')}",
        "}"]
    return "\n".join(lines)
