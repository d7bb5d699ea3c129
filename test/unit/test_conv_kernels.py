"""accel-conv-kernels (passes/conv_kernels.py, _conv_kernel.py, _depthwise_kernel.py): NCHW f32
convolutions as direct register-tiled kernels, depthwise ones vectorised along the row, 1x1
stride 1 as GEMMs on the input itself; numerics
against eager through accel.compile, torch.compile(backend="accel") and compile_mlir (the
AVX-512 tile on this host), threads, and an AOT build for x86-64-v4."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import accel
import numpy as np
import pytest
from accel import phases
from accel.passes._conv_kernel import ConvTile, choose_conv_tile, filter_major
from accel.passes._gemm_kernel import ConvSpec
from accel.pipeline import run_pipeline
from kernel_ir import kernel_forks

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-4, 1e-4


def _compile(model: torch.nn.Module, x: torch.Tensor) -> tuple[accel.CompiledModule, str]:
    """(accel.compile at opt_level 1, the IR after bufferization)."""
    with phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False, "opt_level": 1})
    return fn, str(next(p.ir for p in rec.phases if p.name == "bufferize"))


def _calls(ir: str, prefix: str) -> int:
    """Calls that replaced convs (not a kernel's calls of its own body, entry or parts)."""
    names = re.findall(rf"call @({prefix}\w+)\(", ir)
    return sum(re.search(r"_(body|entry|sentry|pack|pack_entry)(_part\d+)?$", n) is None
               for n in names)


# (batch, C, F, H=W, kernel, stride, padding, dilation, bias)
CASES = [
    (1, 32, 32, 14, 3, 1, 1, 1, False),  # ResNet 3x3: 2 x 8 filters x 6 positions (AVX2)
    (2, 16, 8, 12, 3, 1, 1, 1, True),  # 8 filters (were scalar loops), two images, bias
    (1, 3, 24, 30, 7, 2, 3, 1, True),  # stem: 7x7 stride 2 on 3 channels
    (1, 24, 40, 11, 3, 2, 1, 1, False),  # stride 2, F not a multiple of the filter block
    (1, 20, 12, 13, 3, 1, 2, 2, True),  # dilation 2
    (1, 64, 5, 9, 5, 3, 1, 1, False),  # 5 filters, stride 3: 9 positions < one tile
    (1, 32, 48, 16, 1, 2, 0, 1, False),  # 1x1 stride 2 below the GEMM's 2^18 MACs: direct
    (3, 24, 40, 4, 3, 1, 1, 1, True),  # 4x4 maps, 3 images: filter-block-major items
    (1, 3, 16, 36, 9, 3, 1, 1, True),  # 81 taps: a loop over the window's rows
    (2, 3, 20, 40, 16, 16, 0, 1, True),  # ViT's patch embedding (256 taps), 2 images
]


@pytest.mark.parametrize("n,c,f,hw,k,s,p,d,bias", CASES)
def test_direct_conv_matches_eager(n, c, f, hw, k, s, p, d, bias):
    torch.manual_seed(0)
    model = torch.nn.Conv2d(c, f, k, stride=s, padding=p, dilation=d, bias=bias).eval()
    x = torch.randn(n, c, hw, hw)
    fn, ir = _compile(model, x)
    assert _calls(ir, "accel_dconv_") == 1
    assert "linalg.conv_2d_nchw_fchw" not in ir and "accel_conv_" not in ir  # no im2col
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


def test_large_windows_loop_over_rows(ctx):
    """A window of more than ROLL_TAPS taps runs a loop over its rows, its columns unrolled
    (ViT's 16x16 patches: 256 taps unrolled made 3 s of an 8.5 s compile); smaller ones
    unroll every tap. Counted as the FMAs in the kernel's text."""
    from accel.ir import Module
    from accel.passes._conv_kernel import ROLL_TAPS

    def fmas(k: int) -> int:
        mlir = _CONV_MLIR.replace("24x3x3", f"24x{k}x{k}").replace("x17x17", f"x{15 + k}x{15 + k}")
        module = Module.parse(mlir)
        run_pipeline(module, "builtin.module(accel-conv-kernels{vector-width=8 parallel=false})")
        return str(module).count("vector.fma")

    assert 3 * 3 <= ROLL_TAPS < 9 * 9
    assert fmas(9) == 9 * fmas(3) // 9  # 9 columns of one row, like the 9 taps of a 3x3
    assert fmas(5) == 25 * fmas(3) // 9


def test_pointwise_conv_is_a_gemm_on_the_input():
    """1x1, stride 1: the GEMM kernel reads the input itself (no im2col, no packing
    buffer of the conv's own)."""
    torch.manual_seed(0)
    model = torch.nn.Conv2d(48, 64, 1, bias=True).eval()
    x = torch.randn(2, 48, 10, 10)
    fn, ir = _compile(model, x)
    assert _calls(ir, "accel_pwconv_") == 1 and _calls(ir, "accel_dconv_") == 0
    assert "_im2col" not in ir
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


def test_strided_pointwise_conv_is_a_gather_and_a_gemm():
    """1x1 stride 2 (ResNet's downsample) above the GEMM thresholds: the strided positions
    are gathered, then the GEMM kernel runs (odd input: the last row and column unused),
    two images, a bias, BatchNorm after it."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(64, 96, 1, stride=2, bias=True),
                                torch.nn.BatchNorm2d(96)).eval()
    x = torch.randn(2, 64, 15, 15)
    fn, ir = _compile(model, x)
    assert _calls(ir, "accel_pwconv_") == 1 and _calls(ir, "accel_dconv_") == 0
    assert "_im2col" not in ir and "linalg.conv_2d_nchw_fchw" not in ir
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


def test_patchify_conv_beyond_max_taps_keeps_im2col_and_gemm():
    """CLIP's 32x32 stride-32 patch embedding (1024 taps) is no direct kernel (its unrolled
    body cost 60 s of LLVM -O3 in CLIP): above `max-taps` (256) the conv takes im2col + the
    GEMM kernel, and still matches eager."""
    torch.manual_seed(0)
    model = torch.nn.Conv2d(3, 32, 32, stride=32, bias=False).eval()
    x = torch.randn(1, 3, 64, 64)
    fn, ir = _compile(model, x)
    assert _calls(ir, "accel_dconv_") == 0 and "linalg.conv_2d_nchw_fchw" not in ir
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


# (batch, C, H=W, kernel, stride, padding, dilation)
DEPTHWISE = [
    (1, 32, 20, 3, 1, 1, 1),  # MobileNet: 20 = 2 full blocks of 8 + a masked 4
    (2, 48, 17, 3, 2, 1, 1),  # stride 2: shuffles, 9 outputs = 8 + a masked 1
    (1, 64, 13, 5, 2, 2, 1),  # 5x5 stride 2: 7 outputs, one masked block per row
    (1, 64, 18, 3, 1, 2, 2),  # dilation 2
]


@pytest.mark.parametrize("n,c,hw,k,s,p,d", DEPTHWISE)
def test_depthwise_conv_matches_eager(n, c, hw, k, s, p, d):
    """groups = channels, with BatchNorm and ReLU6 after it (MobileNetV2): the depthwise
    kernel, and the epilogue still fused (one nest after the call)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(c, c, k, stride=s, padding=p, dilation=d, groups=c, bias=False),
        torch.nn.BatchNorm2d(c), torch.nn.ReLU6()).eval()
    with torch.no_grad():  # non-trivial BatchNorm statistics
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    x = torch.randn(n, c, hw, hw)
    fn, ir = _compile(model, x)
    assert _calls(ir, "accel_dwconv_") == 1 and "linalg.depthwise" not in ir
    main = ir.split("func.func private", 1)[0]
    assert main.count("memref.alloc()") <= 6  # BN + ReLU6 fused (unfused: 18 buffers)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


def test_threaded_depthwise_matches_eager(threads):
    threads(2)
    torch.manual_seed(0)
    model = torch.nn.Conv2d(96, 96, 3, stride=2, padding=1, groups=96).eval()
    x = torch.randn(2, 96, 111, 111)  # 2*96*56*56*9 = 10.8M MACs: threaded
    fn, ir = _compile(model, x)
    assert _calls(ir, "accel_dwconv_") == 1 and "call @accel_parallel_for" in ir
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


def test_threaded_direct_conv_matches_eager(threads):
    """Above parallel-min-flops (2^20 MACs) the (image, filter block, tile) items run on
    2 threads: the last tile of each block overlaps the one before it."""
    threads(2)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 40, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(40, 32, 3, padding=1)).eval()
    x = torch.randn(1, 32, 34, 34)  # 32*40*9*34*34 = 13.3M MACs each
    fn, ir = _compile(model, x)
    assert _calls(ir, "accel_dconv_") == 2 and kernel_forks(ir) == 2
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


def test_threaded_stored_output_matches_eager(threads):
    """Bias-free convs (a zero-filled fresh output: the kernel stores its tiles, the fill
    goes) on 2 threads, 2 images, BatchNorm + ReLU and a residual add after them: the 8 x 8
    write-back of one item must not touch another item's positions."""
    threads(2)
    torch.manual_seed(0)
    conv = torch.nn.Sequential(torch.nn.Conv2d(24, 40, 3, padding=1, bias=False),
                               torch.nn.BatchNorm2d(40), torch.nn.ReLU(),
                               torch.nn.Conv2d(40, 24, 3, padding=1, bias=False)).eval()
    torch.nn.init.uniform_(conv[1].running_var, 0.5, 2.0)

    class Block(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(conv(x) + x)

    x = torch.randn(2, 24, 23, 23)  # 529 positions: tiles of 6, an overlapping last one
    fn, ir = _compile(Block().eval(), x)
    assert _calls(ir, "accel_dconv_") == 2 and kernel_forks(ir) == 2
    with torch.no_grad():
        torch.testing.assert_close(fn(x), Block()(x), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("c,f,k", [(72, 40, 3),  # 648 panel rows in 3 runs of 216; 40
                                   # filters of a larger block: zeros past F
                                   (3, 96, 3)])  # 27 panel rows: no multiple of 8 divides
def test_shared_panel_matches_eager(threads, monkeypatch, c, f, k):
    """With more threads than filter blocks, a large filter's blocks are packed once into a
    shared panel by a parallel pack (runs of panel rows), and the items read it; with
    fewer, each thread packs its own. Both give eager's result, at 1 to 16 threads (the
    size floor lowered so that small convs take the shared path here)."""
    from accel.passes import _conv_shared_panel

    monkeypatch.setattr(_conv_shared_panel, "SHARED_MIN_FLOATS", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(c, f, k, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(2, c, 40, 40)  # above parallel-min-flops
    fn, ir = _compile(model, x)
    assert _calls(ir, "accel_dconv_") == 1 and kernel_forks(ir) == 1
    assert "_pack_entry" in ir and "@accel_num_threads" in ir
    with torch.no_grad():
        want = model(x)
        for count in (1, 2, 4, 16):  # 16: more threads than blocks with any vector width
            threads(count)
            torch.testing.assert_close(fn(x), want, rtol=RTOL, atol=ATOL)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler for the AOT library")
def test_shared_panel_in_the_aot_library(tmp_path: Path, monkeypatch):
    """The AOT library's kernels read its own thread count (0 until its first parallel
    call, then ACCEL_NUM_THREADS): the first call packs per thread, the later ones share
    the panel (16 threads, more than the filter blocks); both give eager's result."""
    from accel.passes import _conv_shared_panel

    monkeypatch.setattr(_conv_shared_panel, "SHARED_MIN_FLOATS", 0)
    monkeypatch.setenv("ACCEL_NUM_THREADS", "16")
    torch.manual_seed(0)
    model = torch.nn.Conv2d(72, 40, 3, padding=1).eval()
    x = torch.randn(2, 72, 40, 40)
    fn = accel.compile(model, (x,), options={"cache": False, "opt_level": 1, "aot": True,
                                             "aot_name": "conv_shared",
                                             "output_folder": str(tmp_path)})
    with torch.no_grad():
        want = model(x).numpy()
    for _ in range(2):
        out = fn.aot_library.call(x.numpy())
        np.testing.assert_allclose(out[0] if isinstance(out, tuple) else out, want,
                                   rtol=RTOL, atol=ATOL)


def test_small_filters_pack_per_thread():
    """Below SHARED_MIN_FLOATS a filter block costs a thread less to pack than sharing
    does: no shared panel, no read of the thread count (ResNet-18: only the 512-channel
    3x3 layers share)."""
    from accel.passes._conv_shared_panel import shares_panel

    layer4 = ConvSpec(n=1, c=512, h=9, w=9, f=512, kh=3, kw=3, oh=7, ow=7)
    fb = choose_conv_tile(layer4, 16).fb  # 64: 295K floats a block
    assert shares_panel(layer4, fb)
    assert not shares_panel(ConvSpec(n=1, c=256, h=16, w=16, f=256, kh=3, kw=3, oh=14, ow=14),
                            fb)


def test_torch_compile_backend():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
                                torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 1)).eval()
    x = torch.randn(2, 8, 16, 16)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="accel", options={"cache": False, "opt_level": 1})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)


_CONV_MLIR = """
func.func @conv(%x: memref<2x24x17x17xf32>, %w: memref<40x24x3x3xf32>,
                %o: memref<2x40x8x8xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>,
                            strides = dense<2> : vector<2xi64>}
    ins(%x, %w : memref<2x24x17x17xf32>, memref<40x24x3x3xf32>)
    outs(%o : memref<2x40x8x8xf32>)
  return
}
"""


@pytest.mark.parametrize("options", ["vector-width=16 parallel=false",
                                     "vector-width=16 parallel-min-flops=0",
                                     "vector-width=8 parallel-min-flops=0"])
def test_avx512_tile_runs_on_this_host(ctx, threads, options):
    """The AVX-512 tile (2 x 16 filters x 14 positions) is correct wherever it runs (LLVM
    splits its vectors on an AVX2 host); threaded too."""
    threads(2)
    from accel.ir import Module

    module = Module.parse(_CONV_MLIR)
    run_pipeline(module, f"builtin.module(accel-conv-kernels{{{options}}})")
    text = str(module)
    assert "linalg.conv" not in text
    assert ("vector<16xf32>" in text) == ("vector-width=16" in options)
    assert ("accel_parallel_for" in text) == ("parallel-min-flops=0" in options)
    compiled = accel.compile_mlir(text, {"cache": False, "opt_level": 1})  # the rest
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 24, 17, 17), dtype=np.float32)
    w = rng.standard_normal((40, 24, 3, 3), dtype=np.float32)
    o = rng.standard_normal((2, 40, 8, 8), dtype=np.float32)
    want = o + torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                          stride=2).numpy()
    compiled["conv"](x, w, o)  # accumulates into o, as the linalg op
    np.testing.assert_allclose(o, want, rtol=RTOL, atol=ATOL)


_CONV_STORE_MLIR = """
func.func @conv(%x: memref<2x24x17x17xf32>, %w: memref<40x24x3x3xf32>,
                %out: memref<2x40x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<2x40x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<2x40x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>,
                            strides = dense<2> : vector<2xi64>}
    ins(%x, %w : memref<2x24x17x17xf32>, memref<40x24x3x3xf32>)
    outs(%o : memref<2x40x8x8xf32>)
  memref.copy %o, %out : memref<2x40x8x8xf32> to memref<2x40x8x8xf32>
  return
}
"""


@pytest.mark.parametrize("store", [False, True])
def test_channel_blocks_match_torch(ctx, monkeypatch, store):
    """With channel blocks (CHANNEL_BLOCK_BYTES, off by default) a tile's sums wait in a
    vector scratch between blocks of input channels and only the last block writes O:
    24 channels in blocks of 14 (4096 bytes of 9 taps x 8 filters: 40 filters take the
    1 x 13 tile), the last one short; 5 tiles per item. So a conv whose zero fill went
    (`store`) may have blocks too."""
    from accel.ir import Module
    from accel.passes import _conv_kernel

    monkeypatch.setattr(_conv_kernel, "CHANNEL_BLOCK_BYTES", 4096)
    monkeypatch.setattr(_conv_kernel, "ITEMS", 8)
    module = Module.parse(_CONV_STORE_MLIR if store else _CONV_MLIR)
    run_pipeline(module, "builtin.module(accel-conv-kernels{vector-width=8})")
    text = str(module)
    assert re.search(r"scf\.for %arg\d+ = %c0 to %c24 step %c14", text)
    assert "linalg.fill" not in text  # the kernel stores (store) or adds into o
    compiled = accel.compile_mlir(text, {"cache": False, "opt_level": 1})
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 24, 17, 17), dtype=np.float32)
    w = rng.standard_normal((40, 24, 3, 3), dtype=np.float32)
    o = np.zeros((2, 40, 8, 8), dtype=np.float32) if not store else \
        np.full((2, 40, 8, 8), np.nan, dtype=np.float32)
    compiled["conv"](x, w, o)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=2)
    np.testing.assert_allclose(o, want.numpy(), rtol=RTOL, atol=ATOL)


def test_filter_major_on_small_maps_of_a_batch():
    """Items run filter block by filter block (each block's weights packed once, not once
    per image) where repacking costs more than rereading the images: a training batch's
    small maps, not one image or large maps."""
    tile = ConvTile(vl=16, fv=2, pt=4)
    layer4 = ConvSpec(n=8, c=128, h=4, w=4, f=128, kh=3, kw=3, oh=2, ow=2)
    assert filter_major(layer4, tile)
    assert not filter_major(replace(layer4, n=1), tile)  # one image: packed once anyway
    big = ConvSpec(n=8, c=16, h=66, w=66, f=16, kh=3, kw=3, oh=64, ow=64)
    assert not filter_major(big, tile)


def test_tile_choice():
    resnet = ConvSpec(n=1, c=64, h=58, w=58, f=64, kh=3, kw=3, oh=56, ow=56)
    assert choose_conv_tile(resnet, 8) == ConvTile(vl=8, fv=2, pt=6)  # 12 + 2 + 1 ymm
    assert choose_conv_tile(resnet, 16) == ConvTile(vl=16, fv=4, pt=6)  # 24 + 4 + 1 zmm
    assert choose_conv_tile(replace(resnet, f=32), 16) == ConvTile(vl=16, fv=2, pt=14)
    assert choose_conv_tile(replace(resnet, f=96), 16) == ConvTile(vl=16, fv=2, pt=14)
    few = ConvSpec(n=1, c=3, h=6, w=6, f=8, kh=3, kw=3, oh=2, ow=2)
    assert choose_conv_tile(few, 8) == ConvTile(vl=8, fv=1, pt=4)  # only 4 positions
    last = ConvSpec(n=1, c=512, h=9, w=9, f=512, kh=3, kw=3, oh=7, ow=7)
    assert choose_conv_tile(last, 8) == ConvTile(vl=8, fv=2, pt=5)  # 10 tiles, not 9 of 6
    assert choose_conv_tile(last, 16) == ConvTile(vl=16, fv=4, pt=5)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler for the AOT library")
def test_aot_for_x86_64_v4(tmp_path: Path):
    """device=x86-64-v4: the AOT library builds for AVX-512 (zmm registers) even on a host
    without it; it runs where the host has AVX-512."""
    torch.manual_seed(0)
    model = torch.nn.Conv2d(16, 32, 3, padding=1).eval()
    x = torch.randn(1, 16, 12, 12)
    fn = accel.compile(model, (x,), options={"cache": False, "opt_level": 1, "aot": True,
                                             "device": "x86-64-v4", "aot_name": "conv_v4",
                                             "output_folder": str(tmp_path)})
    libs = list(tmp_path.rglob("libconv_v4.so"))
    assert libs
    if shutil.which("objdump"):
        asm = subprocess.run(["objdump", "-d", str(libs[0])], capture_output=True, text=True,
                             check=True).stdout
        assert "%zmm" in asm
    with torch.no_grad():  # the JIT'd host code
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


def _conv_text(n: int, c: int, h: int, f: int, k: int, s: int, store: bool) -> str:
    oh = (h - k) // s + 1
    x, w, o = f"memref<{n}x{c}x{h}x{h}xf32>", f"memref<{f}x{c}x{k}x{k}xf32>", \
        f"memref<{n}x{f}x{oh}x{oh}xf32>"
    conv = (f"  linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>, strides = "
            f"dense<{s}> : vector<2xi64>}} ins(%x, %w : {x}, {w}) outs(%o : {o})")
    if not store:
        return f"func.func @conv(%x: {x}, %w: {w}, %o: {o}) {{\n{conv}\n  return\n}}"
    return "\n".join([
        f"func.func @conv(%x: {x}, %w: {w}, %out: {o}) {{",
        "  %zero = arith.constant 0.0 : f32",
        f"  %o = memref.alloc() : {o}",
        f"  linalg.fill ins(%zero : f32) outs(%o : {o})", conv,
        f"  memref.copy %o, %out : {o} to {o}", "  return", "}"])


@pytest.mark.parametrize("n,c,h,f,k,s", [
    (1, 16, 18, 64, 3, 1),  # AVX-512's 4 x 6 tile: both halves of each filter vector
    (2, 8, 17, 32, 3, 2),  # 2 x 14: positions in two groups of 8, two images
    (1, 16, 9, 80, 3, 1),  # 7x7 map (4 x 5 tiles), 80 filters: a partial filter block
    (1, 16, 30, 8, 3, 1),  # AVX2's 1 x 14 tile (8 filters): two groups of 8 positions
])
@pytest.mark.parametrize("store", [False, True])
@pytest.mark.parametrize("width", [16, 8])
def test_register_write_back_matches_torch(ctx, threads, n, c, h, f, k, s, store, width):
    """The write-back through 8 x 8 transposes for every tile shape (16 lanes: each
    accumulator's two halves; more than 8 positions: two groups), storing and adding,
    threaded; vector-width=16 runs here as LLVM splits it."""
    from accel.ir import Module

    threads(2)
    module = Module.parse(_conv_text(n, c, h, f, k, s, store))
    run_pipeline(module, f"builtin.module(accel-conv-kernels{{vector-width={width} "
                         f"parallel-min-flops=0}})")
    text = str(module)
    assert "linalg.conv" not in text
    assert ("vector.extract_strided_slice" in text) == (width == 16)
    compiled = accel.compile_mlir(text, {"cache": False, "opt_level": 1})
    rng = np.random.default_rng(c + f)
    x = rng.standard_normal((n, c, h, h), dtype=np.float32)
    w = rng.standard_normal((f, c, k, k), dtype=np.float32)
    oh = (h - k) // s + 1
    o = np.full((n, f, oh, oh), np.nan, dtype=np.float32) if store else \
        rng.standard_normal((n, f, oh, oh), dtype=np.float32)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                      stride=s).numpy() + (0 if store else o)
    compiled["conv"](x, w, o)
    np.testing.assert_allclose(o, want, rtol=RTOL, atol=ATOL)


def test_scalar_write_back_16_lanes_when_off(ctx, monkeypatch):
    from accel.ir import Module
    from accel.passes import _conv_kernel

    monkeypatch.setattr(_conv_kernel, "REGISTER_WRITE_BACK_16", False)
    module = Module.parse(_conv_text(1, 16, 18, 64, 3, 1, False))
    run_pipeline(module, "builtin.module(accel-conv-kernels{vector-width=16})")
    assert "vector.extract_strided_slice" not in str(module)  # no 8-filter halves
