"""One JSON model per output folder: everything the dashboard's pages show.

    {"schema": 1, "name", "path", "kind", "target",
     "summary": {command, model, entry, preset, training, versions, host, hardware, flops,
                 estimated_us, measured_ms, compile_s, cache_hit, warnings},
     "options": [{name, value, default, source}],
     "phases": [{name, seconds, ok, ir, log}],
     "files": [{id, path, bytes, text}],
     "graph": {sources, ops: [[name, results, preds, type, source, line, end, group, loc,
               function, hypersection]], group_kind, truncated},
     "target_page": {...the target's page (rdu_page, mncore_page, nvgpu_page, cpu_page)},
     "timeline": {traces: [...]},  "layers": [...per-unit rows `compare` aligns]}

Everything is read from the folder (`accel.dashboard.folder`); a missing or damaged file
leaves its part empty with a note, never an exception: a dashboard of a half-written or
old folder still opens.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from accel.dashboard import mlir_text
from accel.dashboard.folder import TEXT_SUFFIXES, Folder, detect

SCHEMA = 1
_PHASE = re.compile(r"^phase (\S+(?: \(.*?\))?) ([\d.]+)s(?: -> (\S+))?(?: \((.*)\))?$")
_RAN = re.compile(r"^ran .*: mean ([\d.]+) ms$")
_MATMUL = re.compile(r"ins\([^:]*:\s*([^)]*)\)")
_SHAPE = re.compile(r"tensor<([\dx]+)x[a-z]\w*>|memref<([\dx]+)x[a-z]\w*>")
#: Ops that are bookkeeping, not model ops (listed, but not counted as the model's ops).
PLUMBING = ("arith.constant", "tensor.empty", "memref.get_global", "bufferization.to_tensor",
            "memref.alloc", "memref.dealloc", "func.return", "linalg.fill")


def collect(path: str | Path) -> dict[str, Any]:
    """The dashboard model of the folder at `path` (`AccelError` when it is not one)."""
    return build(detect(path))


def build(folder: Folder) -> dict[str, Any]:
    from accel.dashboard import cpu_page, mncore_page, nvgpu_page, rdu_page, timeline

    notes: list[str] = []
    log = parse_compile_log(folder.text("compile.log") or "")
    option = folder.json("option.json")
    manifest = folder.json("manifest.json")
    files = [{"id": i, "path": rel, "bytes": size, "text": _is_text(rel)}
             for i, (rel, size) in enumerate(folder.files())]
    graph = build_graph(folder, notes)
    model: dict[str, Any] = {
        "schema": SCHEMA, "name": folder.name, "path": str(folder.root), "kind": folder.kind,
        "target": folder.target or "unknown", "notes": notes, "files": files,
        "summary": summary(folder, log, option, manifest),
        "options": options_table(folder, log, option, manifest),
        "phases": phases(folder, log),
        "graph": graph,
    }
    pages = {"rdu": rdu_page, "mncore": mncore_page, "nvgpu": nvgpu_page, "cpu": cpu_page}
    page = pages.get(model["target"])
    model["target_page"] = page.collect(folder, model) if page is not None else None
    if model["target"] == "mncore" and model["target_page"] is None:
        notes.append("no summary.json: the mncore page needs a codegen_dir or an "
                     "accel-compile mncore folder")
    model["timeline"] = timeline.collect(folder, model)
    model["layers"] = (model["target_page"] or {}).pop("layers_for_compare", [])
    if model["summary"]["flops"] is None and graph is not None:
        model["summary"]["flops"] = graph.pop("flops", None)
    elif graph is not None:
        graph.pop("flops", None)
    return model


def _is_text(rel: str) -> bool:
    return rel.endswith(TEXT_SUFFIXES) or rel.rsplit("/", 1)[-1] in ("compile.log",)


# -- compile.log ----------------------------------------------------------------------------
def parse_compile_log(text: str) -> dict[str, Any]:
    """accel-compile's compile.log (accel.build.folder.compile_log) as fields."""
    out: dict[str, Any] = {"phases": [], "warnings": [], "lines": text.count("\n")}
    for line in text.splitlines():
        key, _, value = line.partition(": ")
        if key in ("command", "model", "entry", "versions", "host", "options") and \
                key not in out:
            out[key] = value
        elif line.startswith("phase "):
            m = _PHASE.match(line)
            if m:
                out["phases"].append({"name": m.group(1), "seconds": float(m.group(2)),
                                      "ir": m.group(3), "note": m.group(4)})
        elif line.startswith("total ") and line.endswith("s"):
            try:
                out["total_s"] = float(line[6:-1])
            except ValueError:
                pass
        elif line.startswith("cache hit: "):
            out["cache_hit"] = line[11:].startswith("yes")
        elif line.startswith("warning: "):
            out["warnings"].append(line[9:])
        elif _RAN.match(line):
            out["measured_ms"] = float(_RAN.match(line).group(1))  # type: ignore[union-attr]
            out["measured"] = line
    return out


# -- summary --------------------------------------------------------------------------------
def summary(folder: Folder, log: dict[str, Any], option: Any, manifest: Any) -> dict[str, Any]:
    mn = folder.json("summary.json")
    mn = mn if isinstance(mn, dict) else {}
    opts = _options_of(folder, option, manifest, mn)
    versions = manifest.get("versions") if isinstance(manifest, dict) else None
    if not isinstance(versions, dict):
        versions = {"compile.log": log["versions"]} if "versions" in log else {}
    statuses = mn.get("compile_statuses") if isinstance(mn.get("compile_statuses"), list) \
        else []
    compile_s = log.get("total_s")
    if compile_s is None and statuses:
        compile_s = round(sum(float(s.get("seconds") or 0) for s in statuses
                              if isinstance(s, dict)), 6)
    estimated = None
    stats = mn.get("perf_stats") if isinstance(mn.get("perf_stats"), dict) else {}
    if isinstance(stats.get("ALL"), dict):
        estimated = stats["ALL"].get("time_us")
    elif isinstance(manifest, dict) and isinstance(manifest.get("target_files"), dict):
        estimated = manifest["target_files"].get("estimated_us")
    return {
        "command": log.get("command"), "model": log.get("model"),
        "entry": log.get("entry") or (manifest.get("entry") if isinstance(manifest, dict)
                                      else None),
        "preset": opts.get("preset"), "target": folder.target, "kind": folder.kind,
        "training": folder.has("train.json") or (isinstance(option, dict)
                                                 and option.get("inference") is False),
        "versions": versions, "host": log.get("host"),
        "hardware": mn.get("hardware") if isinstance(mn.get("hardware"), list) else None,
        "flops": mn.get("flops") if isinstance(mn.get("flops"), int) else None,
        "estimated_us": estimated, "measured_ms": log.get("measured_ms"),
        "measured": log.get("measured"), "compile_s": compile_s,
        "cache_hit": log.get("cache_hit"), "warnings": log["warnings"],
    }


def _options_of(folder: Folder, option: Any, manifest: Any, mn: dict[str, Any]
                ) -> dict[str, Any]:
    for source in (option.get("options") if isinstance(option, dict) else None,
                   mn.get("options"),
                   manifest.get("options") if isinstance(manifest, dict) else None,
                   (folder.json("forward/manifest.json") or {}).get("options")):
        if isinstance(source, dict):
            return source
    return {}


def options_table(folder: Folder, log: dict[str, Any], option: Any, manifest: Any
                  ) -> list[dict[str, Any]]:
    """Every option with its value, default and source: `given` (a flag of the command),
    `option.json` (from --option-json), `preset NAME`, `default`, or `target` (set by the
    target's own resolution, e.g. an mncore option_json)."""
    from accel.options import OPTIONS

    mn = folder.json("summary.json")
    opts = _options_of(folder, option, manifest, mn if isinstance(mn, dict) else {})
    command = log.get("command") or ""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    preset_values = _preset_values(folder.target, opts.get("preset"))
    rows = []
    for name, value in opts.items():
        spec = OPTIONS.get(name)
        default = spec.default if spec is not None else None
        source = "target"
        if _given(name, spec, words):
            source = "given"
        elif "--option-json" in words:
            source = "option.json"
        elif name in preset_values and preset_values[name] == value:
            source = f"preset {opts.get('preset')}"
        elif spec is not None and value == default:
            source = "default"
        elif name in ("target", "preset") and words:
            source = "given" if f"--{name}" in words or name == "preset" and any(
                w in ("-o0", "-o1", "-o3") for w in words) else "default"
        rows.append({"name": name, "value": value, "default": default, "source": source,
                     "doc": spec.doc if spec is not None else ""})
    return rows


def _given(name: str, spec: Any, words: list[str]) -> bool:
    flag = getattr(spec, "flag", None)
    for w in words:
        if flag and (w == flag or w.startswith(flag + "=") or w == "--no-" + flag[2:]):
            return True
        if w.startswith(f"{name}=") or w == f"--option={name}":
            return True
    return False


def _preset_values(target: str | None, preset: Any) -> dict[str, Any]:
    if not target or not isinstance(preset, str):
        return {}
    try:
        from accel import targets

        return dict(targets.get(target).presets().get(preset, {}))
    except Exception:  # noqa: BLE001 - an unknown or plug-in target: no preset sources
        return {}


# -- phases ---------------------------------------------------------------------------------
def phases(folder: Folder, log: dict[str, Any]) -> list[dict[str, Any]]:
    """compile.log's phases (with the IR each wrote), else summary.json's compile_statuses
    (mncore codegen_dir, with logs/<phase>.log)."""
    rows = []
    for p in log["phases"]:
        ir = p["ir"] if p["ir"] and folder.has(p["ir"]) else None
        rows.append({"name": p["name"], "seconds": p["seconds"], "ok": True, "ir": ir,
                     "log": None, "note": p["note"]})
    mn = folder.json("summary.json")
    statuses = mn.get("compile_statuses") if isinstance(mn, dict) else None
    if isinstance(statuses, list):
        for s in statuses:
            if not isinstance(s, dict):
                continue
            name = str(s.get("phase"))
            log_file = f"logs/{name}.log"
            rows.append({"name": f"mncore {name}" if rows else name,
                         "seconds": s.get("seconds"), "ok": bool(s.get("ok")), "ir": None,
                         "log": log_file if folder.has(log_file) else None, "note": None})
    return rows


# -- graph ----------------------------------------------------------------------------------
def graph_sources(folder: Folder) -> list[str]:
    """The IR files the Graph page reads, by target: rdu the sectioned IR, nvgpu the host
    program with its kernel launches, mncore the model the layers come from, else the
    linalg IR after import (one per graph of a train step)."""
    irs = sorted(rel for rel, _ in folder.files(5000)
                 if rel.startswith("ir/") and rel.endswith(".mlir"))

    def phase(name: str) -> list[str]:
        return [r for r in irs if r.endswith(f"-{name}.mlir")]

    if folder.target == "rdu" and phase("rdu-sections"):
        return phase("rdu-sections")
    if folder.target == "nvgpu" and phase("gpu"):
        return phase("gpu")
    if folder.target == "mncore" and folder.has("model.mlir"):
        return ["model.mlir"]
    for candidate in (phase("linalg"), ["model.mlir"], ["input.mlir"],
                      [f"{g}/model.mlir" for g in ("forward", "backward", "optimizer")
                       if folder.has(f"{g}/model.mlir")]):
        found = [c for c in candidate if folder.has(c)]
        if found:
            return found
    return []


def _label(rel: str) -> str:
    """`ir/12-backward-rdu-sections.mlir` -> `backward`; one-graph files -> ''."""
    stem = Path(rel).stem
    for graph in ("forward", "backward", "optimizer", "grad_norm"):
        if f"-{graph}-" in stem or rel.startswith(f"{graph}/"):
            return graph
    return ""


def build_graph(folder: Folder, notes: list[str], max_ops: int = 200_000
                ) -> dict[str, Any] | None:
    sources = graph_sources(folder)
    if not sources:
        notes.append("no IR to draw the graph from (no ir/, model.mlir or input.mlir)")
        return None
    ops: list[list[Any]] = []
    flops = 0
    truncated = False
    layer_of = _mncore_layers(folder) if folder.target == "mncore" else {}
    for index, rel in enumerate(sources):
        text = folder.text(rel) or ""
        found = mlir_text.scan(text, max_ops - len(ops))
        truncated |= found.truncated
        lines = text.split("\n")
        label = _label(rel)
        producers: dict[tuple[str, str, str], int] = {}
        for op in found.ops:
            scope = (label + "@" + op.func, op.group if op.nested else "")
            preds = []
            for v in op.operands:
                hit = producers.get((*scope, v.split("#")[0].split(":")[0]))
                if hit is not None:
                    preds.append(hit)
            me = len(ops)
            for r in op.results:
                producers[(*scope, r.split(":")[0])] = me
            group = op.group or op.kernel
            if layer_of and op.results:
                group = layer_of.get(op.results[0], group)
            func = f"{label}@{op.func}" if label else f"@{op.func}"
            if op.func.startswith("hypersection "):
                func = f"{label} {op.func}".strip()
            ops.append([op.name, ",".join(op.results), preds, op.type, index, op.line,
                        op.end, group, op.loc, func, op.ref])
            if op.name.startswith("linalg.") and "matmul" in op.name:
                flops += _matmul_flops(lines[op.line - 1])
    kind = {"rdu": "section", "mncore": "layer", "nvgpu": "kernel"}.get(folder.target or "")
    return {"sources": [{"file": rel, "label": _label(rel)} for rel in sources],
            "ops": ops, "group_kind": kind, "truncated": truncated,
            "flops": flops or None}


def _matmul_flops(line: str) -> int:
    """2*M*N*K of a linalg (batch_)matmul line from its operand types, else 0."""
    m = _MATMUL.search(line)
    if not m:
        return 0
    shapes = [[int(d) for d in (a or b).split("x")] for a, b in _SHAPE.findall(m.group(1))]
    if len(shapes) != 2 or len(shapes[0]) < 2 or len(shapes[1]) < 2:
        return 0
    a, b = shapes
    batch = 1
    for d in a[:-2]:
        batch *= d
    k = a[-1]
    n = b[-1] if b[-2] == k else b[-2]
    return 2 * batch * a[-2] * n * k


def _mncore_layers(folder: Folder) -> dict[str, str]:
    """Output value -> layer name, from l3ir.txt's `layer NAME OP(...) -> %out` lines."""
    out = {}
    for line in (folder.text("l3ir.txt") or "").splitlines():
        arrow = line.find(" -> ")
        if line.startswith("layer ") and arrow > 0:
            out[line[arrow + 4:].split()[0]] = line.split()[1]
    return out
