"""The pip `filecheck` port that lit uses when LLVM's FileCheck is not on PATH (pinned to 1.0.6
in pyproject.toml) decides CHECK-NOT ranges as LLVM's FileCheck does. Each case states LLVM's
verdict; a port upgrade that changes one fails here, not silently in a lit test.

The one known difference makes the port stricter, never more lenient: a CHECK-NOT before a
group of CHECK-DAGs is checked up to the match of the group's *first* directive, where LLVM
stops at the group's *earliest* match. A lit test can then fail with the port and pass with
LLVM, but no test passes with the port that fails with LLVM."""

from __future__ import annotations

from pathlib import Path

import pytest

# (input, check lines, LLVM FileCheck's exit status)
CASES = {
    # A CHECK-NOT before a CHECK-DAG is checked up to the DAG match.
    "not_before_dag": ("a\nbad\nx\n", ["CHECK: a", "CHECK-NOT: bad", "CHECK-DAG: x"], 1),
    "not_before_dag_clean": ("a\nzzz\nx\n", ["CHECK: a", "CHECK-NOT: bad", "CHECK-DAG: x"], 0),
    "not_before_dag_group": ("a\nbad\nx1\nx2\n",
                             ["CHECK: a", "CHECK-NOT: bad", "CHECK-DAG: x2", "CHECK-DAG: x1"], 1),
    # The range after a match starts right after it, on the same line.
    "same_line_after_match": ("abad\nx\n", ["CHECK: a", "CHECK-NOT: bad", "CHECK: x"], 1),
    "same_line_then_same": ("a bad x\n", ["CHECK: a", "CHECK-NOT: bad", "CHECK-SAME: x"], 1),
    "not_at_end": ("abad\n", ["CHECK: a", "CHECK-NOT: bad"], 1),
    "not_before_match_text": ("a\nb\n", ["CHECK: a", "CHECK-NOT: a", "CHECK: b"], 0),
    # CHECK-NEXT after CHECK-NOT: the line after the match before the NOT.
    "next_after_not_wrong_line": ("a\nz\nb\n", ["CHECK: a", "CHECK-NOT: q", "CHECK-NEXT: b"], 1),
    "next_after_not_right_line": ("a\nz\nb\n", ["CHECK: a", "CHECK-NOT: q", "CHECK-NEXT: z"], 0),
    "not_between_labels": ("a\nq\nb\n", ["CHECK-LABEL: a", "CHECK-NOT: q", "CHECK-LABEL: b"], 1),
    "not_after_dag_group": ("a\nx1\nbad\nx2\nz\n",
                            ["CHECK: a", "CHECK-DAG: x2", "CHECK-DAG: x1", "CHECK-NOT: bad",
                             "CHECK: z"], 0),
}
#: Where the port differs (stricter): case -> the port's exit status.
STRICTER = {
    "not_before_dag_group_out_of_order": ("a\nx2\nbad\nx1\n",
                                          ["CHECK: a", "CHECK-NOT: bad", "CHECK-DAG: x1",
                                           "CHECK-DAG: x2"], 0, 1),
}


def _port(tmp_path: Path, text: str, checks: list[str]) -> int:
    from filecheck.main import main

    inp, chk = tmp_path / "input.txt", tmp_path / "checks.txt"
    inp.write_text(text)
    chk.write_text("".join(f"// {c}\n" for c in checks))
    try:
        main(["filecheck", str(chk), "--input-file", str(inp)])
    except SystemExit as done:
        return int(done.code or 0)
    return 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_port_agrees_with_llvm_filecheck(tmp_path: Path, name: str) -> None:
    text, checks, llvm = CASES[name]
    assert _port(tmp_path, text, checks) == llvm


@pytest.mark.parametrize("name", sorted(STRICTER))
def test_where_the_port_differs_it_is_stricter(tmp_path: Path, name: str) -> None:
    text, checks, llvm, port = STRICTER[name]
    assert (llvm, port) == (0, 1)  # fails with the port only: never a false pass
    assert _port(tmp_path, text, checks) == port


def test_the_port_is_the_pinned_version() -> None:
    import importlib.metadata

    pinned = [line for line in (Path(__file__).resolve().parents[2] / "pyproject.toml")
              .read_text().splitlines() if "filecheck==" in line]
    version = importlib.metadata.version("filecheck")
    assert pinned and f'"filecheck=={version}"' in pinned[0], (version, pinned)
