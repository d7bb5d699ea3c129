"""A slice of the fuzz harness (test/fuzz/fuzz.py, docs/fuzzing.md) in `make check`: a few
hundred seeded inputs of every family, in forked workers; any defect fails the test.

KNOWN may hold (family, kind, reason, message) patterns of defects being fixed elsewhere,
each with a comment saying where; it is empty: every defect fails the slice.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
FAMILIES = ("ir", "pipeline", "options", "grammar", "artifact", "api")

#: (family, kind regex, reason regex, message regex): defects expected until another
#: branch of issue 14 merges. Empty this list as they land.
KNOWN: list[tuple[str, str, str, str]] = []


def _known(defect: dict[str, str]) -> bool:
    return any(defect["family"] == family and re.search(kind, defect["kind"])
               and re.search(reason, defect["reason"]) and re.search(message,
                                                                      defect["message"])
               for family, kind, reason, message in KNOWN)


def test_fuzz_slice_has_no_defects(tmp_path: Path) -> None:
    # A fresh interpreter: the harness forks workers, which must not inherit this
    # process's torch and MLIR thread pools, and it sets its own cache folder.
    proc = subprocess.run(
        [sys.executable, str(FUZZ / "fuzz.py"), "--seed", "14", "--count", "200", "--quick",
         "--time-limit", "150", "--workers", "2", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False)
    print(proc.stdout[-3000:], proc.stderr[-3000:])
    summary = json.loads((tmp_path / "report.json").read_text())
    assert set(summary["table"]) == set(FAMILIES)  # every family ran
    assert summary["inputs"] >= 100
    known = [d for d in summary["defects"] if _known(d)]
    new = [d for d in summary["defects"] if not _known(d)]
    for d in known:
        print(f"known (another branch): #{d['id']} {d['family']}/{d['kind']}: {d['reason']}")
    if new:
        lines = [f"#{d['id']} {d['family']}/{d['kind']}: {d['reason']}: {d['message'][:300]!r}"
                 f" (replay: test/fuzz/fuzz.py --replay {d.get('replay')})" for d in new]
        pytest.fail("fuzz defects:\n" + "\n".join(lines))


def test_the_harness_reports_crashes_hangs_and_tracebacks(tmp_path: Path) -> None:
    """The slice can fail: a signal, a hang and a traceback are each a defect charged to the
    case that caused it, and the worker is replaced (the last case still runs)."""
    files = []
    for i, what in enumerate(("crash", "hang", "traceback", "keyerror")):
        path = tmp_path / f"{what}.json"
        path.write_text(json.dumps({"case": {"id": i, "family": "api", "kind": "selftest",
                                             "what": what}}))
        files.append(str(path))
    proc = subprocess.run([sys.executable, str(FUZZ / "fuzz.py"), "--timeout", "5",
                           "--replay", *files], capture_output=True, text=True, timeout=300,
                          check=False)
    outcomes = [line for line in proc.stdout.splitlines() if line.startswith("--- outcome")]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert outcomes == ["--- outcome: defect: killed by SIGSEGV",
                        "--- outcome: defect: hang: no result after 5 s",
                        "--- outcome: defect: traceback",
                        "--- outcome: defect: unexpected KeyError"]
