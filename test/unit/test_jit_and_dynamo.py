"""`@accel.jit` and `torch.compile(backend="accel")` against eager PyTorch (fp32).

Tolerances: rtol=1e-4, atol=1e-5 (as `accel.api.VERIFY_RTOL/ATOL`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402
import accel.dynamo  # noqa: E402, F401 - registers the "accel" backend
from accel.jit_function import JitFunction  # noqa: E402
from samples import mlp_class  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


MLP = mlp_class(16, 8, 4)


def _mlp() -> MLP:
    torch.manual_seed(0)
    return MLP().eval()


#: Each test starts from fresh dynamo state (conftest.fresh_dynamo).
pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def test_jit_module_compiles_once_per_signature() -> None:
    model = _mlp()
    fast = accel.jit(model)
    assert isinstance(fast, JitFunction)
    assert isinstance(accel.jit(_mlp()), JitFunction)
    x = torch.randn(3, 16)
    torch.testing.assert_close(fast(x), model(x).detach(), rtol=RTOL, atol=ATOL)
    fast(torch.randn(3, 16))
    assert fast.stats == {"compiles": 1, "hits": 1, "eager_calls": 0}
    y = torch.randn(5, 16)
    torch.testing.assert_close(fast(y), model(y).detach(), rtol=RTOL, atol=ATOL)
    assert fast.stats["compiles"] == 2
    assert fast.signatures == ((((3, 16), "torch.float32", "cpu"),),
                               (((5, 16), "torch.float32", "cpu"),))


def test_jit_function_decorator_with_options() -> None:
    @accel.jit(compile_options={"opt_level": 1})
    def mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ w1) @ w2

    assert mlp.__name__ == "mlp"
    args = (torch.randn(2, 8), torch.randn(8, 6), torch.randn(6, 3))
    torch.testing.assert_close(mlp(*args), mlp.fn(*args), rtol=RTOL, atol=ATOL)
    mlp(*args)
    assert mlp.stats["compiles"] == 1
    assert next(iter(mlp.compiled.values())).options["opt_level"] == 1


def test_jit_bare_decorator_and_non_tensor_args() -> None:
    @accel.jit
    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    with pytest.raises(TypeError, match=r"argument 1 is float; .*torch.Tensor"):
        double(torch.ones(2), 3.0)
    with pytest.raises(TypeError, match=r"keyword arguments are not supported"):
        double(x=torch.ones(2))


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"opt_lvl": 2}, ValueError, r"unknown option 'opt_lvl'"),
    ({"opt_level": "3"}, ValueError, r"option 'opt_level' must be an int from 0 to 3"),
    ({"mm_conv_precision_mode": "tf64"}, ValueError,
     r"option 'mm_conv_precision_mode' must be one of default, fp32, tf32"),
])
def test_jit_bad_options_fail_at_decoration(options, error, message) -> None:
    with pytest.raises(error, match=message):
        accel.jit(compile_options=options)
    with pytest.raises(error, match=message):
        accel.jit(_mlp(), compile_options=options)


def test_jit_training_mode_runs_eagerly() -> None:
    model = _mlp().train()
    fast = accel.jit(model)
    x = torch.randn(2, 16)
    with pytest.warns(UserWarning, match=r"compiles inference only"):
        out = fast(x)
    assert out.grad_fn is not None and fast.stats["compiles"] == 0
    assert fast.stats["eager_calls"] == 1


def test_torch_compile_mlp() -> None:
    model = _mlp()
    fast = torch.compile(model, backend="accel", options={"opt_level": 2})
    x = torch.randn(4, 16)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # compiled, not a fallback
        torch.testing.assert_close(fast(x), model(x), rtol=RTOL, atol=ATOL)


def test_torch_compile_graph_break_and_tuple_outputs(capsys) -> None:
    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.tanh(x) * 2
        print("graph break")
        return y.sum(dim=0), y + x

    x = torch.randn(3, 5)
    compiled = []

    def spy(gm, example_inputs, **kwargs):
        run = accel.dynamo.accel_backend(gm, example_inputs, **kwargs)
        compiled.append(run)
        return run

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = torch.compile(f, backend=spy)(x)
    want = f(x)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)
    assert len(compiled) == 2 and all(hasattr(r, "compiled") for r in compiled)
    assert capsys.readouterr().out.count("graph break") == 2


def _spectrum(x: torch.Tensor) -> torch.Tensor:
    return torch.special.bessel_j0(x) + 1.0  # torch-mlir has no lowering for bessel_j0


def test_torch_compile_falls_back_with_one_warning() -> None:
    accel.dynamo._WARNED.clear()
    x = torch.randn(8)
    fast = torch.compile(_spectrum, backend="accel")
    with pytest.warns(UserWarning, match=r"accel backend: running graph eagerly: lowering"):
        torch.testing.assert_close(fast(x), _spectrum(x))
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same reason again: no second warning
        torch.testing.assert_close(torch.compile(_spectrum, backend="accel")(x), _spectrum(x))


def test_torch_compile_strict_target_raises() -> None:
    fast = torch.compile(_spectrum, backend="accel", options={"strict_target": True})
    with pytest.raises(Exception, match=r"unsupported op aten.special_bessel_j0"):
        fast(torch.randn(8))


def test_torch_compile_bad_option_raises() -> None:
    with pytest.raises(Exception, match=r"unknown option 'opt_lvl'"):
        torch.compile(_mlp(), backend="accel", options={"opt_lvl": 1})(torch.randn(1, 16))


def test_entry_point_finds_backend_without_import(tmp_path: Path) -> None:
    """The `torch_dynamo_backends` entry point (pyproject) works without `import accel`."""
    dist = tmp_path / "accel_ep_probe-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: accel-ep-probe\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\naccel = accel.dynamo:accel_backend\n")
    script = textwrap.dedent("""
        import sys, torch
        sys.path.insert(0, sys.argv[1])
        assert "accel" in torch._dynamo.list_backends(), torch._dynamo.list_backends()
        f = torch.compile(lambda x: x * 3 + 1, backend="accel")
        x = torch.randn(4)
        torch.testing.assert_close(f(x), x * 3 + 1)
        import accel.dynamo
        print("ok", "accel.dynamo" in sys.modules)
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ok True" in proc.stdout


def test_torch_compile_input_mutation_is_compiled_and_written_back() -> None:
    """An inference graph that updates an input in place (a StaticCache's index_copy_) is
    compiled: the new value is written back into the caller's tensor after each call."""
    def bump(x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        x.add_(1.0)
        x.index_copy_(0, i, torch.full((1,), 7.0))
        return x * 2

    count, eager = len(accel.dynamo.graphs), accel.dynamo.stats["eager"]
    compiled = torch.compile(bump, backend="accel", options={"strict_target": True})
    x, i = torch.zeros(3), torch.tensor([1])
    out = compiled(x, i)
    torch.testing.assert_close(x, torch.tensor([1.0, 7.0, 1.0]))
    torch.testing.assert_close(out, torch.tensor([2.0, 14.0, 2.0]))
    out = compiled(x, torch.tensor([2]))
    torch.testing.assert_close(x, torch.tensor([2.0, 8.0, 7.0]))
    torch.testing.assert_close(out, torch.tensor([4.0, 16.0, 14.0]))
    assert accel.dynamo.stats["eager"] == eager
    assert [g.compiled for g in accel.dynamo.graphs[count:]] == [True]
