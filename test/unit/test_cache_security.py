"""The compile cache runs what it finds as machine code: nobody else may write it."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel import cache
from accel.host.compile import compile_mlir

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


def _rewrite_object(path: Path, damage: Any, *, fix_digest: bool) -> None:
    """Damage the object code inside a cache entry and fix the entry's checksum up (and,
    with `fix_digest`, the object's own digest), as a broken writer would leave it."""
    from accel.host.jit import object_digest

    entry = cache.decode_entry(path.read_bytes())
    obj = bytearray(entry.data)
    damage(obj)
    if fix_digest:
        entry.metadata["object_sha256"] = object_digest(bytes(obj))
    path.write_bytes(cache.encode_entry(bytes(obj), entry.metadata))  # a valid checksum


def _flip_code(obj: bytearray) -> None:
    """Instructions damaged inside a well-formed object: only a digest can tell."""
    for i in range(64, 96):  # the sections right after the ELF header: constants or code
        obj[i] ^= 0xFF


def _section_table_past_the_end(obj: bytearray) -> None:
    obj[0x28:0x30] = (len(obj) - 8).to_bytes(8, "little")  # e_shoff


def _huge_alignment(obj: bytearray) -> None:
    shoff = int.from_bytes(obj[0x28:0x30], "little")
    obj[shoff + 64 * 2 + 48:shoff + 64 * 2 + 56] = (1 << 60).to_bytes(8, "little")


@pytest.mark.parametrize(("damage", "fix_digest"), [
    (_flip_code, False), (_section_table_past_the_end, False),
    (_section_table_past_the_end, True), (_huge_alignment, True)])
def test_an_entry_with_damaged_object_code_is_rebuilt_not_run(
        folder: Path, damage: Any, fix_digest: bool) -> None:
    """A valid entry checksum over damaged object bytes (issue 14): the entry is dropped,
    compiled again and overwritten; the damaged code never runs (it would crash or lie)."""
    compile_mlir(ADD)
    (path,) = folder.glob("*.entry")
    _rewrite_object(path, damage, fix_digest=fix_digest)
    again = compile_mlir(ADD)
    assert not again.cache_hit and cache.STATS["corrupt"] == 1
    x, y = np.arange(4, dtype=np.float32), np.full(4, 0.5, np.float32)
    np.testing.assert_array_equal(again.invoke("add", x, y), x + y)
    from accel.host.jit import object_digest
    from accel.llvm.elf import object_problem

    rebuilt = cache.decode_entry(path.read_bytes())
    obj = rebuilt.data
    assert rebuilt.metadata["object_sha256"] == object_digest(obj) and \
        object_problem(obj) is None
    assert compile_mlir(ADD).cache_hit


def test_the_object_check_passes_what_the_jit_makes_and_refuses_garbage() -> None:
    from accel.llvm.elf import object_problem

    obj = compile_mlir(ADD, {"cache": False}).object_code
    assert object_problem(obj) is None
    assert object_problem(b"") == "not an ELF file"
    assert object_problem(obj[:200]) is not None
    damaged = bytearray(obj)
    _huge_alignment(damaged)
    assert "alignment" in (object_problem(bytes(damaged)) or "")
