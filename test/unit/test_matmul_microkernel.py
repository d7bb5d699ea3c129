"""`accel-matmul-microkernel`: packed GEMM kernels against numpy and eager PyTorch.

The pass is put into the CPU pipeline right after One-Shot Bufferize (where
docs/cpu-codegen.md says it goes) by patching `accel.host.pipelines.BUFFERIZE`; each case
checks
that it fired (a `call @accel_gemm_...` after bufferization) and compares with float64 numpy
at rtol=1e-4. Shapes cover exact multiples of the tiles, every kind of remainder (M, N, K
not multiples of MR, NR, KC, MC, NC; small cache tiles force several blocks), transposed
operands, batch_matmul and nn.Linear as `accel.import_torch` emits it, with the host's
vector width and the AVX2 (8 lanes) and SSE (4 lanes) variants.
"""

from __future__ import annotations

import re

import accel
import numpy as np
import pytest
from accel import phases
from accel.diagnostics import AccelError
from accel.host import pipelines as cpu
from accel.ir import Module
from accel.passes import lookup_pass
from accel.passes._gemm_kernel import Tiles
from accel.passes.matmul_microkernel import choose_tiles, host_tiles
from accel.pipeline import run_pipeline
from kernel_ir import kernel_forks

RTOL, ATOL = 1e-4, 1e-5
PASS = "accel-matmul-microkernel"


def _with_pass(monkeypatch: pytest.MonkeyPatch, options: str = "") -> str:
    spec = PASS + (f"{{{options}}}" if options else "")
    at = cpu.BUFFERIZE.index("func.func(tm-tensor-to-loops)") + 1
    monkeypatch.setattr(cpu, "BUFFERIZE", [*cpu.BUFFERIZE[:at], spec, *cpu.BUFFERIZE[at:]])
    return spec


def _compile(source: str | Module) -> tuple[accel.CompiledMLIR, int]:
    """(compiled module, kernel calls in the IR after bufferization)."""
    with phases.recording(keep_ir=True) as rec:
        compiled = accel.compile_mlir(source, {"cache": False})
    ir = next(p.ir for p in rec.phases if p.name == "bufferize")
    # A parallel kernel's entry calls its body: count only the calls that replaced matmuls.
    calls = re.findall(r"call @(accel_gemm_\w+)\(", str(ir))
    return compiled, sum(not name.endswith("_body") for name in calls)


def _matmul(m: int, n: int, k: int, *, ta: bool = False, tb: bool = False,
            batch: int = 0) -> str:
    a = f"{k}x{m}" if ta else f"{m}x{k}"
    b = f"{n}x{k}" if tb else f"{k}x{n}"
    c = f"{m}x{n}"
    if batch:
        a, b, c = (f"{batch}x{s}" for s in (a, b, c))
        d = ("d0, d3, d1" if ta else "d0, d1, d3", "d0, d2, d3" if tb else "d0, d3, d2",
             "d0, d1, d2")
        dims, name = "(d0, d1, d2, d3)", "linalg.batch_matmul"
    else:
        d = ("d2, d0" if ta else "d0, d2", "d1, d2" if tb else "d2, d1", "d0, d1")
        dims, name = "(d0, d1, d2)", "linalg.matmul"
    maps = ", ".join(f"affine_map<{dims} -> ({x})>" for x in d)
    return f"""
func.func @mm(%a: tensor<{a}xf32>, %b: tensor<{b}xf32>) -> tensor<{c}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{c}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{c}xf32>) -> tensor<{c}xf32>
  %r = {name} indexing_maps = [{maps}]
      ins(%a, %b : tensor<{a}xf32>, tensor<{b}xf32>) outs(%f : tensor<{c}xf32>) -> tensor<{c}xf32>
  return %r : tensor<{c}xf32>
}}"""


def _check(source: str, a: np.ndarray, b: np.ndarray, expected: np.ndarray) -> None:
    compiled, kernels = _compile(source)
    assert kernels == 1
    out = compiled.invoke("mm", a, b)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


def _rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (67, 73, 71), (128, 33, 257),
                                   (200, 300, 100), (16, 200, 250)])
@pytest.mark.parametrize("options", ["", "vector-width=8", "vector-width=4 kc=32 mc=24 nc=64",
                                     "kc=64 mc=48 nc=64", "direct=false"])
def test_matmul_matches_numpy(monkeypatch, m, n, k, options):
    _with_pass(monkeypatch, options)
    a, b = _rand(m, k), _rand(k, n)
    _check(_matmul(m, n, k), a, b, a.astype(np.float64) @ b)


def _bufferized(source: str, **options: object) -> tuple[accel.CompiledMLIR, str]:
    with phases.recording(keep_ir=True) as rec:
        compiled = accel.compile_mlir(source, {"cache": False, **options})
    return compiled, str(next(p.ir for p in rec.phases if p.name == "bufferize"))


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (28, 20, 64), (45, 37, 29)])
@pytest.mark.parametrize("options", ["", "vector-width=4", "vector-width=16"])
def test_unpacked_kernel_matches_numpy(monkeypatch, m, n, k, options):
    """Small matmuls get unpacked ("_d") kernels: static row/column remainders, masked lanes
    (vector-width=16 compiles AVX-512-shaped code; LLVM splits it on an AVX2 host). The
    zero fill before them goes: their accumulators start at zero ("_z")."""
    _with_pass(monkeypatch, options)
    a, b = _rand(m, k), _rand(k, n)
    compiled, ir = _bufferized(_matmul(m, n, k))
    assert re.search(rf"call @accel_gemm_{m}x{n}x{k}_nn_\w+_d_z\(", ir)
    assert "linalg.fill" not in ir
    np.testing.assert_allclose(compiled.invoke("mm", a, b), a.astype(np.float64) @ b,
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("m,n,k", [(8, 9, 1000), (3, 5, 300), (16, 2, 4099)])
def test_dot_kernel_matches_numpy(monkeypatch, m, n, k):
    """A tiny output over a long reduction with B as N x K (a convolution's weight
    gradient) gets the dot-product ("_dot") kernel: 2 x 4 tiles with remainders, the
    last K % VL through a masked load."""
    _with_pass(monkeypatch)
    a, b = _rand(m, k), _rand(n, k)
    compiled, ir = _bufferized(_matmul(m, n, k, tb=True))
    assert re.search(rf"call @accel_gemm_{m}x{n}x{k}_nt_\w+_dot\(", ir)
    np.testing.assert_allclose(compiled.invoke("mm", a, b), a.astype(np.float64) @ b.T,
                               rtol=RTOL, atol=ATOL)


def test_unpacked_kernel_copies_conflicting_rows(monkeypatch):
    """B rows 4 KiB apart (a slice of a 64 x 1024 tensor) are copied to a stack panel."""
    _with_pass(monkeypatch)
    source = """
func.func @mm(%a: tensor<64x64xf32>, %bfull: tensor<64x1024xf32>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %b = tensor.extract_slice %bfull[0, 512] [64, 64] [1, 1]
      : tensor<64x1024xf32> to tensor<64x64xf32>
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>)
                     outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}"""
    a, bfull = _rand(64, 64), _rand(64, 1024)
    compiled, ir = _bufferized(source)
    assert re.search(r"call @accel_gemm_64x64x64_nn_\w+_dc_z\(", ir)
    np.testing.assert_allclose(compiled.invoke("mm", a, bfull),
                               a.astype(np.float64) @ bfull[:, 512:576], rtol=RTOL, atol=ATOL)


def _score_tile(m: int, n: int, k: int, scale: str) -> str:
    """Attention's score tile as the fused attention leaves it: `S = (A @ B) <scale>`,
    then its rows' maxima into a -inf fill; returns (S, maxima)."""
    return f"""
func.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>)
    -> (tensor<{m}x{n}xf32>, tensor<{m}xf32>) {{
  %z = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = arith.constant 3.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %p = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>)
                     outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %e2 = tensor.empty() : tensor<{m}x{n}xf32>
  %sc = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}}
      ins(%p : tensor<{m}x{n}xf32>) outs(%e2 : tensor<{m}x{n}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %r = arith.{scale} %x, %s : f32
    linalg.yield %r : f32
  }} -> tensor<{m}x{n}xf32>
  %e3 = tensor.empty() : tensor<{m}xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<{m}xf32>) -> tensor<{m}xf32>
  %mx = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}}
      ins(%sc : tensor<{m}x{n}xf32>) outs(%m0 : tensor<{m}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %o : f32
    linalg.yield %r : f32
  }} -> tensor<{m}xf32>
  return %sc, %mx : tensor<{m}x{n}xf32>, tensor<{m}xf32>
}}"""


@pytest.mark.parametrize("m,n,k", [(128, 128, 64), (100, 200, 64), (37, 45, 29)])
@pytest.mark.parametrize("options", ["", "vector-width=4", "vector-width=8", "vector-width=16"])
def test_score_tile_epilogue_matches_numpy(monkeypatch, m, n, k, options):
    """An unpacked kernel computes attention's scaled score tile and its row maxima from
    its accumulators ("_zd...r": no fill, no scale pass, no row-max pass), bit-exact: the
    same f32 operations, and maximumf is associative. Rows past a multiple of the vector
    width, masked last columns, and a NaN (which makes its row's maximum NaN) included;
    vector-width=16 compiles the AVX-512 shuffles even on an AVX2 host."""
    _with_pass(monkeypatch, options)
    a, b = _rand(m, k), _rand(k, n)
    a[m // 2, 3] = np.nan
    # (No x / 3 -> x * (1/3) rewrite: the kernel must keep the division itself.)
    compiled, ir = _bufferized(_score_tile(m, n, k, "divf"),
                               disable_unsafe_math_canonicalizations=True)
    assert re.search(rf"call @accel_gemm_{m}x{n}x{k}_nn_\w+_d_zd40400000r\(", ir), ir
    assert "linalg.fill" not in ir and "maximumf" not in ir.split("func.func private")[0]
    scores, maxima = compiled.invoke("mm", a, b)
    expected = np.float32(a @ b.astype(np.float64)) / np.float32(3.0)
    np.testing.assert_allclose(scores, expected, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(maxima, np.max(scores, axis=1))  # NaN row included
    assert np.isnan(maxima[m // 2]) and not np.isnan(np.delete(maxima, m // 2)).any()


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("options", ["kc=64 mc=48 nc=64 direct=false",
                                     "kc=64 mc=48 nc=64 direct=false parallel-min-flops=0"])
def test_packed_zero_start_matches_numpy(monkeypatch, accumulate, options):
    """A packed kernel after a zero fill starts from zero (`_z`: its first K block stores
    C, the fill goes); onto a C that holds values (`C_in + A @ B`) it adds in every block.
    K spans five KC blocks, M and N end in partial tiles, serial and split across threads."""
    _with_pass(monkeypatch, options)
    m, n, k = 67, 75, 300
    init = "%c" if accumulate else "%f"
    source = f"""
func.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>, %c: tensor<{m}x{n}xf32>)
    -> tensor<{m}x{n}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>)
                     outs({init} : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}"""
    a, b, c = _rand(m, k), _rand(k, n), _rand(m, n) + 3.0
    compiled, ir = _bufferized(source)
    calls = re.findall(rf"call @(accel_gemm_{m}x{n}x{k}_nn_\w+)\(", ir)
    assert calls and all(name.removesuffix("_body").endswith("_z") != accumulate
                         for name in calls), calls
    assert accumulate or "linalg.fill" not in ir.split("func.func private")[0]
    expected = a.astype(np.float64) @ b + (c if accumulate else 0)
    np.testing.assert_allclose(compiled.invoke("mm", a, b, c), expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("residual", [False, True])
def test_additive_epilogue_matches_numpy(monkeypatch, residual):
    """`C = 0; C += A @ B^T; D = C + X` (a bias row, or a full residual) runs as `C = X;
    C += A @ B^T`: the zero fill and the add go, the result is the same."""
    _with_pass(monkeypatch)
    m, n, k = 300, 136, 120
    x_type, x_map = (f"tensor<{m}x{n}xf32>", "(d0, d1)") if residual else \
        (f"tensor<{n}xf32>", "(d1)")
    source = f"""
func.func @mm(%a: tensor<{m}x{k}xf32>, %w: tensor<{n}x{k}xf32>, %x: {x_type})
    -> tensor<{m}x{n}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                      affine_map<(d0, d1, d2) -> (d1, d2)>,
                                      affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%a, %w : tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>)
      outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %e2 = tensor.empty() : tensor<{m}x{n}xf32>
  %d = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                         affine_map<(d0, d1) -> {x_map}>,
                                         affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}}
      ins(%r, %x : tensor<{m}x{n}xf32>, {x_type}) outs(%e2 : tensor<{m}x{n}xf32>) {{
  ^bb0(%c: f32, %v: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    linalg.yield %s : f32
  }} -> tensor<{m}x{n}xf32>
  return %d : tensor<{m}x{n}xf32>
}}"""
    a, w = _rand(m, k), _rand(n, k)
    x = _rand(m, n) if residual else _rand(n)
    compiled, ir = _bufferized(source)
    main = ir.split("func.func private")[0]
    assert "call @accel_gemm" in main and "linalg.fill" not in main and "arith.addf" not in main
    np.testing.assert_allclose(compiled.invoke("mm", a, w, x),
                               a.astype(np.float64) @ w.T + x, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
def test_transposed_operands(monkeypatch, ta, tb):
    _with_pass(monkeypatch, "kc=64 mc=48 nc=64")
    m, n, k = 70, 90, 110
    a, b = _rand(*((k, m) if ta else (m, k))), _rand(*((n, k) if tb else (k, n)))
    expected = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
    _check(_matmul(m, n, k, ta=ta, tb=tb), a, b, expected)


@pytest.mark.parametrize("tb", [False, True])
def test_batch_matmul(monkeypatch, tb):
    _with_pass(monkeypatch, "kc=64 mc=48 nc=64")
    batch, m, n, k = 3, 67, 45, 90
    a, b = _rand(batch, m, k), _rand(*((batch, n, k) if tb else (batch, k, n)))
    expected = a.astype(np.float64) @ (b.transpose(0, 2, 1) if tb else b)
    _check(_matmul(m, n, k, tb=tb, batch=batch), a, b, expected)


def test_large_odd_matmul(monkeypatch):
    """Several KC/MC blocks with the host's own tiles and remainders in every dim (positive
    inputs: with K = 1001 a signed sum's cancellation exceeds rtol in f32 whatever the order)."""
    _with_pass(monkeypatch)
    m, n, k = 1000, 999, 1001
    a, b = np.abs(_rand(m, k)), np.abs(_rand(k, n))
    _check(_matmul(m, n, k), a, b, a.astype(np.float64) @ b)


def test_linear_mlp_matches_eager(monkeypatch):
    """nn.Linear as torch-mlir emits it (transposed weight copy, fill, matmul, bias add)."""
    torch = pytest.importorskip("torch")
    _with_pass(monkeypatch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(96, 130), torch.nn.ReLU(),
                                torch.nn.Linear(130, 70)).eval()
    x = torch.randn(50, 96)
    module = accel.import_torch(model, (x,))
    compiled, kernels = _compile(module)
    assert kernels == 2
    out = compiled.invoke("main", x.numpy())
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


def test_small_and_non_f32_matmuls_untouched(monkeypatch):
    _with_pass(monkeypatch)
    assert _compile(_matmul(16, 16, 16))[1] == 0  # below direct-min-flops (2^13)
    assert _compile(_matmul(4, 512, 512))[1] == 0  # below min-size
    assert _compile(_matmul(64, 64, 64).replace("f32", "f64"))[1] == 0


def test_choose_tiles_fits_registers_and_caches():
    avx2 = choose_tiles(8, 32 << 10, 512 << 10, 8 << 20)
    assert avx2 == Tiles(vl=8, mr=6, nr=16, kc=256, mc=252, nc=2048)
    avx512 = choose_tiles(16, 48 << 10, 1 << 20, 32 << 20)
    assert avx512 == Tiles(vl=16, mr=12, nr=32, kc=192, mc=672, nc=4096)
    for t in (avx2, avx512, host_tiles()):
        registers = 32 if t.vl == 16 else 16
        assert t.mr * t.nr // t.vl + t.nr // t.vl + 1 <= registers
        assert t.kc % t.ku == 0 and t.mc % t.mr == 0 and t.nc % t.nr == 0


def test_bad_options(ctx):
    assert lookup_pass(PASS) is not None
    with pytest.raises(AccelError, match="vector-width must be 0, 4, 8 or 16"):
        run_pipeline(Module.parse("module {}"), f"builtin.module({PASS}{{vector-width=3}})")


# -- multi-threaded kernels (accel_parallel_for, python/accel/host/parallel.py) ----------
def _parallel_ir(source: str) -> str:
    with phases.recording(keep_ir=True) as rec:
        accel.compile_mlir(source, {"cache": False})
    return str(next(p.ir for p in rec.phases if p.name == "bufferize"))


@pytest.mark.parametrize("m,n,k,ta,tb,batch", [
    (67, 73, 71, False, False, 0),  # split over N (N > M), remainders everywhere
    (200, 30, 100, False, False, 0),  # split over M
    (16, 200, 250, False, False, 0),  # tall-skinny: only N has several tiles
    (90, 70, 110, True, True, 0),
    (70, 90, 110, False, True, 0),
    (67, 45, 90, False, False, 3),  # batch: items span batch indices
    (40, 45, 90, False, True, 2),
])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_parallel_kernels_match_numpy(monkeypatch, threads, m, n, k, ta, tb, batch, count):
    _with_pass(monkeypatch, "kc=64 mc=24 nc=64 parallel-min-flops=0")
    threads(count)
    a = _rand(*((batch,) if batch else ()), *((k, m) if ta else (m, k)))
    b = _rand(*((batch,) if batch else ()), *((n, k) if tb else (k, n)))
    expected = ((a.swapaxes(-1, -2) if ta else a).astype(np.float64)
                @ (b.swapaxes(-1, -2) if tb else b))
    source = _matmul(m, n, k, ta=ta, tb=tb, batch=batch)
    if count == 1:
        assert "accel_parallel_for" in _parallel_ir(source)
    _check(source, a, b, expected)


def test_parallel_only_above_threshold(monkeypatch):
    _with_pass(monkeypatch)
    assert "accel_parallel_for" in _parallel_ir(_matmul(256, 256, 256))
    assert "accel_parallel_for" not in _parallel_ir(_matmul(64, 64, 64))  # < 2^20 MACs
    monkeypatch.undo()
    _with_pass(monkeypatch, "parallel=false")
    assert "accel_parallel_for" not in _parallel_ir(_matmul(256, 256, 256))


@pytest.mark.parametrize("count", [1, 2, 3])
def test_parallel_large_odd_matmul(monkeypatch, threads, count):
    """The host's tiles, default threshold, remainders in every dim, each thread count."""
    _with_pass(monkeypatch)
    threads(count)
    m, n, k = 515, 333, 257
    a, b = np.abs(_rand(m, k)), np.abs(_rand(k, n))
    _check(_matmul(m, n, k), a, b, a.astype(np.float64) @ b)


def test_choose_split():
    from accel.passes._gemm_kernel import ITEM_FLOOR_MACS, GemmSpec, choose_split

    t = Tiles(vl=16, mr=12, nr=32, kc=192, mc=672, nc=4096)

    def spec(m, n, k, batch=0):
        return GemmSpec(m=m, n=n, k=k, a_type="", b_type="", c_type="", batch=batch)

    big = choose_split(spec(1024, 1024, 1024), t)
    assert (big.dim, big.group, big.per, big.items) == ("m", 1, 86, 86)
    skinny = choose_split(spec(32, 4096, 1024), t)
    assert skinny.dim == "n" and skinny.items >= 2
    assert choose_split(spec(64, 64, 128), t) is None  # 2^19 MACs: below 2^20, serial
    # 2^21 MACs: threaded, but in items of >= 2^19 MACs (tiles of 12 rows: 3 per item), so
    # a many-core machine wakes 4 threads for it, not all of them.
    small = choose_split(spec(128, 128, 128), t)
    assert (small.dim, small.group, small.items) == ("m", 3, 4)
    assert small.group * t.mr * 128 * 128 >= ITEM_FLOOR_MACS
    batched = choose_split(spec(64, 64, 512, batch=8), t, 0)
    assert batched.items == batched.per * 8


def test_two_parallel_kernels_in_one_model():
    """Every parallel kernel's text declares accel_parallel_for, the module once (a second
    kernel of another shape failed to parse: 'does not reference a valid function')."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).eval()
    x = torch.randn(64, 784)
    with phases.recording() as rec:
        fn = accel.compile(model, (x,), options={"cache": False})
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)
    bufferized = next(p.ir for p in rec.phases if p.name == "bufferize")
    assert bufferized.count("func.func private @accel_parallel_for") == 1
    assert bufferized.count("call @accel_parallel_for") >= 2


# -- convolutions: im2col + the GEMM kernel -------------------------------------------------
def _conv_ir(source: Module) -> tuple[accel.CompiledMLIR, str]:
    """(compiled module, the IR after bufferization)."""
    with phases.recording(keep_ir=True) as rec:
        compiled = accel.compile_mlir(source, {"cache": False})
    return compiled, str(next(p.ir for p in rec.phases if p.name == "bufferize"))


def _conv_call_count(ir: str) -> int:
    """Calls that replaced convs (a threaded im2col's entry calls `@<conv>_im2col`: not
    counted)."""
    calls = re.findall(r"call @(accel_conv_\w+)\(", ir)
    return sum(not name.endswith("_im2col") for name in calls)


def _conv_calls(source: Module) -> tuple[accel.CompiledMLIR, int]:
    compiled, ir = _conv_ir(source)
    return compiled, _conv_call_count(ir)


@pytest.mark.parametrize("n,c,h,f,k,stride,pad,dil", [
    (1, 64, 20, 64, 3, 1, 1, 1),  # ResNet-style 3x3, pad 1
    (1, 32, 30, 48, 3, 2, 1, 1),  # stride 2
    (2, 64, 20, 40, 1, 1, 0, 1),  # 1x1, two images
    (1, 24, 33, 37, 3, 1, 2, 2),  # dilation 2
    (3, 17, 21, 29, 5, 2, 1, 1),  # channels not multiples of the tiles, 5x5
    (1, 16, 24, 32, 3, (1, 2), 1, (2, 1)),  # different strides/dilations per axis
])
@pytest.mark.parametrize("options,threaded_im2col", [
    ("", False),  # these im2cols are below IM2COL_PARALLEL_MIN (2^18 copies): serial
    ("kc=64 mc=24 nc=64 parallel-min-flops=0", False),  # threaded GEMM, serial im2col
    ("kc=64 mc=24 nc=64 parallel-min-flops=0 im2col-parallel-min=0", True),  # both threaded
    ("parallel=false im2col-parallel-min=0", False),  # parallel=false: nothing threaded
])
def test_conv2d_matches_torch(monkeypatch, n, c, h, f, k, stride, pad, dil, options,
                              threaded_im2col):
    """F.conv2d as torch-mlir emits it (explicit pad into a bigger buffer, fill with the
    bias broadcast, linalg.conv_2d_nchw_fchw) becomes one im2col + GEMM call."""
    torch = pytest.importorskip("torch")
    _with_pass(monkeypatch, options)
    if "parallel=false" in options:  # the pad and bias nests (2^16+ stores) stay serial too
        monkeypatch.setattr(cpu, "PARALLEL_LOOPS", "accel-parallelize-loops{enabled=false}")
    torch.manual_seed(0)
    x, w, b = torch.randn(n, c, h, h), torch.randn(f, c, k, k), torch.randn(f)

    def conv(x):
        return torch.nn.functional.conv2d(x, w, b, stride=stride, padding=pad, dilation=dil)

    compiled, ir = _conv_ir(accel.import_torch(conv, (x,)))
    assert _conv_call_count(ir) == 1
    assert ("_im2col_entry" in ir) == threaded_im2col
    decls = ir.count("func.func private @accel_parallel_for")  # GEMM and im2col: one
    assert decls == 0 if "parallel=false" in options else decls <= 1
    np.testing.assert_allclose(compiled.invoke("main", x.numpy()), conv(x).numpy(),
                               rtol=RTOL, atol=1e-4)


def test_small_conv_untouched(monkeypatch):
    torch = pytest.importorskip("torch")
    _with_pass(monkeypatch)
    torch.manual_seed(0)
    x, w = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)

    def conv(x):
        return torch.nn.functional.conv2d(x, w, padding=1)

    compiled, calls = _conv_calls(accel.import_torch(conv, (x,)))
    assert calls == 0
    np.testing.assert_allclose(compiled.invoke("main", x.numpy()), conv(x).numpy(),
                               rtol=RTOL, atol=1e-4)


# -- threaded im2col (`im2col-parallel-min`, IM2COL_PARALLEL_MIN copies per image) ----------
_SERIAL_GEMM = "parallel-min-flops=1099511627776"  # 2^40: no GEMM here is threaded


@pytest.mark.parametrize("n,c,h,f,k,stride,pad,dil", [
    (1, 64, 20, 64, 3, 1, 1, 1),
    (2, 17, 21, 29, 5, 2, 1, 1),  # two images
    (1, 16, 24, 32, 3, (1, 2), 1, (2, 1)),
])
@pytest.mark.parametrize("gemm", [_SERIAL_GEMM, "parallel-min-flops=0"],
                         ids=["serial-gemm", "parallel-gemm"])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_parallel_im2col_matches_torch(monkeypatch, threads, n, c, h, f, k, stride, pad, dil,
                                       gemm, count):
    """im2col-parallel-min=0: one row of cols per item (rows not a multiple of the thread
    count). With a serial GEMM the conv's text brings the module's only declaration of
    accel_parallel_for; with a parallel one the GEMM's does and the conv's is dropped."""
    torch = pytest.importorskip("torch")
    _with_pass(monkeypatch, f"{gemm} im2col-parallel-min=0")
    threads(count)
    torch.manual_seed(0)
    x, w, b = torch.randn(n, c, h, h), torch.randn(f, c, k, k), torch.randn(f)

    def conv(x):
        return torch.nn.functional.conv2d(x, w, b, stride=stride, padding=pad, dilation=dil)

    compiled, ir = _conv_ir(accel.import_torch(conv, (x,)))
    assert _conv_call_count(ir) == 1 and "_im2col_entry" in ir
    assert ir.count("func.func private @accel_parallel_for") == 1
    assert ir.count("call @accel_parallel_for") == (1 if gemm == _SERIAL_GEMM else 2)
    np.testing.assert_allclose(compiled.invoke("main", x.numpy()), conv(x).numpy(),
                               rtol=RTOL, atol=1e-4)


def _conv_memref(n: int, c: int, h: int, f: int, k: int, name: str = "conv") -> str:
    """`@name`: a stride-1 conv on an already padded N x C x H x H input."""
    o = h - k + 1
    x, w, y = f"{n}x{c}x{h}x{h}", f"{f}x{c}x{k}x{k}", f"{n}x{f}x{o}x{o}"
    return f"""
func.func @{name}(%x: memref<{x}xf32>, %w: memref<{w}xf32>, %o: memref<{y}xf32>) {{
  linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>,
                             strides = dense<1> : vector<2xi64>}}
    ins(%x, %w : memref<{x}xf32>, memref<{w}xf32>) outs(%o : memref<{y}xf32>)
  return
}}"""


def _run_pass(source: str, options: str = "") -> str:
    spec = PASS + (f"{{{options}}}" if options else "")
    module = Module.parse(f"module {{{source}}}")
    run_pipeline(module, f"builtin.module({spec})")
    return str(module)


def test_parallel_im2col_only_above_threshold(ctx):
    """The default threshold: the ResNet layer's im2col (576 x 3136 copies) is threaded, a
    576 x 400 one (< 2^18) is not; parallel=false threads none."""
    resnet = _conv_memref(1, 64, 58, 64, 3)
    assert "_im2col_entry" in _run_pass(resnet)
    assert "_im2col_entry" not in _run_pass(_conv_memref(1, 64, 22, 64, 3))
    assert "_im2col_entry" not in _run_pass(resnet, "parallel=false")
    assert "_im2col_entry" not in _run_pass(resnet, "im2col-parallel-min=2000000")
    with pytest.raises(AccelError, match="sizes must not be negative"):
        _run_pass(resnet, "im2col-parallel-min=-1")


@pytest.mark.parametrize("gemm", [_SERIAL_GEMM, ""], ids=["serial-gemm", "parallel-gemm"])
def test_parallel_im2col_declared_once(ctx, gemm):
    """Several threaded im2cols (two functions, two shapes, one shape twice) and threaded
    GEMMs in one module: one declaration of accel_parallel_for, and the module verifies."""
    source = (_conv_memref(1, 64, 58, 64, 3, "a") + _conv_memref(2, 32, 66, 48, 3, "b")
              + _conv_memref(1, 64, 58, 64, 3, "c"))
    out = _run_pass(source, gemm)
    assert out.count("func.func private @accel_parallel_for") == 1
    assert out.count("_im2col_entry(") == 2  # one threaded im2col per conv shape
    gemms = 0 if gemm else 2
    assert out.count("call @accel_parallel_for") == 2 + gemms


def test_parallel_conv_model_matches_eager(threads, monkeypatch):
    """The default pipeline and thresholds on two ResNet-style convs (both im2cols and both
    GEMMs threaded), at 2 threads; items of 21 rows of cols (IM2COL_ITEM_MIN / 1600
    columns), so the last item of 288 and of 576 rows is a partial one. (Without
    accel-conv-kernels, which would take these convs first: test_conv_kernels.py.)"""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(cpu, "CONV_KERNELS", "accel-conv-kernels-off")
    threads(2)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(64, 64, 3, padding=1)).eval()
    x = torch.randn(1, 32, 40, 40)
    with phases.recording() as rec:
        fn = accel.compile(model, (x,), options={"cache": False})
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=1e-4)
    bufferized = next(p.ir for p in rec.phases if p.name == "bufferize")
    assert bufferized.count("func.func private @accel_parallel_for") == 1
    assert bufferized.count("_im2col_entry(") == 2
    assert kernel_forks(bufferized) == 4  # the ReLU + padding nest may fork too


def test_im2col_split():
    from accel.passes._gemm_kernel import ConvSpec, im2col_split

    resnet = ConvSpec(n=1, c=64, h=58, w=58, f=64, kh=3, kw=3, oh=56, ow=56)
    group, items = im2col_split(resnet)
    assert group * 56 * 56 >= 1 << 15 and (items - 1) * group < 64 * 9 <= items * group
    assert im2col_split(ConvSpec(n=1, c=3, h=10, w=10, f=8, kh=3, kw=3, oh=8, ow=8)) is None


# -- grouped convolutions (linalg.conv_2d_ngchw_gfchw): an im2col + GEMM per group ----------
@pytest.mark.parametrize("n,c,f,groups,stride,pad,dil", [
    (1, 64, 64, 4, 1, 1, 1),  # ResNeXt-like: 16 channels per group
    (2, 32, 64, 2, 2, 1, 1),  # batch, stride, F/G != C/G
    (1, 48, 48, 3, 1, 2, 2),  # dilation
])
def test_grouped_conv_matches_torch(n, c, f, groups, stride, pad, dil):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    model = torch.nn.Conv2d(c, f, 3, stride=stride, padding=pad, dilation=dil,
                            groups=groups).eval()
    bufferized = _conv_matches_eager(model, torch.randn(n, c, 30, 30))
    assert "linalg.conv_2d_ngchw_gfchw" not in bufferized
    assert bufferized.count("call @accel_conv_") == 1 and "call @accel_gemm_" in bufferized


def test_small_groups_stay_loops():
    """16 filters per group is the GEMM's min-size: 8 per group stays a loop nest."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Conv2d(32, 32, 3, padding=1, groups=4).eval()
    bufferized = _conv_matches_eager(model, torch.randn(1, 32, 20, 20))
    assert "call @accel_conv_" not in bufferized


def _conv_matches_eager(model, x) -> str:
    """Compile `model` (checked against eager at atol 1e-4); its IR after bufferization."""
    import torch

    with phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, (x,), options={"cache": False})
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=1e-4)
    return str(next(p.ir for p in rec.phases if p.name == "bufferize"))


def test_fit_rows_prefers_mr8_when_it_pads_less():
    from accel.passes._gemm_kernel import Tiles
    from accel.passes.matmul_microkernel import fit_rows

    avx512 = Tiles(vl=16, mr=12, nr=32, kc=192, mc=672, nc=4096)
    assert fit_rows(avx512, 64).mr == 8 and fit_rows(avx512, 64).mc == 448  # 72 -> 64 rows
    assert fit_rows(avx512, 1024).mr == 8
    assert fit_rows(avx512, 72) == avx512  # both exact: keep the wider tile
    assert fit_rows(avx512, 10) == avx512  # 12 vs 16 rows
    avx2 = Tiles(vl=8, mr=6, nr=16, kc=256, mc=252, nc=2048)
    assert fit_rows(avx2, 64) == avx2
