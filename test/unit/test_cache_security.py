"""The compile cache runs what it finds as machine code: nobody else may write it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from accel import cache
from accel.targets.cpu.compile import compile_mlir

ADD = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>)
      -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(where))
    cache.STATS.clear()
    cache._WARNED.clear()
    return where


def test_cache_folder_and_entries_are_private(folder: Path) -> None:
    compile_mlir(ADD)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    modes = {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}
    assert modes == {0o600}
    assert compile_mlir(ADD).cache_hit


def test_a_folder_others_can_write_is_not_used(folder: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    compile_mlir(ADD)
    folder.chmod(0o777)
    with caplog.at_level("WARNING", logger="accel.cache"):
        assert not compile_mlir(ADD).cache_hit  # compiled, not taken from the folder
        assert not compile_mlir(ADD).cache_hit
    warnings = [r for r in caplog.records if "not using" in r.getMessage()]
    assert len(warnings) == 1 and "can be written by other users" in warnings[0].getMessage()
    assert cache.STATS["untrusted"] >= 2
    folder.chmod(0o700)
    assert compile_mlir(ADD).cache_hit


def test_an_entry_others_can_write_is_not_run(folder: Path) -> None:
    compile_mlir(ADD)
    for entry in folder.glob("*.entry"):
        entry.chmod(0o666)
    assert not compile_mlir(ADD).cache_hit


def test_a_fifo_named_like_an_entry_does_not_block(folder: Path) -> None:
    compile_mlir(ADD)
    for entry in folder.glob("*.entry"):
        entry.unlink()
        os.mkfifo(entry, 0o600)
    compiled = compile_mlir(ADD)  # returns instead of blocking on the FIFO
    assert not compiled.cache_hit
