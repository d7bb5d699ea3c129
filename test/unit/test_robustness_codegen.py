"""Compiled-code semantics that used to kill the process or be silently wrong (issue 14).

- integer division/remainder by zero raises `accel.DivisionByZeroError` (SIGFPE before),
  INT_MIN / -1 wraps as in eager (`accel-guard-division`), also on parallel-loop workers
  and in AOT libraries (status 1);
- a failed allocation raises `MemoryError` naming its size (SIGSEGV before; AOT status 3);
- NaN propagates through maximum/minimum/clamp/hardtanh/... as in eager;
- uint8 tensors and arrays are accepted (and returned) where the model took uint8;
- `torch.linalg.det` compiles;
- accel-run reports a float literal beyond its type's range in one line.

Tests of what used to crash run their code in a fresh interpreter: a signal there fails the
test instead of killing pytest (and prints no faulthandler dump: output is captured).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import accel
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - the usual name
from conftest import run_tool

#: More bytes than any x86-64 address space holds: malloc fails whatever the overcommit.
HUGE = 1 << 24  # a HUGE x HUGE f32 result is 2^50 bytes (1 PiB)


def _isolated(code: str, timeout: int = 600, **env_extra: str) -> str:
    """Run `code` in a fresh interpreter (`env_extra` added to its environment); its stdout.
    Fails on any signal or exit code."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"} | env_extra
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert "Fatal Python error" not in proc.stderr
    return proc.stdout


# -- 1. integer division -------------------------------------------------------------------
def test_torch_integer_division_matches_eager() -> None:
    """div (trunc, floor), //, remainder and fmod on every integer dtype, over each dtype's
    extremes: eager's values (INT_MIN // -1 wraps; eager itself dies of SIGFPE on trunc
    division there for int32/int64, where the wrapped value is the only sensible answer),
    and eager's ZeroDivisionError for every op on a zero divisor."""
    out = _isolated("""
        import torch, accel
        OPS = {
            "trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
            "floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
            "floordiv": lambda a, b: a // b,
            "remainder": torch.remainder,
            "fmod": torch.fmod,
            "scalar": lambda a, b: (a // 3, torch.remainder(a, 5), torch.div(a, -7,
                                                                          rounding_mode="trunc")),
        }
        def eager(name, a, b, info):
            if name == "trunc" and info.min < 0:  # eager SIGFPEs on INT_MIN / -1 (int32/64)
                bad = (a == info.min) & (b == -1)
                safe = torch.where(bad, torch.ones_like(b), b)
                return torch.where(bad, a, OPS[name](a, safe))
            return OPS[name](a, b)
        for dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
            info = torch.iinfo(dtype)
            vals = [info.min, info.min + 1, -7, -1, 1, 3, 7, info.max]
            vals = sorted({v for v in vals if info.min <= v <= info.max} | {0})
            a = torch.tensor([x for x in vals for y in vals if y], dtype=dtype)
            b = torch.tensor([y for x in vals for y in vals if y], dtype=dtype)
            for name in OPS:
                fn = accel.compile(OPS[name], (a.clone(), b.clone()), options={"cache": False})
                got, want = fn(a, b), eager(name, a, b, info)
                got = got if isinstance(got, tuple) else (got,)
                want = want if isinstance(want, tuple) else (want,)
                for g, w in zip(got, want, strict=True):
                    assert g.dtype == w.dtype and torch.equal(g, w), (dtype, name, g, w)
                if name == "scalar":
                    continue
                zero = b.clone()
                zero[len(zero) // 2] = 0
                try:
                    fn(a, zero)
                except accel.DivisionByZeroError as err:
                    assert isinstance(err, ZeroDivisionError) and isinstance(err, RuntimeError)
                    assert "integer division by zero" in str(err), err
                else:
                    raise AssertionError(f"{dtype} {name}: no error for a zero divisor")
                assert torch.equal(fn(a, b)[0] if isinstance(fn(a, b), tuple) else fn(a, b),
                                   want[0])  # the failure is not sticky
            print("OK", dtype)
    """)
    assert out.count("OK") == 5


MLIR_DIVISIONS = "\n".join(f"""
func.func @{op}(%a: i32, %b: i32) -> i32 {{
  %r = arith.{op} %a, %b : i32
  return %r : i32
}}""" for op in ("divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi", "ceildivui")) + """
func.func @affine(%i: index, %n: index) -> (index, index) {
  %r = affine.apply affine_map<(d0)[s0] -> (d0 mod s0)>(%i)[%n]
  %q = index.divs %i, %n
  return %r, %q : index, index
}"""


def test_mlir_integer_division_by_zero_raises_and_int_min_wraps() -> None:
    """Every arith division/remainder (and a semi-affine `mod`, `index.divs`): zero raises,
    INT_MIN / -1 gives the wrapped value (divsi, floordivsi, ceildivsi: INT_MIN; remsi: 0),
    ordinary values are untouched."""
    out = _isolated(f"""
        import accel
        m = accel.compile_mlir({MLIR_DIVISIONS!r}, {{"cache": False}})
        low = -2**31
        expect = {{"divsi": low, "remsi": 0, "floordivsi": low, "ceildivsi": low}}
        for name, want in expect.items():
            assert m.invoke(name, low, -1) == want, name
        for name in ("divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi",
                     "ceildivui"):
            try:
                m.invoke(name, 7, 0)
            except accel.DivisionByZeroError as err:
                assert str(err) == f"@{{name}}: integer division by zero", err
            else:
                raise AssertionError(name)
        assert (m.invoke("floordivsi", -7, 2), m.invoke("ceildivsi", -7, 2),
                m.invoke("remsi", -7, 2), m.invoke("ceildivui", 7, 2)) == (-4, -3, -1, 4)
        assert m.invoke("affine", 7, 3) == (1, 2)  # semi-affine mod and the index dialect
        try:
            m.invoke("affine", 7, 0)
        except accel.DivisionByZeroError:
            pass
        else:
            raise AssertionError("affine")
        print("OK")
    """)
    assert "OK" in out


@pytest.mark.parametrize("pool", ["openmp", "accel"])
def test_division_by_zero_on_a_parallel_worker_reaches_the_caller(pool: str) -> None:
    """A 2048 x 2048 division runs on two threads; a zero in the second half is divided
    on the worker thread, whose failure must still raise in the caller. The worker is one
    of PyTorch's OpenMP threads by default, one of accel's own with ACCEL_THREAD_POOL=accel."""
    out = _isolated("""
        import torch, accel
        from accel.host import openmp
        accel.set_num_threads(2)
        g = torch.Generator().manual_seed(0)
        a = torch.randint(-1000, 1000, (2048, 2048), generator=g, dtype=torch.int32)
        b = torch.randint(1, 100, (2048, 2048), generator=g, dtype=torch.int32)
        fn = accel.compile(lambda x, y: torch.remainder(x, y), (a, b), options={"cache": False})
        assert "accel_parallel_for" in fn.compiled.llvm_ir
        assert bool(openmp.library()) == OPENMP
        assert torch.equal(fn(a, b), torch.remainder(a, b))
        for where in ((0, 0), (2047, 2047), (1500, 3)):
            zero = b.clone()
            zero[where] = 0
            try:
                fn(a, zero)
            except accel.DivisionByZeroError:
                print("raised", where)
        assert torch.equal(fn(a, b), torch.remainder(a, b))
    """.replace("OPENMP", str(pool == "openmp")), ACCEL_THREAD_POOL=pool)
    assert out.count("raised") == 3


AOT_SOURCE = """
func.func @div(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %e = tensor.empty() : tensor<4xi32>
  %r = linalg.div ins(%a, %b : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi32>)
      -> tensor<4xi32>
  return %r : tensor<4xi32>
}
func.func @ones(%n: index) -> tensor<?xf32> {
  %e = tensor.empty(%n) : tensor<?xf32>
  %c = arith.constant 1.0 : f32
  %f = linalg.fill ins(%c : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %f : tensor<?xf32>
}
"""


def test_aot_library_returns_error_codes(tmp_path: Path) -> None:
    """The C library returns 1 for a division by zero and 3 for a failed allocation, with
    the message in <NAME>_last_error(), instead of dying."""
    out = _isolated(f"""
        import ctypes, numpy as np
        from accel.targets.cpu.aot import build_library
        from accel.runtime.signature import descriptor_type
        lib = build_library({AOT_SOURCE!r}, "divlib", {str(tmp_path / "div")!r}, entry="div")
        a = np.array([7, -2**31, 9, 1], np.int32)
        np.testing.assert_array_equal(lib.call(a, np.array([2, -1, 3, 1], np.int32)),
                                      [3, -2**31, 3, 1])
        _, status = lib.call_status(a, np.array([2, 1, 0, 1], np.int32))
        assert status == 1 and lib.last_error() == "integer division by zero", lib.last_error()
        ones = build_library({AOT_SOURCE!r}, "oneslib", {str(tmp_path / "ones")!r},
                             entry="ones")
        so = ctypes.CDLL(str(ones.so_path))
        so.oneslib_last_error.restype = ctypes.c_char_p
        out = descriptor_type(1)()
        assert so.oneslib(ctypes.c_int64(1 << 50), ctypes.byref(out)) == 3
        want = b"out of memory: could not allocate 4503599627370496 bytes"
        assert so.oneslib_last_error() == want, so.oneslib_last_error()
        assert so.oneslib(ctypes.c_int64(3), ctypes.byref(out)) == 0 and out.sizes[0] == 3
        print("OK")
    """)
    assert "OK" in out


# -- 2. failed allocations -------------------------------------------------------------------
def test_huge_results_raise_memory_error() -> None:
    """compile_mlir of a function returning a 2^50-byte tensor, a dynamic size, and a torch
    model building one: MemoryError with the size asked for, then the code still works."""
    out = _isolated(f"""
        import accel, numpy as np, torch
        src = '''
        func.func @big(%x: f32) -> tensor<{HUGE}x{HUGE}xf32> {{
          %e = tensor.empty() : tensor<{HUGE}x{HUGE}xf32>
          %f = linalg.fill ins(%x : f32) outs(%e : tensor<{HUGE}x{HUGE}xf32>)
              -> tensor<{HUGE}x{HUGE}xf32>
          return %f : tensor<{HUGE}x{HUGE}xf32>
        }}
        func.func @dyn(%n: index) -> tensor<?xi64> {{
          %e = tensor.empty(%n) : tensor<?xi64>
          %c = arith.constant 1 : i64
          %f = linalg.fill ins(%c : i64) outs(%e : tensor<?xi64>) -> tensor<?xi64>
          return %f : tensor<?xi64>
        }}'''
        m = accel.compile_mlir(src, {{"cache": False}})
        for name, arg, size in (("big", 1.0, "1125899906842624 bytes (1024.0 TiB)"),
                                ("dyn", 1 << 48, "2251799813685248 bytes (2048.0 TiB)")):
            try:
                m.invoke(name, arg)
            except MemoryError as err:
                assert str(err) == f"@{{name}}: out of memory: could not allocate {{size}}", err
            else:
                raise AssertionError(name)
        assert m.invoke("dyn", 3).tolist() == [1, 1, 1]
        x = torch.ones(2)
        fn = accel.compile(lambda t: t.sum() + torch.zeros({HUGE}, {HUGE}), (x,),
                           options={{"cache": False}})
        try:
            fn(x)
        except MemoryError as err:
            assert "could not allocate" in str(err), err
            print("OK")
    """)
    assert "OK" in out


def test_a_stack_buffer_too_big_is_a_memory_error() -> None:
    """A `memref.alloca` of a size only known at run time: 4 GB would run past the stack's
    guard page (SIGSEGV); it is a MemoryError naming the size, and small ones still run."""
    out = _isolated("""
        import accel
        src = '''
        func.func @f(%n: index) -> f32 {
          %c0 = arith.constant 0 : index
          %m = memref.alloca(%n) : memref<?xf32>
          %c = arith.constant 1.5 : f32
          memref.store %c, %m[%c0] : memref<?xf32>
          %v = memref.load %m[%c0] : memref<?xf32>
          return %v : f32
        }'''
        m = accel.compile_mlir(src, {"cache": False})
        assert m.invoke("f", 10) == 1.5
        try:
            m.invoke("f", 10**9)
        except MemoryError as err:
            assert "could not allocate 4000000000 bytes" in str(err), err
            print("OK")
    """)
    assert "OK" in out


def test_a_function_outlives_its_dropped_module() -> None:
    """`compile_mlir(src)["f"]` keeps only the function: it must keep the machine code
    (and bound weights) alive, where calling it used to be a SIGSEGV."""
    out = _isolated('''
        import gc, accel, numpy as np
        src = """
          func.func @f(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
            %e = tensor.empty() : tensor<4xi32>
            %r = linalg.div ins(%a, %b : tensor<4xi32>, tensor<4xi32>)
                outs(%e : tensor<4xi32>) -> tensor<4xi32>
            return %r : tensor<4xi32>
          }"""
        fn = accel.compile_mlir(src, {"cache": False})["f"]
        gc.collect()
        print(fn(np.array([8, 9, -9, 1], np.int32), np.array([2, 3, 2, 1], np.int32)).tolist())
    ''')
    assert out.strip() == "[4, 3, -4, 1]"


# -- 3. NaN ----------------------------------------------------------------------------------
def _nan_ops(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    rows = x.reshape(1, -1)
    return (torch.maximum(x, y), torch.minimum(x, y), torch.max(x, y), x.clamp(-0.5, 0.5),
            x.clamp(min=0.0), x.clamp(max=0.0), torch.clamp(x, y - 1, y + 1),
            torch.clamp(x, min=y), torch.clamp(x, max=y), F.hardtanh(x), F.relu6(x),
            torch.relu(x), rows.amax(1), rows.amin(1), rows.max(1).values, x.max(), x.min(),
            torch.softmax(rows, 1))


@pytest.mark.parametrize("fast_math_off", [False, True], ids=["fast-math", "strict"])
@pytest.mark.parametrize("n", [7, 33, 1027])
def test_nan_propagates_as_in_eager(n: int, fast_math_off: bool) -> None:
    """NaN in x, in y (tensor bounds) or both, at the first, a middle and the last position
    (the last lands in a vectorised loop's tail): every output as eager, NaN for NaN."""
    g = torch.Generator().manual_seed(n)
    x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
    fn = accel.compile(_nan_ops, (x, y), options={"cache": False,
                                                    "disable_fast_math": fast_math_off})
    nan = float("nan")
    for where in (0, n // 2, n - 1):
        for which in ("x", "y", "both"):
            a, b = x.clone(), y.clone()
            if which in ("x", "both"):
                a[where] = nan
            if which in ("y", "both"):
                b[where] = nan
            for i, (got, want) in enumerate(zip(fn(a, b), _nan_ops(a, b), strict=True)):
                torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, equal_nan=True,
                                           msg=f"output {i}, NaN in {which} at {where}")


def test_signed_zero_of_maximum_and_minimum_as_eager() -> None:
    a, b = torch.tensor([-0.0, 0.0, -0.0]), torch.tensor([0.0, -0.0, -0.0])
    fn = accel.compile(lambda p, q: (torch.maximum(p, q), torch.minimum(p, q)), (a, b),
                       options={"cache": False})
    for got, want in zip(fn(a, b), (torch.maximum(a, b), torch.minimum(a, b)), strict=True):
        assert torch.equal(torch.signbit(got), torch.signbit(want))


# -- 4. uint8 at the boundary ----------------------------------------------------------------
def test_uint8_inputs_and_outputs() -> None:
    """uint8 tensors and arrays go in and come out as uint8 (wrap-around, division and
    remainder as eager); an int8 array for the uint8 input is still a dtype error."""
    g = torch.Generator().manual_seed(3)
    a = torch.randint(0, 256, (64,), generator=g, dtype=torch.uint8)
    b = torch.randint(1, 256, (64,), generator=g, dtype=torch.uint8)

    def ops(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (p + q, p - q, p * q, p // q, p % q, torch.fmod(p, q), p / q,
                torch.div(p, q, rounding_mode="trunc"), p.abs(), p.sort().values,
                p.topk(3).values, (p.float() * 1.5).to(torch.uint8), torch.maximum(p, q))

    fn = accel.compile(ops, (a, b), options={"cache": False})
    for got, want in zip(fn(a, b), ops(a, b), strict=True):
        assert got.dtype == want.dtype and torch.equal(got, want), (got, want)
    first = fn(a.numpy(), b.numpy())[0]
    assert first.dtype == np.uint8 and np.array_equal(first, (a + b).numpy())
    with pytest.raises(TypeError, match="got dtype int8"):
        fn(a.numpy().view(np.int8), b.numpy())


def test_uint8_signature_survives_save_and_load(tmp_path: Path) -> None:
    a = torch.tensor([250, 3], dtype=torch.uint8)
    fn = accel.compile(lambda p: p + 10, (a,), options={"cache": False})
    loaded = accel.load(fn.save(tmp_path / "u8"))
    assert torch.equal(loaded(a), torch.tensor([4, 13], dtype=torch.uint8))


def test_signless_int_arguments_take_either_reading() -> None:
    """Signless i8 from MLIR (no torch uint8 behind it) takes int8 and uint8 arrays alike
    (the same bits; MLIR integers are signless) and returns int8; explicitly signed si8
    keeps refusing uint8."""
    m = accel.compile_mlir("""
      func.func @id(%a: tensor<2xi8>) -> tensor<2xi8> {
        %e = tensor.empty() : tensor<2xi8>
        %r = linalg.copy ins(%a : tensor<2xi8>) outs(%e : tensor<2xi8>) -> tensor<2xi8>
        return %r : tensor<2xi8>
      }
      func.func @wide(%a: memref<2xi64>) -> i64 {
        %c0 = arith.constant 0 : index
        %v = memref.load %a[%c0] : memref<2xi64>
        return %v : i64
      }
      func.func @signed(%a: memref<2xsi8>) { return }""", {"cache": False})
    assert m.invoke("id", np.array([1, -2], np.int8)).tolist() == [1, -2]
    got = m.invoke("id", np.array([1, 254], np.uint8))
    assert got.dtype == np.int8 and got.tolist() == [1, -2]
    assert m.invoke("wide", np.array([2**64 - 1, 0], np.uint64)) == -1
    with pytest.raises(TypeError, match="got dtype uint8"):
        m.invoke("signed", np.array([1, 2], np.uint8))


def test_e2e_boundary_conventions() -> None:
    """What torch-mlir's e2e suite expects of a linalg backend (docs/e2e.md): rank-0
    results are 0-d arrays (not numpy scalars), signless i16/i32/i64 take unsigned arrays of
    their width, and i1 takes bool arrays."""
    m = accel.compile_mlir("""
      func.func @first(%a: tensor<3xi64>) -> tensor<i64> {
        %c0 = arith.constant 0 : index
        %v = tensor.extract %a[%c0] : tensor<3xi64>
        %r = tensor.from_elements %v : tensor<i64>
        return %r : tensor<i64>
      }
      func.func @any(%a: tensor<2xi1>) -> tensor<i1> {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %x = tensor.extract %a[%c0] : tensor<2xi1>
        %y = tensor.extract %a[%c1] : tensor<2xi1>
        %o = arith.ori %x, %y : i1
        %r = tensor.from_elements %o : tensor<i1>
        return %r : tensor<i1>
      }
      func.func @sum16(%a: tensor<2xi16>, %b: tensor<2xi32>) -> (tensor<2xi16>, tensor<2xi32>) {
        return %a, %b : tensor<2xi16>, tensor<2xi32>
      }""", {"cache": False})
    got = m.invoke("first", np.array([7, 8, 9]))
    assert type(got) is np.ndarray and got.shape == () and got.dtype == np.int64 and got == 7
    flag = m.invoke("any", np.array([False, True]))
    assert type(flag) is np.ndarray and flag.shape == () and flag.dtype == np.bool_ and flag
    assert not m.invoke("any", np.array([False, False]))
    a, b = m.invoke("sum16", np.array([1, 65535], np.uint16), np.array([2, 2**32 - 1], np.uint32))
    assert a.dtype == np.int16 and a.tolist() == [1, -1]
    assert b.dtype == np.int32 and b.tolist() == [2, -1]


# -- 5. torch.linalg.det ---------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "dtype"), [((4, 4), torch.float32), ((3, 6, 6),
                                                torch.float32), ((5, 5), torch.float64)])
def test_det_matches_eager(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(5)
    eye = torch.eye(shape[-1], dtype=dtype)
    x = torch.randn(*shape, generator=g, dtype=dtype) + 3 * eye
    fn = accel.compile(torch.linalg.det, (x,), options={"cache": False})
    y = torch.randn(*shape, generator=g, dtype=dtype) + 3 * eye
    torch.testing.assert_close(fn(y), torch.linalg.det(y), rtol=1e-4, atol=1e-5)


def test_det_needing_a_row_exchange_is_a_clean_error() -> None:
    """torch-mlir's det eliminates without pivoting and asserts on a zero pivot: an error,
    never a wrong value (eager gives -1 here)."""
    x = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    fn = accel.compile(torch.linalg.det, (torch.eye(2) + 1,), options={"cache": False})
    with pytest.raises(accel.RuntimeAssertionError, match="requiring permutations"):
        fn(x)


# -- 6. accel-run float literals --------------------------------------------------------------
def test_accel_run_float_overflow_is_one_error_line(tmp_path: Path) -> None:
    src = tmp_path / "bf.mlir"
    src.write_text("func.func @main(%a: tensor<2xbf16>) -> tensor<2xbf16> {\n"
                   "  return %a : tensor<2xbf16>\n}\n")
    bad = run_tool("accel-run", str(src), "--input", "2xbf16=1e39,1")
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr == ("accel-run: error: --input '2xbf16=1e39,1': 1e39 is out of range "
                          "for bf16 (largest finite value: 3.3895314e+38)\n")
    ok = run_tool("accel-run", str(src), "--input", "2xbf16=inf,-3e38")
    assert ok.returncode == 0 and ok.stderr == "" and ok.stdout == "2xbf16=[inf, -3e+38]\n"
