"""`conv_layout="nchwc"`: convolutions on channel-blocked activations (passes/blocked_layout.py,
the blocked direct kernel of passes/_conv_kernel.py).

Every test calls the compiled code and compares with eager (fp32; tolerance 1e-4 of the
output's magnitude: the kernels sum in another order than eager), through each entry point
that takes the option: `accel.compile`, `@accel.jit`, `torch.compile`, accel-compile and a
train step; the kernel alone (every tile shape, AVX-512's 16 lanes too, which LLVM splits
on an AVX2 host) through `compile_mlir`.
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
from accel.options import OptionError
from accel.passes.blocked_layout import blocked_maps
from accel.pipeline import run_pipeline
from training_models import assert_entry_point_matches, assert_sgd_steps_match

torch = pytest.importorskip("torch")

RTOL = 1e-4


class Block(torch.nn.Module):
    """ResNet's basic block with a downsample: a strided 3x3, BatchNorm, ReLU, a 3x3, the
    strided 1x1 shortcut and the residual add; then a max pool, as between stages."""

    def __init__(self, c: int = 16, f: int = 32) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.c1 = torch.nn.Conv2d(c, f, 3, stride=2, padding=1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(f)
        self.c2 = torch.nn.Conv2d(f, f, 3, padding=1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(f)
        self.down = torch.nn.Conv2d(c, f, 1, stride=2, bias=False)
        self.c3 = torch.nn.Conv2d(f, f, 3, padding=2, dilation=2)  # a bias: the adding kernel
        for b in (self.b1, self.b2):
            b.running_mean.uniform_(-0.5, 0.5)
            b.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)) + self.down(x))
        return torch.nn.functional.max_pool2d(self.c3(y), 2)


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape
    err = (got - want).abs().max().item()
    assert err <= RTOL * want.abs().max().item(), err


def _blocked_calls(ir: str) -> int:
    """Direct-kernel calls on blocked (5-D) inputs."""
    return sum(1 for line in ir.splitlines()
               if "call @accel_dconv" in line and "_body" not in line and "x8xf32>, memref<" in line
               and ") -> ()" in line and line.count("x8xf32>") >= 2)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("frozen", [False, True])
def test_block_matches_eager(threads: int, frozen: bool) -> None:
    model = Block().eval()
    x = torch.randn(2, 16, 15, 15)
    with torch.no_grad(), phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={
            "cache": False, "conv_layout": "nchwc", "freeze_weights": frozen,
            "num_threads": threads})
        want = model(x)
        _close(fn(x), want)
        _close(fn(x), want)  # frozen: the copies packed by the first call
    ir = next(p.ir for p in rec.phases if p.name == "bufferize")
    assert _blocked_calls(ir) == 3  # the three 3x3s; the 1x1 stays a GEMM (pointwise off)
    assert "linalg.conv_2d_nchw_fchw" not in ir


def test_stride_one_pool_between_blocked_convs() -> None:
    """A 3x3 max pool at stride 1 (an SPP-style block) stays NCHW between blocked convs
    (it failed linalg's verifier as a blocked generic before session 25)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 1, 1),
        torch.nn.Conv2d(16, 16, 3, padding=1)).eval()
    x = torch.randn(1, 8, 20, 20)
    with torch.no_grad(), phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False, "conv_layout": "nchwc"})
        _close(fn(x), model(x))
    assert _blocked_calls(next(p.ir for p in rec.phases if p.name == "bufferize")) == 2


def test_nchw_is_the_default() -> None:
    model = Block().eval()
    x = torch.randn(1, 16, 15, 15)
    with torch.no_grad(), phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False})
        _close(fn(x), model(x))
    assert _blocked_calls(next(p.ir for p in rec.phases if p.name == "bufferize")) == 0


@pytest.mark.parametrize("frozen", [False, True])
def test_pointwise_convs_blocked_too(monkeypatch: pytest.MonkeyPatch, frozen: bool) -> None:
    """With the pass's `pointwise`, the 1x1 shortcut runs on the blocked direct kernel
    (frozen: its items group by group, every filter block of a group in turn)."""
    from accel.host import pipelines

    monkeypatch.setattr(pipelines, "BLOCKED_LAYOUT", "accel-blocked-layout{pointwise=true}")
    model = Block().eval()
    x = torch.randn(2, 16, 31, 31)  # the 1x1's 2^18 MACs pass the threshold
    with torch.no_grad(), phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False, "conv_layout": "nchwc",
                                                 "freeze_weights": frozen})
        _close(fn(x), model(x))
        _close(fn(x), model(x))
    assert _blocked_calls(next(p.ir for p in rec.phases if p.name == "bufferize")) == 4


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler for the AOT library")
@pytest.mark.parametrize("user_memory", [False, True])
def test_aot_library(tmp_path: Path, user_memory: bool) -> None:
    """With `aot`, the library built from the blocked code is CALLED (twice: frozen weights
    are packed by the first call), with and without a caller's memory pool."""
    model = Block().eval()
    x = torch.randn(1, 16, 15, 15)
    with torch.no_grad(), phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={
            "cache": False, "conv_layout": "nchwc", "freeze_weights": True, "aot": True,
            "user_memory": user_memory, "aot_name": "blocked_net",
            "output_folder": str(tmp_path)})
        want = model(x)
        _close(fn(x), want)
    assert _blocked_calls(next(p.ir for p in rec.phases if p.name == "bufferize")) == 3
    for _ in range(2):
        _close(torch.from_numpy(np.asarray(fn.aot_library.call(x.numpy()))), want)


@pytest.mark.parametrize("kind", ["accel.jit", "torch.compile"])
def test_other_entry_points(kind: str) -> None:
    model = Block().eval()
    x = torch.randn(1, 16, 15, 15)
    options = {"cache": False, "conv_layout": "nchwc"}
    assert_entry_point_matches(model, kind, options, x, _close)


def test_train_step_matches_eager() -> None:
    """Forward and backward convolutions (the input gradient is a convolution too) on
    blocked tensors; BatchNorm in training mode; SGD: three steps agree with eager's."""
    def make() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 4))

    x, y = torch.randn(4, 8, 12, 12), torch.randint(0, 4, (4,))
    assert_sgd_steps_match(make, x, y, {"cache": False, "conv_layout": "nchwc"})


MODEL_PY = '''
import torch

def get_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(32, 16, 3, padding=1))
    return model, (torch.randn(1, 16, 14, 14),)
'''


def test_accel_compile_conv_layout_flag(tmp_path: Path) -> None:
    """accel-compile --inference --conv-layout nchwc: recorded in option.json, blocked
    kernels in the IR, and the folder accel.load reloads computes the model."""
    (tmp_path / "model.py").write_text(MODEL_PY)
    r = subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", "model.py",
                        "--inference", "--conv-layout", "nchwc", "--pef-name", "blocked"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "ACCEL_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out" / "blocked"
    assert '"conv_layout": "nchwc"' in (out / "option.json").read_text()
    assert _blocked_calls((out / "ir" / "05-bufferize.mlir").read_text()) == 2
    spec: dict = {}
    exec(MODEL_PY, spec)  # the same model.py, in this process
    net, (x,) = spec["get_model"]()
    loaded = accel.load(out)
    with torch.no_grad():
        _close(loaded(x), net.eval()(x))


def test_accel_compile_refuses_an_unknown_layout(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL_PY)
    r = subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", "model.py",
                        "--inference", "--conv-layout", "nhwc"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "nchwc" in r.stderr and "nhwc" in r.stderr


def test_unknown_layout_is_an_option_error() -> None:
    with pytest.raises(OptionError, match="'conv_layout' must be one of nchw, nchwc, got 'nhwc'"):
        accel.compile(Block().eval(), (torch.randn(1, 16, 15, 15),),
                      options={"conv_layout": "nhwc"})


def _kernel_text(n: int, c: int, h: int, f: int, k: int, s: int, d: int, store: bool,
                 in_blocked: bool) -> str:
    """The blocked convolution accel-blocked-layout writes, on memrefs."""
    oh = (h - d * (k - 1) - 1) // s + 1
    x = f"memref<{n}x{c // 8}x{h}x{h}x8xf32>" if in_blocked else f"memref<{n}x{c}x{h}x{h}xf32>"
    w = f"memref<{f}x{c}x{k}x{k}xf32>"
    o = f"memref<{n}x{f // 8}x{oh}x{oh}x8xf32>"
    maps = ", ".join(blocked_maps((s, s), (d, d), in_blocked))
    iters = ", ".join(['"parallel"'] * 5 + ['"reduction"'] * (3 + in_blocked))
    conv = [f"  linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iters}]}} "
            f"ins(%x, %w : {x}, {w}) outs(%o : {o}) "
            f"attrs = {{accel.blocked_conv = array<i64: {s}, {s}, {d}, {d}, "
            f"{int(in_blocked)}>}} {{",
            "  ^bb0(%i: f32, %k: f32, %a: f32):", "    %m = arith.mulf %i, %k : f32",
            "    %r = arith.addf %a, %m : f32", "    linalg.yield %r : f32", "  }"]
    if not store:
        return "\n".join([f"func.func @conv(%x: {x}, %w: {w}, %o: {o}) {{", *conv,
                          "  return", "}"])
    return "\n".join([
        f"func.func @conv(%x: {x}, %w: {w}, %out: {o}) {{", "  %zero = arith.constant 0.0 : f32",
        f"  %o = memref.alloc() : {o}", f"  linalg.fill ins(%zero : f32) outs(%o : {o})",
        *conv, f"  memref.copy %o, %out : {o} to {o}", "  return", "}"])


def _block(a: np.ndarray) -> np.ndarray:
    n, c, h, w = a.shape
    return np.ascontiguousarray(a.reshape(n, c // 8, 8, h, w).transpose(0, 1, 3, 4, 2))


@pytest.mark.parametrize("n,c,h,f,k,s,d,in_blocked", [
    (1, 16, 18, 64, 3, 1, 1, True),  # AVX-512's 4 x 6 tile; AVX2's 2 x 6
    (2, 8, 17, 32, 3, 2, 1, True),  # stride 2, two images
    (1, 16, 9, 40, 3, 1, 1, True),  # 7x7 map (overlapping last tile), 40 filters: a partial
    (1, 24, 13, 8, 3, 1, 2, True),  # 8 filters (AVX2's 1 x 14 tile), dilation 2
    (1, 32, 10, 48, 1, 1, 1, True),  # 1x1
    (1, 3, 23, 16, 7, 2, 1, False),  # the stem: an NCHW input of 3 channels, 7x7 stride 2
])
@pytest.mark.parametrize("store", [False, True])
@pytest.mark.parametrize("width", [16, 8])
def test_blocked_kernel_matches_torch(ctx, threads, n, c, h, f, k, s, d, in_blocked, store,
                                      width):
    """Every tile shape, storing and adding, threaded; vector-width=16 splits each
    accumulator into two 8-channel blocks (and runs here as LLVM splits the vectors)."""
    from accel.ir import Module

    threads(2)
    module = Module.parse(_kernel_text(n, c, h, f, k, s, d, store, in_blocked))
    run_pipeline(module, f"builtin.module(accel-conv-kernels{{vector-width={width} "
                         f"parallel-min-flops=0}})")
    text = str(module)
    assert "accel.blocked_conv" not in text  # matched: a kernel call now
    assert ("vector.extract_strided_slice" in text) == (width == 16)
    compiled = accel.compile_mlir(text, {"cache": False, "opt_level": 1})
    rng = np.random.default_rng(c + f)
    x = rng.standard_normal((n, c, h, h), dtype=np.float32)
    w = rng.standard_normal((f, c, k, k), dtype=np.float32)
    oh = (h - d * (k - 1) - 1) // s + 1
    o = np.full((n, f, oh, oh), np.nan, dtype=np.float32) if store else \
        rng.standard_normal((n, f, oh, oh), dtype=np.float32)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=s,
                                      dilation=d).numpy() + (0 if store else o)
    ob = _block(o)
    compiled["conv"](_block(x) if in_blocked else x, w, ob)
    np.testing.assert_allclose(ob, _block(want), rtol=RTOL, atol=RTOL)


def test_narrow_vectors_run_the_generic(ctx):
    """With 4-lane vectors (half a block) the blocked conv keeps its generic, whose loops
    compute the same values."""
    from accel.ir import Module

    module = Module.parse(_kernel_text(1, 16, 10, 16, 3, 1, 1, False, True))
    run_pipeline(module, "builtin.module(accel-conv-kernels{vector-width=4})")
    text = str(module)
    assert "accel.blocked_conv" in text and "accel_dconv" not in text
    compiled = accel.compile_mlir(text, {"cache": False, "opt_level": 0})
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 16, 10, 10), dtype=np.float32)
    w = rng.standard_normal((16, 16, 3, 3), dtype=np.float32)
    o = rng.standard_normal((1, 16, 8, 8), dtype=np.float32)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w)).numpy() + o
    ob = _block(o)
    compiled["conv"](_block(x), w, ob)
    np.testing.assert_allclose(ob, _block(want), rtol=RTOL, atol=RTOL)
