"""Elementwise chains (BatchNorm, residual add, ReLU) applied as conv kernels write their
output (passes/_conv_epilogue.py, _epilogue_code.py; accel-conv-kernels' `fuse-epilogue`,
off in the CPU pipeline, which these tests turn on): numerics against eager through
accel.compile (live and frozen weights, 1 and 2 threads), torch.compile(backend="accel")
and compile_mlir (the AVX-512 write-back on this host), NaN and inf as eager, and GEMM
kernels whose K spans several blocks."""

from __future__ import annotations

import re

import accel
import numpy as np
import pytest
from accel import phases
from accel.pipeline import run_pipeline

torch = pytest.importorskip("torch")
nn = torch.nn

RTOL, ATOL = 1e-4, 1e-4


@pytest.fixture
def epilogue(monkeypatch):
    """The CPU pipeline with accel-conv-kernels' fuse-epilogue on."""
    from accel.host import pipelines

    monkeypatch.setattr(pipelines, "CONV_EPILOGUE", True)


def _bn(c: int) -> nn.BatchNorm2d:
    """A BatchNorm with running statistics far from the identity."""
    bn = nn.BatchNorm2d(c)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return bn


class Basic(nn.Module):
    """ResNet's basic block: conv-BN-ReLU, conv-BN, + identity, ReLU (3x3: direct kernels)."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), _bn(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), _bn(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + x)


class Bottleneck(nn.Module):
    """1x1 (GEMM) - 3x3 - 1x1 (GEMM) + identity; c_in = 1024 gives the first GEMM K = 1024,
    more than one K block (KC <= 512)."""

    def __init__(self, c: int, mid: int) -> None:
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, mid, 1, bias=False), _bn(mid)
        self.c2, self.b2 = nn.Conv2d(mid, mid, 3, padding=1, bias=False), _bn(mid)
        self.c3, self.b3 = nn.Conv2d(mid, c, 1, bias=False), _bn(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)))
        return torch.relu(self.b3(self.c3(y)) + x)


def _conv_calls(ir: str) -> list[str]:
    """The calls that replaced convs (not a kernel's calls of its own parts)."""
    return [line for line in ir.splitlines()
            if (m := re.search(r"call @(accel_(?:dconv|pwconv)\w+)\(", line))
            and not re.search(r"_(body|entry|sentry|pack|pack_entry)$", m.group(1))]


def _compile(model: nn.Module, x: torch.Tensor, **options: object
             ) -> tuple[accel.CompiledModule, str]:
    with phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False, **options})
    return fn, str(next(p.ir for p in rec.phases if p.name == "bufferize"))


@pytest.mark.parametrize("freeze", [False, True])
@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("kind", ["basic", "bottleneck"])
def test_blocks_match_eager(epilogue, threads, kind, freeze, nthreads):
    """Every conv of the block takes its BatchNorm's per-channel operands (and the last
    its residual) and the outputs match eager."""
    torch.manual_seed(0)
    model = (Basic(32) if kind == "basic" else Bottleneck(1024, 64)).eval()
    x = torch.randn(1, 32, 20, 20) if kind == "basic" else torch.randn(1, 1024, 14, 14)
    threads(nthreads)
    fn, ir = _compile(model, x, freeze_weights=freeze, num_threads=nthreads)
    calls = _conv_calls(ir)
    assert len(calls) == (2 if kind == "basic" else 3), calls
    for call in calls:  # each with BatchNorm folded: x * S + T, S and T per channel
        assert re.search(r"memref<\d+xf32>, memref<\d+xf32>", call), call
    assert len(re.findall(r"call @accel_chan_affine_[0-9a-f]+\(", ir)) == len(calls)
    if kind == "bottleneck":  # the GEMMs' kernels carry the chain
        assert re.search(r"accel_gemm_\w+_e[0-9a-f]{8}", ir)
    with torch.no_grad():
        want = model(x)
    np.testing.assert_allclose(fn(x).numpy(), want.numpy(), rtol=RTOL, atol=ATOL)


def test_nan_and_inf_follow_eager(epilogue):
    """ReLU of NaN is NaN and of -inf is 0, as eager (the generic's own cmpf/select)."""
    torch.manual_seed(1)
    model = Basic(16).eval()
    x = torch.randn(1, 16, 12, 12)
    x[0, 3, 4, 5] = float("nan")
    x[0, 7, 1, 1] = float("inf")
    x[0, 9, 2, 8] = float("-inf")
    fn, _ = _compile(model, x)
    with torch.no_grad():
        want = model(x).numpy()
    got = fn(x).numpy()
    assert np.isnan(want).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)


def test_torch_compile_backend(epilogue):
    """torch.compile(backend="accel") runs the same kernels."""
    torch.manual_seed(2)
    model = Basic(16).eval()
    x = torch.randn(2, 16, 10, 10)
    compiled = torch.compile(model, backend="accel")
    with torch.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=RTOL,
                                   atol=ATOL)


def test_off_by_default():
    """Without the switch the chain stays as generics (fused as loops after the kernel)."""
    model = Basic(16).eval()
    x = torch.randn(1, 16, 10, 10)
    fn, ir = _compile(model, x)
    assert "accel_chan_affine" not in ir
    assert all(not re.search(r"memref<\d+xf32>", call) for call in _conv_calls(ir))
    with torch.no_grad():
        np.testing.assert_allclose(fn(x).numpy(), model(x).numpy(), rtol=RTOL, atol=ATOL)


_CHAIN_MLIR = """
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @conv(%x: memref<2x24x17x17xf32>, %w: memref<40x24x3x3xf32>, %s: memref<40xf32>,
                %skip: memref<2x40x8x8xf32>, %out: memref<2x40x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<2x40x8x8xf32>
  %a = memref.alloc() : memref<2x40x8x8xf32>
  %r = memref.alloc() : memref<2x40x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<2x40x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>,
                            strides = dense<2> : vector<2xi64>}
    ins(%x, %w : memref<2x24x17x17xf32>, memref<40x24x3x3xf32>)
    outs(%o : memref<2x40x8x8xf32>)
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel",
                  "parallel", "parallel"]}
      ins(%o, %s : memref<2x40x8x8xf32>, memref<40xf32>) outs(%a : memref<2x40x8x8xf32>) {
  ^bb0(%in: f32, %v: f32, %unused: f32):
    %m = arith.mulf %in, %v : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel",
                  "parallel", "parallel"]}
      ins(%a, %skip : memref<2x40x8x8xf32>, memref<2x40x8x8xf32>)
      outs(%r : memref<2x40x8x8xf32>) {
  ^bb0(%in: f32, %k: f32, %unused: f32):
    %t = arith.addf %in, %k : f32
    %c = arith.cmpf ugt, %t, %zero : f32
    %y = arith.select %c, %t, %zero : f32
    linalg.yield %y : f32
  }
  memref.copy %r, %out : memref<2x40x8x8xf32> to memref<2x40x8x8xf32>
  return
}
"""


@pytest.mark.parametrize("options", ["vector-width=16 parallel=false",
                                     "vector-width=16 parallel-min-flops=0",
                                     "vector-width=8 parallel-min-flops=0",
                                     "vector-width=8 parallel=false"])
def test_write_back_on_every_tile(ctx, threads, options):
    """The chain (per-channel scale, residual add, ReLU) on the AVX-512 tile's scalar
    write-back (LLVM splits its vectors here), the AVX2 one through registers, threaded
    and not; 40 filters (a partial filter block), two images, stride 2."""
    threads(2)
    from accel.ir import Module

    module = Module.parse(_CHAIN_MLIR)
    run_pipeline(module, f"builtin.module(accel-conv-kernels{{{options} fuse-epilogue=true}})")
    text = str(module)
    assert "linalg.conv" not in text and "linalg.generic" not in text
    compiled = accel.compile_mlir(text, {"cache": False, "opt_level": 1})
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 24, 17, 17), dtype=np.float32)
    w = rng.standard_normal((40, 24, 3, 3), dtype=np.float32)
    s = rng.standard_normal(40, dtype=np.float32)
    skip = rng.standard_normal((2, 40, 8, 8), dtype=np.float32)
    out = np.full((2, 40, 8, 8), np.nan, dtype=np.float32)
    compiled["conv"](x, w, s, skip, out)
    conv = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=2)
    want = torch.relu(conv * torch.from_numpy(s)[:, None, None] + torch.from_numpy(skip))
    np.testing.assert_allclose(out, want.numpy(), rtol=RTOL, atol=ATOL)


_DIV_MLIR = """
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @conv(%x: memref<1x16x10x10xf32>, %w: memref<16x16x3x3xf32>, %s: memref<16xf32>,
                %t: memref<16xf32>, %out: memref<1x16x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x16x8x8xf32>
  %a = memref.alloc() : memref<1x16x8x8xf32>
  %r = memref.alloc() : memref<1x16x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x16x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>,
                            strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x16x10x10xf32>, memref<16x16x3x3xf32>)
    outs(%o : memref<1x16x8x8xf32>)
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel",
                  "parallel", "parallel"]}
      ins(%o, %s : memref<1x16x8x8xf32>, memref<16xf32>) outs(%a : memref<1x16x8x8xf32>) {
  ^bb0(%in: f32, %v: f32, %unused: f32):
    %q = arith.divf %in, %v : f32
    linalg.yield %q : f32
  }
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel",
                  "parallel", "parallel"]}
      ins(%a, %t : memref<1x16x8x8xf32>, memref<16xf32>) outs(%r : memref<1x16x8x8xf32>) {
  ^bb0(%in: f32, %v: f32, %unused: f32):
    %y = arith.addf %in, %v : f32
    linalg.yield %y : f32
  }
  memref.copy %r, %out : memref<1x16x8x8xf32> to memref<1x16x8x8xf32>
  return
}
"""


def test_division_by_zero_channels_stays_inf(ctx):
    """x / s[f] + t[f] with some s[f] = 0: +-inf as the steps give (a division is not
    folded into x * S + T, where 1/0 and 0/0 would make it NaN)."""
    from accel.ir import Module

    module = Module.parse(_DIV_MLIR)
    run_pipeline(module, "builtin.module(accel-conv-kernels{vector-width=8 fuse-epilogue=true})")
    text = str(module)
    assert "linalg.generic" not in text and "accel_chan_affine" not in text
    compiled = accel.compile_mlir(text, {"cache": False, "opt_level": 1})
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 16, 10, 10), dtype=np.float32)
    w = rng.standard_normal((16, 16, 3, 3), dtype=np.float32)
    s = rng.uniform(0.5, 2.0, 16).astype(np.float32)
    s[[2, 9]] = 0.0
    t = rng.standard_normal(16, dtype=np.float32)
    out = np.zeros((1, 16, 8, 8), dtype=np.float32)
    compiled["conv"](x, w, s, t, out)
    conv = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w))
    want = (conv / torch.from_numpy(s)[:, None, None] + torch.from_numpy(t)[:, None, None])
    assert np.isinf(out[0, 2]).all() and np.isinf(out[0, 9]).all()
    np.testing.assert_allclose(out, want.numpy(), rtol=RTOL, atol=ATOL)
