"""Layouts of the layer graph: generating them, the layout_spec files, and three planners.

A layout is a string in MLSDK's notation (`accel.dialects.mncore_layout`). The planners
choose among two *schemes* per tensor, generated for its shape and element width:

- `row`: the last dimension spreads over lanes and PEs (W, PE, MAB, L1B, L2B, innermost
  first), the one before over the levels left, leading dimensions over addresses, then time;
- `col`: the second-to-last dimension spreads over the hierarchy and the last stays inside
  each PE's addresses (what a reduction along the last axis or a GEMM's transposed B wants).

What each layer wants (`demands`): GEMMs want A in `row`, B in `col` (MLSDK's "BT") and give
C in `row`; reductions, Softmax and LayerNormalization want `col` and give `col`; Reshape,
Gather, Slice and Conv inputs want `row`; Transpose swapping the last two axes turns `row`
into `col` without moving data; elementwise layers take any layout as long as all their
same-shaped inputs and the output share it. Weights and function inputs are laid out by the
host on transfer (MLSDK section 4.5), so they are free to take the layout their users want.

The planners (`layout_planner`):

- `legacy`: each layer independently: every output in its op's canonical layout (`row`
  except reductions), inputs converted to what the op wants; weights and inputs `row`.
  No propagation: many relayouts.
- `bidi`: forward then backward propagation: elementwise layers adopt their first input's
  layout (forward); then, in reverse order, a tensor that is free (weight, input, or an
  elementwise cluster) takes the layout most of its consumers' bytes want (backward).
- `lpz` (default, "Layout Planner Z"): bidi's result improved by coordinate descent on the
  total relayout bytes over clusters (tensors an elementwise layer ties together), until
  no cluster's change lowers it; never worse than bidi. Honours layout_spec entries as
  produced directly in the spec's layout only with CODEGEN_LAYOUT_PLANNER_Z_HONOR_LAYOUT_SPEC=1;
  otherwise a FixOutput tensor keeps the planner's layout and its consumers read the spec's
  layout through a relayout (bidi and legacy always honour the spec).

Every relayout left (producer layout != consumer demand) is a `Relayout` the scheduler
charges (bytes over the relayout bandwidth in `arch`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accel.diagnostics import AccelError
from accel.dialects.mncore_layout import HIERARCHY, Layout, LayoutSyntaxError
from accel.targets.mncore.graph import ELEMENTWISE, Graph, Layer
from accel.targets.mncore.option_json import int_env
from accel.user_files import read_json

PLANNERS = ("lpz", "bidi", "legacy")
ROW, COL = "row", "col"
#: A layer writing its output straight into a layout other than its own does the relayout
#: on the way out, through the L1B/L2B network: ASSUMED half the cost of a separate one.
FUSED_RELAYOUT_FRACTION = 0.5
#: Long words one tensor may take per PE before the rest goes to time steps. ASSUMED: a
#: quarter of LM (2048 words per bank) so that a layer's inputs and output fit together.
WORDS_PER_TENSOR = 512
_REDUCING = frozenset({"ReduceMax", "ReduceSum", "ReduceMean", "Softmax",
                       "LayerNormalization"})
_WANTS_ROW = frozenset({"Reshape", "Gather", "Slice", "Conv", "Concat", "Pad", "MaxPool",
                        "AveragePool"})


# -- generating layouts -----------------------------------------------------------------------
def _spread(size: int, levels: list[tuple[str, int]]) -> tuple[list[tuple[str, int]], int]:
    """Factors (level, positions) covering `size` over `levels` (innermost first), and the
    number of positions still to cover after them."""
    used = []
    left = size
    for level, cap in levels:
        if left <= 1:
            break
        take = min(cap, left)
        used.append((level, take))
        left = math.ceil(left / take)
    return used, left


@functools.lru_cache(maxsize=4096)
def generate(shape: tuple[int, ...], scheme: str, bits: int) -> str:
    """The layout string of `scheme` for a tensor of `shape` with `bits`-bit elements."""
    rank = len(shape)
    if rank == 0:
        return "()"
    lanes = max(1, 64 // bits)
    hierarchy = [("W", lanes), ("PE", HIERARCHY["PE"]), ("MAB", HIERARCHY["MAB"]),
                 ("L1B", HIERARCHY["L1B"]), ("L2B", HIERARCHY["L2B"])]
    spread_dim = rank - 1 if scheme == ROW or rank == 1 else rank - 2
    groups: list[list[tuple[str, int]]] = [[] for _ in shape]
    rest: dict[int, int] = dict(enumerate(shape))
    used, rest[spread_dim] = _spread(shape[spread_dim], hierarchy)
    groups[spread_dim] = used
    taken = {level for level, _ in used}
    other = rank - 2
    if rank >= 2 and scheme == ROW:  # col keeps its last dimension inside each PE
        free = [(lv, cap) for lv, cap in hierarchy[1:] if lv not in taken]
        used2, rest[other] = _spread(shape[other], free)
        groups[other] = used2
    # What is left goes to addresses (innermost dimension first), past WORDS_PER_TENSOR to
    # time steps.
    words = 1
    for dim in reversed(range(rank)):
        left = rest[dim]
        if left <= 1:
            continue
        addr = max(1, min(left, WORDS_PER_TENSOR // words))
        time = math.ceil(left / addr)
        if time > 1:
            groups[dim].append(("Time", time))
        groups[dim].append(("addr", addr))
        words *= addr
    return _render(groups)


def _render(groups: list[list[tuple[str, int]]]) -> str:
    """Layout text with strides making each level's digits a mixed-radix number."""
    strides: dict[str, int] = {}
    texts = []
    for group in reversed(groups):  # innermost dimension gets the small strides
        factors = []
        for level, size in group:  # innermost factor first
            if size == 1:
                continue
            stride = strides.get(level, 1)
            strides[level] = stride * size
            factors.append(f"{size}:{stride}" if level == "addr" else f"{size}_{level}:{stride}")
        texts.append("(" + ", ".join(reversed(factors)) + ")")
    return "(" + ", ".join(reversed(texts)) + ")"


def time_steps(layout: str) -> int:
    return Layout.parse(layout).extent("Time")


# -- layout_spec / gemm_layout_spec ----------------------------------------------------------
@dataclass(frozen=True)
class SpecEntry:
    trigger: str  # SwitchInput | FixOutput | A | BT | C (gemm_layout_spec)
    key: str  # op_type, or the GEMM layer name
    shape: tuple[int, ...] | None
    layout: str
    where: str  # "file[index]" for errors


def _checked_layout(text: Any, shape: tuple[int, ...] | None, where: str,
                    envs: Mapping[str, str]) -> str:
    if not isinstance(text, str):
        raise AccelError(f"{where}: 'layout' must be a string, got {text!r}")
    try:
        layout = Layout.parse(text)
    except LayoutSyntaxError as err:
        raise AccelError(f"{where}: invalid layout \"{text}\": {err}") from None
    if shape is not None and envs.get("CODEGEN_IGNORE_LAYOUT_CHECK", "0") in ("0", ""):
        report = layout.check(shape, 16)  # the element width is checked per tensor (_fits)
        if report.errors:
            raise AccelError(f"{where}: layout \"{text}\" does not fit shape {list(shape)}: "
                             f"{report.errors[0]}")
    return text


def _spec_items(path: str, what: str, keys: tuple[str, ...]
                ) -> list[tuple[str, dict[str, Any]]]:
    """(location, entry) of each entry of a spec file: a JSON list of objects with exactly
    `keys`; anything else is an error naming the entry."""
    data = read_json(path, what)
    if not isinstance(data, list):
        raise AccelError(f"{what} {path}: expected a JSON list of entries")
    found = []
    for i, item in enumerate(data):
        where = f"{what} {path}[{i}]"
        if not isinstance(item, dict) or set(item) != set(keys):
            raise AccelError(f"{where}: an entry has exactly the keys {', '.join(keys)}; got "
                             f"{item!r}")
        found.append((where, item))
    return found


def load_specs(layout_spec: str | None, gemm_layout_spec: str | None,
               envs: Mapping[str, str]) -> list[SpecEntry]:
    """Both spec files' entries, each layout parsed and checked against its shape."""
    entries: list[SpecEntry] = []
    if layout_spec:
        for where, item in _spec_items(layout_spec, "layout_spec",
                                       ("trigger", "op_type", "shape", "layout")):
            if item["trigger"] not in ("SwitchInput", "FixOutput"):
                raise AccelError(f"{where}: trigger must be SwitchInput or FixOutput, got "
                                 f"{item['trigger']!r}")
            shape = item["shape"]
            if not isinstance(shape, list) or not all(isinstance(d, int) and d > 0
                                                      for d in shape):
                raise AccelError(f"{where}: shape must be a list of positive ints, got "
                                 f"{shape!r}")
            entries.append(SpecEntry(item["trigger"], str(item["op_type"]), tuple(shape),
                                     _checked_layout(item["layout"], tuple(shape), where, envs),
                                     where))
    if gemm_layout_spec:
        for where, item in _spec_items(gemm_layout_spec, "gemm_layout_spec",
                                       ("key", "A", "BT", "C")):
            for part in ("A", "BT", "C"):
                entries.append(SpecEntry(part, str(item["key"]), None,
                                         _checked_layout(item[part], None, f"{where}.{part}",
                                                         envs), where))
    return entries


# -- demands ----------------------------------------------------------------------------------
def _canonical(layer: Layer) -> str:
    return COL if layer.op_type in _REDUCING else ROW


def _demand(layer: Layer, i: int, graph: Graph) -> str | None:
    """The scheme layer wants for input i (None: any, tied to the output if same shape)."""
    op = layer.op_type
    if op in ("MatMul", "Gemm"):
        return ROW if i == 0 else COL
    if op in _REDUCING:
        return COL
    if op in _WANTS_ROW:
        return ROW
    if op == "Transpose":
        return None
    return None if op in ELEMENTWISE else ROW


def _tied(layer: Layer, i: int, graph: Graph) -> bool:
    """Input i must share the output's layout (elementwise, same shape)."""
    return layer.op_type in ELEMENTWISE and \
        graph.values[layer.inputs[i]].shape == graph.values[layer.output].shape


def _swaps_last_two(layer: Layer, graph: Graph) -> bool:
    src, dst = graph.values[layer.inputs[0]].shape, graph.values[layer.output].shape
    return len(src) >= 2 and src[:-2] == dst[:-2] and src[-2:] == dst[-2:][::-1] \
        and src[-1] != src[-2]


# -- planning ---------------------------------------------------------------------------------
@dataclass
class Plan:
    """The planner's result: a layout per tensor, what each consumer wants, relayouts."""

    planner: str
    layouts: dict[str, str]
    #: (layer name, input index) -> layout the layer reads.
    wants: dict[tuple[str, int], str]
    #: (value, layer name, input index, src, dst, bytes), in layer order.
    relayouts: list[tuple[str, str, int, str, str, int]]
    #: Layer name -> bytes of an output written in another layout than the layer's own
    #: (lpz's fused relayouts): charged FUSED_RELAYOUT_FRACTION of a relayout.
    fused: dict[str, int] = dataclasses.field(default_factory=dict)
    #: The sequence of layout decisions (layout_plan_history.html): dicts with step, phase,
    #: what, relayouts, relayout_bytes, changed (tensor names).
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def relayout_bytes(self) -> int:
        """Bytes the relayouts move, fused ones weighted by FUSED_RELAYOUT_FRACTION."""
        return sum(r[5] for r in self.relayouts) + \
            int(FUSED_RELAYOUT_FRACTION * sum(self.fused.values()))


class _Planner:
    def __init__(self, graph: Graph, specs: list[SpecEntry], envs: Mapping[str, str],
                 bits_of: Mapping[str, int]):
        self.graph, self.specs, self.envs = graph, specs, envs
        self.bits = bits_of
        self.max_time = int_env(envs, "CODEGEN_MAX_TIME_SLICE", 256, minimum=1)
        self.fixed_out: dict[str, str] = {}
        self.fixed_in: dict[tuple[str, int], str] = {}
        self.used: set[str] = set()
        self._texts: dict[tuple[str, str], str] = {}
        self._apply_specs()

    def text(self, value: str, scheme: str) -> str:
        """The layout text of `value` in `scheme` (memoised: lpz asks for the same pairs
        again and again)."""
        key = (value, scheme)
        found = self._texts.get(key)
        if found is None:
            v = self.graph.values[value]
            found = self._texts[key] = generate(v.shape, scheme, self.bits.get(value, v.bits))
        return found

    def _fits(self, entry: SpecEntry, value: str) -> None:
        """The entry's layout against the tensor it applies to, at the tensor's width."""
        if self.envs.get("CODEGEN_IGNORE_LAYOUT_CHECK", "0") not in ("0", ""):
            return
        v = self.graph.values[value]
        report = Layout.parse(entry.layout).check(v.shape, self.bits.get(value, v.bits))
        if report.errors:
            raise AccelError(f"{entry.where}: layout \"{entry.layout}\" does not fit "
                             f"{entry.trigger} tensor {value} {list(v.shape)}: "
                             f"{report.errors[0]}")

    def _apply_specs(self) -> None:
        for layer in self.graph.layers:
            for entry in self.specs:
                if entry.trigger in ("A", "BT", "C"):
                    if entry.key != layer.name:
                        continue
                    if entry.trigger == "C":
                        self._fits(entry, layer.output)
                        self.fixed_out[layer.output] = entry.layout
                    else:
                        index = 0 if entry.trigger == "A" else 1
                        if index < len(layer.inputs):
                            self._fits(entry, layer.inputs[index])
                        self.fixed_in[(layer.name, index)] = entry.layout
                    self.used.add(entry.where)
                    continue
                if entry.key != layer.op_type:
                    continue
                if entry.trigger == "FixOutput" and \
                        self.graph.values[layer.output].shape == entry.shape:
                    self._fits(entry, layer.output)
                    self.fixed_out[layer.output] = entry.layout
                    self.used.add(entry.where)
                for i, name in enumerate(layer.inputs):
                    if entry.trigger == "SwitchInput" and \
                            self.graph.values[name].shape == entry.shape:
                        self._fits(entry, name)
                        self.fixed_in[(layer.name, i)] = entry.layout
                        self.used.add(entry.where)
        unused = sorted({e.where for e in self.specs} - self.used)
        if unused and self.envs.get("CODEGEN_ALLOW_UNUSED_LAYOUT_SPEC", "0") in ("0", ""):
            first = next(e for e in self.specs if e.where == unused[0])
            raise AccelError(f"{first.where}: entry ({first.trigger} {first.key} "
                             f"{list(first.shape) if first.shape else ''}) matches no "
                             "operation of the model (set CODEGEN_ALLOW_UNUSED_LAYOUT_SPEC=1 "
                             "to allow it)")

    # Schemes -> layouts, demands, relayouts.
    def finish(self, planner: str, scheme: dict[str, str], check: bool = True) -> Plan:
        g = self.graph
        layouts = {v: self.fixed_out.get(v) or self.text(v, s) for v, s in scheme.items()}
        wants: dict[tuple[str, int], str] = {}
        relayouts = []
        for layer in g.layers:
            for i, name in enumerate(layer.inputs):
                want = self.fixed_in.get((layer.name, i))
                if want is None:
                    d = _demand(layer, i, g)
                    if d is None and _tied(layer, i, g):
                        d = scheme[layer.output]  # the output's scheme, at this input's width
                    want = layouts[name] if d is None else self.text(name, d)
                wants[(layer.name, i)] = want
                if want != layouts[name]:
                    relayouts.append((name, layer.name, i, layouts[name], want,
                                      g.values[name].nbytes))
        fused = {}
        for layer in g.layers:
            if layer.output not in self.fixed_out and \
                    scheme[layer.output] != self.out_scheme(layer, scheme):
                fused[layer.name] = g.values[layer.output].nbytes
        for value, text in layouts.items() if check else ():
            steps = time_steps(text)
            if steps > self.max_time:
                raise AccelError(f"tensor {value} {list(g.values[value].shape)} needs {steps} "
                                 f"time slices in layout {text}, more than "
                                 f"CODEGEN_MAX_TIME_SLICE={self.max_time}")
        return Plan(planner, layouts, wants, relayouts, fused)

    def out_scheme(self, layer: Layer, scheme: dict[str, str]) -> str:
        """Forward rule: the scheme `layer` gives its output given its inputs' schemes."""
        if layer.op_type == "Transpose" and layer.inputs:
            s = scheme[layer.inputs[0]]
            return (COL if s == ROW else ROW) if _swaps_last_two(layer, self.graph) else s
        if layer.op_type in ELEMENTWISE:
            tied = [scheme[n] for i, n in enumerate(layer.inputs) if _tied(layer, i, self.graph)]
            return tied[0] if tied else ROW
        return _canonical(layer)


def _clusters(graph: Graph) -> dict[str, str]:
    """Union-find over values tied by elementwise layers: value -> cluster root."""
    parent = {v: v for v in graph.values}

    def find(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for layer in graph.layers:
        for i, name in enumerate(layer.inputs):
            if _tied(layer, i, graph):
                parent[find(name)] = find(layer.output)
    return {v: find(v) for v in graph.values}


def _record(history: list[dict[str, Any]], p: _Planner, planner: str, phase: str, what: str,
            scheme: dict[str, str], changed: list[str]) -> None:
    """One entry of the plan history: the relayouts the layouts so far would need."""
    trial = p.finish(planner, scheme, check=False)
    history.append({"step": len(history), "phase": phase, "what": what,
                    "relayouts": len(trial.relayouts), "relayout_bytes": trial.relayout_bytes,
                    "changed": changed[:32], "changed_count": len(changed)})


def plan(graph: Graph, planner: str, specs: list[SpecEntry], envs: Mapping[str, str],
         bits_of: Mapping[str, int] | None = None) -> Plan:
    """Run `planner` (`lpz`, `bidi`, `legacy`) over `graph`."""
    if planner not in PLANNERS:
        raise AccelError(f"unknown layout_planner {planner!r} (choose from "
                         f"{', '.join(PLANNERS)})")
    history: list[dict[str, Any]] = []
    if envs.get("CODEGEN_LAYOUT_PLANNER_Z", "0") not in ("0", ""):
        planner = "lpz"
    p = _Planner(graph, specs, envs, bits_of or {})
    scheme = {v: ROW for v in graph.values}
    if p.fixed_out or p.fixed_in:
        history.append({"step": 0, "phase": "spec", "what": "layout_spec / gemm_layout_spec "
                        "entries applied", "relayouts": None, "relayout_bytes": None,
                        "changed": sorted(p.fixed_out)[:32] + [f"{k[0]}.{k[1]}" for k in
                                                               sorted(p.fixed_in)][:32],
                        "changed_count": len(p.fixed_out) + len(p.fixed_in)})
    _record(history, p, planner, "start", "every tensor in the row scheme", scheme,
            list(scheme))
    if planner == "legacy":
        before = dict(scheme)
        for layer in graph.layers:
            scheme[layer.output] = _canonical(layer)
        _record(history, p, planner, "legacy", "each layer writes its own scheme; inputs "
                "converted where a layer wants another", scheme,
                [v for v in scheme if scheme[v] != before[v]])
        return _with_history(p.finish(planner, scheme), history)
    before = dict(scheme)
    _forward(graph, p, scheme)
    _record(history, p, planner, "forward", "forward propagation: elementwise layers adopt "
            "their input's scheme, transposes swap", scheme,
            [v for v in scheme if scheme[v] != before[v]])
    before = dict(scheme)
    _backward(graph, p, scheme)
    _record(history, p, planner, "backward", "backward propagation: free tensors take the "
            "scheme most of their consumers' bytes want", scheme,
            [v for v in scheme if scheme[v] != before[v]])
    if planner == "bidi":
        return _with_history(p.finish(planner, scheme), history)
    honor = envs.get("CODEGEN_LAYOUT_PLANNER_Z_HONOR_LAYOUT_SPEC", "0") not in ("0", "")
    if not honor:
        # The planner keeps its own layout for a FixOutput tensor; its consumers still get
        # the spec's layout, through a relayout.
        users = graph.consumers()
        for value, text in p.fixed_out.items():
            for layer, i in users[value]:
                p.fixed_in.setdefault((layer.name, i), text)
        p.fixed_out = {}
    return _with_history(_descend(graph, p, scheme, p.finish(planner, scheme), history),
                         history)


def _with_history(found: Plan, history: list[dict[str, Any]]) -> Plan:
    history.append({"step": len(history), "phase": "final", "what": f"{found.planner}: "
                    f"{len(found.relayouts)} relayouts, {len(found.fused)} fused outputs",
                    "relayouts": len(found.relayouts), "relayout_bytes": found.relayout_bytes,
                    "changed": [], "changed_count": 0})
    found.history = history
    return found


def _forward(graph: Graph, p: _Planner, scheme: dict[str, str]) -> None:
    for layer in graph.layers:
        scheme[layer.output] = p.out_scheme(layer, scheme)


def _backward(graph: Graph, p: _Planner, scheme: dict[str, str]) -> None:
    """Free tensors (weights, inputs, elementwise clusters) take their users' layout."""
    users = graph.consumers()
    cluster = _clusters(graph)
    members: dict[str, list[str]] = {}
    for v, root in cluster.items():
        members.setdefault(root, []).append(v)
    producer = graph.producer()
    for group in members.values():
        free = all(v not in producer or producer[v].op_type in ELEMENTWISE for v in group)
        if not free:
            continue
        votes = {ROW: 0, COL: 0}
        for v in group:
            for layer, i in users[v]:
                d = _demand(layer, i, graph)
                if d is not None:
                    votes[d] += graph.values[v].nbytes
        if votes[COL] > votes[ROW]:
            for v in group:
                scheme[v] = COL


def _descend(graph: Graph, p: _Planner, scheme: dict[str, str], best: Plan,
             history: list[dict[str, Any]] | None = None) -> Plan:
    """Coordinate descent over clusters on the relayout bytes (lpz); each accepted change
    is recorded in `history`. A trial's bytes come from the terms its flips touch
    (`layout_delta.DeltaCost`), not from a whole new plan: the same decisions in time
    linear in the graph per round."""
    from collections import ChainMap

    from accel.targets.mncore.layout_delta import DeltaCost

    cluster = _clusters(graph)
    members: dict[str, list[str]] = {}
    for v, root in cluster.items():
        members.setdefault(root, []).append(v)
    transposes = [layer for layer in graph.layers if layer.op_type == "Transpose"]
    cost = DeltaCost(p, _demand, _tied)
    relayout, fused = cost.totals(scheme)
    best_bytes = best.relayout_bytes
    improved = True
    rounds = 0
    while improved and rounds < 8:
        improved, rounds = False, rounds + 1
        for root in sorted(members):
            group = members[root]
            in_group = set(group)
            changes = {v: COL if scheme[v] == ROW else ROW for v in group}
            flipped = ChainMap(changes, scheme)
            # Downstream transposes and elementwise layers follow the new scheme.
            for layer in transposes:
                if layer.output not in in_group:
                    changes[layer.output] = p.out_scheme(layer, flipped)
            moved = {v for v, s in changes.items() if s != scheme[v]}
            d_relayout, d_fused = cost.delta(scheme, flipped, moved)
            trial_bytes = relayout + d_relayout + \
                int(FUSED_RELAYOUT_FRACTION * (fused + d_fused))
            if trial_bytes < best_bytes:
                changed = [v for v in scheme if v in moved]
                scheme.update(changes)
                relayout, fused, best_bytes, improved = \
                    relayout + d_relayout, fused + d_fused, trial_bytes, True
                if history is not None:
                    trial = p.finish("lpz", scheme, check=False)
                    history.append({"step": len(history), "phase": "lpz",
                                    "what": f"round {rounds}: cluster of {root} flipped",
                                    "relayouts": len(trial.relayouts),
                                    "relayout_bytes": trial.relayout_bytes,
                                    "changed": changed[:32], "changed_count": len(changed)})
    return p.finish("lpz", scheme)
