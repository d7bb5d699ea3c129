"""`freeze_weights`: frozen 1x1 conv weights packed once (passes/_frozen_weights.py).

Each test calls the compiled code and compares with eager (fp32, tolerance 1e-4 of the
output's magnitude: the GEMM's order of additions differs from eager's). The contract is
checked both ways: without the option an in-place change to a parameter is seen by the next
call; with it the packed copy keeps the old values, through every inference entry point.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import accel
import accel.dynamo  # noqa: F401 - registers the "accel" backend
import pytest
import torch

RTOL = 1e-4


class PointwiseNet(torch.nn.Module):
    """1x1 convs as GEMMs: stride 1 (N = 49 columns, as ResNet-50's last stage), stride 2
    (the downsample shortcut's gather), a 3x3 in between (not packed) and a repeated block,
    so with 8 blocks `accel-split-functions` passes the weights to parts as arguments."""

    def __init__(self, blocks: int = 3) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.down = torch.nn.Conv2d(32, 64, 1, stride=2)
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Conv2d(64, 96, 1), torch.nn.ReLU(),
                                torch.nn.Conv2d(96, 96, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(96, 64, 1))
            for _ in range(blocks))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.down(x)
        for block in self.blocks:
            x = torch.relu(x + block(x))
        return x


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape
    err = (got - want).abs().max().item()
    assert err <= RTOL * want.abs().max().item(), err


def _entry(kind: str, model: torch.nn.Module, x: torch.Tensor, options: dict):
    if kind == "accel.compile":
        return accel.compile(model, (x,), options=options)
    if kind == "accel.jit":
        return accel.jit(model, compile_options=options)
    torch._dynamo.reset()
    return torch.compile(model, backend="accel", options={**options, "strict_target": True})


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("split", [True, False])
def test_frozen_matches_eager(threads: int, split: bool) -> None:
    model = PointwiseNet(8 if split else 3).eval()
    x = torch.randn(2, 32, 14, 14)
    fn = accel.compile(model, (x,), options={"cache": False, "freeze_weights": True,
                                             "num_threads": threads, "split_functions": split})
    with torch.no_grad():
        want = model(x)
    _close(fn(x), want)
    _close(fn(x), want)  # the second call reads the copies packed by the first
    _close(fn(2 * x), model(2 * x).detach())


@pytest.mark.parametrize("kind", ["accel.compile", "accel.jit", "torch.compile"])
@pytest.mark.parametrize("frozen", [False, True])
def test_in_place_change_is_seen_only_without_freezing(kind: str, frozen: bool) -> None:
    """With 8 blocks: the weights of the repeated blocks reach their convs as arguments of
    the parts `accel-split-functions` makes, each call passing its own packed copy."""
    model = PointwiseNet(8).eval()
    x = torch.randn(1, 32, 14, 14)
    with torch.no_grad():
        fn = _entry(kind, model, x, {"cache": False, "freeze_weights": frozen})
        before = model(x)
        _close(fn(x), before)
        for block in model.blocks:
            block[4].weight.mul_(1.5)  # 1x1 convs' weights, in place
        after = model(x)
        assert (after - before).abs().max() > 0.01
        _close(fn(x), before if frozen else after)
    torch._dynamo.reset()


def test_weights_bound_again_are_packed_again(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Two models of one architecture share the cached object code; each binding packs its
    own weights (the packed copies live in each loaded object)."""
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path))
    x = torch.randn(1, 32, 14, 14)
    first = PointwiseNet().eval()
    second = PointwiseNet().eval()
    with torch.no_grad():
        for p in second.parameters():
            p.mul_(-0.5)
        fa = accel.compile(first, (x,), options={"freeze_weights": True})
        fb = accel.compile(second, (x,), options={"freeze_weights": True})
        _close(fa(x), first(x))
        _close(fb(x), second(x))
        _close(fa(x), first(x))


MODEL_PY = '''
import torch

def get_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(64, 128, 1), torch.nn.ReLU(),
                                torch.nn.Conv2d(128, 64, 1, stride=2))
    return model, (torch.randn(1, 64, 14, 14),)
'''


def test_accel_compile_freeze_weights_flag(tmp_path: Path) -> None:
    """accel-compile --inference --freeze-weights: recorded in option.json, and the folder
    accel.load reloads computes the model."""
    (tmp_path / "model.py").write_text(MODEL_PY)
    r = subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", "model.py",
                        "--inference", "--freeze-weights", "--pef-name", "frozen"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "ACCEL_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out" / "frozen"
    assert '"freeze_weights": true' in (out / "option.json").read_text()
    assert "_packed_" in (out / "ir" / "05-bufferize.mlir").read_text()
    sys.path.insert(0, str(tmp_path))
    try:
        import model as spec  # the test's model.py
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("model", None)
    net, (x,) = spec.get_model()
    loaded = accel.load(out)
    with torch.no_grad():
        _close(loaded(x), net.eval()(x))


@pytest.mark.parametrize("user_memory", [False, True])
def test_aot_library_packs_on_its_first_call(tmp_path: Path, user_memory: bool) -> None:
    """The AOT library holds the packed copies as zero-initialised data: its first call
    packs (with user_memory, the packing buffer comes from the caller's pool), the second
    reads them; both give eager's result."""
    import numpy as np

    model = PointwiseNet().eval()
    x = torch.randn(1, 32, 14, 14)
    fn = accel.compile(model, (x,), options={
        "cache": False, "freeze_weights": True, "aot": True, "user_memory": user_memory,
        "aot_name": "frozen_net", "output_folder": str(tmp_path)})
    with torch.no_grad():
        want = model(x)
    for _ in range(2):
        _close(torch.from_numpy(np.asarray(fn.aot_library.call(x.numpy()))), want)


class LinearNet(torch.nn.Module):
    """nn.Linear layers (B = the weight's transpose, packed per call without the option),
    repeated so that 12 blocks are split into parts taking the weights as arguments."""

    def __init__(self, blocks: int) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(96, 192), torch.nn.GELU(),
                                torch.nn.Linear(192, 96))
            for _ in range(blocks))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = torch.layer_norm(x + block(x), (96,))
        return x


@pytest.mark.parametrize("blocks", [2, 12])
def test_linear_weights_packed_once(blocks: int) -> None:
    """A batch of 64 rows: the 96 -> 192 matmuls take the packed GEMM kernel, whose B
    (nn.Linear's weight) is then packed once (`_pb_frozen`); with 12 blocks the weights
    reach it as part arguments. Small in-cache matmuls read B in place (no packing to
    save), so which kernels keep a packed copy varies: the option's contract is that
    parameters do not change, not which kernels see a change."""
    from accel import phases

    model = LinearNet(blocks).eval()
    x = torch.randn(64, 96)
    with torch.no_grad(), phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False, "freeze_weights": True})
        want = model(x)
        _close(fn(x), want)
        _close(fn(x), want)
    ir = next(p.ir for p in rec.phases if p.name == "bufferize")
    assert ir.count("_pb_frozen(") >= blocks  # a call per block at least
    assert ("func.func private @main_part" in ir) == (blocks == 12)


def test_linear_weights_through_torch_compile() -> None:
    model = LinearNet(2).eval()
    x = torch.randn(64, 96)
    with torch.no_grad():
        fn = _entry("torch.compile", model, x, {"cache": False, "freeze_weights": True})
        _close(fn(x), model(x))
        _close(fn(x), model(x))
    torch._dynamo.reset()
