"""torch-mlir's e2e suite, a fixed 100-test sample, through accel (docs/e2e.md).

`make e2e` runs all 1828 tests; `make check` runs this sample (test/e2e/sample.txt, the
suite's files for it vendored in test/e2e/suite_sample) through `accel.compile` (the
accel-torch config; `make e2e` also runs accel-mlir, `accel.compile_mlir` on the
FxImporterTestConfig path), and fails when a test of
test/e2e/sample_expected.json no longer passes, or a runner process crashes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "test" / "e2e"


def _run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(E2E / "run_e2e.py"), *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})


@pytest.mark.slow
def test_sample_does_not_regress(tmp_path: Path) -> None:
    out = tmp_path / "sample.json"
    # accel-torch only (the whole path: torch -> import -> accel.compile): accel-mlir
    # compiles the same imported MLIR through compile_mlir, which cost make check another
    # ~70 s of two workers (issue 25); `make e2e` runs both configs on the whole suite.
    # About 75 s of CPU (two workers); the timeout leaves room for a loaded machine.
    run = _run("--sample", "--config", "accel-torch", "--shards", "2",
               "--json", str(out), timeout=1200)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    results = json.loads(out.read_text())
    expected = json.loads((E2E / "sample_expected.json").read_text())
    names = (E2E / "sample.txt").read_text().split()
    assert len(names) == 100
    for config in ("accel-torch",):
        assert [r["test"] for r in results[config]] == names
        passed = {r["test"] for r in results[config] if r["status"] == "pass"}
        assert set(expected[config]) <= passed, (config, set(expected[config]) - passed)
        assert not any(r["status"] in ("crash", "hang") for r in results[config])


_CRASHING_TESTS = '''
import ctypes
import torch
from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case
from torch_mlir_e2e_test.annotations import annotate_args, export


class Add(torch.nn.Module):
    @export
    @annotate_args([None, ([2], torch.float32, True)])
    def forward(self, x):
        return x + 1


class Crash(torch.nn.Module):
    @export
    @annotate_args([None, ([2], torch.float32, True)])
    def forward(self, x):
        ctypes.string_at(0)  # SIGSEGV in the worker process
        return x


@register_test_case(module_factory=lambda: Add())
def A_Add_basic(module, tu: TestUtils):
    module.forward(tu.rand(2))


@register_test_case(module_factory=lambda: Crash())
def B_Crash_basic(module, tu: TestUtils):
    module.forward(tu.rand(2))


@register_test_case(module_factory=lambda: Add())
def C_AddAgain_basic(module, tu: TestUtils):
    module.forward(tu.rand(2))
'''


def test_a_crashing_test_is_recorded_and_the_shard_goes_on(tmp_path: Path) -> None:
    """A test that kills its worker process is a `crash` and the next test still runs
    (in a new worker); the exit status says a runner crashed."""
    import shutil

    suite = tmp_path / "suite"
    shutil.copytree(E2E / "suite_sample", suite)
    tests = suite / "torch_mlir_e2e_test" / "test_suite"
    for f in tests.glob("*.py"):
        f.unlink()
    (tests / "crashy.py").write_text(_CRASHING_TESTS)
    (tests / "__init__.py").write_text("def register_all_tests():\n    from . import crashy\n")
    out = tmp_path / "r.json"
    run = _run("--suite", str(suite), "--config", "accel-mlir", "--shards", "1",
               "--json", str(out), timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "B_Crash_basic: crash" in run.stdout
    records = {r["test"]: r for r in json.loads(out.read_text())["accel-mlir"]}
    assert records["A_Add_basic"]["status"] == "pass"
    assert records["B_Crash_basic"]["status"] == "crash"
    assert records["C_AddAgain_basic"]["status"] == "pass"


def test_missing_suite_is_one_clear_line(tmp_path: Path) -> None:
    run = _run("--suite", str(tmp_path), "--config", "accel-mlir", timeout=120)
    assert run.returncode == 2
    assert "no torch_mlir_e2e_test under" in run.stderr and "E2E_SUITE_DIR" in run.stderr
    assert "Traceback" not in run.stderr
