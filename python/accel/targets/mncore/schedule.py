"""Schedulers and the cost model: the estimated device time of a planned layer graph.

Cost model (all constants in `arch`, each with its source or ASSUMED):

- A layer's compute time is `flops / (peak(dtype) * efficiency)`: GEMMs (MatMul, Gemm,
  Conv) run on the MAU's FMA array at the `simulation_mode`'s best pattern efficiency,
  other layers at `VECTOR_EFFICIENCY`; `peak` is the FP16 peak for half tensors (and for
  GEMMs under `float_dtype=mixed`), FP32 for float, FP64 for double; plus
  `LAYER_OVERHEAD_S`.
- Moving a tensor between DRAM and LM costs `DMA_OVERHEAD_S + bytes / DRAM bandwidth`.
- A relayout costs `bytes / RELAYOUT_BANDWIDTH` (the L2B network) plus a layer overhead;
  a layer writing its output in another layout than its own (lpz's fused relayouts) pays
  `FUSED_RELAYOUT_FRACTION` of that, without the overhead.
- A layer whose inputs and output do not fit the SRAM budget together runs in
  `ceil(working set / budget)` time slices and streams the excess from DRAM.
- Layer time = compute + DMA (no overlap: ASSUMED, conservative); the total is the sum.
- GEMM patterns: each tried pattern's time is its FLOPs at the pattern's efficiency;
  `l1_merge` (CODEGEN_USE_MERGE) also pays the merge of partial sums across the L2B's
  L1Bs: `L1B_PER_L2B - 1` steps in a row, or ceil(log2) steps with
  CODEGEN_USE_PARALLEL_MERGE ("in an O(log(N)) manner"); the fastest pattern wins.
  CODEGEN_GEMM_FORCE_CHANNEL_SPLIT allows only `channel_split`.
- CODEGEN_OPS_ON_HOST: layers of those op types run on the host: their inputs go to DRAM and
  over the host link, the host computes (`arch.HOST_FLOPS`), the output comes back to DRAM.
- CODEGEN_GEMM_FORCE_WEIGHT_ON_DRAM: GEMM weights are read from DRAM every time, never kept
  in LM, and take no room in a layer's working set (fewer time slices for big weights).

Schedulers (`scheduler`), weakest first; each decides which tensors stay in LM (the SRAM,
`arch.sram_bytes(sram_budget)`) between layers:

- `always_from_dram`: every input is loaded from DRAM before each layer, every output
  stored after it.
- `reuse_consecutive` (default): as always_from_dram, but the previous layer's output is
  read from LM when it fits.
- `spill_opt`: tensors stay in LM until it is full; then the one needed furthest in the
  future is evicted (stored to DRAM only if it is still needed: Belady's rule); outputs are
  stored only when evicted or returned.
- `auto_recompute_sa`: simulated annealing over the layer order (swapping adjacent
  independent layers) and the set of tensors *recomputed* instead of reloaded (cheap
  elementwise producers), scored by the spill_opt simulation; starts from and never returns
  worse than the spill_opt and reuse_consecutive schedules. The optimisation loop runs
  `sa_expected_run_iters` iterations (MLSDK: "the number of iterations for the
  annealing-based optimization loop"; 0: until an iteration no longer improves the best
  schedule, at most `MAX_SA_RUNS`), each CODEGEN_SA_STEPS steps in CODEGEN_NUM_SA_THREADS
  independent chains (run one after another here), each iteration starting from the best
  schedule so far.

With CODEGEN_SCHEDULE_PP_BEAM_* a beam search over adjacent swaps of independent layers
reorders the program first (`reorder.py`), scored by the scheduler's own simulation.
CODEGEN_ALARM (seconds) interrupts the search with an error when it runs out.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from accel.diagnostics import AccelError
from accel.targets.mncore import arch
from accel.targets.mncore.graph import ELEMENTWISE, GEMMS, Graph, Layer
from accel.targets.mncore.layouts import FUSED_RELAYOUT_FRACTION, Plan
from accel.targets.mncore.option_json import int_env

SCHEDULERS = ("always_from_dram", "reuse_consecutive", "spill_opt", "auto_recompute_sa")
SIMULATION_MODES = ("auto", "default", "fast", "best", "full", "fake")
#: GEMM mapping patterns (MLSDK's ConstrainAssignment) and the fraction of peak each reaches:
#: ASSUMED. Better simulation modes try more patterns and keep the fastest.
GEMM_PATTERNS = (("row_split", 0.55), ("channel_split", 0.65), ("full_tile", 0.7),
                 ("l1_merge", 0.8))
#: The pattern only CODEGEN_USE_MERGE=1 allows (MLSDK's L1Merge, O3 and up).
MERGE_PATTERN = "l1_merge"
_PATTERNS_TRIED = {"fake": 0, "fast": 1, "default": 2, "best": 3, "full": 4}
#: `fake` does not simulate: a rough estimate, ASSUMED 1.25x the one-pattern time.
FAKE_FACTOR = 1.25
#: Default CODEGEN_SA_STEPS here: MLSDK's is 1,000,000 in C++; this model's annealer is
#: Python, so its default is ASSUMED 4000 steps.
DEFAULT_SA_STEPS = 4000
#: Iterations of the optimisation loop when `sa_expected_run_iters` is 0 ("until
#: sufficient optimization is achieved"): it stops at the first iteration without
#: improvement, and at this many at most (ASSUMED: a bound on compile time).
MAX_SA_RUNS = 8
#: Patterns the cost model may choose under CODEGEN_GEMM_FORCE_CHANNEL_SPLIT.
CHANNEL_SPLIT = "channel_split"


def flag(envs: Mapping[str, str], name: str) -> bool:
    """A CODEGEN_* on/off variable: set and not '0' or empty."""
    return str(envs.get(name, "0")).strip() not in ("0", "")


class Alarm:
    """CODEGEN_ALARM: the compile's deadline (seconds from the start; 0 or unset: none)."""

    def __init__(self, envs: Mapping[str, str], start: float | None = None):
        self.seconds = int_env(envs, "CODEGEN_ALARM", 0)
        self.deadline = (start or time.monotonic()) + self.seconds if self.seconds else None

    def check(self, where: str) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AccelError(f"CODEGEN_ALARM={self.seconds}: the compilation ran out of time "
                             f"({where}); raise it or lower the search effort "
                             "(CODEGEN_SA_STEPS, sa_expected_run_iters)")


@dataclass
class Step:
    """One scheduled layer (or relayout): its time and the DMA it needed."""

    name: str
    op_type: str
    time_s: float
    compute_s: float
    dma_s: float
    dma_bytes: int
    sram_bytes: int
    slices: int = 1
    #: Tensors loaded from DRAM before the layer / stored after it / recomputed for it.
    loads: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)
    recomputes: list[str] = field(default_factory=list)
    #: CODEGEN_OPS_ON_HOST: the layer runs on the host.
    on_host: bool = False


@dataclass
class Schedule:
    scheduler: str
    order: list[str]
    steps: list[Step]
    recomputed: list[str] = field(default_factory=list)
    sa_steps: int = 0
    #: Iterations of the annealing loop run (sa_expected_run_iters, or until converged).
    sa_runs: int = 0
    #: Turns of the beam search that reordered the program first (CODEGEN_SCHEDULE_PP_*).
    beam_turns: int = 0

    @property
    def time_s(self) -> float:
        return sum(s.time_s for s in self.steps)


class CostModel:
    """Per-layer compute times and DMA costs for one graph, plan and set of options."""

    def __init__(self, graph: Graph, plan: Plan, float_dtype: str, simulation_mode: str,
                 sram_budget: float, scheduler: str, merge: bool = False,
                 envs: Mapping[str, str] | None = None, nodesim: Any = None):
        envs = envs or {}
        self.graph, self.plan = graph, plan
        merge = merge or flag(envs, "CODEGEN_USE_MERGE")
        self.patterns = [(name, eff) for name, eff in GEMM_PATTERNS
                         if merge or name != MERGE_PATTERN]
        self.parallel_merge = flag(envs, "CODEGEN_USE_PARALLEL_MERGE")
        self.force_channel_split = flag(envs, "CODEGEN_GEMM_FORCE_CHANNEL_SPLIT")
        self.weight_on_dram = flag(envs, "CODEGEN_GEMM_FORCE_WEIGHT_ON_DRAM")
        self.on_host = {t.strip() for t in str(envs.get("CODEGEN_OPS_ON_HOST", "")).split(",")
                        if t.strip()}
        self.sram = arch.sram_bytes(sram_budget)
        mode = simulation_mode
        if mode == "auto":  # MLSDK: chosen by the scheduler
            mode = "default" if scheduler == "auto_recompute_sa" else "fast"
        self.mode = mode
        self.float_dtype = float_dtype
        #: GEMM layer -> the pattern its node simulation chose.
        self.pattern: dict[str, str] = {}
        self.nodesim = nodesim
        self.compute = {layer.name: self._layer_time(layer) for layer in graph.layers}
        self.relayout_in: dict[str, float] = {}
        for _value, layer, _i, _src, _dst, nbytes in plan.relayouts:
            self.relayout_in[layer] = self.relayout_in.get(layer, 0.0) + \
                arch.LAYER_OVERHEAD_S + nbytes / arch.RELAYOUT_BANDWIDTH
        for layer, nbytes in plan.fused.items():  # written in another layout on the way out
            self.relayout_in[layer] = self.relayout_in.get(layer, 0.0) + \
                FUSED_RELAYOUT_FRACTION * nbytes / arch.RELAYOUT_BANDWIDTH

    def dtype_of(self, layer: Layer) -> str:
        if self.float_dtype == "mixed":
            return "half" if layer.op_type in GEMMS else "float"
        return self.float_dtype

    def _layer_time(self, layer: Layer) -> float:
        if layer.op_type in self.on_host:
            moved = sum(self.graph.values[n].nbytes for n in set(layer.inputs)) + \
                self.graph.values[layer.output].nbytes
            return layer.flops / arch.HOST_FLOPS + 2 * arch.HOST_TRANSFER_OVERHEAD_S + \
                moved / arch.HOST_LINK_BANDWIDTH
        if layer.op_type not in GEMMS:
            peak = arch.PEAK_FLOPS[self.dtype_of(layer)]
            return arch.LAYER_OVERHEAD_S + layer.flops / (peak * arch.VECTOR_EFFICIENCY)
        key = None
        if self.nodesim is not None:
            key = self.nodesim.key(layer, self.graph, self.dtype_of(layer), self.mode,
                                   [n for n, _ in self.patterns], self.parallel_merge,
                                   self.force_channel_split)
            found = self.nodesim.get(key)
            if found is not None:
                self.pattern[layer.name] = found[1]
                return found[0]
        seconds, pattern = self._simulate_gemm(layer)
        self.pattern[layer.name] = pattern
        if key is not None:
            self.nodesim.put(key, seconds, pattern)
        return seconds

    def _simulate_gemm(self, layer: Layer) -> tuple[float, str]:
        """Node simulation of a GEMM: the time of each pattern `simulation_mode` tries; the
        fastest (seconds including the layer overhead, pattern)."""
        peak = arch.PEAK_FLOPS[self.dtype_of(layer)]
        tried = _PATTERNS_TRIED[self.mode]
        candidates = self.patterns[:max(tried, 1)]
        if self.force_channel_split:
            candidates = [p for p in self.patterns if p[0] == CHANNEL_SPLIT]
        times = {name: layer.flops / (peak * eff) + self._merge_s(name, layer)
                 for name, eff in candidates}
        name = min(times, key=times.__getitem__)
        seconds = times[name] * (FAKE_FACTOR if tried == 0 else 1.0)
        return arch.LAYER_OVERHEAD_S + seconds, name

    def _merge_s(self, pattern: str, layer: Layer) -> float:
        """L1Merge's reduction of partial sums across an L2B's L1Bs: one step per L1B in a
        row, or a tree (CODEGEN_USE_PARALLEL_MERGE)."""
        if pattern != MERGE_PATTERN:
            return 0.0
        n = arch.L1B_PER_L2B
        steps = math.ceil(math.log2(n)) if self.parallel_merge else n - 1
        out = self.graph.values[layer.output].nbytes
        return steps * (arch.MERGE_STEP_S + out / arch.MEMORIES["l1bm"].bandwidth)

    @staticmethod
    def dma(nbytes: int) -> float:
        return arch.DMA_OVERHEAD_S + nbytes / arch.MEMORIES["dram"].bandwidth if nbytes else 0.0


def _topo_ok(order: list[Layer], graph: Graph) -> bool:
    ready = {v for v, val in graph.values.items() if val.kind != "activation"}
    for layer in order:
        if any(n not in ready for n in layer.inputs):
            return False
        ready.add(layer.output)
    return True


def simulate(graph: Graph, cost: CostModel, scheduler: str, order: list[Layer] | None = None,
             recompute: frozenset[str] = frozenset()) -> Schedule:
    """Run the SRAM model over `order` (default: program order) with `scheduler`'s policy."""
    order = order or graph.layers
    values = graph.values
    last_use: dict[str, list[int]] = {}
    for t, layer in enumerate(order):
        for n in layer.inputs:
            last_use.setdefault(n, []).append(t)
    outputs = set(graph.outputs)
    resident: dict[str, int] = {}  # value -> bytes in LM
    in_dram = {v for v, val in values.items() if val.kind != "activation"}
    steps: list[Step] = []
    producer = {layer.output: layer for layer in order}
    prev_out: str | None = None
    for t, layer in enumerate(order):
        if layer.op_type in cost.on_host:
            resident, step = _host_step(layer, cost, values, resident, in_dram)
            steps.append(step)
            prev_out = None
            continue
        loads = 0
        extra_compute = 0.0
        loaded: list[str] = []
        stored: list[str] = []
        recomputed: list[str] = []
        streamed = cost.weight_on_dram and layer.op_type in GEMMS
        for n in dict.fromkeys(layer.inputs):
            size = values[n].nbytes
            if scheduler in ("always_from_dram",) or \
                    (scheduler == "reuse_consecutive" and n != prev_out) or \
                    (streamed and values[n].kind == "weight"):
                loads += size
                loaded.append(n)
                continue
            if n in resident:
                continue
            if n in recompute and n in producer and n not in in_dram:
                extra_compute += cost.compute[producer[n].name]
                recomputed.append(n)
            else:
                loads += size
                loaded.append(n)
            resident[n] = size
        out = layer.output
        out_size = values[out].nbytes
        # Weights read straight from DRAM (CODEGEN_GEMM_FORCE_WEIGHT_ON_DRAM) take no LM.
        working = sum(values[n].nbytes for n in set(layer.inputs)
                      if not (streamed and values[n].kind == "weight")) + out_size
        slices = max(1, math.ceil(working / cost.sram))
        stream = max(0, working - cost.sram)  # the part that does not fit: streamed twice
        stores = 0
        if scheduler in ("always_from_dram", "reuse_consecutive"):
            stores = out_size
            stored.append(out)
            in_dram.add(out)
            resident = {out: out_size} if out_size <= cost.sram else {}
        else:
            resident[out] = out_size
            future = {n for n in resident if last_use.get(n, [-1])[-1] > t}
            for n in list(resident):  # dead values leave without a store
                if n not in future and n not in outputs:
                    del resident[n]
            while sum(resident.values()) > cost.sram and resident:
                victim = max(resident, key=lambda n: min(
                    (u for u in last_use.get(n, []) if u > t), default=1 << 30))
                if victim not in in_dram and (victim in future or victim in outputs) and \
                        victim not in recompute:
                    stores += resident[victim]
                    stored.append(victim)
                    in_dram.add(victim)
                del resident[victim]
            if out in outputs and out not in in_dram:
                stores += out_size
                stored.append(out)
                in_dram.add(out)
        prev_out = out
        dma = cost.dma(loads) + cost.dma(stores) + cost.dma(2 * stream)
        compute = cost.compute[layer.name] + extra_compute + cost.relayout_in.get(layer.name, 0)
        steps.append(Step(layer.name, layer.op_type, compute + dma, compute, dma,
                          loads + stores + 2 * stream, min(working, cost.sram), slices,
                          loaded, stored, recomputed))
    return Schedule(scheduler, [layer.name for layer in order], steps, sorted(recompute))


def _host_step(layer: Layer, cost: CostModel, values: Mapping[str, Any],
               resident: dict[str, int], in_dram: set[str]) -> tuple[dict[str, int], Step]:
    """A CODEGEN_OPS_ON_HOST layer: inputs only in LM are stored to DRAM first (the host
    reads DRAM), the host computes (its time includes the link), the output lands in DRAM."""
    stored = [n for n in dict.fromkeys(layer.inputs) if n not in in_dram]
    stores = sum(values[n].nbytes for n in stored)
    in_dram.update(stored)
    in_dram.add(layer.output)
    dma = cost.dma(stores)
    compute = cost.compute[layer.name]
    step = Step(layer.name, layer.op_type, compute + dma, compute, dma, stores, 0, 1, [],
                stored, [], on_host=True)
    return resident, step


def schedule(graph: Graph, cost: CostModel, scheduler: str, envs: Mapping[str, str],
             sa_expected_run_iters: int, alarm: Alarm | None = None) -> Schedule:
    """The schedule `scheduler` picks (auto_recompute_sa: the annealed best)."""
    if scheduler not in SCHEDULERS:
        raise AccelError(f"unknown scheduler {scheduler!r} (choose from {', '.join(SCHEDULERS)})")
    alarm = alarm or Alarm(envs)
    from accel.targets.mncore.reorder import beam_reorder

    order, turns = beam_reorder(graph, cost, scheduler, envs, simulate, alarm)
    if scheduler != "auto_recompute_sa":
        found = simulate(graph, cost, scheduler, order)
        found.beam_turns = turns
        return found
    steps = int_env(envs, "CODEGEN_SA_STEPS", DEFAULT_SA_STEPS)
    chains = max(1, int_env(envs, "CODEGEN_NUM_SA_THREADS", 1))
    runs = sa_expected_run_iters if sa_expected_run_iters > 0 else MAX_SA_RUNS
    best = min((simulate(graph, cost, s, order) for s in ("spill_opt", "reuse_consecutive")),
               key=lambda s: s.time_s)
    start = (order or list(graph.layers), frozenset())
    done = 0
    for run in range(runs):
        improved = False
        for chain in range(chains):
            found = _anneal(graph, cost, steps, run * chains + chain, start, alarm)
            if found.time_s < best.time_s:
                best, improved = found, True
        done += 1
        if improved:
            layers = {layer.name: layer for layer in graph.layers}
            start = ([layers[n] for n in best.order], frozenset(best.recomputed))
        elif sa_expected_run_iters == 0:
            break  # converged: an iteration without improvement
    best.scheduler, best.sa_steps = "auto_recompute_sa", steps * chains
    best.sa_runs, best.beam_turns = done, turns
    return best


def _anneal(graph: Graph, cost: CostModel, steps: int, seed: int,
            start: tuple[list[Layer], frozenset[str]] | None = None,
            alarm: Alarm | None = None) -> Schedule:
    """Simulated annealing over (order, recomputed set) from `start` (default: program
    order, nothing recomputed), scored by simulate(spill_opt)."""
    rng = random.Random(seed)
    order = list(start[0]) if start else list(graph.layers)
    recompute: set[str] = set(start[1]) if start else set()
    cheap = [layer.output for layer in graph.layers
             if layer.op_type in ELEMENTWISE and layer.output not in graph.outputs]
    current = simulate(graph, cost, "spill_opt", order, frozenset(recompute))
    best = current
    temp0 = max(current.time_s * 0.01, 1e-9)
    for k in range(steps):
        if alarm is not None and k % 64 == 0:
            alarm.check("scheduling: simulated annealing")
        temp = temp0 * (1 - k / max(steps, 1))
        trial_order, trial_rec = order, recompute
        if cheap and rng.random() < 0.3:
            trial_rec = set(recompute) ^ {rng.choice(cheap)}
        else:
            i = rng.randrange(len(order) - 1) if len(order) > 1 else 0
            a, b = order[i], order[i + 1] if len(order) > 1 else order[i]
            if a.output in b.inputs or a is b:
                continue
            trial_order = order[:i] + [b, a] + order[i + 2:]
            if not _topo_ok(trial_order, graph):
                continue
        trial = simulate(graph, cost, "spill_opt", trial_order, frozenset(trial_rec))
        delta = trial.time_s - current.time_s
        if delta <= 0 or (temp > 0 and rng.random() < math.exp(-delta / temp)):
            order, recompute, current = trial_order, trial_rec, trial
            if current.time_s < best.time_s:
                best = current
    return best
