"""accel-opt as users run it: errors are located one-liners with exit 1, never tracebacks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_tool

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "test" / "Tools" / "accel-opt" / "Inputs" / "tag_funcs.py"
LOCATED = re.compile(r"^(\S+?):(\d+):(\d+): error: .+")

GOOD = "func.func @f(%a: f32) -> f32 {\n  %0 = arith.addf %a, %a : f32\n  return %0 : f32\n}\n"


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    return path


@pytest.mark.parametrize("text, line, col", [
    ("func.func @f() {\n  %0 = foo\n}\n", 2, 8),  # unknown op
    ("func.func @f(%a: i32) -> f32 {\n  return %a : i32\n}\n", 2, 3),  # verifier
    ("func.func @f( {\n", 1, 14),  # syntax (MLIR points just before the brace)
    ('"x.y"() : () -> ()\n', 1, 1),  # unregistered dialect
])
def test_bad_ir_is_a_located_error(tmp_path: Path, text: str, line: int, col: int) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    result = run_tool("accel-opt", str(path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    first = result.stderr.splitlines()[0]
    m = LOCATED.match(first)
    assert m, first
    assert (m.group(1), int(m.group(2))) == (str(path), line)
    assert int(m.group(3)) >= 1 and (col == 1 or int(m.group(3)) == col)


@pytest.mark.parametrize("args, message", [
    (["-no-such-pass"], "unknown pass or pipeline 'no-such-pass'"),
    (["--pass-pipeline=builtin.module(cse"], "missing ')'"),
    (["--canonicalize=bogus=1"], "no such option bogus"),
    ([f"--load-pass-plugin={PLUGIN}", "-tag-funcs{nope=1}"], "unknown option 'nope'"),
    ([f"--load-pass-plugin={PLUGIN}", "-crash-in-python"], "raised RuntimeError: plugin bug"),
    ([f"--load-pass-plugin={PLUGIN}", "-reject-addf"], "arith.addf is not allowed here"),
    (["--load-pass-plugin=/no/such/plugin.py"], "cannot load pass plugin"),
])
def test_bad_invocations_fail_cleanly(good: Path, args: list[str], message: str) -> None:
    result = run_tool("accel-opt", str(good), *args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert message in result.stderr.splitlines()[0]
    assert result.stdout == ""


def test_missing_input_file(tmp_path: Path) -> None:
    result = run_tool("accel-opt", str(tmp_path / "absent.mlir"))
    assert result.returncode == 1
    assert result.stderr.strip() == f"{tmp_path / 'absent.mlir'}: error: could not open input " \
                                    "file: no such file"


def test_stdin_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    result = run_tool("accel-opt", "-", "-cse", "-o", str(out), input=GOOD)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "arith.addf %arg0, %arg0 : f32" in out.read_text()


def test_stdin_errors_are_named_stdin() -> None:
    result = run_tool("accel-opt", input="func.func @f() {\n  %0 = foo\n}\n")
    assert result.returncode == 1
    assert result.stderr.startswith("<stdin>:2:8: error:")


def test_list_passes_shows_accel_and_plugin_passes() -> None:
    result = run_tool("accel-opt", f"--load-pass-plugin={PLUGIN}", "--list-passes")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert re.search(r"^  accel-emit-c-interface\s+- Adds `llvm.emit_c_interface`", text, re.M)
    assert re.search(r"^  tag-funcs\s+- Adds a unit attribute `tag` to every func.func", text, re.M)
    assert re.search(r"^    --attr=<str> \(default: tag\)", text, re.M)
    assert re.search(r"^    --include-declarations=<bool> \(default: false\)", text, re.M)


def test_list_passes_shows_upstream_passes() -> None:
    text = run_tool("accel-opt", "--list-passes").stdout
    for name in ("canonicalize", "cse", "lower-affine", "convert-linalg-to-loops",
                 "one-shot-bufferize", "affine-loop-fusion", "convert-to-llvm"):
        assert re.search(rf"^  {re.escape(name)}\s+- \S", text, re.M), name
    assert re.search(r"^    --max-iterations=<\w+> \(default: 10\)", text, re.M)
