"""`ACCEL_PERF_MAP=1`: the JIT's functions in `/tmp/perf-<pid>.map` for `perf report`.

The map must name every compiled function at the address the JIT runs it from (a wrong
address attributes samples to the wrong kernel), and nothing must be written without the
variable.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from accel import compile_mlir
from accel.host import perfmap

SOURCE = """
func.func @twice(%a: tensor<64xf32>) -> tensor<64xf32> {
  %r = arith.addf %a, %a : tensor<64xf32>
  return %r : tensor<64xf32>
}
func.func @negate(%a: tensor<64xf32>) -> tensor<64xf32> {
  %r = arith.negf %a : tensor<64xf32>
  return %r : tensor<64xf32>
}
"""


def _read(path) -> dict[str, tuple[int, int]]:
    out = {}
    for line in path.read_text().splitlines():
        start, size, name = line.split(" ", 2)
        out[name] = (int(start, 16), int(size, 16))
    return out


def test_map_names_each_function_at_its_address(tmp_path, monkeypatch) -> None:
    target = tmp_path / "perf-test.map"
    monkeypatch.setenv(perfmap.ENV, "1")
    monkeypatch.setattr(perfmap, "path", lambda: str(target))
    mod = compile_mlir(SOURCE, options={"cache": False})
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(mod.invoke("twice", x), 2 * x)  # the code the map describes runs
    entries = _read(target)
    # (the plain functions may be inlined into their C wrappers and gone)
    assert {"_mlir_ciface_twice", "_mlir_ciface_negate"} <= set(entries), entries
    spans = sorted(entries.values())
    for (start, size), (following, _) in zip(spans, spans[1:], strict=False):
        assert size > 0 and start + size <= following, spans  # no overlaps
    # The address is where the code is: the C wrapper's first bytes are machine code the
    # process can read (a wrong, unmapped address would fault here instead).
    start, size = entries["_mlir_ciface_twice"]
    assert ctypes.string_at(start, min(size, 16)) != b"\0" * min(size, 16)


@pytest.mark.parametrize("value", ["", "0"])
def test_no_map_unless_asked(tmp_path, monkeypatch, value: str) -> None:
    target = tmp_path / "perf-test.map"
    monkeypatch.setenv(perfmap.ENV, value)
    monkeypatch.setattr(perfmap, "path", lambda: str(target))
    compile_mlir(SOURCE, options={"cache": False})
    assert not target.exists()


def test_entries_sizes_reach_the_next_function() -> None:
    addresses = {"a": 0x1000, "b": 0x1400, "c": 0, "d": 0x1100}
    assert perfmap.entries(addresses, addresses.get) == [
        (0x1000, 0x100, "a"), (0x1100, 0x300, "d"), (0x1400, 0x1000, "b")]
