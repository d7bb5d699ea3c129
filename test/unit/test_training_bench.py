"""benchmarks/training.py: the `resnet18` workload is compile_time.py's `resnet18-train`
(one workload behind issue 26's step figures and issue 25's compile figures), and the
table keeps its columns for every model name."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "training.py"
sys.path.insert(0, str(SCRIPT.parent))
import training  # noqa: E402


def test_resnet18_is_compile_times_train_workload() -> None:
    import torch

    model, loss_fn, opt, batch = training.BUILD["resnet18"]()
    x, y = batch
    assert tuple(x.shape) == (8, 3, 64, 64) and tuple(y.shape) == (8,)
    assert isinstance(opt, torch.optim.SGD) and opt.defaults["momentum"] == 0.9
    assert model.training
    assert model.conv1.out_channels == 16  # width 16
    loss = loss_fn(model, x, y)
    assert loss.dim() == 0 and torch.isfinite(loss)


def test_table_columns_line_up_for_long_names() -> None:
    cell = {"step_ms": 17.0, "compile_s": 0.0, "peak_mib": 2.0}
    accel = {"step_ms": 20.0, "compile_s": 33.0, "peak_mib": None}
    runs = [{"threads": 1, "results": {
        "resnet18": {"eager": cell, "accel": accel},
        "cnn": {"eager": cell, "inductor": {"error": "boom"}, "accel": accel}}}]
    lines = training.table(runs, ["cnn", "resnet18"], [1])
    rows = lines.splitlines()
    assert len({row.index("|") for row in rows}) == 1  # the model column fits "resnet18"
    assert rows[2].split()[-2:] == ["0.85", "-"]  # eager/accel; no inductor figure
    assert "error" in rows[1] and "n/a" in rows[2]
