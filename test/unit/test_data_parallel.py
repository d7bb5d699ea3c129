"""Data-parallel compiled training: 2 processes on loopback (gloo), each given half of every
batch, end with the parameters and optimizer state of one process given the whole batch.

The workers are launched like torchrun launches them (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT in the environment; the step initialises the gloo group itself), on the cpu
target and on the emulated rdu target (whose step also lists its gradient all-reduce
sections). The reference is eager training on the whole batch in this process.
Tolerance: max |dp - eager| <= 1e-5 * max |eager| per tensor (the summed gradients differ
from the whole-batch ones by rounding).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from training_models import classify, mlp, vector_batch

WORKER = """\
import json
import sys

import accel
import torch

sys.path.insert(0, {here!r})
from training_models import classify, mlp, vector_batch

rank = int(sys.argv[1])
extra = json.loads(sys.argv[3])
model = mlp()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
half = slice(4 * rank, 4 * rank + 4)
step = accel.compile_train_step(model, classify, opt, vector_batch(0, batch=4),
                                options={{"data_parallel": True, "world_size": 2, **extra}})
for i in range(3):
    x, y = vector_batch(i)
    step(x[half], y[half])
from accel import cache

print("STATS", json.dumps(dict(cache.STATS)))
if rank == 0:
    torch.save({{"model": model.state_dict(), "optimizer": opt.state_dict()}}, sys.argv[2])
    if extra.get("target") == "rdu":
        from accel.targets.rdu.training import step_sections

        with open(sys.argv[2] + ".json", "w") as f:
            json.dump(step_sections(step), f)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("extra", [{}, {"target": "rdu", "preset": "o3", "opt_level": 1}],
                         ids=["cpu", "rdu"])
def test_two_processes_match_one_whole_batch(tmp_path: Path, extra: dict[str, object]) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(here=str(Path(__file__).parent)))
    result = tmp_path / "rank0.pt"
    env = {**os.environ, "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(_free_port()), "ACCEL_CACHE_DIR": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, str(script), str(rank), str(result),
                               json.dumps(extra)],
                              env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(2)]
    outputs = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail("a data-parallel worker did not finish in 600 s")
        outputs.append(out)
    for proc, out in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out[-3000:]
    got = torch.load(result, weights_only=True)
    # The ranks compiled once between them (accel.cache_lock): one waited, then linked the
    # other's code (cpu: the whole step from the train-step cache; rdu, whose steps are
    # traced again: each phase's code from the code cache).
    stats = [json.loads(out.split("STATS ", 1)[1].splitlines()[0]) for out in outputs]
    assert sum(s.get("miss", 0) for s in stats) == 3, stats
    assert sum(s.get("hit", 0) for s in stats) == 3, stats
    if not extra:
        assert sorted(s.get("step_hit", 0) for s in stats) == [0, 1], stats

    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for i in range(3):
        opt.zero_grad()
        classify(model, *vector_batch(i)).backward()
        opt.step()
    for name, want in model.state_dict().items():
        err = (got["model"][name] - want).abs().max().item()
        assert err <= 1e-5 * want.abs().max().item(), (name, err)
    for index, state in opt.state_dict()["state"].items():
        for key, want in state.items():
            err = (got["optimizer"]["state"][index][key] - want).abs().max().item()
            assert err <= 1e-5 * max(want.abs().max().item(), 1e-12), (index, key, err)
    if extra.get("target") == "rdu":
        doc = json.loads(Path(f"{result}.json").read_text())
        phases = [s["phase"] for s in doc["sections"]]
        assert phases.count("allreduce") == 1 and doc["training"]["world_size"] == 2
        assert phases.index("allreduce") == len(phases) - phases[::-1].index("backward")
