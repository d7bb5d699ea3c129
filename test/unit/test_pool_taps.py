"""`accel-pool-taps` (passes/pool_taps.py): max pools as one all-parallel generic with an
input per window tap, in the CPU pipeline at opt_level >= 1.

Every test calls the compiled code and compares with eager: a max pool picks one of its
inputs, so the pool alone must match exactly (NaN where eager has NaN; the sign of a zero
tie is the one liberty, `nsz`); after convolutions the tolerance is 1e-4 of the output's
magnitude (the kernels sum in another order). Entry points: `accel.compile` (live and
frozen weights, 1 and 2 threads, both conv layouts), `@accel.jit`, `torch.compile`, a train
step, accel-compile (reloaded with `accel.load`) and the AOT library.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import accel
import numpy as np
import pytest
from accel import phases
from training_models import assert_entry_point_matches, assert_sgd_steps_match

torch = pytest.importorskip("torch")

RTOL = 1e-4


class Stem(torch.nn.Module):
    """ResNet's stem: a 7x7/2 conv, BatchNorm, ReLU, the 3x3/2 max pool, then a 3x3."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 2.0)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.next = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.next(self.pool(torch.relu(self.bn(self.conv(x)))))


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape
    err = (got - want).abs().max().item()
    assert err <= RTOL * want.abs().max().item(), err


def _pools_left(ir: str) -> int:
    return ir.count("linalg.pooling_nchw_max")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("layout", ["nchw", "nchwc"])
def test_stem_matches_eager(threads: int, frozen: bool, layout: str) -> None:
    model = Stem().eval()
    x = torch.randn(2, 3, 40, 40)
    with torch.no_grad(), phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={
            "cache": False, "freeze_weights": frozen, "num_threads": threads,
            "conv_layout": layout})
        want = model(x)
        _close(fn(x), want)
        _close(fn(-x), model(-x))
    assert _pools_left(next(p.ir for p in rec.phases if p.name == "fuse")) == 0


# (kernel, stride, padding, dilation, ceil_mode): the rewritten strided cases, and stride 1
# (left to the named op, which must stay right too).
POOLS = [(3, 2, 1, 1, False), (2, 2, 0, 1, False), (3, 2, 0, 2, False), (3, 2, 1, 1, True),
         ((3, 2), (2, 3), (1, 0), 1, False), (3, 1, 1, 1, False)]


@pytest.mark.parametrize("k, s, p, d, ceil", POOLS)
def test_pool_alone_is_exact(k, s, p, d, ceil) -> None:
    """Values, -inf, +inf and NaN in the input: the pool picks exactly what eager picks."""
    model = torch.nn.MaxPool2d(k, s, p, dilation=d, ceil_mode=ceil)
    torch.manual_seed(1)
    x = torch.randn(2, 5, 17, 19)
    x[0, 0, 4, 4] = float("nan")  # inside a window in every case below
    x[0, 1, 5:9, 5:9] = float("-inf")
    x[1, 2, 0, 0] = float("inf")
    with phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False})
    want = model(x)
    got = fn(x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    assert torch.isnan(got).any()  # the NaN reached the output, as in eager
    rewritten = (s if isinstance(s, int) else min(s)) > 1
    assert _pools_left(next(p.ir for p in rec.phases if p.name == "fuse")) == \
        (0 if rewritten else 1)


@pytest.mark.parametrize("kind", ["accel.jit", "torch.compile"])
def test_other_entry_points(kind: str) -> None:
    model = Stem().eval()
    x = torch.randn(1, 3, 32, 32)
    options = {"cache": False}
    assert_entry_point_matches(model, kind, options, x, _close)


def test_train_step_matches_eager() -> None:
    """A strided max pool in a train step (forward on the rewritten pool, its gradient
    through eager's indices): three SGD steps agree with eager's."""
    def make() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1),
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))

    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 4, (4,))
    assert_sgd_steps_match(make, x, y, {"cache": False})


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler for the AOT library")
def test_aot_library(tmp_path: Path) -> None:
    model = Stem().eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        fn = accel.compile(model, (x,), options={
            "cache": False, "aot": True, "aot_name": "stem_pool",
            "output_folder": str(tmp_path)})
        want = model(x)
    for _ in range(2):
        _close(torch.from_numpy(np.asarray(fn.aot_library.call(x.numpy()))), want)


MODEL_PY = """
import torch

def get_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(3, 2, 1), torch.nn.Conv2d(16, 8, 3))
    return model, (torch.randn(1, 3, 20, 20),)
"""


def test_accel_compile(tmp_path: Path) -> None:
    """accel-compile --inference: the pool is rewritten (no named pool left after the
    tensor passes), and the folder accel.load reloads computes the model."""
    (tmp_path / "model.py").write_text(MODEL_PY)
    r = subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", "model.py",
                        "--inference", "--pef-name", "pooled"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "ACCEL_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out" / "pooled"
    fused = [f for f in (out / "ir").iterdir() if f.name.endswith("-fuse.mlir")]
    assert len(fused) == 1 and _pools_left(fused[0].read_text()) == 0
    spec: dict = {}
    exec(MODEL_PY, spec)  # the same model.py, in this process
    net, (x,) = spec["get_model"]()
    loaded = accel.load(out)
    with torch.no_grad():
        _close(loaded(x), net.eval()(x))
