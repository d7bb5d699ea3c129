"""A failed `cf.assert` in compiled code raises `accel.RuntimeAssertionError`, never aborts.

The asserts come from MLIR input (as torch-mlir emits them for value checks) and go through
`accel-assert-to-error-return`; the JIT runtime turns the recorded failure into the error.
"""

from __future__ import annotations

import threading

import accel
import numpy as np
import pytest
from samples import SAFE_DIV

SOURCE = SAFE_DIV + """
func.func @check(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %ok = arith.cmpi sgt, %n, %c0 : i64
  cf.assert %ok, "n must be positive"
  return %n : i64
}
"""


@pytest.fixture(scope="module")
def compiled() -> accel.CompiledMLIR:
    return accel.compile_mlir(SOURCE, {"cache": False})


def test_passing_asserts_return_results(compiled: accel.CompiledMLIR) -> None:
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([2, 4, 6, 8], np.float32)
    np.testing.assert_array_equal(compiled.invoke("safe_div", a, b), a / b)
    assert compiled.invoke("check", 5) == 5


def test_failed_assert_in_a_loop_raises_with_its_message(compiled: accel.CompiledMLIR) -> None:
    a = np.ones(4, np.float32)
    b = np.array([1, 0, 1, 1], np.float32)
    with pytest.raises(accel.RuntimeAssertionError,
                       match=r"@safe_div: runtime assertion failed: .*division by zero"):
        compiled.invoke("safe_div", a, b)
    # The failure is not sticky: the next good call works.
    np.testing.assert_array_equal(compiled.invoke("safe_div", a, a), a)


def test_failed_scalar_assert_raises(compiled: accel.CompiledMLIR) -> None:
    with pytest.raises(accel.RuntimeAssertionError, match="n must be positive"):
        compiled.invoke("check", -1)


def test_failures_are_per_thread(compiled: accel.CompiledMLIR) -> None:
    """A failing call on one thread does not make a good call on another one raise."""
    errors: list[str] = []
    results: list[int] = []

    def bad() -> None:
        for _ in range(200):
            try:
                compiled.invoke("check", -1)
            except accel.RuntimeAssertionError as err:
                errors.append(str(err))

    def good() -> None:
        for _ in range(200):
            results.append(int(compiled.invoke("check", 3)))

    threads = [threading.Thread(target=bad), threading.Thread(target=good)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 200 and results == [3] * 200


def test_torch_reciprocal_of_zero_is_inf_as_in_eager() -> None:
    """torch-mlir lowers `1/x` with an assert; accel decomposes it so 1/0 = inf like eager."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.0, 0.0, -0.0, 4.0])
    fn = accel.compile(lambda t: 1.0 / t, (x,), options={"cache": False})
    torch.testing.assert_close(fn(x), 1.0 / x, rtol=0, atol=0)
