"""The GEMM kernel's cache blocks for the shapes CNNs give it (`passes/_gemm_kernel.py`).

- M within MC (a 1x1 conv's 64 or 128 filters): the packed B block is sized for L2 like
  the A block, not for L3 (`L2_B_BLOCK`);
- M a little past MC (256 filters, MC = 252): one M block, else equal blocks
  (`BALANCED_M_BLOCKS`, `_m_block`).

Each choice is checked in the rendered kernel (so the test fails when it is not taken)
and by calling compiled kernels against numpy (float64, rtol 1e-4), at 1 and 2 threads,
live and frozen through `accel.compile`.
"""

from __future__ import annotations

import re

import accel
import numpy as np
import pytest
from accel import phases
from accel.passes import _gemm_kernel as gk
from accel.passes._gemm_kernel import GemmSpec, Tiles, _m_block, render_gemm
from test_matmul_microkernel import _matmul, _with_pass

RTOL, ATOL = 1e-4, 1e-5
#: The AVX2 host's tiles (32 KB L1, 512 KB L2, 32 MB L3).
AVX2 = Tiles(vl=8, mr=6, nr=16, kc=256, mc=252, nc=4096)


def _spec(m: int, n: int, k: int) -> GemmSpec:
    return GemmSpec(m=m, n=n, k=k, a_type=f"memref<{m}x{k}xf32>",
                    b_type=f"memref<{k}x{n}xf32>", c_type=f"memref<{m}x{n}xf32>")


def _steps(text: str) -> tuple[int, int]:
    """(N block, M block) of a rendered kernel: the steps of its %jc and %ic loops."""
    consts = dict(re.findall(r"(%c\d+) = arith.constant (\d+) : index", text))
    jc = re.search(r"scf.for %jc = \S+ to \S+ step (%c\d+)", text)
    ic = re.search(r"scf.for %ic = \S+ to \S+ step (%c\d+)", text)
    assert jc and ic
    return int(consts[jc.group(1)]), int(consts[ic.group(1)])


@pytest.mark.parametrize("m,want", [(256, 258), (300, 300), (316, 162), (512, 174),
                                    (1024, 210), (2048, 228)])
def test_m_block(m, want):
    """One block up to a quarter past MC, else equal blocks of whole MR tiles."""
    mc = _m_block(m, AVX2)
    assert mc == want and mc % AVX2.mr == 0
    blocks = -(-m // mc)
    assert blocks * mc >= m and (blocks - 1) * mc < m


@pytest.mark.parametrize("m,n,k,blocks", [
    (64, 3136, 256, (240, 252)),  # ResNet-50's 256 -> 64 1x1 conv: B block in L2
    (128, 3136, 256, (240, 252)),
    (256, 3136, 64, (256, 258)),  # 256 filters: one M block of 258 rows, B block in L2
    (512, 784, 128, (4096, 174)),  # three equal M blocks; B is shared by them: L3 block
])
def test_rendered_blocks(monkeypatch, m, n, k, blocks):
    text = render_gemm(_spec(m, n, k), AVX2, "g", zero_start=True)
    assert _steps(text) == blocks
    monkeypatch.setattr(gk, "L2_B_BLOCK", False)
    monkeypatch.setattr(gk, "BALANCED_M_BLOCKS", False)
    assert _steps(render_gemm(_spec(m, n, k), AVX2, "g", zero_start=True)) == (4096, 252)


def test_prepacked_b_keeps_its_block():
    """A prepacked B (a frozen nn.Linear weight) is laid out in NC blocks: kept."""
    text = render_gemm(_spec(64, 3136, 256), AVX2, "g", zero_start=True, b_prepacked=True)
    assert _steps(text)[0] == 4096


@pytest.mark.parametrize("m,n,k", [
    (40, 300, 100),  # M within MC = 48: B blocks of 48 columns, the last one partial
    (55, 301, 70),  # 55 rows, 60 with the tiles: one M block a little past MC
    (130, 97, 150),  # three equal M blocks of 48
])
@pytest.mark.parametrize("count", [1, 2])
def test_small_blocks_match_numpy(monkeypatch, threads, m, n, k, count):
    """Small cache tiles force several blocks of each kind, with remainders."""
    _with_pass(monkeypatch, "kc=64 mc=48 nc=256 parallel-min-flops=0 direct=false")
    threads(count)
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    with phases.recording(keep_ir=True) as rec:
        compiled = accel.compile_mlir(_matmul(m, n, k), {"cache": False})
    ir = str(next(p.ir for p in rec.phases if p.name == "bufferize"))
    assert re.search(rf"call @accel_gemm_{m}x{n}x{k}_nn_\w+\(", ir)
    np.testing.assert_allclose(compiled.invoke("mm", a, b), a.astype(np.float64) @ b,
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("freeze", [False, True])
@pytest.mark.parametrize("count", [1, 2])
def test_pointwise_convs_match_eager(freeze, count):
    """1x1 convs as ResNet-50's bottlenecks have them (64 and 256 filters over 3136
    positions), with BatchNorm and ReLU after, through accel.compile."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(256, 64, 1, bias=False), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 256, 1, bias=False), torch.nn.BatchNorm2d(256)).eval()
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-1, 1)
                mod.running_var.uniform_(0.5, 2)
        x = torch.randn(1, 256, 56, 56)
        fn = accel.compile(model, (x,), options={"cache": False, "freeze_weights": freeze,
                                                 "num_threads": count})
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-4)


def test_row_major_b_packed_row_by_row(monkeypatch):
    """A row-major B is packed PACK_B_GROUP panels at a time, row by row (contiguous reads
    along N); a transposed B (nn.Linear's N x K weight) keeps its 8 x 8 block packing."""
    text = render_gemm(_spec(64, 3136, 256), AVX2, "g", zero_start=True)
    assert re.search(rf"scf.for %jg = \S+ to \S+ step %c{gk.PACK_B_GROUP} ", text)
    spec_t = GemmSpec(m=64, n=300, k=256, a_type="memref<64x256xf32>",
                      b_type="memref<300x256xf32>", c_type="memref<64x300xf32>",
                      trans_b=True)
    assert "%jg" not in render_gemm(spec_t, AVX2, "g", zero_start=True)
    monkeypatch.setattr(gk, "PACK_B_ROWS", False)
    assert "%jg" not in render_gemm(_spec(64, 3136, 256), AVX2, "g", zero_start=True)


@pytest.mark.parametrize("group", [1, 3, 8])
def test_row_packing_groups_match_numpy(monkeypatch, threads, group):
    """Groups that do not divide the full panels, a partial last panel, several K and N
    blocks, 2 threads."""
    monkeypatch.setattr(gk, "PACK_B_GROUP", group)
    _with_pass(monkeypatch, "kc=64 mc=48 nc=256 parallel-min-flops=0 direct=false")
    threads(2)
    m, n, k = 70, 215, 150
    rng = np.random.default_rng(group)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    compiled = accel.compile_mlir(_matmul(m, n, k), {"cache": False})
    np.testing.assert_allclose(compiled.invoke("mm", a, b), a.astype(np.float64) @ b,
                               rtol=RTOL, atol=ATOL)
