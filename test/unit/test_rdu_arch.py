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
    assert (sn10.pcus, sn10.pmus, sn10.sram_mb) == (640, 640, 320)
    assert (sn40l.pcus, sn40l.pmus, sn40l.sram_mb) == (1040, 1040, 520)
    for arch in (sn10, sn40l):  # units and SRAM are published; bandwidths and clock are not
        assert not {"pcus", "pmus", "sram_mb", "peak_tflops"} & set(arch.assumed)


@pytest.mark.parametrize("name", ["sn20", "sn30"])
def test_assumed_numbers_are_marked(name: str) -> None:
    arch = ARCHS[name]
    assert {"pcus", "pmus", "sram_mb"} <= set(arch.assumed)
    doc = rdu_arch.__doc__ or ""
    assert f"`{name}`: ASSUMED {arch.pcus} PCUs, {arch.pmus} PMUs, {arch.sram_mb} MB" in doc


def test_every_arch_marks_its_unpublished_performance_numbers() -> None:
    for arch in ARCHS.values():
        assert {"clock_ghz", "link_gbps", "dram_gbps"} <= set(arch.assumed), arch.name
    assert "peak_tflops" not in ARCHS["sn40l"].assumed  # 638 TFLOPS: Hot Chips 2024


def test_scaling_factors_text_and_lists() -> None:
    assert rdu_arch.parse_scaling_factors("1 0.8,0.8") == (1.0, 0.8, 0.8)
    assert rdu_arch.scaling_factors_error([1, 0.5, 0.5, 0.5]) is None
    assert "not 2" in (rdu_arch.scaling_factors_error("1 1") or "")
    assert "numbers" in (rdu_arch.scaling_factors_error("1 x 1") or "")
    assert "(0, 1]" in (rdu_arch.scaling_factors_error("1 0 1") or "")


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
