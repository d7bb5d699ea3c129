"""Passes that rewrite ops while walking the IR never touch freed ops.

A pass that listed every op and rewrote the contractions on the way went on to the erased
ops' bodies: their handles stay valid in the bindings while the memory behind them is
freed. That was a flaky segfault (`accel-outline-contractions` in an nvgpu compile of a
`make check` run). Under glibc's MALLOC_PERTURB_ (its thread cache off) freed memory is
overwritten at once, so such a use-after-free crashes on every run (every pass below
did before its fix): these tests run accel-opt that way. (The same pattern is what a
`make check-memory` catches anywhere: docs/passes.md.)
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import BIN

#: glibc overwrites freed memory at once, and without its per-thread cache (which keeps
#: small chunks' first bytes as links) all of it.
POISON = {"MALLOC_PERTURB_": "165", "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}
#: Contractions in a chain: each rewrite frees an op whose body the old walk visited next.
CHAIN = 40


def _chain(upcast: bool) -> str:
    """CHAIN matmuls in a row; with `upcast`, each reads f16 operands through extf generics
    (what `accel-fold-matmul-upcasts` rewrites) and its result is truncated for the next."""
    t, h = "tensor<8x8xf32>", "tensor<8x8xf16>"
    arg = h if upcast else t
    lines = [f"func.func @f(%a: {arg}, %b: {arg}) -> {t} {{",
             "  %c0 = arith.constant 0.0 : f32", f"  %e = tensor.empty() : {t}",
             f"  %z = linalg.fill ins(%c0 : f32) outs(%e : {t}) -> {t}"]
    ident = "affine_map<(i, j) -> (i, j)>"
    prev = "%a"
    for i in range(CHAIN):
        ins = f"{prev}, %b : {t}, {t}"
        if upcast:
            for name, src in ((f"%x{i}", prev), (f"%y{i}", "%b")):
                lines += [
                    f"  {name} = linalg.generic {{indexing_maps = [{ident}, {ident}], "
                    f'iterator_types = ["parallel", "parallel"]}} ins({src} : {h}) '
                    f"outs(%e : {t}) {{",
                    "  ^bb0(%in: f16, %out: f32):",
                    "    %v = arith.extf %in : f16 to f32",
                    "    linalg.yield %v : f32",
                    f"  }} -> {t}"]
            ins = f"%x{i}, %y{i} : {t}, {t}"
        lines.append(f"  %m{i} = linalg.matmul ins({ins}) outs(%z : {t}) -> {t}")
        prev = f"%m{i}"
        if upcast:
            lines.append(f"  %n{i} = arith.truncf %m{i} : {t} to {h}")
            prev = f"%n{i}"
    lines += [f"  return %m{CHAIN - 1} : {t}", "}"]
    return "\n".join(lines) + "\n"


def _nonaffine_chain() -> str:
    """CHAIN linalg generics in an scf.for on views whose size comes from the loop variable
    (what `accel-outline-nonaffine-linalg` moves into functions)."""
    view = "memref<?x4xf32, strided<[4, 1], offset: ?>>"
    ident = "affine_map<(d0, d1) -> (d0, d1)>"
    lines = ["func.func @f(%m: memref<4x4xf32>, %o: memref<4x4xf32>, %k: f32) {",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             "  %c3 = arith.constant 3 : index", "  scf.for %i = %c0 to %c3 step %c1 {",
             "    %n = arith.subi %c3, %i : index",
             f"    %v = memref.subview %m[%i, 0] [%n, 4] [1, 1] : memref<4x4xf32> to {view}",
             f"    %w = memref.subview %o[%i, 0] [%n, 4] [1, 1] : memref<4x4xf32> to {view}"]
    for _ in range(CHAIN):
        lines += [f"    linalg.generic {{indexing_maps = [{ident}, {ident}], "
                  f'iterator_types = ["parallel", "parallel"]}} ins(%v : {view}) '
                  f"outs(%w : {view}) {{",
                  "    ^bb0(%x: f32, %y: f32):", "      %s = arith.addf %x, %k : f32",
                  "      linalg.yield %s : f32", "    }"]
    lines += ["  }", "  return", "}"]
    return "\n".join(lines) + "\n"


def _run_poisoned(tmp_path: Path, pass_: str, text: str) -> str:
    path = tmp_path / "input.mlir"
    path.write_text(text)
    env = {**os.environ, **POISON}
    result = subprocess.run([str(BIN / "accel-opt"), f"--{pass_}", str(path)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    return result.stdout


def test_outlining_nonaffine_linalg_survives_freed_memory_poisoning(tmp_path: Path) -> None:
    out = _run_poisoned(tmp_path, "accel-outline-nonaffine-linalg", _nonaffine_chain())
    assert out.count("func.call @f_linalg") == CHAIN
    assert out.count("func.func private @f_linalg") == CHAIN


@pytest.mark.parametrize("pass_, upcast, expect", [
    ("accel-outline-contractions", False, "func.func private @__accel_contraction_"),
    ("accel-matmul-precision", False, "arith.truncf"),
    ("accel-fold-matmul-upcasts", True, "tensor<8x8xf16>, tensor<8x8xf16>) outs("),
])
def test_contraction_rewrites_survive_freed_memory_poisoning(
        tmp_path: Path, pass_: str, upcast: bool, expect: str) -> None:
    out = _run_poisoned(tmp_path, pass_, _chain(upcast))
    assert "linalg.matmul" in out or "__accel_contraction_" in out
    if pass_ == "accel-fold-matmul-upcasts":
        # Every matmul now reads the f16 tensors; the extf generics are gone.
        assert out.count("arith.extf") == 0, out[:2000]
        assert out.count(expect) == CHAIN
    elif pass_ == "accel-outline-contractions":
        assert out.count(expect) == CHAIN
    else:
        assert out.count(expect) >= CHAIN  # each f32 matmul's result rounded back
