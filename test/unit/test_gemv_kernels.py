"""Matrix-vector kernels (`passes/_gemv_kernel.py`) and `accel-fold-matvec-transposes`.

Matmuls of at most 15 rows (a decode step's tokens, a classifier head at batch 1) get an
`accel_gemv_*` kernel instead of loops; each case checks that it fired and compares with
float64 numpy (rtol 1e-4, atol 1e-5 x sqrt(K / 100) from K = 100): B as K x N ("nn",
vectors along N) and N x K ("nt", nn.Linear's weight, vectors along K), 1 to 15 rows (in
groups of up to 8 or 4), N and K not multiples of the vector width or of the kernels'
steps, serial and split into items across threads, with the host's vector width and the
AVX2 (8) and AVX-512 (16) shapes. Through `accel.compile`: nn.Linear and `addmm` at 1, 3
and 8 rows against eager, a conv net's head (the transposed weight folded on tensors: no
transpose left) and a batch-2 train step (its input gradients are nn matrix-vector
products); `torch.compile` and the `accel-compile` command on one-row products too.
KV-cache decode steps (API and `torch.compile`) are test_hf_generation.py's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import accel
import numpy as np
import pytest
import torch
from accel import phases
from test_matmul_microkernel import ATOL, RTOL, _bufferized, _matmul, _rand, _with_pass

SHAPES = [(1, 768, 300), (1, 600, 40), (2, 100, 200), (3, 130, 177), (4, 300, 1000),
          (4, 130, 150), (5, 70, 250), (8, 300, 129), (12, 80, 300), (15, 70, 265)]


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("tb", [False, True], ids=["nn", "nt"])
@pytest.mark.parametrize("options", ["", "vector-width=8", "vector-width=16",
                                     "parallel-min-flops=4096"])
def test_gemv_matches_numpy(monkeypatch, m, n, k, tb, options):
    _with_pass(monkeypatch, options)
    a, b = _rand(m, k), _rand(n, k) if tb else _rand(k, n)
    compiled, ir = _bufferized(_matmul(m, n, k, tb=tb))
    trans = "nt" if tb else "nn"
    assert re.search(rf"call @accel_gemv_{m}x{n}x{k}_{trans}_\w+\(", ir), ir[:2000]
    if options.startswith("parallel"):
        assert "accel_parallel_for" in ir
    expected = a.astype(np.float64) @ (b.T if tb else b)
    # float32 sums of K unit-normal products: rounding grows like sqrt(K), so an output
    # near zero needs an absolute bound that does too (1e-5 up to K = 100).
    atol = ATOL * max(1.0, (k / 100) ** 0.5)
    np.testing.assert_allclose(compiled.invoke("mm", a, b), expected, rtol=RTOL, atol=atol)


def test_sixteen_rows_get_the_gemm_kernel(monkeypatch):
    """From 16 rows (`min-size`) the GEMM kernels take over: no matrix-vector kernel."""
    _with_pass(monkeypatch)
    a, b = _rand(16, 300), _rand(300, 768)
    compiled, ir = _bufferized(_matmul(16, 768, 300))
    assert "accel_gemv" not in ir and "accel_gemm_16x768x300" in ir
    # The K-scaled bound of the test above: with AVX2's tiles (KC = 256: two K blocks) an
    # output of 0.0398 came out 1.8e-5 from float64, past a flat 1e-5.
    np.testing.assert_allclose(compiled.invoke("mm", a, b), a.astype(np.float64) @ b,
                               rtol=RTOL, atol=ATOL * (300 / 100) ** 0.5)


class _Head(torch.nn.Module):
    def __init__(self, k: int, n: int, addmm: bool) -> None:
        super().__init__()
        self.addmm = addmm
        self.linear = torch.nn.Linear(k, n)
        self.w = torch.nn.Parameter(torch.randn(k, n) / k ** 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.addmm:  # HF GPT-2's Conv1D
            return torch.addmm(self.linear.bias, x, self.w)
        return torch.relu(self.linear(x))


def _stages(model: torch.nn.Module, x: torch.Tensor) -> tuple[accel.CompiledModule, str, str]:
    with phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False})
    ir = {p.name: str(p.ir) for p in rec.phases if p.ir is not None}
    return fn, ir["fuse"], ir["bufferize"]


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("addmm", [False, True], ids=["linear", "addmm"])
def test_compiled_linear_matches_eager(m, addmm):
    torch.manual_seed(m)
    model = _Head(700, 1000, addmm).eval()
    x = torch.randn(m, 700)
    fn, fused, bufferized = _stages(model, x)
    assert "accel_gemv" in bufferized
    if not addmm:  # the weight's transpose folded into the matmul on tensors
        assert "linalg.transpose" not in fused
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-5)


def test_resnet_head_reads_its_weight_in_place():
    """A conv trunk, global pooling and nn.Linear at batch 1: the head's transpose goes
    even though function splitting would put it in another part than the product."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 1000)).eval()
    x = torch.randn(1, 3, 16, 16)
    fn, fused, bufferized = _stages(model, x)
    assert "linalg.transpose" not in fused and "accel_gemv_1x1000x64_nt" in bufferized
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-5)


def test_train_step_at_batch_two_matches_eager():
    """An MLP step at batch 2: the forward and the input gradients are 2-row products."""
    def make() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(300, 256), torch.nn.Tanh(),
                                   torch.nn.Linear(256, 128))

    def loss_fn(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(model(x), y)

    model, ref = make(), make()
    x, y = torch.randn(2, 300), torch.randint(0, 128, (2,))
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref))
    with phases.recording(keep_ir=True) as rec:
        step = accel.compile_train_step(model, loss_fn, opt, (x, y))
    assert any("accel_gemv" in str(p.ir) for p in rec.phases if p.ir is not None)
    for _ in range(3):
        loss = step(x, y)
        ref_opt.zero_grad()
        want = loss_fn(ref, x, y)
        want.backward()
        ref_opt.step()
        torch.testing.assert_close(torch.as_tensor(loss), want.detach(), rtol=1e-4, atol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("addmm", [False, True], ids=["linear", "addmm"])
def test_torch_compile_linear_matches_eager(addmm):
    """`torch.compile(backend="accel")` on a one-row product: the kernel fires there too."""
    import accel.dynamo  # noqa: F401 - registers the backend

    torch.manual_seed(2)
    model = _Head(700, 1000, addmm).eval()
    x = torch.randn(1, 700)
    compiled = torch.compile(model, backend="accel")
    with phases.recording(keep_ir=True) as rec, torch.no_grad():
        got = compiled(x)
    assert any("accel_gemv_1x1000x700" in str(p.ir) for p in rec.phases if p.ir is not None)
    with torch.no_grad():
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)


HEAD_PY = """\
import torch


def get_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(700, 1000), torch.nn.ReLU()).eval()
    return model, (torch.randn(1, 700),)
"""


def test_accel_compile_cli_head(tmp_path):
    """`accel-compile --inference` of a batch-1 head: its bufferized IR calls the kernel,
    the weight's transpose is folded, and the loaded artifact matches eager."""
    (tmp_path / "head.py").write_text(HEAD_PY)
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", "head.py",
                        "--inference", "--pef-name", "head"], capture_output=True, text=True,
                       env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out" / "head"
    assert "accel_gemv_1x1000x700_nt" in (out / "ir" / "05-bufferize.mlir").read_text()
    assert "linalg.transpose" not in (out / "ir" / "04-fuse.mlir").read_text()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(700, 1000), torch.nn.ReLU()).eval()
    x = torch.randn(1, 700)
    with torch.no_grad():
        torch.testing.assert_close(accel.load(out)(x), model(x), rtol=1e-4, atol=1e-5)
