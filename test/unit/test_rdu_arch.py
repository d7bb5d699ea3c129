"""The RDU architecture table and SambaFlow-style resource scaling."""

from __future__ import annotations

import pytest
from accel.dialects import rdu_arch
from accel.dialects.rdu_arch import ARCHS, lookup_arch, resource_limit, scaling_error, scaling_for


def test_table_names_the_targets() -> None:
    assert set(ARCHS) >= {"sn10", "sn20", "sn30", "sn40l"}
    assert all(name == arch.name for name, arch in ARCHS.items())
    assert lookup_arch("SN10") is None  # SambaFlow spells targets in lower case


def test_published_numbers() -> None:
    sn10, sn40l = ARCHS["sn10"], ARCHS["sn40l"]
    assert (sn10.pcus, sn10.pmus, sn10.sram_mb, sn10.assumed) == (640, 640, 320, ())
    assert (sn40l.pcus, sn40l.pmus, sn40l.sram_mb, sn40l.assumed) == (1040, 1040, 520, ())


@pytest.mark.parametrize("name", ["sn20", "sn30"])
def test_assumed_numbers_are_marked(name: str) -> None:
    arch = ARCHS[name]
    assert set(arch.assumed) == {"pcus", "pmus", "sram_mb"}
    doc = rdu_arch.__doc__ or ""
    assert f"`{name}`: ASSUMED {arch.pcus} PCUs, {arch.pmus} PMUs, {arch.sram_mb} MB" in doc


def test_scaling_three_and_four_factors() -> None:
    assert scaling_for("backward", None) == 1.0
    assert scaling_for("optimizer", [1.0, 0.8, 0.6]) == 0.6
    assert scaling_for("optimizer", [1.0, 0.8, 0.1, 0.5]) == 0.5  # index 2: grad normalization
    assert resource_limit(ARCHS["sn10"], "pcus", "backward", [1.0, 0.8, 0.8]) == 512
    assert resource_limit(ARCHS["sn40l"], "pmus", "forward") == 1040
    with pytest.raises(KeyError):
        resource_limit(ARCHS["sn10"], "sram", "forward")


@pytest.mark.parametrize("factors, error", [
    ([1.0, 1.0], "needs 3 or 4 scaling factors, got 2"),
    ([1.0, 0.0, 1.0], "scaling factors must lie in (0, 1], got 0"),
    ([1.0, 1.0, 1.2, 1.0], "scaling factors must lie in (0, 1], got 1.2"),
])
def test_scaling_errors(factors: list[float], error: str) -> None:
    assert scaling_error(factors) == error
    assert scaling_error([1.0, 0.8, 0.8]) is None
