"""Inputs that used to kill or mislead the user's process (issue 14): each must be a clean
error, or work."""

from __future__ import annotations

import subprocess
import sys
import threading

import accel
import numpy as np
import pytest
from accel.diagnostics import AccelError

torch = pytest.importorskip("torch")


class Exits(torch.nn.Module):
    def forward(self, x):
        sys.exit(3)


def test_sys_exit_in_forward_is_an_error_not_an_exit() -> None:
    with pytest.raises(AccelError, match=r"Exits failed: its code called sys.exit\(3\)"):
        accel.compile(Exits(), (torch.randn(2),), options={"cache": False})


def test_concurrent_compiles_from_threads_all_succeed() -> None:
    models = [torch.nn.Sequential(torch.nn.Linear(8, 4 + i), torch.nn.Tanh()).eval()
              for i in range(4)]
    x = torch.randn(2, 8)
    errors: list[BaseException] = []
    results: dict[int, object] = {}

    def work(i: int) -> None:
        try:
            results[i] = accel.compile(models[i], (x,), options={"cache": False})(x)
        except BaseException as err:  # noqa: BLE001 - collected for the assertion
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with torch.no_grad():
        for i, model in enumerate(models):
            torch.testing.assert_close(results[i], model(x), rtol=1e-4, atol=1e-5)


def test_freed_results_at_interpreter_exit_are_quiet() -> None:
    """A result array alive at exit used to print a TypeError from its finalizer."""
    script = ("import numpy as np, accel\n"
              "m = accel.compile_mlir('''func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
              "  %e = tensor.empty() : tensor<4xf32>\n"
              "  %r = linalg.negf ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> "
              "tensor<4xf32>\n  return %r : tensor<4xf32>\n}''', {'cache': False})\n"
              "keep = m.invoke('f', np.ones(4, np.float32))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert np.isfinite(1.0)


def test_one_tensor_given_twice_compiles_two_inputs() -> None:
    """`accel.compile(f, (a, a))` compiled `x / y` as `x / x`: later calls returned ones."""
    a = torch.ones(3)
    fn = accel.compile(lambda x, y: x / y, (a, a), options={"cache": False})
    x, y = torch.arange(1.0, 4.0), torch.full((3,), 2.0)
    torch.testing.assert_close(fn(x, y), x / y)
