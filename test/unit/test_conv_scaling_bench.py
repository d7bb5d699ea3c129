"""benchmarks/conv_scaling.py runs a layer end to end: compiles it, checks accel against
eager, times each framework per thread count and writes the JSON the docs quote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import conv_scaling  # noqa: E402


def test_one_layer_record(tmp_path, monkeypatch) -> None:
    out = tmp_path / "scaling.json"
    monkeypatch.setattr(sys, "argv", [
        "conv_scaling.py", "--layers", "l4_1x1s2_512", "--threads", "2", "1",
        "--seconds", "0.01", "--frameworks", "accel", "eager", "--json", str(out)])
    conv_scaling.main()
    record = json.loads(out.read_text())
    assert record["threads"] == [2, 1] and record["host"]["isa"]
    layer = record["results"]["l4_1x1s2_512"]
    assert layer["count"] == 1
    assert layer["max_abs_err"] < 1e-3  # conv + BatchNorm + ReLU against eager, fp32
    for threads in ("2", "1"):
        assert set(layer["ms"][threads]) == {"accel", "eager"}
        assert all(ms > 0 for ms in layer["ms"][threads].values())


def test_unknown_layer_is_a_one_line_error(monkeypatch, capsys) -> None:
    import pytest

    monkeypatch.setattr(sys, "argv", ["conv_scaling.py", "--layers", "l9_3x3"])
    with pytest.raises(SystemExit) as exit_info:
        conv_scaling.main()
    assert exit_info.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "unknown layer 'l9_3x3'" in err and "l4_3x3_512" in err


def test_resnet50_layer_frozen(tmp_path, monkeypatch) -> None:
    """`--model resnet50` times ResNet-50's own layers; `--freeze-weights` is recorded."""
    out = tmp_path / "scaling50.json"
    monkeypatch.setattr(sys, "argv", [
        "conv_scaling.py", "--model", "resnet50", "--layers", "l4_1x1_2048_512",
        "--threads", "1", "--seconds", "0.01", "--frameworks", "accel", "--freeze-weights",
        "--json", str(out)])
    conv_scaling.main()
    record = json.loads(out.read_text())
    assert record["model"] == "resnet50" and record["freeze_weights"] is True
    layer = record["results"]["l4_1x1_2048_512"]
    assert layer["count"] == 2 and layer["max_abs_err"] < 1e-3
    assert layer["ms"]["1"]["accel"] > 0
