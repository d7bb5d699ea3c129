"""`accel.compile_mlir`: JIT-compiled MLIR called with numpy, checked against numpy.

Tolerances: elementwise add, casts and integer ops are compared exactly (bit for bit for
floats: numpy and the JIT round the same way, f16/bf16 through f32). Matmul and reductions
of floats use rtol=1e-5 (f32) / 1e-12 (f64) because the summation order differs; math
functions (exp, tanh, sqrt) use rtol=2e-6 against numpy's libm.
"""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest
from accel import compile_mlir
from accel.diagnostics import AccelError
from accel.llvm.normalize import FORMATS, round_to_format
from accel.runtime.dtypes import bf16_bits_to_float32, float32_to_bf16_bits
from samples import sum_source

RNG = np.random.default_rng(1234)
FLOATS = ["f16", "bf16", "f32", "f64"]
INTS = ["i8", "i16", "i32", "i64"]
DTYPES = [*FLOATS, "i1", *INTS]
SHAPES = {0: (), 1: (5,), 2: (3, 4), 3: (2, 3, 4), 4: (2, 1, 3, 2)}
NUMPY = {"f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64,
         "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}


def _tensor(shape: tuple[int | None, ...], dtype: str) -> str:
    return "tensor<" + "".join(f"{'?' if d is None else d}x" for d in shape) + dtype + ">"


def _add_func(name: str, dtype: str, shape: tuple[int | None, ...]) -> str:
    """`linalg.add` of two tensors (dynamic dims read with tensor.dim)."""
    t = _tensor(shape, dtype)
    lines = [f"func.func @{name}(%a: {t}, %b: {t}) -> {t} {{"]
    dims = []
    for i, d in enumerate(shape):
        if d is None:
            lines.append(f"  %c{i} = arith.constant {i} : index")
            lines.append(f"  %d{i} = tensor.dim %a, %c{i} : {t}")
            dims.append(f"%d{i}")
    lines.append(f"  %e = tensor.empty({', '.join(dims)}) : {t}")
    lines.append(f"  %r = linalg.add ins(%a, %b : {t}, {t}) outs(%e : {t}) -> {t}")
    lines.append(f"  return %r : {t}")
    lines.append("}")
    return "\n".join(lines)


def _scalar_func(dtype: str) -> str:
    op = "arith.addf" if dtype in FLOATS else "arith.ori" if dtype == "i1" else "arith.addi"
    return (f"func.func @scalar_{dtype}(%a: {dtype}, %b: {dtype}) -> {dtype} {{\n"
            f"  %r = {op} %a, %b : {dtype}\n  return %r : {dtype}\n}}")


def _random(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "i1":
        return RNG.integers(0, 2, shape).astype(np.bool_)
    if dtype in INTS:
        info = np.iinfo(NUMPY[dtype])
        return RNG.integers(info.min, info.max, shape, dtype=NUMPY[dtype], endpoint=True)
    return (RNG.standard_normal(shape) * 4).astype(NUMPY[dtype])


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bf16 (as float32)."""
    return bf16_bits_to_float32(float32_to_bf16_bits(x))


def _reference_add(dtype: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if dtype == "bf16":
        return _bf16(_bf16(a) + _bf16(b))
    with np.errstate(over="ignore"):
        return a + b  # bool: or; ints: wrap around, like arith.addi


@pytest.fixture(scope="module")
def matrix() -> object:
    funcs = []
    for dtype in DTYPES:
        funcs.append(_scalar_func(dtype))
        for rank, shape in SHAPES.items():
            funcs.append(_add_func(f"add_{dtype}_r{rank}", dtype, shape))
            dynamic = tuple(None if i % 2 == 0 else d for i, d in enumerate(shape))
            funcs.append(_add_func(f"add_{dtype}_r{rank}_dyn", dtype, dynamic))
    funcs.append(_scalar_func("index"))
    return compile_mlir("\n".join(funcs))


@pytest.mark.parametrize("rank", sorted(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_add_every_dtype_and_rank(matrix: object, dtype: str, rank: int, dynamic: bool) -> None:
    shape = SHAPES[rank]
    a, b = _random(dtype, shape), _random(dtype, shape)
    name = f"add_{dtype}_r{rank}" + ("_dyn" if dynamic else "")
    got = matrix.invoke(name, a, b)  # type: ignore[attr-defined]
    want = _reference_add(dtype, a, b)
    assert got.dtype == want.dtype and got.shape == shape
    assert got.tobytes() == want.tobytes()  # bit-exact, NaN-free inputs


@pytest.mark.parametrize("dtype", [*DTYPES, "index"])
def test_scalar_arguments_and_results(matrix: object, dtype: str) -> None:
    """Scalar results come back as 0-d arrays of their dtype (bf16: float32)."""
    fn = matrix[f"scalar_{dtype}"]  # type: ignore[index]

    def array_of(value: object, dtype: type) -> bool:
        return type(value) is np.ndarray and value.shape == () and value.dtype == dtype

    if dtype == "i1":
        assert array_of(fn(True, False), np.bool_) and fn(True, False)[()]
        assert array_of(fn(False, False), np.bool_) and not fn(False, False)[()]
        return
    if dtype in ("index", *INTS):
        want_type = np.int64 if dtype == "index" else NUMPY[dtype]
        got = fn(100, 27)
        assert array_of(got, want_type) and got == 127
        assert fn(np.iinfo(want_type).max, 1) == np.iinfo(want_type).min  # wraps
        return
    got = fn(1.5, 0.25)
    assert array_of(got, NUMPY[dtype]) and got == 1.75
    if dtype == "bf16":
        # 1 + 2^-9 is not a bf16: the argument rounds (to even) to 1.0.
        assert fn(1 + 2**-9, 0.0) == 1.0 and fn(np.float32(1 + 3 * 2**-8), 0) == 1 + 2**-6


# -- kernels ----------------------------------------------------------------------------------
KERNELS = """
func.func @matmul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>)
                     outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @matmul_f64(%a: tensor<8x16xf64>, %b: tensor<16x4xf64>) -> tensor<8x4xf64> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<8x4xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<8x4xf64>) -> tensor<8x4xf64>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf64>, tensor<16x4xf64>)
                     outs(%f : tensor<8x4xf64>) -> tensor<8x4xf64>
  return %r : tensor<8x4xf64>
}
func.func @matmul_i32(%a: tensor<3x5xi32>, %b: tensor<5x2xi32>) -> tensor<3x2xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3x2xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<3x2xi32>) -> tensor<3x2xi32>
  %r = linalg.matmul ins(%a, %b : tensor<3x5xi32>, tensor<5x2xi32>)
                     outs(%f : tensor<3x2xi32>) -> tensor<3x2xi32>
  return %r : tensor<3x2xi32>
}
func.func @sum_rows(%a: tensor<?x?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.reduce ins(%a : tensor<?x?xf32>) outs(%f : tensor<?xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<?xf32>
}
func.func @max_cols(%a: tensor<4x6xf32>) -> tensor<6xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<6xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %r = linalg.reduce ins(%a : tensor<4x6xf32>) outs(%f : tensor<6xf32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %m = arith.maximumf %x, %acc : f32
      linalg.yield %m : f32
    }
  return %r : tensor<6xf32>
}
func.func @sum_all_i64(%a: tensor<2x3x4xi64>) -> tensor<i64> {
  %zero = arith.constant 0 : i64
  %e = tensor.empty() : tensor<i64>
  %f = linalg.fill ins(%zero : i64) outs(%e : tensor<i64>) -> tensor<i64>
  %r = linalg.reduce ins(%a : tensor<2x3x4xi64>) outs(%f : tensor<i64>) dimensions = [0, 1, 2]
    (%x: i64, %acc: i64) {
      %s = arith.addi %x, %acc : i64
      linalg.yield %s : i64
    }
  return %r : tensor<i64>
}
func.func @math(%a: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %exp = linalg.exp ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %tanh = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                          iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%x: f32, %o: f32):
      %t = math.tanh %x : f32
      linalg.yield %t : f32
  } -> tensor<?xf32>
  %abs = linalg.abs ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %sqrt = linalg.sqrt ins(%abs : tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %exp, %tanh, %sqrt : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}
func.func @mlp(%x: tensor<?x128xf32>, %w: tensor<128x32xf32>, %b: tensor<32xf32>)
    -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x128xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<?x128xf32>, tensor<128x32xf32>)
                      outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  // A second buffer: the matmul result becomes a temporary that must be freed.
  %e2 = tensor.empty(%n) : tensor<?x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<?x32xf32>, tensor<32xf32>) outs(%e2 : tensor<?x32xf32>) {
    ^bb0(%a: f32, %bias: f32, %o: f32):
      %s = arith.addf %a, %bias : f32
      %m = arith.maximumf %s, %zero : f32
      linalg.yield %m : f32
  } -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}
func.func @fill_arg(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 7.0 : f32
  %r = linalg.fill ins(%c : f32) outs(%a : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @twice(%a: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>, f32) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.add ins(%a, %a : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>)
       -> tensor<?xf32>
  %s = arith.constant 2.5 : f32
  return %r, %r, %s : tensor<?xf32>, tensor<?xf32>, f32
}
func.func @identity(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %a : tensor<?x?xf32>
}
func.func @constant() -> tensor<2x2xi32> {
  %c = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  return %c : tensor<2x2xi32>
}
func.func @truncate(%a: tensor<?xf64>) -> (tensor<?xbf16>, tensor<?xf16>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf64>
  %e1 = tensor.empty(%n) : tensor<?xbf16>
  %e2 = tensor.empty(%n) : tensor<?xf16>
""" + "".join(f"""  %{r} = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>,
                                         affine_map<(i) -> (i)>], iterator_types = ["parallel"]}}
      ins(%a : tensor<?xf64>) outs(%{e} : tensor<?x{ty}>) {{
    ^bb0(%x: f64, %o: {ty}):
      %t = arith.truncf %x : f64 to {ty}
      linalg.yield %t : {ty}
  }} -> tensor<?x{ty}>
""" for r, e, ty in (("b", "e1", "bf16"), ("h", "e2", "f16"))) + """\
  return %b, %h : tensor<?xbf16>, tensor<?xf16>
}
func.func @nothing(%a: tensor<2xf32>) {
  return
}
"""


@pytest.fixture(scope="module")
def kernels() -> object:
    return compile_mlir(KERNELS)


def test_matmul_f32_dynamic(kernels: object) -> None:
    for m, k, n in [(64, 128, 32), (3, 1, 7), (0, 4, 5)]:
        a = RNG.standard_normal((m, k)).astype(np.float32)
        b = RNG.standard_normal((k, n)).astype(np.float32)
        got = kernels.invoke("matmul", a, b)  # type: ignore[attr-defined]
        assert got.shape == (m, n)
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_f64_and_i32(kernels: object) -> None:
    a, b = RNG.standard_normal((8, 16)), RNG.standard_normal((16, 4))
    np.testing.assert_allclose(kernels.invoke("matmul_f64", a, b), a @ b, rtol=1e-12)  # type: ignore[attr-defined]
    ai = RNG.integers(-100, 100, (3, 5), dtype=np.int32)
    bi = RNG.integers(-100, 100, (5, 2), dtype=np.int32)
    np.testing.assert_array_equal(kernels.invoke("matmul_i32", ai, bi), ai @ bi)  # type: ignore[attr-defined]


def test_reductions(kernels: object) -> None:
    a = RNG.standard_normal((7, 33)).astype(np.float32)
    np.testing.assert_allclose(kernels.invoke("sum_rows", a), a.sum(axis=1), rtol=1e-5,  # type: ignore[attr-defined]
                               atol=1e-5)
    b = RNG.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(kernels.invoke("max_cols", b), b.max(axis=0))  # type: ignore[attr-defined]
    c = RNG.integers(-(2**40), 2**40, (2, 3, 4), dtype=np.int64)
    total = kernels.invoke("sum_all_i64", c)  # type: ignore[attr-defined]
    assert total.shape == () and total == c.sum()


def test_elementwise_math(kernels: object) -> None:
    a = np.linspace(-5, 5, 101, dtype=np.float32)
    exp, tanh, sqrt = kernels.invoke("math", a)  # type: ignore[attr-defined]
    np.testing.assert_allclose(exp, np.exp(a), rtol=2e-6)
    np.testing.assert_allclose(tanh, np.tanh(a), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(sqrt, np.sqrt(np.abs(a)), rtol=2e-6)


def test_mlp_matmul_bias_relu(kernels: object) -> None:
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    w = RNG.standard_normal((128, 32)).astype(np.float32)
    b = RNG.standard_normal(32).astype(np.float32)
    got = kernels.invoke("mlp", x, w, b)  # type: ignore[attr-defined]
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-4)


def test_narrowing_f64_to_bf16_and_f16_round_once(kernels: object) -> None:
    """f64 -> bf16/f16 is one correct rounding (accel's __truncdfbf2 where libgcc lacks it)."""
    bits = RNG.integers(0, 2**64, 2000, dtype=np.uint64)
    values = bits.view(np.float64)
    values = values[np.isfinite(values) & (np.abs(values) < 1e39)]
    values = np.concatenate([values, RNG.standard_normal(500) * 1e-39,
                             [1 + 2**-8, 1 + 2**-8 + 2**-40, 1 + 3 * 2**-8, 65520.0, -0.0,
                              np.inf, -np.inf]])
    got_bf16, got_f16 = kernels.invoke("truncate", values)  # type: ignore[attr-defined]
    want_bf16 = [round_to_format(Fraction(float(v)), FORMATS["bfloat"], negative=np.signbit(v))
                 if np.isfinite(v) else (0x7F80 if v > 0 else 0xFF80) for v in values]
    assert float32_to_bf16_bits(got_bf16).tolist() == want_bf16
    with np.errstate(over="ignore"):
        assert got_f16.view(np.uint16).tolist() == values.astype(np.float16).view(
            np.uint16).tolist()
    nan_bf16, _ = kernels.invoke("truncate", np.array([np.nan]))  # type: ignore[attr-defined]
    assert np.isnan(nan_bf16[0])


def test_dynamic_shapes_including_empty(kernels: object) -> None:
    for shape in [(1, 1), (5, 3), (0, 4), (4, 0), (17, 9)]:
        a = RNG.standard_normal(shape).astype(np.float32)
        got = kernels.invoke("identity", a)  # type: ignore[attr-defined]
        assert got.shape == shape and np.array_equal(got, a)


# -- ownership --------------------------------------------------------------------------------
def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_leak_over_10000_calls(kernels: object) -> None:
    """RSS stays within 4 MiB over 10,000 calls (a leak of the intermediate and the result
    would be 2 x 64x32x4 B = 16 KiB a call: 160 MiB)."""
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    w = RNG.standard_normal((128, 32)).astype(np.float32)
    b = RNG.standard_normal(32).astype(np.float32)
    mlp = kernels["mlp"]  # type: ignore[index]
    twice = kernels["twice"]  # type: ignore[index]
    small = np.ones(1000, np.float32)
    for _ in range(200):  # warm up allocator pools
        mlp(x, w, b)
        twice(small)
    before = _rss_bytes()
    for _ in range(10_000):
        mlp(x, w, b)
        twice(small)
    assert _rss_bytes() - before < 4 * 2**20


def test_results_own_their_memory(kernels: object) -> None:
    a = np.arange(6, dtype=np.float32)
    r1, r2, s = kernels.invoke("twice", a)  # type: ignore[attr-defined]
    assert r1.base is not None and r1.base.owner is r2.base.owner  # one allocation, one free
    assert s == np.float32(2.5) and type(s) is np.ndarray and s.dtype == np.float32
    del r1
    np.testing.assert_array_equal(r2, 2 * a)  # still valid: r2 keeps the allocation alive


def test_returned_argument_is_a_copy_and_inputs_stay_unchanged(kernels: object) -> None:
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    got = kernels.invoke("identity", a)  # type: ignore[attr-defined]
    assert not np.shares_memory(got, a) and np.array_equal(got, a)
    del got
    assert np.isfinite(a).all()  # the input was not freed or overwritten
    x = np.zeros(4, np.float32)
    filled = kernels.invoke("fill_arg", x)  # type: ignore[attr-defined]
    assert filled.tolist() == [7.0] * 4 and x.tolist() == [0.0] * 4  # tensors are values


def test_constant_result_and_no_results(kernels: object) -> None:
    assert kernels.invoke("constant").tolist() == [[1, 2], [3, 4]]  # type: ignore[attr-defined]
    assert kernels.invoke("nothing", np.zeros(2, np.float32)) is None  # type: ignore[attr-defined]


def test_non_contiguous_inputs(kernels: object) -> None:
    a = RNG.standard_normal((6, 4)).astype(np.float32)
    b = RNG.standard_normal((6, 5)).astype(np.float32)
    np.testing.assert_allclose(kernels.invoke("matmul", a.T, b), a.T @ b, rtol=1e-5,  # type: ignore[attr-defined]
                               atol=1e-5)
    strided = np.arange(40, dtype=np.float32).reshape(4, 10)[:, ::3]
    assert np.array_equal(kernels.invoke("identity", strided), strided)  # type: ignore[attr-defined]


def test_jit_frees_with_the_same_free_as_the_finalizers() -> None:
    from accel.host.jit import host_free_address_in_jit
    from accel.runtime.symbols import libc_free_address

    assert host_free_address_in_jit() == libc_free_address()


# -- argument errors --------------------------------------------------------------------------
def test_wrong_argument_count(kernels: object) -> None:
    with pytest.raises(TypeError, match=r"@matmul takes 2 arguments \(memref<\?x\?xf32>, "
                                        r"memref<\?x\?xf32>\), got 1"):
        kernels.invoke("matmul", np.zeros((2, 2), np.float32))  # type: ignore[attr-defined]


def test_wrong_dtype_names_argument_and_expectation(kernels: object) -> None:
    with pytest.raises(TypeError, match=r"@matmul argument %arg1: expected memref<\?x\?xf32> "
                                        r"\(a float32 array of shape \(\*, \*\)\), got dtype "
                                        r"float64"):
        kernels.invoke("matmul", np.zeros((2, 2), np.float32), np.zeros((2, 2)))  # type: ignore[attr-defined]


def test_wrong_static_shape_and_rank(kernels: object) -> None:
    with pytest.raises(ValueError, match=r"@max_cols argument %arg0: .* got shape \(4, 5\) "
                                         r"\(dimension 1 is 5, expected 6\)"):
        kernels.invoke("max_cols", np.zeros((4, 5), np.float32))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"@max_cols argument %arg0: .* got rank 1"):
        kernels.invoke("max_cols", np.zeros(24, np.float32))  # type: ignore[attr-defined]


def test_bad_scalars(matrix: object) -> None:
    with pytest.raises(TypeError, match=r"@scalar_i32 argument %arg0: expected i32 \(an int\)"):
        matrix.invoke("scalar_i32", 1.5, 2)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"@scalar_i8 argument %arg1: 300 does not fit i8"):
        matrix.invoke("scalar_i8", 1, 300)  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"@scalar_f32 argument %arg0: expected f32 \(a float\)"):
        matrix.invoke("scalar_f32", "1.0", 2.0)  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"@scalar_i1 argument %arg0: expected i1 \(a bool\)"):
        matrix.invoke("scalar_i1", 2, True)  # type: ignore[attr-defined]


def test_unknown_function(kernels: object) -> None:
    with pytest.raises(ValueError, match=r"no public function @nope .*available: @matmul"):
        kernels.invoke("nope")  # type: ignore[attr-defined]


# -- bf16 -------------------------------------------------------------------------------------
BF16 = """
func.func @scale(%a: tensor<?xbf16>, %s: bf16) -> (tensor<?xbf16>, bf16) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xbf16>
  %e = tensor.empty(%n) : tensor<?xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<?xbf16>) outs(%e : tensor<?xbf16>) {
    ^bb0(%x: bf16, %o: bf16):
      %m = arith.mulf %x, %s : bf16
      linalg.yield %m : bf16
  } -> tensor<?xbf16>
  return %r, %s : tensor<?xbf16>, bf16
}
func.func @inplace(%a: memref<3xbf16>) {
  %c = arith.constant 2.0 : bf16
  linalg.fill ins(%c : bf16) outs(%a : memref<3xbf16>)
  return
}
"""


def test_bf16_float32_and_bit_pattern_inputs() -> None:
    mod = compile_mlir(BF16)
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -3.5, np.inf, np.nan], np.float32)
    got, s = mod.invoke("scale", x, 2.0)
    assert got.dtype == np.float32 and s.shape == () and s.dtype == np.float32 and s == 2.0
    # inputs round to nearest-even bf16 (1+2^-8 -> 1, 1+3*2^-8 -> 1+2^-6), then x2 exactly
    np.testing.assert_array_equal(got[:5], [2.0, 2.0, 2 + 2**-5, -7.0, np.inf])
    assert np.isnan(got[5])
    bits = np.array([0x3F80, 0xC000], np.uint16)  # 1.0, -2.0 as bf16 bit patterns
    np.testing.assert_array_equal(mod.invoke("scale", bits, 0.5)[0], [0.5, -1.0])
    with pytest.raises(TypeError, match=r"float32 \(rounded to bf16\) or uint16 \(bf16 bits\)"):
        mod.invoke("scale", np.ones(2), 1.0)
    buf = np.zeros(3, np.uint16)  # raw bits are passed in place: writes are visible
    mod.invoke("inplace", buf)
    assert buf.tolist() == [0x4000] * 3


# -- other input levels -----------------------------------------------------------------------
def test_memref_affine_and_llvm_dialect_inputs() -> None:
    src = """
    func.func @scale_inplace(%a: memref<?xf64>, %s: f64) {
      %c0 = arith.constant 0 : index
      %n = memref.dim %a, %c0 : memref<?xf64>
      affine.for %i = 0 to %n {
        %v = affine.load %a[%i] : memref<?xf64>
        %m = arith.mulf %v, %s : f64
        affine.store %m, %a[%i] : memref<?xf64>
      }
      return
    }
    func.func @ret_arg(%a: memref<?xi16>) -> memref<?xi16> {
      return %a : memref<?xi16>
    }
    func.func @strided(%a: memref<4xf32, strided<[?], offset: ?>>) -> f32 {
      %c1 = arith.constant 1 : index
      %v = memref.load %a[%c1] : memref<4xf32, strided<[?], offset: ?>>
      return %v : f32
    }
    llvm.func @raw_load(%p: !llvm.ptr, %i: i64) -> f32 {
      %q = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %q : !llvm.ptr -> f32
      llvm.return %v : f32
    }
    func.func @vec(%v: vector<4xf32>) -> vector<4xf32> {
      return %v : vector<4xf32>
    }
    """
    mod = compile_mlir(src, {"opt_level": 0})
    a = np.arange(5, dtype=np.float64)
    assert mod.invoke("scale_inplace", a, 3.0) is None
    assert a.tolist() == [0, 3, 6, 9, 12]  # memref arguments are passed in place
    i = np.arange(4, dtype=np.int16)
    r = mod.invoke("ret_arg", i)
    assert r.tolist() == [0, 1, 2, 3] and not np.shares_memory(r, i)
    assert mod.invoke("strided", np.arange(4, dtype=np.float32)) == 1.0
    assert mod.invoke("raw_load", np.array([1.5, 2.5], np.float32), 1) == np.float32(2.5)
    assert "vector<4xf32> has no Python mapping" in (mod.functions["vec"].unsupported or "")
    with pytest.raises(TypeError, match="@vec cannot be called from Python"):
        mod.invoke("vec", np.zeros(4, np.float32))
    assert str(mod.functions["strided"]) == \
        "@strided(memref<4xf32, strided<[?], offset: ?>>) -> (f32)"
    assert "_mlir_ciface_scale_inplace" in mod.llvm_ir and "llvm.func" in mod.mlir_llvm


def test_module_object_is_not_modified() -> None:
    from accel.context import make_context
    from accel.ir import Module

    text = "func.func @neg(%a: f32) -> f32 {\n  %r = arith.negf %a : f32\n  return %r : f32\n}\n"
    with make_context():
        module = Module.parse(text)
        before = str(module)
        mod = compile_mlir(module)
        assert str(module) == before
    assert mod.invoke("neg", 2.0) == -2.0


# -- compile errors and options ---------------------------------------------------------------
def test_parse_error_is_located() -> None:
    with pytest.raises(AccelError) as info:
        compile_mlir("func.func @f() {\n  %0 = foo\n}\n", {"filename": "bad.mlir"})
    assert info.value.diagnostics[0].format().startswith("bad.mlir:2:")


@pytest.mark.parametrize(("source", "where", "message"), [
    # a missing type after `:` (issue 31: the message came without its place)
    ("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = arith.addf %a, %a : \n"
     "  return %0 : tensor<2xf32>\n}\n", "<input>:2:27", "expected non-function type"),
    ("module {\n  func.func @f( {\n}", "<input>:2:16", "expected non-function type"),
    ("func.func @f() {\n  return %x\n}", "<input>:2:12", "expected ':'"),
    # accel's own pre-parse check of linalg's integer lists
    ("func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {\n"
     "  %0 = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%b : tensor<3x2xf32>)"
     " permutation = [1, , 0]\n  return %0 : tensor<3x2xf32>\n}\n", "<input>:2:", ""),
])
def test_malformed_text_gives_one_located_line(source: str, where: str, message: str) -> None:
    """str(err), what an API caller prints, is the one located line, not the bare message."""
    with pytest.raises(AccelError) as info:
        compile_mlir(source)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{where}") and ": error: " in text and text.endswith(message)


def test_undefined_external_function_is_an_error_not_a_crash() -> None:
    src = """
    func.func private @not_anywhere(f32) -> f32
    func.func @f(%a: f32) -> f32 {
      %r = func.call @not_anywhere(%a) : (f32) -> f32
      return %r : f32
    }
    """
    with pytest.raises(AccelError, match="'not_anywhere' is declared but defined nowhere"):
        compile_mlir(src)


def test_libm_calls_resolve() -> None:
    src = """
    func.func @f(%a: f64) -> f64 {
      %r = math.erf %a : f64
      return %r : f64
    }
    """
    assert abs(compile_mlir(src).invoke("f", 0.5) - 0.5204998778130465) < 1e-15


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^unknown option 'O3' \(the options: "):
        compile_mlir("", {"O3": True})
    with pytest.raises(ValueError, match="'disable_affine_fusion' must be a bool"):
        compile_mlir("", {"disable_affine_fusion": 1})
    with pytest.raises(ValueError, match="'opt_level' must be an int from 0 to 3"):
        compile_mlir("", {"opt_level": 4})


def test_single_complex_scalar_result() -> None:
    """C returns a complex struct through a pointer, like a memref descriptor."""
    mod = compile_mlir("""func.func @sq(%a: complex<f64>) -> complex<f64> {
      %r = complex.mul %a, %a : complex<f64>
      return %r : complex<f64>
    }""", {"cache": False})
    assert mod.invoke("sq", 1 + 2j) == (1 + 2j) ** 2


def test_disable_fast_math_drops_reassociation_flags() -> None:
    """The unsafe-math pass marks reductions `reassoc` unless fast math is disabled."""
    src = sum_source("total", 64)

    fast = compile_mlir(src, {"cache": False, "opt_level": 1})
    strict = compile_mlir(src, {"cache": False, "opt_level": 1, "disable_fast_math": True})
    assert "reassoc" in fast.mlir_llvm and "reassoc" not in strict.mlir_llvm
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    assert abs(float(strict.invoke("total", x)) - float(np.sum(x, dtype=np.float64))) < 1e-5


TENSOR_ARITH = """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %s = arith.addf %a, %b : tensor<2x3xf32>
  %e = math.exp %s : tensor<2x3xf32>
  %p = arith.mulf %e, %a : tensor<2x3xf32>
  %gt = arith.cmpf ogt, %a, %b : tensor<2x3xf32>
  return %p, %gt : tensor<2x3xf32>, tensor<2x3xi1>
}
"""


@pytest.mark.parametrize("opt_level", [0, 3])
def test_arith_on_whole_tensors(opt_level: int, tmp_path, monkeypatch) -> None:
    """arith/math ops on tensors (no linalg) compile and run: convert-elementwise-to-linalg
    before bufferization (they failed with "op was not bufferized"); through compile_mlir
    and through accel-compile's folder reloaded by accel.load."""
    import sys

    import accel
    from accel.cli import run_main
    from accel.tools.accel_compile import main

    a = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.25, np.float32)
    want = (np.exp(a + b) * a, a > b)
    for p, w in zip(compile_mlir(TENSOR_ARITH, {"cache": False, "opt_level": opt_level})
                    .invoke("main", a, b), want, strict=True):
        np.testing.assert_allclose(p, w, rtol=1e-6)
    (tmp_path / "arith.mlir").write_text(TENSOR_ARITH)
    monkeypatch.setattr(sys, "argv", ["accel-compile"])
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    assert run_main(main, [str(tmp_path / "arith.mlir"), f"-o{opt_level}", "--output-folder",
                           str(tmp_path / "out")]) == 0
    for p, w in zip(accel.load(tmp_path / "out")(a, b), want, strict=True):
        np.testing.assert_allclose(p, w, rtol=1e-6)
