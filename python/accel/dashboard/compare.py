"""`accel-dashboard compare`: one model built for several targets or option sets, side by
side, layer by layer.

The targets cut a model into different units (RDU sections, MN-Core layers), but all of
them start from the same linalg program. So each folder's Graph ops are reduced to its
*compute ops* (linalg ops other than fills, reshapes and slices), in program order, each
tagged with the unit it belongs to; the sequences are aligned on op kinds
(`difflib.SequenceMatcher`, which tolerates an op more or less), and the rows of the
comparison are the coarsest ranges of ops that no folder's unit straddles: within a row,
every folder's time and memory are the exact sums (maxima) of its own units. Folders with
no per-unit estimate (cpu, nvgpu) appear in the totals.

    {"folders": [{id, name, target, preset, estimated_us, measured_ms, compile_s, units,
                  mem_unit}],
     "options": [{name, values: [...], differs}],
     "rows": [{label, kinds, cells: [{units, us, mem} | None]}], "reference": id | None}
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

#: Graph ops that are the model's computation (what every target keeps, in order).
_TENSOR_OPS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
               "tensor.insert_slice", "tensor.concat", "tensor.pad")


def compute_ops(model: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, unit) of each compute op of the folder's graph, in program order; an RDU
    hypersection instance (an empty section) stands for its hypersection's body."""
    ops = (model.get("graph") or {}).get("ops", [])
    bodies: dict[str, list[str]] = {}
    for op in ops:
        if op[9].startswith("hypersection ") and _is_compute(op[0]):
            bodies.setdefault(op[9].split(" ", 1)[1], []).append(op[0])
    out = []
    for op in ops:
        label = op[9].split("@", 1)[0] if "@" in op[9] else ""
        group = f"{label}.{op[7]}" if label and op[7] else op[7] or ""
        if op[9].startswith("hypersection "):
            continue
        if op[10] and op[0] == "rdu.section":
            out += [(kind, group) for kind in bodies.get(op[10], [])]
        elif _is_compute(op[0]):
            out.append((op[0], group))
    return out


_INDEX = re.compile(r"(?:^|\.)s(\d+)_")


def unit_names(groups: list[str], units: dict[str, Any]) -> dict[str, list[str]]:
    """The units (by name) each graph group stands for: itself, or, for an RDU
    hypersection instance whose member sections sections.json lists one by one, the
    sections numbered from its index up to the next group's."""
    found: dict[str, list[str]] = {}
    order = list(dict.fromkeys(g for g in groups if g))
    for i, group in enumerate(order):
        if group in units:
            found[group] = [group]
            continue
        m = _INDEX.search(group)
        if not m:
            continue
        start = int(m.group(1))
        prefix = group.rsplit(".", 1)[0] + "." if "." in group.split("_", 1)[0] else ""
        nxt = next((int(n.group(1)) for g in order[i + 1:] if (n := _INDEX.search(g))),
                   1 << 30)
        found[group] = [name for name, u in units.items()
                        if isinstance(u.get("index"), int) and start <= u["index"] < nxt
                        and name.startswith(prefix)]
    return found


def _is_compute(name: str) -> bool:
    return (name.startswith("linalg.") and name != "linalg.fill") or name in _TENSOR_OPS


def _aligned(ref: list[str], other: list[str]) -> dict[int, int]:
    """index in `other` -> index in `ref`, for the ops the alignment matched."""
    matcher = difflib.SequenceMatcher(None, ref, other, autojunk=False)
    found = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            found[block.b + k] = block.a + k
    return found


def compare(models: list[dict[str, Any]], ids: list[str]) -> dict[str, Any]:
    folders = []
    for fid, m in zip(ids, models, strict=True):
        units = m.get("layers") or []
        folders.append({"id": fid, "name": m["name"], "target": m["target"],
                        "preset": m["summary"].get("preset"),
                        "estimated_us": m["summary"].get("estimated_us"),
                        "measured_ms": m["summary"].get("measured_ms"),
                        "compile_s": m["summary"].get("compile_s"),
                        "flops": m["summary"].get("flops"), "units": len(units),
                        "mem_unit": units[0]["mem_unit"] if units else None})
    return {"folders": folders, "options": _options(models),
            **_rows(models, ids)}


def _options(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names: list[str] = []
    for m in models:
        names += [r["name"] for r in m["options"] if r["name"] not in names]
    rows = []
    for name in names:
        values, present = [], []
        for m in models:
            row = next((r for r in m["options"] if r["name"] == name), None)
            values.append(None if row is None else row["value"])
            present.append(row is not None)
        keys = [json.dumps(v, sort_keys=True, default=str) for v in values]
        common = max(set(keys), key=keys.count)
        rows.append({"name": name, "values": values, "present": present,
                     "differs": len(set(keys)) > 1, "odd": [k != common for k in keys]})
    rows.sort(key=lambda r: (not r["differs"], names.index(r["name"])))
    return rows


def _rows(models: list[dict[str, Any]], ids: list[str]) -> dict[str, Any]:
    """The aligned rows (see the module docstring)."""
    parts = []  # (model index, ops, unit rows by name)
    for i, m in enumerate(models):
        units = {u["name"]: u for u in m.get("layers") or []}
        ops = compute_ops(m)
        names = unit_names([u for _, u in ops], units)
        if units and any(names.values()):
            parts.append((i, ops, {g: [units[n] for n in ns] for g, ns in names.items()}))
    if not parts:
        return {"rows": [], "reference": None}
    ref_i, ref_ops, _ = parts[0]
    ref_kinds = [k for k, _ in ref_ops]
    n = len(ref_ops)
    # unit of each reference position, per partitioned folder
    owner: list[list[str | None]] = []
    for _i, ops, _units in parts:
        mapping = _aligned(ref_kinds, [k for k, _ in ops])
        at: list[str | None] = [None] * n
        for j, (_, unit) in enumerate(ops):
            if j in mapping and unit:
                at[mapping[j]] = unit
        owner.append(at)
    # a boundary before position p unless some folder's unit continues across it
    cuts = [0]
    for p in range(1, n):
        if not any(at[p] is not None and at[p] == _last_known(at, p) for at in owner):
            cuts.append(p)
    cuts.append(n)
    rows = []
    seen: list[set[str]] = [set() for _ in parts]
    for a, b in zip(cuts, cuts[1:], strict=False):
        if a == b:
            continue
        cells: list[dict[str, Any] | None] = [None] * len(models)
        labels: list[str] = []
        for k, (mi, _ops, units) in enumerate(parts):
            groups = [u for u in dict.fromkeys(owner[k][a:b]) if u and u not in seen[k]]
            seen[k].update(groups)
            rows_k = [u for g in groups for u in units.get(g, [])]
            cells[mi] = {"units": [u["name"] for u in rows_k] or groups,
                         "us": sum(u["us"] for u in rows_k),
                         "mem": max((u["mem"] for u in rows_k), default=0)}
            for u in rows_k:
                labels += [o.split(":", 1)[1] for o in u.get("ops", []) if ":" in o]
        kinds = list(dict.fromkeys(k.split(".", 1)[-1] for k in ref_kinds[a:b]))
        rows.append({"label": ", ".join(dict.fromkeys(labels)) or ", ".join(kinds),
                     "kinds": kinds, "cells": cells})
    return {"rows": rows, "reference": ids[ref_i]}


def _last_known(at: list[str | None], p: int) -> str | None:
    """The unit of the nearest position before `p` that has one."""
    for q in range(p - 1, -1, -1):
        if at[q] is not None:
            return at[q]
    return None

