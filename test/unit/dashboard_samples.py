"""Small real output folders for the dashboard tests, built once per test process.

One tiny model whose module names include HTML (`EVIL`), compiled at opt_level 1 for
every target through the real entry points: accel-compile (cpu, rdu inference on 2 chips,
an rdu train step, nvgpu cross-compiled for sm_80) and accel.compile's mncore codegen_dir.
Plus `reports`, a hand-made folder whose section, event and file names are HTML.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

EVIL = "<img src=x onerror=alert(1)>"

MODEL = f'''
import torch

EVIL = {EVIL!r}


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(8, 16)
        self.add_module(EVIL, torch.nn.Linear(16, 16))
        self.blocks = torch.nn.ModuleList([Block() for _ in range(2)])
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        x = getattr(self, EVIL)(self.inp(x))
        for b in self.blocks:
            x = b(x)
        return self.out(x)


def get_model(batch_size=2):
    torch.manual_seed(0)
    return Net(), (torch.randn(batch_size, 8),)


def loss_fn(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def get_training(batch_size=2):
    torch.manual_seed(0)
    m = Net()
    return m, loss_fn, torch.optim.SGD(m.parameters(), lr=0.1), (
        torch.randn(batch_size, 8), torch.randn(batch_size, 4))
'''

_BUILT: dict[Path, dict[str, Any]] = {}


def _accel_compile(*args: str) -> str:
    """accel-compile in this process (no second torch import); its stderr."""
    from accel.tools.accel_compile import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(list(args))
    assert code == 0, err.getvalue()
    return err.getvalue()


def _reports(out: Path) -> None:
    """A reports-only folder with HTML in every name the pages show."""
    out.mkdir()
    section = {"name": f"s0_{EVIL}", "index": 0, "phase": "forward", "ops": [f"linear:{EVIL}"],
               "pcu": 4, "pmu": 2, "hypersection": None, "chip": 0, "est_us": 1.5,
               "transfer_us": 0.0}
    (out / "sections.json").write_text(json.dumps({
        "arch": "sn40l", "arch_limits": {"pcu": 1040, "pmu": 1040},
        "sections": [section], "hypersections": [{"name": EVIL, "instances": 1,
                                                  "members": [section["name"]]}]}))
    (out / "profile.json").write_text(json.dumps({"traceEvents": [
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": EVIL}},
        {"name": EVIL, "cat": EVIL, "ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": 5}]}))
    (out / f"{EVIL}.mlir").write_text(f'func.func @f() {{\n  "{EVIL}"() : () -> ()\n'
                                      "  return\n}\n")


def build_samples(base: Path) -> dict[str, Any]:
    """{name: folder} for cpu, rdu, rdu_train, nvgpu, mncore, reports; plus the
    accel-compile -v output of the cpu build (`log`)."""
    if base in _BUILT:
        return _BUILT[base]
    import accel

    base.mkdir(parents=True, exist_ok=True)
    model = base / "tiny.py"
    model.write_text(MODEL)
    found: dict[str, Any] = {}
    found["log"] = _accel_compile(str(model), "--inference", "-o1", "-v", "--num-iters", "2",
                                  "--output-folder", str(base / "cpu"))
    found["cpu"] = base / "cpu"
    _accel_compile(str(model), "--inference", "--target", "rdu", "-o1", "--n-chips", "2",
                   "-q", "--output-folder", str(base / "rdu"))
    found["rdu"] = base / "rdu"
    _accel_compile(str(model), "--target", "rdu", "-o1", "-q", "--resources-scaling-factors",
                   "1", "0.8", "0.8", "--output-folder", str(base / "rdu_train"))
    found["rdu_train"] = base / "rdu_train"
    _accel_compile(str(model), "--inference", "--target", "nvgpu", "--device", "sm_80", "-o1",
                   "-q", "--output-folder", str(base / "nvgpu"))
    found["nvgpu"] = base / "nvgpu"
    from samples import load_get_model

    net, inputs = load_get_model(base, "tiny")
    accel.compile(net.eval(), inputs, options={"target": "mncore", "opt_level": 1,
                                               "codegen_dir": str(base / "mncore")})
    found["mncore"] = base / "mncore"
    _reports(base / "reports")
    found["reports"] = base / "reports"
    _BUILT[base] = found
    return found
