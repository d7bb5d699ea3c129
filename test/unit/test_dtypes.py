"""Dtypes, the `complex` dialect and `ml_program` globals through `accel.compile`.

1. A dtype matrix: for float32, float64, float16, bfloat16, bool, int8, int32 and int64, one
   graph of representative ops per dtype, compiled once and compared with eager PyTorch:
   integer and bool results exactly, floats within `TOL` (stated per dtype below). Every
   output's dtype and shape must equal eager's.
2. `complex`: graphs that torch-mlir lowers to the complex dialect (view_as_complex, polar,
   complex products and matmuls, real/imag), with real and with complex inputs/outputs.
3. `ml_program`: random ops keep their RNG seed in an `ml_program.global`; compiled, they
   must produce the right distribution (checked by statistics, not values) and advance the
   seed between calls.

Broken cases would be `xfail(strict=True)` with the exact error (none are now). Cases that
crashed the process (SIGSEGV/abort inside torch-mlir) before accel.decompositions fixed them
run in a subprocess. docs/op-coverage.md ("Dtypes") lists them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402

pytestmark = pytest.mark.slow

OPTS = {"cache": False}

#: (rtol, atol) per float dtype: |got - eager| <= atol + rtol * |eager|, elementwise in float64.
TOL: dict[torch.dtype, tuple[float, float]] = {
    # A few ulps (2^-23 = 1.2e-7): libm's exp/tanh vs torch's vectorised ones.
    torch.float32: (1e-5, 1e-6),
    # float64 math is the same libm on both sides; sums/matmul only reassociate.
    torch.float64: (1e-12, 1e-12),
    # 2 ulps of float16 (2^-10 = 9.8e-4): eager accumulates matmul/mean in float32 and
    # rounds once, the compiled code rounds each float16 partial sum.
    torch.float16: (2e-3, 1e-3),
    # ~2.5 ulps of bfloat16 (2^-7 = 7.8e-3), for the same per-step rounding of sums.
    torch.bfloat16: (2e-2, 2e-2),
}

_gen = torch.Generator().manual_seed(1234)


def _assert_matches(got: object, want: object, tol: tuple[float, float] | None = None) -> None:
    """Each output of `got` equals eager's `want`: same dtype and shape, values within tol."""
    gots = list(got) if isinstance(got, tuple | list) else [got]
    wants = list(want) if isinstance(want, tuple | list) else [want]
    assert len(gots) == len(wants), f"{len(gots)} outputs, eager has {len(wants)}"
    errors = []
    for i, (g, w) in enumerate(zip(gots, wants, strict=True)):
        assert isinstance(g, torch.Tensor), f"output {i} is a {type(g).__name__}"
        if g.dtype != w.dtype or g.shape != w.shape:
            errors.append(f"out {i}: {g.dtype}{tuple(g.shape)} vs eager {w.dtype}{tuple(w.shape)}")
            continue
        _check_values(i, g, w, tol, errors)
    assert not errors, "outputs differ from eager PyTorch:\n  " + "\n  ".join(errors)


def _check_values(i: int, g: torch.Tensor, w: torch.Tensor, tol: tuple[float, float] | None,
                  errors: list[str]) -> None:
    if w.is_complex():
        g, w = torch.view_as_real(g), torch.view_as_real(w)
    if not w.is_floating_point():
        if not torch.equal(g, w):
            errors.append(f"out {i}: {int((g != w).sum())} of {w.numel()} differ (exact)")
        return
    rtol, atol = tol if tol is not None else TOL[w.dtype]
    g64, w64 = g.double().numpy(), w.double().numpy()
    close = np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
    if not close.all():
        err = float(np.nanmax(np.abs(g64 - w64)))
        errors.append(f"out {i}: {int((~close).sum())} of {w.numel()} differ "
                      f"(max abs err {err:.3g}, rtol={rtol}, atol={atol})")


def _compile_and_check(fn: Callable[..., object], inputs: tuple[torch.Tensor, ...],
                       tol: tuple[float, float] | None = None) -> None:
    with torch.no_grad():
        want = fn(*inputs)
    compiled = accel.compile(fn, inputs, options=OPTS)
    _assert_matches(compiled(*inputs), want, tol)


# -- 1. the dtype matrix -------------------------------------------------------------------
def float_ops(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """a, b: one float dtype, |b| >= 0.5; c: bool."""
    return (a + b, a - b, a * b, a / b, -a, torch.abs(a), torch.where(c, a, b),
            a < b, a == b, a >= b, torch.maximum(a, b), torch.minimum(a, b),
            a.sum(1), a.amax(0), a.amin(1), a.mean(1), a @ b.t(),
            torch.exp(a), torch.sqrt(torch.abs(a)), torch.tanh(a),
            a.to(torch.float32), (b.to(torch.float32) * 0.5).to(a.dtype),
            a.to(torch.int32), a.to(torch.bool))


def _float_inputs(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    a = torch.randn(4, 8, generator=_gen)
    b = torch.randn(4, 8, generator=_gen)
    b = torch.where(b < 0, b - 0.5, b + 0.5)
    return a.to(dtype), b.to(dtype), torch.rand(4, 8, generator=_gen) > 0.5


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16],
                         ids=["float32", "float64", "float16"])
def test_float_dtypes(dtype: torch.dtype) -> None:
    _compile_and_check(float_ops, _float_inputs(dtype))


def test_bfloat16_numerics() -> None:
    """bf16 through the runtime's documented path: float32 arrays in (rounded to bf16),
    float32 arrays out (exact bf16 values). Compared with eager bf16."""
    inputs = _float_inputs(torch.bfloat16)
    with torch.no_grad():
        want = float_ops(*inputs)
    compiled = accel.compile(float_ops, inputs, options=OPTS)
    arrays = [x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy() for x in inputs]
    got = compiled(*arrays)
    assert len(got) == len(want)
    errors: list[str] = []
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = torch.from_numpy(np.asarray(g))
        if w.dtype == torch.bfloat16:
            assert g.dtype == torch.float32, f"out {i}: bf16 result came back as {g.dtype}"
            assert torch.equal(g, g.to(torch.bfloat16).float()), f"out {i} is not bf16-exact"
            g = g.to(torch.bfloat16)
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype)
        _check_values(i, g, w, None, errors)
    assert not errors, "outputs differ from eager PyTorch:\n  " + "\n  ".join(errors)


def test_bfloat16_torch_tensors() -> None:
    """bf16 tensors in, bf16 tensors out, like every other dtype."""
    _compile_and_check(float_ops, _float_inputs(torch.bfloat16))


#: Integer ops: (name, fn(a, b, c)); a, b: one integer dtype with b > 0; c: bool.
INT_OPS: list[tuple[str, Callable[..., torch.Tensor]]] = [
    ("add", lambda a, b, c: a + b),
    ("sub", lambda a, b, c: a - b),
    ("mul", lambda a, b, c: a * b),
    ("add_scalar", lambda a, b, c: a + 3),
    ("mul_scalar", lambda a, b, c: a * 3),
    ("sub_scalar", lambda a, b, c: a - 2),
    ("neg", lambda a, b, c: -a),
    ("abs", lambda a, b, c: torch.abs(a)),
    ("sign", lambda a, b, c: torch.sign(a)),
    ("where", lambda a, b, c: torch.where(c, a, b)),
    ("lt", lambda a, b, c: a < b),
    ("eq", lambda a, b, c: a == b),
    ("ne", lambda a, b, c: a != b),
    ("maximum", lambda a, b, c: torch.maximum(a, b)),
    ("minimum", lambda a, b, c: torch.minimum(a, b)),
    ("clamp", lambda a, b, c: a.clamp(-5, 5)),
    ("sum", lambda a, b, c: a.sum(1)),
    ("amax", lambda a, b, c: a.amax(0)),
    ("amin", lambda a, b, c: a.amin(1)),
    ("prod", lambda a, b, c: a.prod(1)),
    ("bitwise_and", lambda a, b, c: a & b),
    ("bitwise_or", lambda a, b, c: a | b),
    ("bitwise_xor", lambda a, b, c: a ^ b),
    ("bitwise_not", lambda a, b, c: ~a),
    ("floor_divide", lambda a, b, c: a // b),
    ("div_trunc", lambda a, b, c: torch.div(a, b, rounding_mode="trunc")),
    ("remainder", lambda a, b, c: a % b),
    ("true_divide", lambda a, b, c: a / b),
    ("matmul", lambda a, b, c: a @ b.t()),
    ("to_float32", lambda a, b, c: a.to(torch.float32)),
    ("from_float32", lambda a, b, c: (b.to(torch.float32) * 1.5).to(a.dtype)),
    ("to_int64", lambda a, b, c: a.to(torch.int64)),
    ("from_int64", lambda a, b, c: a.to(torch.int64).to(a.dtype)),
    ("to_bool", lambda a, b, c: a.to(torch.bool)),
    ("from_bool", lambda a, b, c: c.to(a.dtype)),
]

def _int_inputs(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    # Small values: products, sums and products of rows fit every dtype (no overflow
    # semantics are being tested here).
    a = torch.randint(-11, 12, (4, 8), generator=_gen, dtype=dtype)
    b = torch.randint(1, 12, (4, 8), generator=_gen, dtype=dtype)
    return a, b, torch.rand(4, 8, generator=_gen) > 0.5


def _int_graph(names: list[str]) -> Callable[..., tuple[torch.Tensor, ...]]:
    fns = [fn for name, fn in INT_OPS if name in names]

    def graph(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(fn(a, b, c) for fn in fns)

    return graph


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64],
                         ids=["int8", "int32", "int64"])
def test_int_dtypes(dtype: torch.dtype) -> None:
    _compile_and_check(_int_graph([n for n, _ in INT_OPS]), _int_inputs(dtype))


def bool_ops(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (a & b, a | b, a ^ b, ~a, torch.logical_and(a, b), torch.logical_or(a, b),
            torch.logical_xor(a, b), torch.logical_not(a), torch.where(c, a, b), a == b, a != b,
            a.any(1), a.all(0), a.sum(1), torch.maximum(a, b), a.amax(0),
            a.to(torch.float32), a.to(torch.int8), a.to(torch.int64), a.int() + b.int(),
            (a.to(torch.float32) + 0.25) > 0.5)


def test_bool_dtype() -> None:
    inputs = tuple(torch.rand(4, 8, generator=_gen) > 0.5 for _ in range(3))
    _compile_and_check(bool_ops, inputs)


def _run_isolated(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter (a SIGSEGV there must not kill pytest)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)


#: 8-bit ops that crashed torch-mlir's convert-torch-to-linalg (SIGSEGV: `aten.mm`/`bmm`,
#: `aten.mul`/`sub`/`remainder` with a Python scalar, `aten.max`/`min` of all elements) or
#: failed to lower (`//`); accel.decompositions computes them in int32 and casts back.
INT8_WIDENED = {
    "matmul": "a @ b.t()", "bmm": "torch.bmm(a.reshape(2, 2, 8), b.reshape(2, 8, 2))",
    "mul_scalar": "a * 3", "sub_scalar": "a - 2", "clamp_tensor": "torch.clamp(a, b - 6, b)",
    "max": "a.max()", "min": "a.min()", "floor_divide": "a // b", "floor_divide_scalar": "a // 3",
    "remainder_scalar": "a % 3",
}


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_int8_widened(dtype: str) -> None:
    """All of INT8_WIDENED in one graph, over the whole 8-bit range, so products and sums
    wrap around as in eager. In a subprocess: these used to crash the process. uint8 only
    inside the graph (accel's runtime takes no uint8 arrays): int32 in, cast to uint8, the
    ops, results cast to int32."""
    ops = ", ".join(INT8_WIDENED.values())
    result = _run_isolated(f"""
        import torch, accel
        ops = lambda a, b: ({ops})
        g = torch.Generator().manual_seed(7)
        if {dtype!r} == "int8":
            fn = ops
            a = torch.randint(-128, 128, (4, 8), generator=g, dtype=torch.int8)
            b = torch.randint(1, 128, (4, 8), generator=g, dtype=torch.int8)
            a[0, :2], b[0, :2] = torch.tensor([-128, -128]), torch.tensor([-1, 1])  # -128 // -1
        else:
            def fn(a, b):
                return tuple(r.to(torch.int32) for r in ops(a.to(torch.uint8), b.to(torch.uint8)))
            a = torch.randint(0, 256, (4, 8), generator=g, dtype=torch.int32)
            b = torch.randint(1, 256, (4, 8), generator=g, dtype=torch.int32)
        got = accel.compile(fn, (a, b), options={{"cache": False}})(a, b)
        want = fn(a, b)
        for name, x, y in zip({list(INT8_WIDENED)!r}, got, want, strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape, (name, x, y)
            assert torch.equal(x, y), (name, x, y)
        print("OK")
    """)
    assert result.returncode == 0 and "OK" in result.stdout, \
        f"exit {result.returncode}: {result.stderr[-3000:]}"


def test_int32_cumsum() -> None:
    x = torch.randint(-11, 12, (4, 8), generator=_gen, dtype=torch.int32)
    _compile_and_check(lambda t: t.cumsum(1), (x,))


# -- 2. complex ----------------------------------------------------------------------------
def _pairs(dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.randn(4, 8, generator=_gen, dtype=dtype),
            torch.randn(4, 8, generator=_gen, dtype=dtype))


def complex_ops(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Real in, real out; complex values only inside the graph."""
    zx = torch.view_as_complex(x.reshape(4, 4, 2))
    zy = torch.view_as_complex(y.reshape(4, 4, 2))
    w = torch.complex(x, y)
    return (torch.view_as_real(zx * zy),
            torch.view_as_real(torch.polar(x.abs(), y)),
            torch.real(w * torch.complex(y, x)),
            torch.imag(w * torch.complex(y, x)),
            torch.view_as_real(w @ torch.complex(y, x).t()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["complex64", "complex128"])
def test_complex_inside_graph(dtype: torch.dtype) -> None:
    _compile_and_check(complex_ops, _pairs(dtype))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128],
                         ids=["complex64", "complex128"])
def test_complex_inputs_and_outputs(dtype: torch.dtype) -> None:
    z = torch.randn(4, 8, generator=_gen, dtype=dtype)
    w = torch.randn(4, 8, generator=_gen, dtype=dtype)
    tol = TOL[torch.float32 if dtype == torch.complex64 else torch.float64]
    _compile_and_check(lambda a, b: (a * b, torch.view_as_real(a * a),
                                     torch.view_as_complex(torch.view_as_real(b) * 2)),
                       (z, w), tol)


def test_complex_scalars_compile_mlir() -> None:
    """complex<f32>/complex<f64> scalar arguments and results inside a result tuple."""
    mod = accel.compile_mlir("""
      func.func @abs_sq(%a: complex<f32>) -> f32 {
        %sq = complex.mul %a, %a : complex<f32>
        %r = complex.abs %sq : complex<f32>
        return %r : f32
      }
      func.func @twice(%a: complex<f64>, %b: f32) -> (complex<f64>, f32) {
        %c = complex.add %a, %a : complex<f64>
        return %c, %b : complex<f64>, f32
      }""", {"cache": False})
    assert mod.invoke("abs_sq", 1 + 2j) == np.float32(5.0)
    assert mod.invoke("abs_sq", 3.0) == np.float32(9.0)
    c, b = mod.invoke("twice", np.complex128(3 - 1j), 2.0)
    assert c.shape == () and c.dtype == np.complex128 and c == 6 - 2j  # 0-d arrays
    assert b.shape == () and b.dtype == np.float32 and b == 2.0
    with pytest.raises(TypeError, match="a complex"):
        mod.invoke("abs_sq", "x")


def test_complex_scalar_result_compile_mlir() -> None:
    mod = accel.compile_mlir("""
      func.func @f(%a: complex<f32>) -> complex<f32> {
        %sq = complex.mul %a, %a : complex<f32>
        return %sq : complex<f32>
      }""", {"cache": False})
    assert mod.invoke("f", 1 + 2j) == np.complex64(-3 + 4j)


#: Complex ops torch-mlir lowers to ops that take no complex operand, or not at all, or
#: crashed on (complex `/` by a Python number or real tensor: SIGSEGV; complex sum: abort);
#: accel.decompositions computes them from the real and imaginary parts. fn(x, y), x, y real.
COMPLEX_DECOMPOSED: list[tuple[str, Callable[..., torch.Tensor]]] = [
    ("abs", lambda x, y: torch.abs(torch.complex(x, y))),
    ("abs_large", lambda x, y: torch.abs(torch.complex(x, y) * 1e30)),  # no overflow in |z|^2
    ("exp", lambda x, y: torch.exp(torch.complex(x, y))),
    ("add", lambda x, y: torch.complex(x, y) + torch.complex(y, x)),
    ("add_alpha", lambda x, y: torch.add(torch.complex(x, y), torch.complex(y, x), alpha=2)),
    ("add_scalar", lambda x, y: torch.complex(x, y) + (1 - 2j)),
    ("add_real", lambda x, y: torch.complex(x, y) + y),
    ("sub", lambda x, y: torch.complex(x, y) - torch.complex(y, x)),
    ("rsub", lambda x, y: 1 - torch.complex(x, y)),
    ("div", lambda x, y: torch.complex(x, y) / torch.complex(y, x)),
    ("div_large", lambda x, y: torch.complex(x, y) / (torch.complex(y, x) * 1e30)),
    ("div_real", lambda x, y: torch.complex(x, y) / y),
    ("div_scalar", lambda x, y: torch.complex(x, y) / 2),
    ("div_zero", lambda x, y: torch.complex(x, y) / torch.where(y > 0, y * 0, -y * 0)),
    ("mul_scalar", lambda x, y: torch.complex(x, y) * (3 - 1j)),
    ("neg", lambda x, y: -torch.complex(x, y)),
    ("angle", lambda x, y: torch.angle(torch.complex(x, y))),
    ("conj_physical", lambda x, y: torch.conj_physical(torch.complex(x, y))),
    ("sum", lambda x, y: torch.complex(x, y).sum(1)),
    ("sum_all", lambda x, y: torch.complex(x, y).sum()),
    ("mean", lambda x, y: torch.complex(x, y).mean(0)),
    ("mean_all", lambda x, y: torch.complex(x, y).mean()),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"], ids=["complex64", "complex128"])
def test_complex_decomposed(dtype: str) -> None:
    """All of COMPLEX_DECOMPOSED in one graph, compared with eager (TOL of the parts' dtype).
    In a subprocess: some of these crashed the process before they were decomposed."""
    result = _run_isolated(f"""
        import sys, torch
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import test_dtypes as t
        fns = [fn for _, fn in t.COMPLEX_DECOMPOSED]
        t._compile_and_check(lambda x, y: tuple(fn(x, y) for fn in fns), t._pairs(torch.{dtype}))
        print("OK")
    """)
    assert result.returncode == 0 and "OK" in result.stdout, \
        f"exit {result.returncode}: {result.stderr[-3000:]}"


# -- 3. ml_program globals (RNG state) -----------------------------------------------------
class Rand(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.rand(x.shape)


class Randn(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.randn(x.shape)


class Dropout(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(x, 0.5, training=True)


N = 64  # 64 x 64 = 4096 samples per call


def test_rng_seed_is_an_ml_program_global() -> None:
    text = str(accel.import_torch(Rand(), (torch.zeros(N, N),)))
    assert "ml_program.global private mutable @global_seed" in text
    assert "ml_program.global_load" in text and "ml_program.global_store" in text


def _two_calls(model: torch.nn.Module, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    fn = accel.compile(model, (x,), options=OPTS)
    first, second = fn(x), fn(x)
    assert first.dtype == torch.float32 and first.shape == (N, N)
    # The seed lives in the global and advances: the second call draws new numbers.
    assert not torch.equal(first, second)
    return first.numpy(), second.numpy()


def test_rand_uniform() -> None:
    for u in _two_calls(Rand(), torch.zeros(N, N)):
        assert u.min() >= 0.0 and u.max() < 1.0
        # Uniform(0, 1): mean 1/2, std 1/sqrt(12) = 0.2887; the mean of 4096 draws has std
        # 0.0045, so +-0.03 is > 6 sigma.
        assert abs(u.mean() - 0.5) < 0.03, u.mean()
        assert abs(u.std() - 0.2887) < 0.02, u.std()
        assert len(np.unique(u)) > 4000


def test_randn_normal() -> None:
    for z in _two_calls(Randn(), torch.zeros(N, N)):
        assert np.isfinite(z).all()
        # N(0, 1): the mean of 4096 draws has std 1/64 = 0.016; +-0.1 is > 6 sigma.
        assert abs(z.mean()) < 0.1, z.mean()
        assert abs(z.std() - 1.0) < 0.05, z.std()


def test_dropout_training() -> None:
    """dropout(ones, p=0.5, training=True): each element is 0 or 1 / (1 - p) = 2."""
    for y in _two_calls(Dropout(), torch.ones(N, N)):
        assert set(np.unique(y).tolist()) == {0.0, 2.0}
        assert abs((y == 0).mean() - 0.5) < 0.05, (y == 0).mean()
