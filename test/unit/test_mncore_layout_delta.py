"""lpz's coordinate descent prices each trial flip from the terms it touches
(`accel.targets.mncore.layout_delta.DeltaCost`) instead of a whole new plan. Checked against
the whole plan (`_Planner.finish`) on a GPT-2-like graph: the totals under random schemes,
and the change of random flips of 1, a few and many tensors; and the descent still lowers
the relayout bytes step by step and ends on the plan `finish` gives for its scheme."""

from __future__ import annotations

import random

import pytest
from accel.targets.mncore import graph, layouts
from accel.targets.mncore.layout_delta import DeltaCost

GPT2 = graph.gpt2_like()


def _bytes(plan: layouts.Plan) -> tuple[int, int]:
    return sum(r[5] for r in plan.relayouts), sum(plan.fused.values())


@pytest.mark.parametrize("seed", range(4))
def test_delta_matches_the_whole_plan(seed: int) -> None:
    rng = random.Random(seed)
    p = layouts._Planner(GPT2, [], {}, {})
    values = list(GPT2.values)
    scheme = {v: rng.choice((layouts.ROW, layouts.COL)) for v in values}
    cost = DeltaCost(p, layouts._demand, layouts._tied)
    assert cost.totals(scheme) == _bytes(p.finish("lpz", scheme, check=False))
    for size in (1, 3, 40):
        moved = set(rng.sample(values, size))
        new = {v: (layouts.COL if s == layouts.ROW else layouts.ROW) if v in moved else s
               for v, s in scheme.items()}
        before = _bytes(p.finish("lpz", scheme, check=False))
        after = _bytes(p.finish("lpz", new, check=False))
        assert cost.delta(scheme, new, moved) == (after[0] - before[0], after[1] - before[1])


def test_descent_lowers_the_bytes_and_ends_on_finish() -> None:
    plan = layouts.plan(GPT2, "lpz", [], {})
    steps = [h["relayout_bytes"] for h in plan.history if h["phase"] == "lpz"]
    assert steps and all(b < a for a, b in zip(steps, steps[1:], strict=False))
    p = layouts._Planner(GPT2, [], {}, {})
    schemes = {v: layouts.ROW for v in GPT2.values}
    assert plan.relayout_bytes <= p.finish("lpz", schemes, check=False).relayout_bytes
    assert plan.history[-1]["relayout_bytes"] == plan.relayout_bytes
