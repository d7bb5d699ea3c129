"""JIT internals of `accel.host.jit`: soft-float helpers and the `accel-run` value syntax."""

from __future__ import annotations

import ctypes
from fractions import Fraction

import llvmlite.binding as llvm
import numpy as np
import pytest
from accel.diagnostics import AccelError
from accel.host.abi import soft_float_helpers_ir
from accel.llvm.normalize import FORMATS, round_to_format
from accel.tools.accel_run import format_result, format_scalar, parse_input

RNG = np.random.default_rng(7)


def _doubles() -> np.ndarray:
    bits = RNG.integers(0, 2**64, 3000, dtype=np.uint64)
    values = bits.view(np.float64)
    return np.concatenate([
        values[np.isfinite(values) & (np.abs(values) < 1e40)],
        RNG.standard_normal(500) * 10.0 ** RNG.integers(-45, 39, 500),
        # ties and near-ties for bf16 (8 bits) and half (11 bits), overflow, underflow
        [1 + 2**-8, 1 + 2**-8 + 2**-30, 1 + 3 * 2**-8, 1 + 2**-11, 1 + 2**-11 + 2**-40,
         65520.0, 65519.99, 3.3961e38, 3.3962e38, 1e-50, -1e-50, 6e-8, 2.98e-8, 0.0, -0.0,
         np.inf, -np.inf]])


def _jit_helpers() -> tuple[object, dict[str, ctypes._CFuncPtr]]:
    """JIT every helper (even those libgcc has) behind `i16 (double/float)` bit wrappers."""
    wrappers = """
      define i16 @t_dfbf(double %d) {
        %r = call bfloat @__truncdfbf2(double %d)
        %b = bitcast bfloat %r to i16
        ret i16 %b
      }
      define i16 @t_sfbf(float %x) {
        %r = call bfloat @__truncsfbf2(float %x)
        %b = bitcast bfloat %r to i16
        ret i16 %b
      }
      define i16 @t_dfhf(double %d) {
        %r = call half @__truncdfhf2(double %d)
        %b = bitcast half %r to i16
        ret i16 %b
      }
    """
    ir_text = soft_float_helpers_ir(["__truncdfbf2", "__truncsfbf2", "__truncdfhf2"]) + wrappers
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                      features=llvm.get_host_cpu_features().flatten())
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    fns = {
        "dfbf": ctypes.CFUNCTYPE(ctypes.c_uint16, ctypes.c_double)(
            engine.get_function_address("t_dfbf")),
        "sfbf": ctypes.CFUNCTYPE(ctypes.c_uint16, ctypes.c_float)(
            engine.get_function_address("t_sfbf")),
        "dfhf": ctypes.CFUNCTYPE(ctypes.c_uint16, ctypes.c_double)(
            engine.get_function_address("t_dfhf")),
    }
    return engine, fns


def _exact(value: float, fmt: str) -> int:
    if np.isinf(value):
        sign = FORMATS[fmt].sign_bit if value < 0 else 0
        return sign | FORMATS[fmt].exp_mask
    return round_to_format(Fraction(float(value)), FORMATS[fmt], negative=bool(np.signbit(value)))


def test_soft_float_helpers_round_once_to_nearest_even() -> None:
    engine, fns = _jit_helpers()
    for d in _doubles():
        assert fns["dfbf"](float(d)) == _exact(d, "bfloat"), d
        assert fns["dfhf"](float(d)) == _exact(d, "half"), d
        f = np.float32(d) if abs(d) < 3e38 else np.float32(0)
        assert fns["sfbf"](float(f)) == _exact(float(f), "bfloat"), f
    for nan_fn, arg in (("dfbf", float("nan")), ("sfbf", float("nan"))):
        bits = fns[nan_fn](arg)
        assert bits & 0x7F80 == 0x7F80 and bits & 0x7F  # still a NaN
    del engine


# -- accel-run value syntax -------------------------------------------------------------------
def test_parse_input_forms() -> None:
    a = parse_input("2x3xf32=1,2,3,4,5,6")
    assert a.dtype == np.float32 and a.shape == (2, 3) and a[1, 2] == 6
    assert parse_input("2x2xi64=[7]").tolist() == [[7, 7], [7, 7]]  # splat
    assert parse_input("0x3xf16=").shape == (0, 3)
    s = parse_input("index=4")
    assert s.shape == () and s.dtype == np.int64 and s == 4
    assert parse_input("3xi1=true,0,1").tolist() == [True, False, True]
    assert parse_input("2xbf16=1.5,-inf").dtype == np.float32  # rounded when passed
    assert np.isnan(parse_input("f64=nan"))
    assert parse_input("2xi8=0x7f, -128").tolist() == [127, -128]


@pytest.mark.parametrize("spec", ["2x3xf32=1_0", "f32=\u0661", "i8=0b1", "i8=1_0",
                                  "\u0662xf32=1,2", "f32=\uff11", "f32=0x10"])
def test_parse_input_takes_ascii_numbers_only(spec: str) -> None:
    """Python's int()/float() accept `1_0`, other scripts' digits and `0b` prefixes: --input
    does not (a silently different value is worse than an error)."""
    with pytest.raises(AccelError, match="--input"):
        parse_input(spec)


def test_output_reads_back_as_input() -> None:
    from accel.runtime.dtypes import DTYPES
    from accel.runtime.signature import ValueSpec

    for dtype, values in [("f32", [0.1, 1e-45, -0.0, np.inf, 3.4028235e38, 16777216.0]),
                          ("f16", [0.1, 65504.0, 6e-8]), ("f64", [0.1, 1e300, 2**-1074]),
                          ("i1", [True, False]), ("ui8", [0, 255]), ("i64", [-(2**63), 7])]:
        spec = ValueSpec("memref", DTYPES[dtype], f"memref<{len(values)}x{dtype}>",
                         (len(values),))
        arr = np.array(values, dtype=DTYPES[dtype].numpy)
        text = format_result(arr, spec)
        assert parse_input(text).tobytes() == arr.tobytes(), text


def test_format_scalar_is_shortest() -> None:
    assert format_scalar(np.float32(0.1), "f32") == "0.1"
    assert format_scalar(np.float32(33554432), "f32") == "33554432.0"
    assert format_scalar(np.float16(0.1), "f16") == "0.1"
    assert format_scalar(np.float32(0.10009765625), "bf16") == "0.1"
    assert format_scalar(np.float32(1e-45), "f32") == "1e-45"
    assert format_scalar(True, "i1") == "true"


@pytest.mark.parametrize(("spec", "message"), [
    ("2xf32=1", None),  # splat is fine
    ("2xf32=1,2,3", "expected 2 values for shape 2, got 3"),
    ("2xf32=a,b", "'a' is not a valid f32 value"),
    ("i8=300", "does not fit i8"),
    ("2xz9=1", "unknown element type 'z9'"),
    ("nonsense", "expected SHAPExDTYPE=VALUES"),
    ("missing.npy", "no such file"),
])
def test_parse_input_errors(spec: str, message: str | None) -> None:
    from accel.diagnostics import AccelError

    if message is None:
        parse_input(spec)
        return
    with pytest.raises(AccelError, match=message):
        parse_input(spec)


# -- the fast call path (accel.runtime.FastPlan, CompiledModule.__call__) -----------------------
def _compiled(fn: object, *inputs: object, **kwargs: object) -> object:
    import accel

    return accel.compile(fn, inputs, options={"cache": False}, **kwargs)


def _no_general_path(monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    """Make the general call paths fail, so that a passing call took the fast one."""
    def general(*args: object) -> None:
        raise AssertionError("general call path taken")

    monkeypatch.setattr(module, "_call", general)
    monkeypatch.setattr(type(module._fn), "__call__", general)  # type: ignore[attr-defined]


def test_fast_path_serves_plain_tensors_and_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from accel.runtime import heap as runtime

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4)).eval()
    x = torch.randn(3, 8)
    fn = _compiled(model, x)
    assert fn._fn.fast is not None  # type: ignore[attr-defined]
    _no_general_path(monkeypatch, fn)
    with torch.no_grad():
        want = model(x)
    got = fn(x)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    arr = fn(x.numpy())
    assert isinstance(arr, np.ndarray) and isinstance(arr.base, ctypes.Array)
    np.testing.assert_allclose(arr, want.numpy(), rtol=1e-4, atol=1e-5)
    # the output is the compiled code's own allocation (no copy), freed with the tensor
    freed: list[int] = []
    real_free = runtime._free
    monkeypatch.setattr(runtime, "_free", lambda address: (freed.append(address),
                                                           real_free(address)))
    out = fn(x)
    address = out.data_ptr()
    del out
    assert len(freed) == 1 and 0 <= address - freed[0] < 256  # (aligned within the block)
    x.requires_grad_(True)  # reads the data; the result has no autograd history
    assert fn(x).grad_fn is None


def test_fast_path_falls_back_for_everything_else() -> None:
    torch = pytest.importorskip("torch")
    from accel.runtime.call import ArgumentDtypeError

    fn = _compiled(lambda a, b: (a * b + 1.0, a - b), torch.randn(4, 6), torch.randn(4, 6))
    a, b = torch.randn(4, 6), torch.randn(4, 6)
    for got, want in zip(fn(a, b), (a * b + 1.0, a - b), strict=True):
        torch.testing.assert_close(got, want)
    # non-contiguous, a tensor subclass, mixed torch/numpy: converted as before
    at = torch.randn(6, 4).T
    torch.testing.assert_close(fn(at, b)[0], at * b + 1.0)
    p = torch.nn.Parameter(torch.randn(4, 6), requires_grad=False)
    torch.testing.assert_close(fn(p, b)[1], p - b)
    torch.testing.assert_close(fn(a, b.numpy())[1], a - b)
    # and the errors stay the same
    with pytest.raises(ValueError, match=r"expected memref<4x6xf32>.*got shape \(5, 6\)"):
        fn(torch.randn(5, 6), b)
    with pytest.raises(ArgumentDtypeError, match="got dtype float64"):
        fn(a.double(), b)
    with pytest.raises(ArgumentDtypeError, match="got dtype float64"):
        fn(a.numpy(), b.numpy().astype(np.float64))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        fn(a)


def test_fast_path_copies_results_that_alias_inputs() -> None:
    torch = pytest.importorskip("torch")

    fn = _compiled(lambda t: (t, t + 1.0), torch.randn(5))
    t = torch.randn(5)
    same, plus = fn(t)
    assert same.data_ptr() != t.data_ptr()
    torch.testing.assert_close(same, t)
    same.zero_()
    assert not torch.equal(same, t)  # a copy: the input is untouched
    torch.testing.assert_close(plus, t + 1.0)


def test_fast_path_alias_check_with_many_arguments() -> None:
    """Many arguments: the alias check is a binary search over the inputs' byte ranges
    (overlapping ranges included); it agrees with the linear scan, and a result that is an
    input among 12 is still copied."""
    import random

    from accel.runtime.fast_path import _inside

    rng = random.Random(0)
    for _ in range(200):
        ranges = [(lo, lo + rng.randint(1, 50)) for lo in
                  (rng.randint(0, 500) for _ in range(rng.randint(9, 30)))]
        inside = _inside(ranges)
        for address in range(0, 600, 7):
            assert inside(address) == any(lo <= address < hi for lo, hi in ranges)
    torch = pytest.importorskip("torch")

    args = tuple(torch.randn(5) for _ in range(12))
    fn = _compiled(lambda *xs: (xs[7], xs[0] + xs[11]), *args)
    same, total = fn(*args)
    assert same.data_ptr() != args[7].data_ptr()
    torch.testing.assert_close(same, args[7])
    torch.testing.assert_close(total, args[0] + args[11])


def test_fast_path_dynamic_shapes_reuse_frames() -> None:
    torch = pytest.importorskip("torch")

    batch = torch.export.Dim("batch", min=1, max=64)
    fn = _compiled(lambda t: torch.tanh(t) * 2.0, torch.randn(4, 3),
                   dynamic_shapes=({0: batch},))
    for n in (1, 7, 64, 2, 7):
        t = torch.randn(n, 3)
        got = fn(t)
        assert got.shape == (n, 3)
        torch.testing.assert_close(got, torch.tanh(t) * 2.0)
    with pytest.raises(ValueError, match="dimension 1 is 4"):
        fn(torch.randn(2, 4))


def test_fast_path_is_thread_safe() -> None:
    torch = pytest.importorskip("torch")
    from concurrent.futures import ThreadPoolExecutor

    fn = _compiled(lambda t: torch.sin(t) + t, torch.randn(256))
    inputs = [torch.randn(256) for _ in range(64)]

    def check(t: object) -> bool:
        return all(torch.allclose(fn(t), torch.sin(t) + t) for _ in range(50))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(check, inputs))
