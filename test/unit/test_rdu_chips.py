"""RDU placement over --n-chips: the pipeline partition is optimal (checked against brute
force), every chip is used, transfers are costed, a graph that fits one chip is split into
N stages at -o3, human-decision pins and --model-parallel shards, the legacy greedy rule
(--mac-v2), and the per-chip report in sections.json and compile.log."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import accel
import numpy as np
import pytest
import torch
from accel.diagnostics import AccelError
from accel.targets.rdu import placement
from accel.targets.rdu.placement import Edge
from samples import write_mlp_model_file

FAST = {"target": "rdu", "opt_level": 0, "cache": False}


def _stage_times(chip_of: list[int], times: list[float], edges: list[Edge],
                 per_byte: float) -> list[float]:
    xfer = placement.transfers(chip_of, edges, per_byte)
    chips = max(chip_of) + 1
    return [sum(t + x for t, x, c in zip(times, xfer, chip_of, strict=True) if c == k)
            for k in range(chips)]


def _brute_force(times: list[float], edges: list[Edge], chips: int, per_byte: float) -> float:
    n = len(times)
    best = float("inf")
    for cuts in itertools.combinations(range(1, n), chips - 1):
        bounds = [0, *cuts, n]
        chip_of = [k for k in range(chips) for _ in range(bounds[k], bounds[k + 1])]
        best = min(best, max(_stage_times(chip_of, times, edges, per_byte)))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_partition_is_optimal_and_uses_every_chip(seed: int) -> None:
    rng = random.Random(seed)
    n, chips = rng.randint(5, 9), rng.randint(2, 4)
    times = [rng.uniform(1, 20) for _ in range(n)]
    edges = [Edge(i, j, rng.randint(1, 4) * 100_000, (i, 0))
             for i in range(n) for j in range(i + 1, n) if rng.random() < 0.3]
    per_byte = 1e-5
    chip_of = placement.partition(times, edges, chips, per_byte)
    assert chip_of == sorted(chip_of) and set(chip_of) == set(range(chips))
    got = max(_stage_times(chip_of, times, edges, per_byte))
    assert got == pytest.approx(_brute_force(times, edges, chips, per_byte), rel=1e-9)


def test_transfers_are_counted_once_per_receiving_chip() -> None:
    # Section 0's result is read by 2 and 3 (both on chip 1): one transfer, at section 2.
    edges = [Edge(0, 2, 1000, "v"), Edge(0, 3, 1000, "v"), Edge(1, 2, 10, "w")]
    assert placement.transfers([0, 0, 1, 1], edges, 1.0) == [0, 0, 1010, 0]
    assert placement.transfers([0, 0, 0, 0], edges, 1.0) == [0, 0, 0, 0]


def test_pins_are_honoured_and_must_follow_the_schedule() -> None:
    times = [5.0, 5.0, 5.0, 5.0, 5.0, 5.0]
    assert placement.partition(times, [], 2, 1.0) == [0, 0, 0, 1, 1, 1]
    assert placement.partition(times, [], 2, 1.0, {1: 1}) == [0, 1, 1, 1, 1, 1]
    with pytest.raises(AccelError, match="pinned chips must not decrease"):
        placement.partition(times, [], 2, 1.0, {1: 1, 4: 0})
    with pytest.raises(AccelError, match="satisfies the human decisions' placement pins"):
        placement.partition(times, [], 3, 1.0, {0: 2})


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(32, 64)
        self.l2 = torch.nn.Linear(64, 64)
        self.l3 = torch.nn.Linear(64, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))


@pytest.fixture(scope="module")
def mlp() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return MLP().eval(), torch.randn(4, 32)


def _compile(mlp: Any, **options: Any) -> Any:
    model, x = mlp
    fn = accel.compile(model, (x,), options={**FAST, **options})
    with torch.no_grad():
        np.testing.assert_allclose(fn(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    return fn.compiled


def test_o3_graph_that_fits_one_chip_fills_every_chip(mlp: Any) -> None:
    one = _compile(mlp)
    assert len(one.sections) == 1 and one.pipeline["n_chips"] == 1
    three = _compile(mlp, n_chips=3)
    assert [s.chip for s in three.sections] == [0, 1, 2]
    pipe = three.pipeline
    assert pipe["chips_used"] == 3 and len(pipe["chips"]) == 3
    assert pipe["bottleneck_us"] == max(c["stage_us"] for c in pipe["chips"])
    assert pipe["bottleneck_us"] < one.pipeline["bottleneck_us"]  # a faster pipeline
    assert pipe["throughput_per_s"] == pytest.approx(1e6 / pipe["bottleneck_us"], rel=1e-3)
    assert all(s.transfer_us > 0 for s in three.sections[1:])  # inputs from the chip before


def test_o0_balances_better_than_the_legacy_greedy_rule(mlp: Any) -> None:
    dp = _compile(mlp, preset="o0", n_chips=2)
    legacy = _compile(mlp, preset="o0", n_chips=2, mac_v2=True)
    assert dp.pipeline["placement"].startswith("optimal")
    assert legacy.pipeline["placement"] == "greedy (--mac-v2)"
    assert dp.pipeline["bottleneck_us"] <= legacy.pipeline["bottleneck_us"]
    # the optimum over the same sections (greedy's sections are the legacy ones: compare
    # the DP on them too)
    times = [s.est_us for s in legacy.sections]
    greedy = placement.greedy(times, 2)
    best = placement.partition(times, [], 2, 0.0)
    assert max(sum(t for t, c in zip(times, best, strict=True) if c == k) for k in (0, 1)) <= \
        max(sum(t for t, c in zip(times, greedy, strict=True) if c == k) for k in (0, 1))


def test_human_decision_pins_and_model_parallel(mlp: Any, tmp_path: Path) -> None:
    plain = _compile(mlp, preset="o0", n_chips=2)
    gemm = next(s.name for s in plain.sections if s.ops[0].startswith("linear:l2"))
    path = tmp_path / "decisions.json"
    path.write_text(json.dumps({"placement": {plain.sections[0].name: 0, gemm: 1},
                                "model_parallel": [{"section": gemm, "ways": 2}]}))
    pinned = _compile(mlp, preset="o0", n_chips=2, mac_human_decision=str(path),
                      model_parallel=True)
    shards = [s for s in pinned.sections if s.name.startswith(gemm + "#")]
    assert [s.shard for s in shards] == [0, 1] and all(s.shards == 2 for s in shards)
    assert all(s.chip == 1 for s in shards)  # the pin applies to every shard
    whole = next(s for s in plain.sections if s.name == gemm)
    assert shards[0].est_us < whole.est_us
    assert "with pins" in pinned.pipeline["placement"]


@pytest.mark.parametrize(("content", "options", "message"), [
    ({"placement": {"s99_linear": 1}}, {"n_chips": 2}, r"placement\['s99_linear'\]: no section "
     r"'s99_linear' \(sections: s0_linear"),
    ({"placement": {"s0_linear": 5}}, {"n_chips": 2}, r"chip 5 does not exist with --n-chips 2"),
    ({"model_parallel": [{"section": "s1_relu", "ways": 2}]},
     {"n_chips": 2, "model_parallel": True}, r"section s1_relu is not a GEMM"),
    ({"model_parallel": "auto"}, {"n_chips": 2}, r"apply with --model-parallel only"),
    ({"placement": {}}, {"n_chips": 2, "model_parallel": True}, r"needs \"model_parallel\""),
    ({"sections": [{"name": "x", "ops": []}]}, {}, r"sections\[0\]: ops must be a non-empty"),
    ({"chips": 2}, {}, r"key 'chips': unknown \(valid: sections, placement"),
])
def test_bad_human_decisions_are_one_line_errors(mlp: Any, tmp_path: Path,
                                                  content: dict[str, Any],
                                                  options: dict[str, Any],
                                                  message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(AccelError, match=message) as err:
        _compile(mlp, preset="o0", mac_human_decision=str(path), **options)
    assert "\n" not in str(err.value)


def test_model_parallel_needs_a_decision_file_and_chips(mlp: Any) -> None:
    with pytest.raises(AccelError, match="--model-parallel requires a human decision file"):
        _compile(mlp, model_parallel=True, n_chips=2)


def test_sections_json_and_compile_log_report_chips(tmp_path: Path) -> None:
    from accel.tools.accel_compile import main

    model_py = write_mlp_model_file(tmp_path / "mlp.py", 32, 64, 8, batch=4)
    out = tmp_path / "out"
    assert main([str(model_py), "--inference", "--target", "rdu", "-o0", "--n-chips", "2",
                 "--output-folder", str(out), "--option", "opt_level=0", "-q"]) == 0
    doc = json.loads((out / "sections.json").read_text())
    pipe = doc["pipeline"]
    assert pipe["n_chips"] == 2 and [c["chip"] for c in pipe["chips"]] == [0, 1]
    assert {"load_us", "transfer_us", "stage_us", "sections"} <= set(pipe["chips"][0])
    assert {s["chip"] for s in doc["sections"]} == {0, 1}
    assert "link_gbps" in doc["arch_limits"]["sources"]  # each number says where it is from
    log = (out / "compile.log").read_text()
    assert "rdu: chip 1:" in log and "rdu: pipelined over 2 chips: one input every" in log
