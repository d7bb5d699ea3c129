"""Placing the section schedule on `--n-chips` chips: an optimal pipeline partition.

The sections run in schedule order; with N chips the schedule is cut into N contiguous
*stages*, chip k running stage k, so successive inputs flow through the chips as a
pipeline. A stage's time is its sections' estimates plus the transfers of the tensors it
receives from earlier chips (each tensor once per receiving chip, bytes over the chip link,
`Arch.link_gbps`: ASSUMED, see dialects/rdu_arch.py). The pipeline accepts one input per
*bottleneck* (the slowest stage), so `partition` minimises the bottleneck by dynamic
programming over cut positions (O(N n^2) on n sections, rows computed once with numpy):

    best[k][j] = min over i of max(best[k-1][i], stage_us(i, j))

Every chip gets at least one section when there are at least N sections (the -o3
sectioner cuts a graph that fits one chip into N sections for this). Human decisions may
pin sections to chips (`placement`); pins must follow the schedule's order. The legacy
compiler (`--mac-v2`) keeps the old greedy rule (cut where the running time passes k/N of
the total), for comparison.

`split_gemms` is `--model-parallel`: a GEMM section named by the human decision file (or
every GEMM section longer than an ideal stage, with "auto") becomes `ways` shards, each
with 1/ways of the compute and of the output, all reading the whole input, which the
partition can then put on different chips.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.dialects.rdu_arch import Arch

#: Sections above this many are placed in runs of consecutive sections (memory of the DP).
MAX_UNITS = 3000
#: Operator kinds of a GEMM section (views may ride along).
GEMM_KINDS = ("linear", "matmul", "addmm", "bmm", "mm")
_VIEWS = ("view", "cast")


@dataclass(frozen=True)
class Edge:
    """Section `src`'s result `value` read by section `dst` (`nbytes` bytes)."""

    src: int
    dst: int
    nbytes: int
    value: object


def link_us_per_byte(arch: Arch) -> float:
    return 1.0 / (arch.link_gbps * 1e3)


# -- the partition ----------------------------------------------------------------------------
def _rows(times: Sequence[float], edges: Sequence[Edge], per_byte: float) -> list[np.ndarray]:
    """rows[i][m] = time of a stage holding sections i .. i+m-1 (m >= 1): their estimates plus
    each tensor from before i that the stage reads, once."""
    n = len(times)
    prefix = np.concatenate([[0.0], np.cumsum(times)])
    values: dict[object, tuple[int, list[int], int]] = {}
    for e in edges:
        src, dsts, size = values.get(e.value, (e.src, [], e.nbytes))
        dsts.append(e.dst)
        values[e.value] = (src, dsts, size)
    by_src: dict[int, list[tuple[list[int], float]]] = {}
    for src, dsts, size in values.values():
        by_src.setdefault(src, []).append((sorted(set(dsts)), size * per_byte))
    active: list[tuple[list[int], float]] = []
    rows = []
    for i in range(n):
        active = [(d, c) for d, c in active if d[-1] >= i]
        delta = np.zeros(n - i + 1)
        for dsts, cost in active:
            nxt = dsts[bisect.bisect_left(dsts, i)]
            delta[nxt - i + 1] += cost
        rows.append(prefix[i:] - prefix[i] + np.cumsum(delta))
        active += by_src.get(i, [])
    return rows


def _pin_bounds(pins: Mapping[int, int], n: int, chips: int) -> list[tuple[int, int, int, int]]:
    """Per chip: (lowest first index, highest first index, lowest end, highest end)."""
    order = sorted(pins.items())
    for (a, ca), (b, cb) in zip(order, order[1:], strict=False):
        if cb < ca:
            raise AccelError(f"placement pins section {a} to chip {ca} but the later section "
                             f"{b} to chip {cb}: chips run the schedule in order (pipeline "
                             "stages), so pinned chips must not decrease along it")
    bounds = []
    for c in range(chips):
        mine = [i for i, k in pins.items() if k == c]
        before = [i for i, k in pins.items() if k < c]
        after = [i for i, k in pins.items() if k > c]
        lo_i = (max(before) + 1) if before else c
        hi_i = min(mine) if mine else n - 1
        lo_j = (max(mine) + 1) if mine else 1
        hi_j = min(after) if after else n
        bounds.append((lo_i, hi_i, lo_j, hi_j))
    return bounds


def partition(times: Sequence[float], edges: Sequence[Edge], chips: int, per_byte: float,
              pins: Mapping[int, int] | None = None) -> list[int]:
    """The chip of each section: N contiguous stages minimising the slowest one."""
    n = len(times)
    chips = min(chips, n)
    if chips <= 1:
        return [0] * n
    if n > MAX_UNITS:  # place runs of sections, then expand
        size = math.ceil(n / MAX_UNITS)
        unit = [i // size for i in range(n)]
        merged = [sum(times[u * size:(u + 1) * size]) for u in range(math.ceil(n / size))]
        placed = partition(merged, [replace(e, src=unit[e.src], dst=unit[e.dst])
                                    for e in edges if unit[e.src] != unit[e.dst]], chips,
                           per_byte, {unit[i]: c for i, c in (pins or {}).items()})
        return [placed[unit[i]] for i in range(n)]
    rows = _rows(times, edges, per_byte)
    bounds = _pin_bounds(pins or {}, n, chips)
    inf = float("inf")
    best = np.full(n + 1, inf)
    _, _, lo_j, hi_j = bounds[0]
    lo_j = max(1, lo_j)
    if lo_j <= hi_j:
        best[lo_j:hi_j + 1] = rows[0][lo_j:hi_j + 1]
    back: list[np.ndarray] = [np.zeros(n + 1, dtype=np.int64)]
    for c in range(1, chips):
        lo_i, hi_i, lo_j, hi_j = bounds[c]
        now = np.full(n + 1, inf)
        arg = np.zeros(n + 1, dtype=np.int64)
        for i in range(max(lo_i, c), min(hi_i, n - 1) + 1):
            if best[i] == inf:
                continue
            first = max(i + 1, lo_j)
            if first > hi_j:
                continue
            cand = np.maximum(best[i], rows[i][first - i:hi_j - i + 1])
            window = now[first:hi_j + 1]
            better = cand < window
            window[better] = cand[better]
            arg[first:hi_j + 1][better] = i
        best, back = now, [*back, arg]
    if best[n] == inf:
        raise AccelError(f"no placement of {n} sections on {chips} chips satisfies the "
                         "human decisions' placement pins")
    chip_of = [0] * n
    j = n
    for c in range(chips - 1, 0, -1):
        i = int(back[c][j])
        for k in range(i, j):
            chip_of[k] = c
        j = i
    return chip_of


def greedy(times: Sequence[float], chips: int) -> list[int]:
    """The legacy rule (--mac-v2): cut when the running time passes k/N of the total."""
    total = sum(times) or 1.0
    chip, acc, found = 0, 0.0, []
    for t in times:
        if chip < chips - 1 and acc >= total * (chip + 1) / chips:
            chip += 1
        found.append(chip)
        acc += t
    return found


def transfers(chip_of: Sequence[int], edges: Sequence[Edge], per_byte: float) -> list[float]:
    """Transfer time each section waits for: every tensor crosses to a chip once, charged to
    its first reader there."""
    found = [0.0] * len(chip_of)
    seen: set[tuple[object, int]] = set()
    for e in sorted(edges, key=lambda e: e.dst):
        chip = chip_of[e.dst]
        if chip == chip_of[e.src] or (e.value, chip) in seen:
            continue
        seen.add((e.value, chip))
        found[e.dst] += e.nbytes * per_byte
    return found


def pipeline(sections: Sequence[Any], n_chips: int, method: str) -> dict[str, Any]:
    """The per-chip loads and the pipeline's figures (sections.json `pipeline`)."""
    chips = []
    for c in range(n_chips):
        mine = [s for s in sections if s.chip == c]
        load = sum(s.est_us for s in mine)
        xfer = sum(s.transfer_us for s in mine)
        chips.append({"chip": c, "sections": len(mine), "load_us": round(load, 4),
                      "transfer_us": round(xfer, 4), "stage_us": round(load + xfer, 4),
                      "pcu_max": max((s.pcu for s in mine), default=0),
                      "pmu_max": max((s.pmu for s in mine), default=0)})
    one_chip = sum(s.est_us for s in sections)
    bottleneck = max((c["stage_us"] for c in chips), default=0.0) or one_chip
    return {"n_chips": n_chips, "chips_used": sum(1 for c in chips if c["sections"]),
            "placement": method, "chips": chips,
            "bottleneck_us": round(bottleneck, 4),
            "throughput_per_s": round(1e6 / bottleneck, 3) if bottleneck else None,
            "latency_us": round(one_chip + sum(s.transfer_us for s in sections), 4),
            "one_chip_us": round(one_chip, 4),
            "speedup": round(one_chip / bottleneck, 4) if bottleneck else None}


# -- model parallel -----------------------------------------------------------------------------
def is_gemm(section: Any) -> bool:
    kinds = {op.split(":", 1)[0] for op in section.ops}
    return bool(kinds & set(GEMM_KINDS)) and kinds <= set(GEMM_KINDS) | set(_VIEWS)


def _fixed_us(section: Any, arch: Arch) -> float:
    from accel.passes.rdu.cost import SECTION_SWITCH_CYCLES, STAGE_LATENCY_CYCLES

    return (section.stages * STAGE_LATENCY_CYCLES + SECTION_SWITCH_CYCLES) / \
        (arch.clock_ghz * 1e3)


def split_gemms(sections: list[Any], edges: list[Edge], wanted: Mapping[int, int],
                arch: Arch) -> tuple[list[Any], list[Edge], dict[int, list[int]]]:
    """Sections `wanted` (index -> ways) as shards `<name>#k`: 1/ways of the compute and
    PCUs each, every shard reading the whole input and writing 1/ways of the output.
    Also returns old index -> new indices."""
    if not wanted:
        return sections, edges, {i: [i] for i in range(len(sections))}
    new_index: dict[int, list[int]] = {}
    out: list[Any] = []
    for i, s in enumerate(sections):
        ways = wanted.get(i, 1)
        if ways == 1:
            new_index[i] = [len(out)]
            out.append(s)
            continue
        fixed = _fixed_us(s, arch)
        est = max(s.est_us - fixed, 0.0) / ways + fixed
        new_index[i] = []
        for k in range(ways):
            new_index[i].append(len(out))
            out.append(replace(s, name=f"{s.name}#{k}", est_us=est, pcu=math.ceil(s.pcu / ways),
                               pmu=math.ceil(s.pmu / ways), shard=k, shards=ways))
    moved: list[Edge] = []
    for e in edges:
        srcs, dsts = new_index[e.src], new_index[e.dst]
        for k, src in enumerate(srcs):
            for dst in dsts:
                moved.append(Edge(src, dst, e.nbytes // len(srcs),
                                  (e.value, k) if len(srcs) > 1 else e.value))
    for n, s in enumerate(out):
        s.index = n
    return out, moved, new_index


def model_parallel_plan(sections: Sequence[Any], decisions: Any, n_chips: int,
                        phase: str | None) -> dict[int, int]:
    """Section index -> ways, from the decision file's `model_parallel` entries."""
    from accel.passes.rdu.decisions import for_phase

    if decisions.auto_model_parallel:
        ideal = sum(s.est_us for s in sections) / n_chips
        return {i: min(n_chips, math.ceil(s.est_us / ideal)) for i, s in enumerate(sections)
                if is_gemm(s) and ideal and s.est_us > ideal}
    found = {}
    for k, (name, ways) in enumerate(decisions.model_parallel):
        where = f"model_parallel[{k}]"
        local = for_phase(name, phase)
        if local is None:
            continue
        i = find_section(sections, local, decisions, where, phase)
        if i is None:
            continue
        if ways > n_chips:
            raise decisions.error(where, f"ways {ways} is more than --n-chips {n_chips}")
        if not is_gemm(sections[i]):
            raise decisions.error(where, f"section {sections[i].name} is not a GEMM (its "
                                         f"operators: {', '.join(sections[i].ops[:4])}): "
                                         "only linear/matmul sections split across chips")
        found[i] = ways
    return found


def find_section(sections: Sequence[Any], name: str, decisions: Any, where: str,
                 phase: str | None) -> int | None:
    """The index of the section `name` (a full name, or a decision's name: the label after
    `s<n>_`); an unknown name is an error (None in a train step's phase graphs)."""
    for i, s in enumerate(sections):
        if s.name == name:
            return i
    labelled = [i for i, s in enumerate(sections) if re.sub(r"^s\d+_", "", s.name) == name]
    if len(labelled) == 1:
        return labelled[0]
    if phase is not None:
        return None
    sample = ", ".join(s.name for s in sections[:6])
    raise decisions.error(where, f"no section '{name}' (sections: {sample}"
                                 + (", ..." if len(sections) > 6 else "") + ")")


def pins_of(sections: Sequence[Any], decisions: Any, n_chips: int,
            phase: str | None) -> dict[int, int]:
    """Section index -> chip, from the decision file's `placement`."""
    from accel.passes.rdu.decisions import for_phase

    pins = {}
    for name, chip in decisions.placement.items():
        where = f"placement['{name}']"
        local = for_phase(name, phase)
        if local is None:
            continue
        if chip >= n_chips:
            raise decisions.error(where, f"chip {chip} does not exist with --n-chips "
                                         f"{n_chips} (chips 0..{n_chips - 1})")
        i = find_section(sections, local, decisions, where, phase)
        if i is not None:
            pins[i] = chip
    return pins
