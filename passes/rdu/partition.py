"""Cutting an operator graph into sections: -o0, -o1 (rule lists) and -o3 (resource fit).

Every strategy returns `Group`s: operator indices (program order) and a label. A group
is always convex (no data path leaves it and comes back), so groups can run one after
another in a topological order.

- `by_operator` (-o0): one operator per section; a view-like operator (reshape, permute,
  ...) rides along with the operator that produces its input when that section holds a
  single operator, so a section has at most 2 operators.
- `by_rules` (-o1): rules in priority order claim matches (`rules`); views next to a
  match join it; every other operator is its own section, as at -o0.
- `by_resources` (-o3): operators in program order fill a section while its estimate
  fits the chip (times the scaling factor); a new section starts where it would not.
  `nlp` mode moves each cut back to the last boundary between repeated modules (e.g.
  transformer layers) in the section, so sections align with layers. `boundary` forces a
  cut wherever its key changes (modules annotated as hypersections).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from accel.diagnostics import AccelError
from accel.dialects.rdu_arch import Arch
from accel.ir import Operation, Value
from accel.passes.rdu.cost import Estimate
from accel.passes.rdu.operators import VIEW_KINDS, Graph, defining_op, used_values
from accel.passes.rdu.rules import Element, Rule, Tree

#: A module path that is one item of a repeated container (`h.3`, `layers.0`).
_REPEATED = re.compile(r"^(.*\.)?\d+$")


@dataclass
class Group:
    operators: list[int]
    label: str
    #: A human decision's group (`--mac-human-decision`): never split or merged.
    fixed: bool = False


def _is_view(graph: Graph, i: int) -> bool:
    return graph.operators[i].kind in VIEW_KINDS or graph.operators[i].kind == "view"


def convex(graph: Graph, members: set[int]) -> bool:
    """No path from the group through an operator outside it back into the group."""
    frontier = [s for m in members for s in graph.operators[m].succs if s not in members]
    seen = set(frontier)
    while frontier:
        i = frontier.pop()
        for s in graph.operators[i].succs:
            if s in members:
                return False
            if s not in seen:
                seen.add(s)
                frontier.append(s)
    return True


# -- io and estimates -----------------------------------------------------------------------
def group_ops(graph: Graph, members: list[int]) -> list[Operation]:
    position = {op: i for i, op in enumerate(graph.body)}
    ops = [op for m in members for op in graph.operators[m].ops]
    return sorted(ops, key=position.__getitem__)


def group_io(graph: Graph, ops: list[Operation]) -> tuple[list[Value], list[Value]]:
    """Values a group of compute ops reads from outside (not free ops) and writes out."""
    inside = set(ops)
    inputs: list[Value] = []
    seen: set[Value] = set()
    for op in ops:
        for value in used_values(op):
            src = defining_op(value)
            if src in inside or src in graph.free or value in seen:
                continue
            if src is None and value.owner.owner.operation in inside:
                continue  # a block argument of a region nested in the group
            if src is not None and _top(src) in inside:
                continue  # defined inside a region of a member op
            seen.add(value)
            inputs.append(value)
    outputs = [r for op in ops for r in op.results
               if any(_top(u.owner.operation) not in inside for u in r.uses)]
    return inputs, outputs


def _top(op: Operation) -> Operation:
    """The ancestor of `op` directly in the function body."""
    while op.parent is not None and op.parent.name not in ("func.func", "builtin.module"):
        op = op.parent.operation
    return op


@dataclass
class _Facts:
    """What the estimate of any group needs from one operator, computed once: sections are
    estimated many times while -o3 grows them."""

    flops: list[int]
    #: (value, its producer's operator or None, bytes) for each value read from outside.
    inputs: list[tuple[Value, int | None, int]]
    #: (bytes, consumers' operators; -1 for a use outside compute ops, e.g. the return).
    results: list[tuple[int, set[int]]]


def _facts(graph: Graph) -> list[_Facts]:
    cached = graph.cache.get("facts")
    if cached is not None:
        return cached
    from accel.passes.rdu.cost import flops
    from accel.passes.rdu.operators import nbytes

    facts = []
    for operator in graph.operators:
        ops = operator.ops
        inputs, _ = group_io(graph, ops)
        ins = []
        for value in inputs:
            src = defining_op(value)
            top = _top(src) if src is not None else None
            ins.append((value, graph.owner.get(top) if top is not None else None,
                        nbytes(value)))
        results = []
        for op in ops:
            for result in op.results:
                users = {graph.owner.get(_top(u.owner.operation), -1) for u in result.uses}
                results.append((nbytes(result), users))
        facts.append(_Facts([flops(op) for op in ops], ins, results))
    graph.cache["facts"] = facts
    return facts


def estimate_group(graph: Graph, members: list[int], arch: Arch, spatial: int = 1) -> Estimate:
    """The estimate of the section `members` would form (as `cost.estimate` of its ops);
    `spatial`: the batch streams through in that many parts (--num-spatial-batches)."""
    from accel.passes.rdu.cost import combine

    facts = _facts(graph)
    inside = set(members)
    stage_flops: list[int] = []
    io: list[int] = []
    seen: set[Value] = set()
    intermediate: list[int] = []
    for m in sorted(members):
        fact = facts[m]
        stage_flops += fact.flops
        for value, producer, size in fact.inputs:
            if producer in inside or value in seen:
                continue
            seen.add(value)
            io.append(size)
        for size, users in fact.results:
            if users - inside:
                io.append(size)
            if users & inside:
                intermediate.append(size)
    return combine(stage_flops, io, intermediate, arch, spatial)


# -- o0 -------------------------------------------------------------------------------------
def by_operator(graph: Graph, *, ride_along: bool = False,
                fixed: list[Group] | None = None) -> list[Group]:
    """One section per operator (SambaFlow -o0: "each PyTorch operator is compiled
    independently"); `fixed` groups (human decisions) first; `ride_along`: the legacy
    compiler's (`--mac-v2`) view riding along with its producer."""
    claimed = {i for g in fixed or () for i in g.operators}
    rest = by_operator_subset(graph, [o.index for o in graph.operators if o.index not in claimed],
                              ride_along=ride_along)
    return _in_order(graph, [*(fixed or ()), *rest]) if fixed else rest


# -- o1 -------------------------------------------------------------------------------------
def _next(graph: Graph, i: int, claimed: set[int], depth: int = 0
          ) -> list[tuple[int, list[int]]]:
    """Consumers of operator i, looking through unclaimed views (with the views passed)."""
    found: list[tuple[int, list[int]]] = []
    for s in sorted(graph.operators[i].succs):
        found.append((s, []))
        if _is_view(graph, s) and s not in claimed and depth < 6:
            found += [(t, [s, *via]) for t, via in _next(graph, s, claimed, depth + 1)]
    return found


def _match_sequence(graph: Graph, elements: tuple[Element, ...], start: int,
                    claimed: set[int]) -> list[int] | None:
    def rec(pi: int, last: int | None, acc: list[int]) -> list[int] | None:
        if pi == len(elements):
            return acc
        e = elements[pi]
        candidates = [(start, [])] if last is None else _next(graph, last, claimed)
        for c, via in candidates:
            if not e.accepts(graph.operators[c].kind):
                continue
            if not e.anchor and (c in claimed or c in acc):
                continue
            found = rec(pi + 1, c, acc if e.anchor else acc + via + [c])
            if found is not None:
                return found
        if e.optional:
            return rec(pi + 1, last, acc)
        return None

    found = rec(0, None, [])
    return found if found else None


def _match_tree(graph: Graph, tree: Tree, op: int, claimed: set[int],
                acc: list[int]) -> list[int] | None:
    if not tree.element.accepts(graph.operators[op].kind):
        return None
    if not tree.element.anchor:
        if op in claimed or op in acc:
            return None
        acc = acc + [op]
    for child in tree.children:
        for c, via in _next(graph, op, claimed):
            found = _match_tree(graph, child, c, claimed, acc + via)
            if found is not None:
                acc = found
                break
        else:
            return None
    return acc


def by_rules(graph: Graph, rules: list[Rule], *, ride_along: bool = False,
             fixed: list[Group] | None = None) -> list[Group]:
    ordered = sorted(enumerate(rules), key=lambda item: (-item[1].priority, item[0]))
    claimed: set[int] = {i for g in fixed or () for i in g.operators}
    matches: list[Group] = list(fixed or ())
    for _, rule in ordered:
        anchored = not isinstance(rule.pattern, Tree) and rule.pattern[0].anchor
        for operator in graph.operators:
            start = operator.index
            if start in claimed and not anchored:  # an anchor may sit in another section
                continue
            if isinstance(rule.pattern, Tree):
                found = _match_tree(graph, rule.pattern, start, claimed, [])
            else:
                found = _match_sequence(graph, rule.pattern, start, claimed)
            if not found or not convex(graph, set(found)):
                continue
            claimed.update(found)
            matches.append(Group(sorted(found), rule.name))
    _absorb_views(graph, [g for g in matches if not g.fixed], claimed)
    rest = by_operator_subset(graph, [o.index for o in graph.operators if o.index not in claimed],
                              ride_along=ride_along)
    return _in_order(graph, matches + rest)


def _absorb_views(graph: Graph, groups: list[Group], claimed: set[int]) -> None:
    """Unclaimed views whose input a match produces join it (if it stays convex)."""
    changed = True
    while changed:
        changed = False
        for group in groups:
            members = set(group.operators)
            for m in list(members):
                for s in graph.operators[m].succs:
                    if s in claimed or not _is_view(graph, s):
                        continue
                    if graph.operators[s].preds <= members and convex(graph, members | {s}):
                        members.add(s)
                        claimed.add(s)
                        changed = True
            group.operators = sorted(members)


def by_operator_subset(graph: Graph, indices: list[int], *,
                       ride_along: bool = False) -> list[Group]:
    """-o0 grouping restricted to `indices`: one operator each (with `ride_along`, the
    legacy rule: a view joins its producer's single-operator section)."""
    wanted = set(indices)
    groups: list[Group] = []
    home: dict[int, int] = {}
    for i in indices:
        operator = graph.operators[i]
        preds = operator.preds & wanted
        if ride_along and _is_view(graph, i) and len(operator.preds) == 1 and preds:
            (pred,) = preds
            g = home.get(pred)
            if g is not None and len(groups[g].operators) == 1 and \
                    not _is_view(graph, pred) and convex(graph, {pred, i}):
                groups[g].operators.append(i)
                home[i] = g
                continue
        home[i] = len(groups)
        groups.append(Group([i], operator.kind))
    return groups


def _in_order(graph: Graph, groups: list[Group]) -> list[Group]:
    """Groups in a topological order of the graph they condense (program order first)."""
    import heapq

    home = {i: g for g, group in enumerate(groups) for i in group.operators}
    succs: dict[int, set[int]] = {g: set() for g in range(len(groups))}
    indegree = dict.fromkeys(range(len(groups)), 0)
    for operator in graph.operators:
        for s in operator.succs:
            a, b = home[operator.index], home[s]
            if a != b and b not in succs[a]:
                succs[a].add(b)
                indegree[b] += 1
    ready = [(min(groups[g].operators), g) for g, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[Group] = []
    while ready:
        _, g = heapq.heappop(ready)
        order.append(groups[g])
        for b in succs[g]:
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, (min(groups[b].operators), b))
    if len(order) != len(groups):
        stuck = next((g for g in groups if g.fixed and g not in order), None)
        if stuck is not None:
            raise AccelError(f"human decision section '{stuck.label}' cannot run before or "
                             "after the sections around it (they depend on each other in "
                             "a cycle): choose its ops so that no other section needs part "
                             "of it and feeds the rest")
        raise AccelError("internal error: rdu sections depend on each other in a cycle")
    return order


# -- o3 -------------------------------------------------------------------------------------
def repeated_instance(modules: tuple[str, ...]) -> str | None:
    """The outermost enclosing module that is an item of a repeated container (h.3)."""
    return next((m for m in modules if _REPEATED.match(m)), None)


def by_resources(graph: Graph, arch: Arch, pcu_limit: int, pmu_limit: int, *,
                 nlp: bool = False, boundary: Callable[[int], object] | None = None,
                 limits_of: Callable[[int], tuple[int, int]] | None = None,
                 fixed: list[Group] | None = None, stages: int = 1,
                 spatial: int = 1) -> list[Group]:
    """Operators in topological order, closed into a section when the next would not fit;
    a change of `boundary(i)` always closes one. `limits_of(i)`: the (PCU, PMU) limits of
    the section operator i starts (default: `pcu_limit`, `pmu_limit` for all). `fixed`
    groups (human decisions) are kept whole, each a section of its own; with `stages` > 1
    the longest sections are split until there are that many (one pipeline stage per chip
    with --n-chips, so a graph that fits one chip still fills them all). `spatial`: the
    batch streams through each section in that many parts (--num-spatial-batches)."""
    order = _order_with_fixed(graph, fixed or [])
    first_of = {g.operators[0]: g for g in fixed or ()}
    in_fixed = {i for g in fixed or () for i in g.operators}
    groups: list[Group] = []
    current: list[int] = []

    def fits(members: list[int]) -> bool:
        limits = limits_of(members[0]) if limits_of is not None else (pcu_limit, pmu_limit)
        return estimate_group(graph, members, arch, spatial).fits(*limits)

    def close() -> None:
        nonlocal current
        if current:
            groups.append(Group(current, "graph"))
        current = []

    for i in order:
        if i in in_fixed:
            close()
            if i in first_of:
                groups.append(first_of[i])
            continue
        if current and boundary is not None and boundary(i) != boundary(current[-1]):
            close()
        if fits(current + [i]):
            current.append(i)
            continue
        if not current or not fits([i]):
            est = estimate_group(graph, [i], arch, spatial)
            label = graph.operators[i].label
            pcus, pmus = limits_of(i) if limits_of is not None else (pcu_limit, pmu_limit)
            raise AccelError(f"rdu: operator {label} needs {est.pcus} PCUs and {est.pmus} "
                             f"PMUs, more than one section may use on {arch.name} "
                             f"({pcus} PCUs, {pmus} PMUs after scaling)")
        cut = _layer_cut(graph, current) if nlp else None
        if cut:
            groups.append(Group(current[:cut], "graph"))
            current = current[cut:]
            if fits(current + [i]):
                current.append(i)
                continue
        close()
        current = [i]
    close()
    _split_to_stages(graph, arch, groups, stages, spatial)
    plain = [g for g in groups if not g.fixed]
    for n, group in enumerate(plain):
        group.label = f"graph{n}" if len(plain) > 1 else "graph"
    return groups


def _order_with_fixed(graph: Graph, fixed: list[Group]) -> list[int]:
    """A topological order (program order first) in which each fixed group's operators
    are contiguous: possible because each is convex (checked when it is formed)."""
    from accel.passes.rdu.operators import topological

    if not fixed:
        return topological(graph.operators) or [o.index for o in graph.operators]
    import heapq

    unit = {i: ("g", k) for k, g in enumerate(fixed) for i in g.operators}
    members: dict[object, list[int]] = {}
    for o in graph.operators:
        members.setdefault(unit.get(o.index, ("o", o.index)), []).append(o.index)
    succs: dict[object, set[object]] = {u: set() for u in members}
    indegree = dict.fromkeys(members, 0)
    for o in graph.operators:
        a = unit.get(o.index, ("o", o.index))
        for s in o.succs:
            b = unit.get(s, ("o", s))
            if a != b and b not in succs[a]:
                succs[a].add(b)
                indegree[b] += 1
    ready = [(min(members[u]), u) for u, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, u = heapq.heappop(ready)
        order += sorted(members[u])
        for b in succs[u]:
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, (min(members[b]), b))
    if len(order) != len(graph.operators):
        raise AccelError("human decision sections depend on each other in a cycle")
    return order


def _split_to_stages(graph: Graph, arch: Arch, groups: list[Group], stages: int,
                     spatial: int) -> None:
    """Split the longest splittable group at its most balanced point until there are
    `stages` groups (or nothing is left to split). Groups from `by_resources` are runs of
    one topological order, so both halves stay convex."""
    while len(groups) < stages:
        candidates = [(estimate_group(graph, g.operators, arch, spatial).est_us, k)
                      for k, g in enumerate(groups) if not g.fixed and len(g.operators) > 1]
        if not candidates:
            return
        _, k = max(candidates)
        ops = groups[k].operators
        best = _balanced_cut(graph, arch, ops, spatial)
        groups[k:k + 1] = [Group(ops[:best], "graph"), Group(ops[best:], "graph")]


def _balanced_cut(graph: Graph, arch: Arch, ops: list[int], spatial: int) -> int:
    """The cut position of `ops` whose longer half is shortest (long groups: a coarse scan
    of cut points, then every point around the best one)."""
    def worse_half(c: int) -> float:
        return max(estimate_group(graph, ops[:c], arch, spatial).est_us,
                   estimate_group(graph, ops[c:], arch, spatial).est_us)

    step = max(1, len(ops) // 64)
    best = min(range(1, len(ops), step), key=worse_half)
    return min(range(max(1, best - step), min(len(ops), best + step)), key=worse_half)


def _layer_cut(graph: Graph, members: list[int]) -> int | None:
    """The last position in `members` where the repeated module instance changes."""
    keys = [repeated_instance(graph.operators[i].modules) for i in members]
    for j in range(len(members) - 1, 0, -1):
        if keys[j] != keys[j - 1]:
            return j
    return None
