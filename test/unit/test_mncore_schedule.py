"""mncore planners, schedulers and cost model on layer graphs (no compilation), and the
GPT-2 / ResNet-block emulation against eager."""

from __future__ import annotations

import accel
import numpy as np
import pytest
import torch
from accel.diagnostics import AccelError
from accel.dialects.mncore_layout import Layout
from accel.targets.mncore import graph, layouts, schedule
from samples import wrapped  # noqa: E402

GPT2 = graph.gpt2_like()  # GPT-2 small, 1024 tokens: SRAM is scarce
_PLANS: dict[str, layouts.Plan] = {}


def planned(planner: str) -> layouts.Plan:
    if planner not in _PLANS:
        _PLANS[planner] = layouts.plan(GPT2, planner, [], {})
    return _PLANS[planner]


def estimate(g, scheduler: str, budget: float = 1.0, planner: str = "lpz",
             envs: dict | None = None, dtype: str = "float", mode: str = "auto",
             merge: bool = False) -> float:
    cost = schedule.CostModel(g, planned(planner), dtype, mode, budget, scheduler, merge)
    return schedule.schedule(g, cost, scheduler, envs or {"CODEGEN_SA_STEPS": "60"},
                             0).time_s


def test_scheduler_ordering_on_gpt2() -> None:
    t = {s: estimate(GPT2, s) for s in schedule.SCHEDULERS}
    assert t["auto_recompute_sa"] <= t["spill_opt"] <= t["reuse_consecutive"] \
        < t["always_from_dram"]
    assert t["auto_recompute_sa"] < t["reuse_consecutive"]


@pytest.mark.parametrize("scheduler", schedule.SCHEDULERS)
def test_smaller_sram_budget_is_never_faster(scheduler) -> None:
    times = [estimate(GPT2, scheduler, b) for b in (1.0, 0.5, 0.25, 0.1)]
    assert times == sorted(times)
    assert times[-1] > times[0]


def test_precision_and_simulation_mode_order() -> None:
    t = {d: estimate(GPT2, "reuse_consecutive", dtype=d) for d in ("half", "mixed", "float",
                                                                    "double")}
    assert t["half"] < t["mixed"] < t["float"] < t["double"]
    m = {mode: estimate(GPT2, "reuse_consecutive", mode=mode, merge=True)
         for mode in ("fake", "fast", "default", "best", "full")}
    assert m["full"] < m["best"] < m["default"] < m["fast"] < m["fake"]
    # L1 merge (CODEGEN_USE_MERGE) only helps when full simulation can pick it.
    assert estimate(GPT2, "reuse_consecutive", mode="full") > m["full"]


def test_sa_effort_follows_steps_and_run_iters() -> None:
    """sa_expected_run_iters is the number of iterations of the annealing loop (each
    CODEGEN_SA_STEPS steps, not capped); 0 runs until an iteration stops improving."""
    cost = schedule.CostModel(GPT2, planned("lpz"), "float", "auto", 1.0, "auto_recompute_sa")
    one = schedule.schedule(GPT2, cost, "auto_recompute_sa", {"CODEGEN_SA_STEPS": "400"}, 1)
    assert (one.sa_steps, one.sa_runs) == (400, 1)  # 400 steps: no cap at 200
    three = schedule.schedule(GPT2, cost, "auto_recompute_sa", {"CODEGEN_SA_STEPS": "30"}, 3)
    assert three.sa_runs == 3
    two = schedule.schedule(GPT2, cost, "auto_recompute_sa",
                            {"CODEGEN_SA_STEPS": "20", "CODEGEN_NUM_SA_THREADS": "2"}, 0)
    assert two.sa_steps == 40 and 1 <= two.sa_runs <= schedule.MAX_SA_RUNS
    # Later iterations start from the best so far: never worse than one iteration.
    single = schedule.schedule(GPT2, cost, "auto_recompute_sa",
                               {"CODEGEN_SA_STEPS": "20", "CODEGEN_NUM_SA_THREADS": "2"}, 1)
    assert two.time_s <= single.time_s
    with pytest.raises(AccelError, match=r"CODEGEN_SA_STEPS='many': expected an integer"):
        schedule.schedule(GPT2, cost, "auto_recompute_sa", {"CODEGEN_SA_STEPS": "many"}, 0)


def test_planners_differ_and_lpz_is_cheapest() -> None:
    plans = {p: planned(p) for p in layouts.PLANNERS}
    moved = {p: plan.relayout_bytes for p, plan in plans.items()}
    assert moved["lpz"] <= moved["bidi"] < moved["legacy"]
    assert len({tuple(sorted(p.layouts.items())) for p in plans.values()}) == 3
    forced = layouts.plan(GPT2, "legacy", [], {"CODEGEN_LAYOUT_PLANNER_Z": "1"})
    assert forced.planner == "lpz"


def test_generated_layouts_fit_their_tensors() -> None:
    plan = planned("bidi")
    for name, text in plan.layouts.items():
        value = GPT2.values[name]
        report = Layout.parse(text).check(value.shape, value.bits, "lm")
        assert report.ok, (name, value.shape, text, report.errors)


def test_max_time_slice() -> None:
    with pytest.raises(AccelError, match=r"needs \d+ time slices .*CODEGEN_MAX_TIME_SLICE=2"):
        layouts.plan(GPT2, "lpz", [], {"CODEGEN_MAX_TIME_SLICE": "2"})


# -- models against eager -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpt2():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                                  n_positions=32)
    model = transformers.GPT2Model(cfg).eval()

    hidden = wrapped(model, lambda m, ids: m(ids).last_hidden_state)
    return hidden, torch.randint(0, 100, (1, 16))


def test_gpt2_matches_eager(gpt2) -> None:
    """float matches eager within 1e-4; mixed (GEMMs in half) within half-precision
    tolerances. The mixed build reuses the imported module (one torch.export)."""
    from accel import targets
    from accel.settings import merge as resolve

    model, ids = gpt2
    ref = model(ids).detach().numpy()
    fn = accel.compile(model, (ids,), options={"target": "mncore", "float_dtype": "float"})
    np.testing.assert_allclose(fn(ids).detach().numpy(), ref, rtol=1e-4, atol=1e-4)
    assert fn.compiled.estimated_us > 0
    mixed = targets.get("mncore").compile(
        fn.module_text(), resolve({"target": "mncore", "float_dtype": "mixed"}),
        weights=fn.compiled.weights)
    out = mixed["main"](ids.numpy())
    np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2)
    assert np.abs(out - ref).max() > 1e-4  # really rounded through half
    # Every planner's layouts and relayouts verify on the real model (mncore dialect).
    from accel.context import make_context
    from accel.ir import Module, load_torch_dialects
    from accel.passes.mncore_plan_layouts import annotate_plan

    moves = {}
    for planner in layouts.PLANNERS:
        with make_context() as ctx:
            load_torch_dialects(ctx)
            module = Module.parse(fn.module_text())
            func = next(op for op in module.body.operations if op.operation.name == "func.func")
            annotated, moves[planner] = annotate_plan(func.operation, planner)
            assert module.operation.verify() and annotated > 100
    assert moves["lpz"] < moves["bidi"] < moves["legacy"]


class BasicBlock(torch.nn.Module):
    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(c)
        self.c2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(x + self.b2(self.c2(y)))


def test_resnet_block_matches_eager() -> None:
    torch.manual_seed(0)
    block = BasicBlock().eval()
    x = torch.randn(1, 16, 8, 8)
    ref = block(x).detach().numpy()
    fn = accel.compile(block, (x,), options={"target": "mncore", "float_dtype": "float"})
    np.testing.assert_allclose(fn(x).detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    ops = {row["op"] for row in __import__("json").loads(
        fn.compiled.files["summary.json"])["layers"]}
    assert "Conv" in ops
