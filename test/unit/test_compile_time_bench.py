"""benchmarks/compile_time.py's command line: a bad `--repeat` is one argparse line and exit
2 (it was an IndexError traceback for 0), and a cell keeps its fastest run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compile_time.py"
sys.path.insert(0, str(SCRIPT.parent))
import compile_time  # noqa: E402


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_bad_repeat_is_one_line(value: str) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--repeat", value], capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].endswith(
        f"argument --repeat: expected a whole number >= 1, got {value!r}"
        if value == "two" else f"argument --repeat: expected a whole number >= 1, got {value}")


def test_fastest_run_is_kept_with_all_times() -> None:
    runs = [{"compile_s": 3.0}, {"error": "timed out"}, {"compile_s": 2.5}]
    best = compile_time._fastest(runs)
    assert best["compile_s"] == 2.5
    assert best["all_s"] == [3.0, None, 2.5]
    assert compile_time._fastest([{"error": "x"}]) == {"error": "x"}
