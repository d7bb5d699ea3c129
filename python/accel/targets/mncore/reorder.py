"""Beam search for node reordering (MLSDK's CODEGEN_SCHEDULE_PP_BEAM_* variables).

The reference (section 4.2.3) documents a beam search that reorders nodes before
scheduling: `CODEGEN_SCHEDULE_PP_BEAM_WIDTH` ("maximum number of candidates to consider"),
`CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN` ("maximum number of turns", -1: no limit) and
`CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT` ("maximum number of turns without
improvement"). Here a turn expands each kept order by swapping adjacent independent layers
(`NEIGHBOURS` random positions per order, seeded: the result is reproducible) and keeps
the `width` fastest distinct orders, scored by the scheduler's own SRAM simulation
(auto_recompute_sa's orders by spill_opt's, as its annealer does). The search runs when any
of the three is set; unset ones take the defaults below (ASSUMED: MLSDK does not publish
its defaults).

    order, turns = beam_reorder(graph, cost, "spill_opt", envs, simulate, alarm)
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from accel.targets.mncore.graph import Graph, Layer
from accel.targets.mncore.option_json import int_env

#: Defaults when only some of the variables are set (ASSUMED).
DEFAULT_WIDTH = 4
DEFAULT_PRUNE_LIMIT = 3
DEFAULT_MAX_TURN = -1
#: Adjacent swaps tried per kept order and turn.
NEIGHBOURS = 16
VARIABLES = ("CODEGEN_SCHEDULE_PP_BEAM_WIDTH", "CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN",
             "CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT")


def _signed(envs: Mapping[str, str], name: str, default: int) -> int:
    """An integer variable that may be -1 ("no limit")."""
    value = int_env(envs, name, default, minimum=-1)
    return value


def beam_reorder(graph: Graph, cost: Any, scheduler: str, envs: Mapping[str, str],
                 simulate: Any, alarm: Any = None) -> tuple[list[Layer] | None, int]:
    """The best order found and the turns taken; (None, 0) when no variable is set.
    `simulate(graph, cost, policy, order)` is the scheduler's simulation (passed in: the
    scheduler imports this module)."""
    if not any(envs.get(v) not in (None, "") for v in VARIABLES):
        return None, 0
    width = max(1, int_env(envs, "CODEGEN_SCHEDULE_PP_BEAM_WIDTH", DEFAULT_WIDTH, minimum=1))
    max_turn = _signed(envs, "CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN", DEFAULT_MAX_TURN)
    prune = int_env(envs, "CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT", DEFAULT_PRUNE_LIMIT,
                    minimum=1)
    policy = "spill_opt" if scheduler == "auto_recompute_sa" else scheduler
    rng = random.Random(0)

    def score(order: list[Layer]) -> float:
        return simulate(graph, cost, policy, order).time_s

    start = list(graph.layers)
    best_order, best = start, score(start)
    beam = [(best, start)]
    turns, stale = 0, 0
    n = len(start)
    while n > 1 and (max_turn < 0 or turns < max_turn) and stale < prune:
        if alarm is not None:
            alarm.check("scheduling: beam search")
        turns += 1
        seen = {tuple(layer.name for layer in order) for _, order in beam}
        found = list(beam)
        for _, order in beam:
            for i in rng.sample(range(n - 1), min(NEIGHBOURS, n - 1)):
                a, b = order[i], order[i + 1]
                if a.output in b.inputs:
                    continue  # b reads a's result: not independent
                trial = order[:i] + [b, a] + order[i + 2:]
                key = tuple(layer.name for layer in trial)
                if key in seen:
                    continue
                seen.add(key)
                found.append((score(trial), trial))
        found.sort(key=lambda item: item[0])
        beam = found[:width]
        if beam[0][0] < best:
            best, best_order, stale = beam[0][0], beam[0][1], 0
        else:
            stale += 1
    return best_order, turns
