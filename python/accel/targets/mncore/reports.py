"""What a compilation writes for people and tools: l3ir.txt, layout.html, summary.json,
profile.json, trace.json, layout_plan_history.html, time_slice.txt/.html (the codegen_dir
format, docs/mncore.md).

Everything here is a pure function of the graph, plan and schedule: the same options give
byte-identical l3ir.txt (the reproduction check of option.json relies on it).
"""

from __future__ import annotations

import html
import json
from typing import Any

from accel.targets.mncore import arch
from accel.targets.mncore.graph import Graph
from accel.targets.mncore.layouts import FUSED_RELAYOUT_FRACTION, Plan
from accel.targets.mncore.schedule import Schedule


def l3ir(func: str, graph: Graph, plan: Plan, sched: Schedule, options: dict[str, Any],
         patterns: dict[str, str] | None = None) -> str:
    """The scheduled program, one instruction per line:

        load %x dram->lm bytes=N
        relayout %x for Gemm_0.1 src=<layout> dst=<layout> bytes=N
        recompute %x
        layer Gemm_0 Gemm(%a, %b) -> %c shape=[..] layout=<layout> time_us=T slices=S
              [relayout_out=fused] [pattern=<GEMM pattern>] [device=host]
        store %c lm->dram bytes=N
    """
    head = (f"# l3ir @{func} planner={plan.planner} scheduler={sched.scheduler} "
            f"float_dtype={options.get('float_dtype')} simulation_mode="
            f"{options.get('simulation_mode')} sram_budget={options.get('sram_budget')}")
    lines = [head]
    layers = {layer.name: layer for layer in graph.layers}
    relayouts: dict[str, list[tuple[str, str, int, str, str, int]]] = {}
    for r in plan.relayouts:
        relayouts.setdefault(r[1], []).append(r)
    for step in sched.steps:
        layer = layers[step.name]
        for name in step.loads:
            lines.append(f"load {name} dram->lm bytes={graph.values[name].nbytes}")
        for name in step.recomputes:
            lines.append(f"recompute {name}")
        for value, at, index, src, dst, nbytes in relayouts.get(step.name, []):
            lines.append(f"relayout {value} for {at}.{index} src={src} dst={dst} "
                         f"bytes={nbytes}")
        out = graph.values[layer.output]
        pattern = (patterns or {}).get(layer.name)
        lines.append(f"layer {layer.name} {layer.op_type}({', '.join(layer.inputs)}) -> "
                     f"{layer.output} shape={list(out.shape)} layout="
                     f"{plan.layouts[layer.output]} time_us={step.time_s * 1e6:.3f} "
                     f"slices={step.slices}"
                     + (" relayout_out=fused" if layer.name in plan.fused else "")
                     + (f" pattern={pattern}" if pattern else "")
                     + (" device=host" if step.on_host else ""))
        for name in step.stores:
            lines.append(f"store {name} lm->dram bytes={graph.values[name].nbytes}")
    lines.append(f"# total_time_us={sched.time_s * 1e6:.3f}")
    return "\n".join(lines) + "\n"


def layout_html(graph: Graph, plan: Plan) -> str:
    """Every tensor's layout as an HTML table (MLSDK's layout.html)."""
    producer = graph.producer()
    rows = []
    for name, value in graph.values.items():
        made = producer.get(name)
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            name, list(value.shape), value.kind, made.name if made else "-",
            plan.layouts.get(name, "-"))) + "</tr>")
    moves = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (v, f"{at}.{i}", s, d, b))
        + "</tr>" for v, at, i, s, d, b in plan.relayouts)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>accel mncore layouts"
            "</title><style>td,th{border:1px solid #999;padding:2px 6px;font-family:monospace}"
            "table{border-collapse:collapse}</style></head><body>\n"
            f"<h1>Layouts ({html.escape(plan.planner)})</h1>\n<table><tr><th>tensor</th>"
            "<th>shape</th><th>kind</th><th>producer</th><th>layout</th></tr>\n"
            + "\n".join(rows) + "\n</table>\n"
            f"<h2>Relayouts ({len(plan.relayouts)}, {plan.relayout_bytes} bytes)</h2>\n"
            "<table><tr><th>tensor</th><th>consumer.input</th><th>src</th><th>dst</th>"
            "<th>bytes</th></tr>\n" + moves + "\n</table>\n</body></html>\n")


def summary(graph: Graph, plan: Plan, sched: Schedule, phases: list[dict[str, Any]],
            options: dict[str, Any]) -> dict[str, Any]:
    """summary.json: flops, per-layer rows, perf_stats (ALL, per op type, per phase)."""
    layers = {layer.name: layer for layer in graph.layers}
    rows = []
    per_op: dict[str, dict[str, float]] = {}
    for step in sched.steps:
        layer = layers[step.name]
        rows.append({"name": step.name, "op": step.op_type,
                     "shape": list(graph.values[layer.output].shape),
                     "layout": plan.layouts[layer.output], "time_us": step.time_s * 1e6,
                     "sram": step.sram_bytes, "dma_bytes": step.dma_bytes,
                     "slices": step.slices})
        entry = per_op.setdefault(step.op_type, {"time_us": 0.0, "count": 0})
        entry["time_us"] += step.time_s * 1e6
        entry["count"] += 1
    relayout_us = (sum(arch.LAYER_OVERHEAD_S + r[5] / arch.RELAYOUT_BANDWIDTH
                       for r in plan.relayouts)
                   + FUSED_RELAYOUT_FRACTION * sum(plan.fused.values())
                   / arch.RELAYOUT_BANDWIDTH) * 1e6
    stats: dict[str, Any] = {
        "ALL": {"time_us": sched.time_s * 1e6},
        "compute": {"time_us": sum(s.compute_s for s in sched.steps) * 1e6 - relayout_us},
        "dma": {"time_us": sum(s.dma_s for s in sched.steps) * 1e6,
                "bytes": sum(s.dma_bytes for s in sched.steps)},
        "relayout": {"time_us": relayout_us, "count": len(plan.relayouts),
                     "fused": len(plan.fused), "bytes": plan.relayout_bytes},
    }
    stats.update({f"op:{k}": v for k, v in sorted(per_op.items())})
    return {"flops": graph.flops, "layers": rows, "perf_stats": stats,
            "scheduler": sched.scheduler, "sa_steps": sched.sa_steps,
            "recomputed": sched.recomputed, "layout_planner": plan.planner,
            "options": {k: v for k, v in options.items()
                        if v is None or isinstance(v, bool | int | float | str)},
            "compile_statuses": phases, "hardware": arch.table()}


def profile(sched: Schedule) -> dict[str, Any]:
    """profile.json: a Chrome/Perfetto trace, one event per layer (tid 0) and DMA (tid 1)."""
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "mncore (model)"}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "layers"}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 1, "args": {"name": "DMA"}},
    ]
    now = 0.0
    for step in sched.steps:
        if step.dma_s:
            events.append({"name": f"dma {step.name}", "cat": "dma", "ph": "X", "pid": 0,
                           "tid": 1, "ts": now, "dur": step.dma_s * 1e6,
                           "args": {"bytes": step.dma_bytes}})
        events.append({"name": step.name, "cat": step.op_type, "ph": "X", "pid": 0, "tid": 0,
                       "ts": now + step.dma_s * 1e6, "dur": step.compute_s * 1e6,
                       "args": {"slices": step.slices, "sram": step.sram_bytes}})
        now += step.time_s * 1e6
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def dumps(data: Any) -> str:
    return json.dumps(data, indent=1) + "\n"


def trace(phases: list[dict[str, Any]], sched: Schedule, facts: dict[str, Any]) -> dict[str, Any]:
    """trace.json: the compilation's own timeline (pid 0: each phase for the seconds it
    took, in order, with what it decided in `args`) and the modelled device timeline of
    one run (pid 1, as profile.json), for Perfetto or chrome://tracing."""
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "codegen (compile)"}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "phases"}}]
    now = 0.0
    for row in phases:
        dur = row["seconds"] * 1e6
        events.append({"name": row["phase"], "cat": "compile", "ph": "X", "pid": 0, "tid": 0,
                       "ts": round(now, 3), "dur": round(dur, 3),
                       "args": {"ok": row["ok"], **facts.get(row["phase"], {})}})
        now += dur
    device = profile(sched)["traceEvents"]
    for e in device:
        e["pid"] = 1
    return {"traceEvents": events + device, "displayTimeUnit": "ms"}


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title><style>td,th{{border:1px solid #999;padding:2px 6px;"
            "font-family:monospace}table{border-collapse:collapse}</style></head><body>\n"
            f"<h1>{html.escape(title)}</h1>\n{body}</body></html>\n")


def _table(head: list[str], rows: list[list[Any]]) -> str:
    return ("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>\n"
            + "\n".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row)
                        + "</tr>" for row in rows) + "\n</table>\n")


def layout_plan_history_html(plan: Plan) -> str:
    """layout_plan_history.html: the sequence of layout decisions the planner made."""
    rows = [[h["step"], h["phase"], h["what"], "-" if h["relayouts"] is None else h["relayouts"],
             "-" if h["relayout_bytes"] is None else h["relayout_bytes"], h["changed_count"],
             ", ".join(h["changed"]) + (" ..." if h["changed_count"] > len(h["changed"])
                                        else "")] for h in plan.history]
    return _page(f"Layout plan history ({plan.planner})", _table(
        ["step", "phase", "decision", "relayouts", "relayout bytes", "tensors changed",
         "tensors"], rows))


def _time_steps(text: str) -> int:
    from accel.targets.mncore.layouts import time_steps

    try:
        return time_steps(text)
    except Exception:  # noqa: BLE001 - a layout the dialect cannot parse counts as 1
        return 1


def time_slice_txt(func: str, graph: Graph, plan: Plan, sched: Schedule) -> str:
    """time_slice.txt: the scheduled graph just before time slicing branches it: each layer
    with the time steps of its tensors' layouts and the slices it runs in."""
    layers = {layer.name: layer for layer in graph.layers}
    sliced = [s for s in sched.steps if s.slices > 1 or
              _time_steps(plan.layouts[layers[s.name].output]) > 1]
    lines = [f"# time_slice @{func}: {len(sched.steps)} layers, {len(sliced)} time-sliced, "
             "before time slicing branches the graph ([T=n]: time steps of a layout)"]
    for step in sched.steps:
        layer = layers[step.name]
        ins = ", ".join(f"{n}[T={_time_steps(plan.layouts.get(n, '()'))}]"
                        for n in layer.inputs)
        out_t = _time_steps(plan.layouts[layer.output])
        mark = " time-sliced" if step.slices > 1 or out_t > 1 else ""
        lines.append(f"layer {layer.name} {layer.op_type}({ins}) -> {layer.output}[T={out_t}] "
                     f"slices={step.slices} sram={step.sram_bytes}{mark}")
    return "\n".join(lines) + "\n"


def time_slice_html(graph: Graph, plan: Plan, sched: Schedule) -> str:
    """time_slice.html: the layouts just before time slicing branches the graph: every
    tensor's layout and its time steps, and the layers that run in several slices."""
    tensors = [[name, list(v.shape), v.kind, plan.layouts.get(name, "-"),
                _time_steps(plan.layouts.get(name, "()"))] for name, v in graph.values.items()]
    steps = [[s.name, s.op_type, s.slices, s.sram_bytes] for s in sched.steps if s.slices > 1]
    body = ("<h2>Tensors</h2>\n" + _table(["tensor", "shape", "kind", "layout", "time steps"],
                                          tensors)
            + f"<h2>Layers run in several time slices ({len(steps)})</h2>\n"
            + _table(["layer", "op", "slices", "sram bytes"], steps))
    return _page("Time slices", body)
