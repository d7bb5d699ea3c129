"""`accel-compile`, run as `python -m accel.tools.accel_compile` (works before installing).

Error cases run in-process through `accel.cli.run_main` (what the console script calls) to
stay fast. Each run gets its own `ACCEL_CACHE_DIR` (a temporary folder), never the user's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ADD = """\
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>)
      -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func @neg(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.negf ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""

MODEL_PY = """\
import torch


def get_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh()).eval()
    return model, (torch.randn(3, 6),)


def broken():
    raise RuntimeError("no weights here")
"""


def accel_compile(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_mlir_file(tmp_path: Path) -> None:
    import accel

    src = tmp_path / "add.mlir"
    src.write_text(ADD)
    r = accel_compile(tmp_path, str(src), "-o", str(tmp_path / "a"), "--entry", "neg",
                      "--opt-level", "2", "--option", "cache=false")
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "cache").exists()  # cache=false honoured
    fn = accel.load(tmp_path / "a")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(fn(x), -x)
    np.testing.assert_array_equal(fn.compiled.invoke("add", x, x), 2 * x)  # all functions kept
    r = accel_compile(tmp_path, str(src), "--output-folder", str(tmp_path / "b"))
    assert r.returncode == 0 and "entry @add" in r.stderr


def test_model_py(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import accel

    src = tmp_path / "model.py"
    src.write_text(MODEL_PY)
    r = accel_compile(tmp_path, str(src), "-o", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        import model as user_model  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("model", None)
    module, (x,) = user_model.get_model()
    with torch.no_grad():
        want = module(x)
    torch.testing.assert_close(accel.load(tmp_path / "m")(x), want, rtol=1e-4, atol=1e-5)


def test_help_and_version(tmp_path: Path) -> None:
    r = accel_compile(tmp_path, "--help")
    assert r.returncode == 0 and "get_model" in r.stdout and "--output-folder" in r.stdout
    r = accel_compile(tmp_path, "--version")
    assert r.returncode == 0 and r.stdout.startswith("accel-compile (accel ")


@pytest.mark.parametrize(("args", "message"), [
    ((), "accel-compile: error: the following arguments are required"),
    (("missing.mlir", "-o", "x"), "accel-compile: error: no such file: 'missing.mlir'"),
    (("{dir}/add.txt", "-o", "x"), "accel-compile: error: MODEL must be a .mlir or .py"),
    (("{dir}/add.mlir", "-o", "x", "--entry", "nope"), "no public function @nope"),
    (("{dir}/add.mlir", "-o", "x", "--option", "verify_numerics=true"),
     "option 'verify_numerics' does not apply to .mlir input"),
    (("{dir}/add.mlir", "-o", "x", "--option", "oops"), "--option expects KEY=VALUE"),
    (("{dir}/add.mlir", "-o", "x", "--opt-level", "7"), "argument --opt-level: invalid choice"),
    (("{dir}/model.py", "-o", "x", "--option", "opt_level=9"),
     "option 'opt_level' must be an int from 0 to 3"),
    (("{dir}/model.py", "-o", "x", "--option", "bogus=1"), "unknown option 'bogus'"),
    (("{dir}/model.py", "-o", "x", "--entry", "broken"),
     "broken() failed: RuntimeError: no weights here"),
    (("{dir}/model.py", "-o", "x", "--entry", "absent"), "defines no function absent()"),
])
def test_errors(tmp_path: Path, args: tuple[str, ...], message: str,
                monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from accel.cli import run_main
    from accel.tools.accel_compile import main

    (tmp_path / "add.mlir").write_text(ADD)
    (tmp_path / "add.txt").write_text(ADD)
    (tmp_path / "model.py").write_text(MODEL_PY)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", ["accel-compile"])
    monkeypatch.chdir(tmp_path)
    rc = run_main(main, [a.format(dir=tmp_path) for a in args])
    err = capsys.readouterr().err
    line = one_error_line(subprocess.CompletedProcess(args, rc, "", err))
    assert message in line
    assert not (tmp_path / "x").exists()


def test_located_ir_error(tmp_path: Path) -> None:
    src = tmp_path / "bad.mlir"
    src.write_text("func.func @f() {\n  %x = arith.constant 1 : i32\n  return %y : i32\n}\n")
    r = accel_compile(tmp_path, str(src), "-o", str(tmp_path / "out"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"{src}:3:"), r.stderr
    assert not (tmp_path / "out").exists()
