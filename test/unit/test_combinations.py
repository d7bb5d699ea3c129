"""The combination matrix (issue 27, docs/matrix.md): every target x preset x entry point
(accel.compile, accel-compile, torch.compile, compile_train_step) x AOT off/on x model (MLP,
CNN with BatchNorm, q/k/v block) compiles, runs and matches eager, or gives the one-line
refusal docs/matrix.md documents for it. The whole matrix is `long` (`make combinations`);
make check runs a fixed sample of it."""

from __future__ import annotations

import re
from pathlib import Path

import combinations as C
import pytest

ALL = C.cells()
#: The sample make check runs: each target, entry point and model, AOT on cpu, mncore's O3
#: on the q/k/v block (O4: test_mncore_presets.py), and a cell of each refusal.
SAMPLE = [
    ("cpu", "o1", "api", True, "cnn"),
    ("cpu", "o0", "cli", True, "block"),
    ("nvgpu", "o1", "api", False, "block"),
    ("rdu", "o1", "dynamo", False, "mlp"),
    ("mncore", "O0", "train", False, "mlp"),
    ("mncore", "O3", "cli", False, "block"),
    ("rdu", "o3", "api", True, "mlp"),
    ("mncore", "O1", "train", True, "mlp"),
    ("cpu", "o3", "train", True, "block"),
    ("cpu", "o0", "dynamo", True, "mlp"),
]


def _id(cell: tuple) -> str:
    target, preset, entry, aot, model = cell
    return f"{target}-{preset}-{entry}-{'aot' if aot else 'jit'}-{model}"


def _check(cell: tuple, tmp_path: Path) -> None:
    got = C.run_cell(*cell, tmp_path)
    assert got == C.expected(*cell)


@pytest.mark.parametrize("cell", SAMPLE, ids=_id)
def test_sample_cell(cell: tuple, tmp_path: Path) -> None:
    _check(cell, tmp_path)


@pytest.mark.long
@pytest.mark.parametrize("cell", [c for c in ALL if c not in SAMPLE], ids=_id)
def test_matrix_cell(cell: tuple, tmp_path: Path) -> None:
    _check(cell, tmp_path)


def test_sample_is_in_the_matrix_and_covers_each_axis() -> None:
    assert set(SAMPLE) <= set(ALL)
    for axis, values in enumerate((C.TARGETS, None, C.ENTRIES, (False, True), tuple(C.MODELS))):
        if values is not None:
            assert {c[axis] for c in SAMPLE} == set(values), axis
    # no-gpu depends on the machine: the rest are in the sample.
    assert {C.expected(*c) for c in SAMPLE} >= {"ok", *C.REFUSALS} - {"no-gpu"}


def test_docs_list_every_refusal() -> None:
    """docs/matrix.md names each refusal with its message, and no other."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "matrix.md").read_text()
    refusals = doc[doc.index("## Refusals"):]
    listed = set(re.findall(r"^\| `([a-z-]+)` \|", refusals, re.M))
    assert listed == set(C.REFUSALS)
