"""benchmarks/interleaved.py: the variants take turns in one process and each compiled one
is checked against eager before it is timed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.interleaved import compare  # noqa: E402


def _net() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(64, 128, 1)).eval()
    return net, (torch.randn(1, 32, 14, 14),)


def test_accel_with_and_without_frozen_weights() -> None:
    net, inputs = _net()
    variants = ("eager", "accel", "accel_frozen", "accel_nchwc")
    row = compare(net, inputs, threads=1, rounds=3, variants=variants)
    for v in variants:
        assert 0 < row[f"{v}_min_ms"] <= row[f"{v}_ms"]
    assert max(row[f"{v}_max_err"] for v in variants[1:]) < 1e-5
    assert "accel/ort" not in row  # no onnxruntime asked for: no ratio


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None,
                    reason="onnxruntime is the bench extra")
def test_ratios_against_onnxruntime(tmp_path: Path) -> None:
    net, inputs = _net()
    row = compare(net, inputs, threads=1, rounds=2, folder=str(tmp_path))
    assert row["accel/ort"] == pytest.approx(row["onnxruntime_ms"] / row["accel_ms"], rel=1e-2)
    assert row["accel_frozen/ort"] > 0
