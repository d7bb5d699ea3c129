"""The train-step cache (accel.training.step_cache): compile_train_step without tracing.

Every test points `ACCEL_CACHE_DIR` at its own folder. A hit must train exactly as the
step it was stored from (same losses, bit for bit) and as eager (rtol 1e-4); anything that
changes the traced graphs (the loss, the optimizer's settings, the batch's shape) must miss.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import accel
import pytest
import torch
from accel import cache
from training_models import classify, mlp, vector_batch

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from accel.training.compile import _MEMO

    folder = tmp_path / "cache"
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(folder))
    # Phase graphs compiled by an earlier test come from the in-process memo, whose front
    # entries are in that test's cache folder: this one's would then hold no step entry.
    _MEMO.clear()
    return folder


def _compile(loss_fn=classify, momentum: float = 0.9, batch: int = 8,
             options: dict | None = None) -> tuple[accel.TrainStep, torch.nn.Module, dict]:
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=momentum)
    before = dict(cache.STATS)
    step = accel.compile_train_step(model, loss_fn, opt, vector_batch(0, batch),
                                    options={"opt_level": 0, **(options or {})})
    counts = {k: cache.STATS[k] - before.get(k, 0) for k in ("step_hit", "step_miss")}
    return step, model, counts


def _losses(step: accel.TrainStep, batch: int = 8) -> list[float]:
    return [float(step(*vector_batch(1 + i, batch))) for i in range(3)]


def test_a_second_compile_links_the_stored_phases_and_trains_the_same() -> None:
    first, _, counts = _compile()
    assert counts == {"step_hit": 0, "step_miss": 1}
    second, model, counts = _compile()
    assert counts == {"step_hit": 1, "step_miss": 0}
    assert second.graphs.names() == ["forward", "backward", "optimizer"]
    assert all(g.module is None for g in second.graphs.graphs)  # nothing was traced
    assert _losses(second) == _losses(first)
    eager = mlp()
    opt = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    want = []
    for i in range(3):
        opt.zero_grad()
        loss = classify(eager, *vector_batch(1 + i))
        loss.backward()
        opt.step()
        want.append(float(loss.detach()))
    assert _losses_close(want, [float(x) for x in _losses(_compile()[0])])
    for name, p in model.named_parameters():  # the hit trains the user's own parameters
        assert not torch.equal(p, dict(mlp().named_parameters())[name]), name


def _losses_close(want: list[float], got: list[float]) -> bool:
    return all(abs(g - w) <= 1e-4 * max(1.0, abs(w)) for g, w in zip(got, want, strict=True))


def _half_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return 0.5 * torch.nn.functional.cross_entropy(model(x), y)


@pytest.mark.parametrize("change", ["loss", "momentum", "batch"])
def test_what_changes_the_graphs_misses(change: str) -> None:
    # Intent: a hit is never a step compiled for another loss, optimizer or batch shape.
    _compile()
    kwargs = {"loss": {"loss_fn": _half_loss}, "momentum": {"momentum": 0.0},
              "batch": {"batch": 4}}[change]
    step, _, counts = _compile(**kwargs)
    assert counts == {"step_hit": 0, "step_miss": 1}
    # and it is the new step that runs: as one compiled without the cache
    base, _, _ = _compile(**kwargs, options={"cache": False})
    batch = kwargs.get("batch", 8)
    assert _losses(step, batch) == _losses(base, batch)



def test_a_damaged_entry_is_a_miss_and_is_written_again(tmp_cache: Path) -> None:
    first, _, _ = _compile()
    (entry,) = tmp_cache.rglob("*.step")
    entry.write_bytes(b"not an entry")
    step, _, counts = _compile()
    assert counts == {"step_hit": 0, "step_miss": 1}
    assert _losses(step) == _losses(first)
    assert _compile()[2] == {"step_hit": 1, "step_miss": 0}


def test_phase_code_gone_is_a_miss(tmp_cache: Path) -> None:
    first, _, _ = _compile()
    for path in tmp_cache.rglob("*.entry"):  # the compiled objects, not the step entry
        path.unlink()
    step, _, counts = _compile()
    assert counts == {"step_hit": 0, "step_miss": 1}
    assert _losses(step) == _losses(first)


def test_cache_off_neither_reads_nor_writes(tmp_cache: Path) -> None:
    _compile(options={"cache": False})
    assert not list(tmp_cache.rglob("*.step"))
    _compile()
    assert _compile(options={"cache": False})[2] == {"step_hit": 0, "step_miss": 0}


_SCRIPT = """
import sys, time
sys.path.insert(0, {here!r})
import torch, accel
from accel import cache, phases
from training_models import classify, mlp, vector_batch
model = mlp()
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
with phases.recording(keep_ir=False) as rec:
    step = accel.compile_train_step(model, classify, opt, vector_batch(0),
                                    options={{"opt_level": 0}})
print("phases", sorted({{p.name for p in rec.phases}}))
print("stats", cache.STATS["step_hit"], cache.STATS["step_miss"])
print("losses", [float(step(*vector_batch(1 + i))) for i in range(3)])
"""


def test_warm_start_in_a_new_process(tmp_path: Path, tmp_cache: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT.format(here=str(HERE)))
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_cache), "PYTHONWARNINGS": "ignore"}
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    cold, warm = ({line.split(" ", 1)[0]: line.split(" ", 1)[1]
                   for line in run.stdout.splitlines()} for run in runs)
    assert cold["stats"] == "0 1" and warm["stats"] == "1 0"
    assert "trace" in cold["phases"] and "forward-export" in cold["phases"]
    assert "trace" not in warm["phases"] and "export" not in warm["phases"]
    assert warm["losses"] == cold["losses"]


def test_global_torch_state_the_trace_reads_is_in_the_key() -> None:
    from accel.training.compile import split_options
    from accel.training.step_cache import step_key

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    settings, options = split_options(None)

    def key() -> str | None:
        return step_key(model, classify, opt, vector_batch(0), settings, options)

    base = key()
    assert base is not None and key() == base
    torch.set_default_dtype(torch.float64)
    try:
        assert key() != base
    finally:
        torch.set_default_dtype(torch.float32)
    with torch.autocast("cpu"):
        assert key() != base
    assert key() == base


def test_other_parameter_values_hit_and_train_their_own_values() -> None:
    # Intent: a run resumed from a checkpoint warm-starts: the phases take the parameters
    # as inputs, so their values are not in the key, and the step trains the new values.
    _compile()

    def halved() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        model = mlp()
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(0.5)
        return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    model, opt = halved()
    before = cache.STATS["step_hit"]
    step = accel.compile_train_step(model, classify, opt, vector_batch(0),
                                    options={"opt_level": 0})
    assert cache.STATS["step_hit"] == before + 1
    model, opt = halved()
    fresh = accel.compile_train_step(model, classify, opt, vector_batch(0),
                                     options={"opt_level": 0, "cache": False})
    assert _losses(step) == _losses(fresh)
    assert _losses(step) != _losses(_compile(options={"cache": False})[0])


def _scaled(scale: float):
    def loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return scale * torch.nn.functional.cross_entropy(model(x), y)

    return loss


def test_a_loss_closure_with_another_value_misses() -> None:
    assert _compile(loss_fn=_scaled(1.0))[2] == {"step_hit": 0, "step_miss": 1}
    assert _compile(loss_fn=_scaled(1.0))[2] == {"step_hit": 1, "step_miss": 0}
    assert _compile(loss_fn=_scaled(0.5))[2] == {"step_hit": 0, "step_miss": 1}
