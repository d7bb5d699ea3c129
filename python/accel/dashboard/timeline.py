"""Timeline traces: lanes of timed events, from trace files or from the compiler's estimates.

    {"traces": [{"title", "source", "file", "estimated": bool,
                 "lanes": [{"name", "events": [[start_us, dur_us, name, category]]}],
                 "end_us", "count", "truncated"}]}

Sources, in order: Chrome/Perfetto trace files in the folder (mncore's profile.json, any
`*trace.json`: complete `X` events, `B`/`E` pairs, instants; lanes are the (pid, tid)
threads with their `thread_name`); the schedule the compiler estimated when no trace file
holds it (rdu: sections on their chips in run order; mncore: summary.json's layers); and
the compile itself (compile.log's or summary.json's phase times). Every trace can be opened
in Perfetto from the page (the app converts it back to trace events).
"""

from __future__ import annotations

from typing import Any

from accel.dashboard.folder import Folder

#: Events kept per trace (a long profile is cut, and says so).
MAX_EVENTS = 200_000


def collect(folder: Folder, model: dict[str, Any]) -> dict[str, Any]:
    traces = []
    for rel, _ in folder.files(5000):
        name = rel.rsplit("/", 1)[-1]
        if name in ("profile.json", "trace.json") or name.endswith((".trace.json",
                                                                    "_trace.json")):
            trace = read_trace(folder.json(rel), rel)
            if trace is not None:
                traces.append(trace)
    page = model.get("target_page") or {}
    if model["target"] == "rdu" and page.get("sections"):
        traces.append(_rdu_schedule(page))
    if model["target"] == "mncore" and page.get("layers") and not any(
            t["file"] and t["file"].endswith("profile.json") for t in traces):
        traces.append(_mncore_layers(page))
    compile_trace = _compile_phases(model)
    if compile_trace is not None:
        traces.append(compile_trace)
    return {"traces": traces}


def read_trace(doc: Any, rel: str) -> dict[str, Any] | None:
    """A Chrome trace (JSON object with traceEvents, or a list) as lanes; None if none."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        return None
    names: dict[tuple[Any, Any], str] = {}
    procs: dict[Any, str] = {}
    lanes: dict[tuple[Any, Any], list[list[Any]]] = {}
    open_spans: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    truncated = False
    count = 0
    for e in events:
        if not isinstance(e, dict):
            continue
        ph, key = e.get("ph"), (e.get("pid", 0), e.get("tid", 0))
        if ph == "M":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            if e.get("name") == "thread_name":
                names[key] = str(args.get("name"))
            elif e.get("name") == "process_name":
                procs[key[0]] = str(args.get("name"))
            continue
        if count >= MAX_EVENTS:
            truncated = True
            break
        ts = _num(e.get("ts"))
        if ts is None:
            continue
        if ph == "X":
            lanes.setdefault(key, []).append([ts, _num(e.get("dur")) or 0.0,
                                              str(e.get("name", "")), str(e.get("cat", ""))])
            count += 1
        elif ph == "B":
            open_spans.setdefault(key, []).append(e)
        elif ph == "E" and open_spans.get(key):
            start = open_spans[key].pop()
            lanes.setdefault(key, []).append([start["ts"], max(0.0, ts - start["ts"]),
                                              str(start.get("name", "")),
                                              str(start.get("cat", ""))])
            count += 1
        elif ph in ("i", "I"):
            lanes.setdefault(key, []).append([ts, 0.0, str(e.get("name", "")), "instant"])
            count += 1
    if not lanes:
        return None
    origin = min(ev[0] for evs in lanes.values() for ev in evs)
    out = []
    for key in sorted(lanes, key=lambda k: (str(k[0]), str(k[1]))):
        evs = sorted(lanes[key], key=lambda ev: ev[0])
        for ev in evs:
            ev[0] = round(ev[0] - origin, 6)
        label = names.get(key) or f"tid {key[1]}"
        if key[0] in procs:
            label = f"{procs[key[0]]}: {label}"
        out.append({"name": label, "events": evs})
    return {"title": rel, "source": "trace file", "file": rel, "estimated": False,
            "lanes": out, "count": count, "truncated": truncated,
            "end_us": max(ev[0] + ev[1] for lane in out for ev in lane["events"])}


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _rdu_schedule(page: dict[str, Any]) -> dict[str, Any]:
    """One input through the sections in run order, each on its chip's lane (estimated)."""
    lanes: dict[int, list[list[Any]]] = {}
    now = 0.0
    for s in sorted(page["sections"], key=lambda s: (s["index"] is None, s["index"] or 0)):
        lanes.setdefault(s["chip"], []).append([round(now, 4), s["us"], s["name"],
                                                s["phase"]])
        now += s["us"]
    return {"title": "RDU schedule (estimated)", "source": "sections.json", "file": None,
            "estimated": True, "count": len(page["sections"]), "truncated": False,
            "lanes": [{"name": f"chip {c}", "events": lanes[c]} for c in sorted(lanes)],
            "end_us": now}


def _mncore_layers(page: dict[str, Any]) -> dict[str, Any]:
    events = [[r["start_us"], r["time_us"], r["name"], r["op"]] for r in page["layers"]]
    return {"title": "MN-Core layers (estimated)", "source": "summary.json", "file": None,
            "estimated": True, "count": len(events), "truncated": False,
            "lanes": [{"name": "layers", "events": events}],
            "end_us": sum(r["time_us"] for r in page["layers"])}


def _compile_phases(model: dict[str, Any]) -> dict[str, Any] | None:
    events = []
    now = 0.0
    for p in model["phases"]:
        seconds = p.get("seconds")
        if not isinstance(seconds, int | float):
            continue
        events.append([round(now, 3), seconds * 1e6, p["name"], "compile"])
        now += seconds * 1e6
    if not events:
        return None
    return {"title": "compile phases", "source": "compile.log" if model["kind"] !=
            "codegen_dir" else "summary.json", "file": None, "estimated": False,
            "count": len(events), "truncated": False,
            "lanes": [{"name": "compile", "events": events}], "end_us": now}
