"""The MN-Core page's data: layers, layouts and relayouts, SRAM over time, schedulers.

From summary.json (layers in schedule order, perf_stats), l3ir.txt (loads, stores,
relayouts per layer), layout.html (every tensor's layout) and, for the scheduler
comparison, the mncore compiler's own cost model run again on model.mlir with each
scheduler (`accel.targets.mncore.schedule`; the annealer only when it is the folder's own
scheduler: it is the slow one). The comparison needs the MLIR bindings; without them, or
for a graph over `WHAT_IF_LAYERS` layers, the page says why it is missing.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from accel.dashboard.folder import Folder

#: Largest graph the scheduler comparison re-schedules (each run is linear in layers).
WHAT_IF_LAYERS = 5000


class _Tables(HTMLParser):
    """The text of every <td>, row by row, table by table (layout.html)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def collect(folder: Folder, model: dict[str, Any]) -> dict[str, Any] | None:
    doc = folder.json("summary.json")
    if not isinstance(doc, dict) or not isinstance(doc.get("layers"), list):
        return None
    layers = []
    now = 0.0
    for row in doc["layers"]:
        if not isinstance(row, dict):
            continue
        us = float(row.get("time_us") or 0)
        layers.append({"name": str(row.get("name")), "op": str(row.get("op")),
                       "shape": row.get("shape"), "layout": str(row.get("layout")),
                       "time_us": us, "start_us": now, "sram": int(row.get("sram") or 0),
                       "dma_bytes": int(row.get("dma_bytes") or 0),
                       "slices": row.get("slices")})
        now += us
    tensors, relayouts = _layouts(folder)
    options = doc.get("options") if isinstance(doc.get("options"), dict) else {}
    sram_limit = _sram_limit(options)
    return {
        "layers": layers, "perf_stats": doc.get("perf_stats"),
        "scheduler": doc.get("scheduler"), "layout_planner": doc.get("layout_planner"),
        "sa_steps": doc.get("sa_steps"), "recomputed": doc.get("recomputed"),
        "tensors": tensors, "relayouts": relayouts or _l3ir_relayouts(folder),
        "sram_limit": sram_limit, "float_dtype": options.get("float_dtype"),
        "schedulers": scheduler_comparison(folder, doc, options),
        "layers_for_compare": [{"name": r["name"], "index": i, "us": r["time_us"], "mem": r["sram"],
                                "mem_unit": "B SRAM", "ops": [r["op"]], "phase": "forward"}
                               for i, r in enumerate(layers)],
    }


def _layouts(folder: Folder) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    text = folder.text("layout.html")
    if not text:
        return [], []
    parser = _Tables()
    try:
        parser.feed(text)
    except Exception:  # noqa: BLE001 - a damaged report: the table stays empty
        return [], []
    keys = (["tensor", "shape", "kind", "producer", "layout"],
            ["tensor", "consumer", "src", "dst", "bytes"])
    found: list[list[dict[str, str]]] = [[], []]
    for i, table in enumerate(parser.tables[:2]):
        found[i] = [dict(zip(keys[i], row, strict=False)) for row in table if row]
    return found[0], found[1]


def _l3ir_relayouts(folder: Folder) -> list[dict[str, str]]:
    """`relayout %x for Gemm_0.1 src=<l> dst=<l> bytes=N` lines of l3ir.txt."""
    rows = []
    for line in (folder.text("l3ir.txt") or "").splitlines():
        if not line.startswith("relayout "):
            continue
        parts = line.split(" ", 4)
        rest = parts[4] if len(parts) > 4 else ""
        src = rest.partition("src=")[2].partition(" dst=")[0]
        dst = rest.partition(" dst=")[2].rpartition(" bytes=")[0]
        rows.append({"tensor": parts[1], "consumer": parts[3] if len(parts) > 3 else "",
                     "src": src, "dst": dst, "bytes": rest.rpartition("bytes=")[2]})
    return rows


def _sram_limit(options: dict[str, Any]) -> int | None:
    try:
        from accel.targets.mncore import arch

        return arch.sram_bytes(float(options.get("sram_budget") or 1.0))
    except Exception:  # noqa: BLE001 - an old folder or a removed target: no limit line
        return None


def scheduler_comparison(folder: Folder, doc: dict[str, Any], options: dict[str, Any]
                         ) -> dict[str, Any]:
    """{"rows": [{scheduler, time_us, peak_sram, dma_bytes, recomputed, own}], "note"}."""
    own = str(doc.get("scheduler"))
    rows = [{"scheduler": own, "time_us": (doc.get("perf_stats") or {}).get("ALL", {})
             .get("time_us"), "peak_sram": max((int(r.get("sram") or 0)
                                                for r in doc["layers"]
                                                if isinstance(r, dict)), default=0),
             "dma_bytes": sum(int(r.get("dma_bytes") or 0) for r in doc["layers"]
                              if isinstance(r, dict)),
             "recomputed": len(doc.get("recomputed") or []), "own": True}]
    text = folder.text("model.mlir")
    if not text:
        return {"rows": rows, "note": "no model.mlir: only the folder's own scheduler"}
    if len(doc["layers"]) > WHAT_IF_LAYERS:
        return {"rows": rows, "note": f"more than {WHAT_IF_LAYERS} layers: not re-scheduled"}
    try:
        rows += _reschedule(folder, text, options, own)
    except Exception as err:  # noqa: BLE001 - the comparison is optional: say why not
        return {"rows": rows, "note": f"other schedulers not estimated: "
                                      f"{type(err).__name__}: {str(err)[:200]}"}
    return {"rows": rows, "note": "estimated by the mncore cost model on the same layout "
                                  "plan (annealing only for the folder's own scheduler)"}


def _reschedule(folder: Folder, text: str, options: dict[str, Any], own: str
                ) -> list[dict[str, Any]]:
    from accel.host.signatures import parsed
    from accel.targets.mncore import graph, layouts, schedule
    from accel.targets.mncore.compiler import _bits_of

    option_file = folder.json("option.json")
    envs = option_file.get("envs") if isinstance(option_file, dict) else None
    envs = {str(k): str(v) for k, v in envs.items()} if isinstance(envs, dict) else {}
    float_dtype = options.get("float_dtype")
    with parsed(text, str(folder.root / "model.mlir"), None) as (module, _):
        funcs = [op for op in module.body.operations
                 if op.operation.name == "func.func" and op.regions[0].blocks]
        g = graph.from_function(funcs[0])
    try:
        specs = layouts.load_specs(options.get("layout_spec"),
                                   options.get("gemm_layout_spec"), envs)
    except Exception:  # noqa: BLE001 - spec files moved since the build: plan without
        specs = []
    plan = layouts.plan(g, str(options.get("layout_planner") or "lpz"), specs, envs,
                        _bits_of(g, float_dtype))
    rows = []
    for name in schedule.SCHEDULERS:
        if name == own or name == "auto_recompute_sa":
            continue
        cost = schedule.CostModel(g, plan, float_dtype or "float",
                                  str(options.get("simulation_mode") or "auto"),
                                  float(options.get("sram_budget") or 1.0), name,
                                  merge=envs.get("CODEGEN_USE_MERGE", "0") not in ("0", ""))
        found = schedule.schedule(g, cost, name, envs, 0)
        rows.append({"scheduler": name, "time_us": found.time_s * 1e6,
                     "peak_sram": max((s.sram_bytes for s in found.steps), default=0),
                     "dma_bytes": sum(s.dma_bytes for s in found.steps),
                     "recomputed": len(found.recomputed), "own": False})
    return rows
