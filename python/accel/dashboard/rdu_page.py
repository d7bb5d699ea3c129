"""The RDU page's data: sections.json (docs/rdu.md "Artifact") as bars, groups and stages.

    {"arch", "limits": {phase: {pcu, pmu}}, "arch_limits", "sections": [...],
     "hypersections": [{name, instances, members}], "chips": [{chip, sections, us}],
     "phases": [{phase, sections, us, pcu_limit, pmu_limit, max_pcu, max_pmu}],
     "training": {...} | None, "total_us", "over_limit": [section names]}
"""

from __future__ import annotations

from typing import Any

from accel.dashboard.folder import Folder


def collect(folder: Folder, model: dict[str, Any]) -> dict[str, Any] | None:
    doc = folder.json("sections.json")
    if not isinstance(doc, dict) or not isinstance(doc.get("sections"), list):
        model["notes"].append("rdu: no readable sections.json in the folder")
        return None
    limits_doc = doc.get("arch_limits") if isinstance(doc.get("arch_limits"), dict) else {}
    sections = [s for s in doc["sections"] if isinstance(s, dict)]
    per_phase = limits_doc.get("phases") if isinstance(limits_doc.get("phases"), dict) else {}
    limits: dict[str, dict[str, Any]] = {}
    for s in sections:
        phase = str(s.get("phase", "forward"))
        if phase not in limits:
            own = per_phase.get(phase) if isinstance(per_phase.get(phase), dict) else {}
            limits[phase] = {"pcu": own.get("pcu", limits_doc.get("section_pcu_limit",
                                                                  limits_doc.get("pcu"))),
                             "pmu": own.get("pmu", limits_doc.get("section_pmu_limit",
                                                                  limits_doc.get("pmu")))}
    rows = []
    for s in sections:
        us = float(s.get("est_us") or 0) + float(s.get("transfer_us") or 0)
        ops = [str(o) for o in s.get("ops", [])] if isinstance(s.get("ops"), list) else []
        rows.append({"name": str(s.get("name")), "index": s.get("index"),
                     "phase": str(s.get("phase", "forward")), "ops": ops,
                     "pcu": int(s.get("pcu") or 0), "pmu": int(s.get("pmu") or 0),
                     "hypersection": s.get("hypersection"), "chip": int(s.get("chip") or 0),
                     "est_us": float(s.get("est_us") or 0),
                     "transfer_us": float(s.get("transfer_us") or 0), "us": us})
    over = [r["name"] for r in rows
            if (limits[r["phase"]]["pcu"] or 1 << 60) < r["pcu"]
            or (limits[r["phase"]]["pmu"] or 1 << 60) < r["pmu"]]
    chips: dict[int, dict[str, Any]] = {}
    for r in rows:
        c = chips.setdefault(r["chip"], {"chip": r["chip"], "sections": 0, "us": 0.0,
                                         "first": r["name"], "last": r["name"]})
        c["sections"] += 1
        c["us"] += r["us"]
        c["last"] = r["name"]
    phases = []
    for phase, lim in limits.items():
        mine = [r for r in rows if r["phase"] == phase]
        phases.append({"phase": phase, "sections": len(mine),
                       "us": sum(r["us"] for r in mine), "pcu_limit": lim["pcu"],
                       "pmu_limit": lim["pmu"], "max_pcu": max(r["pcu"] for r in mine),
                       "max_pmu": max(r["pmu"] for r in mine)})
    hypers = [{"name": str(h.get("name")), "instances": h.get("instances"),
               "members": [str(m) for m in h.get("members", [])]
               if isinstance(h.get("members"), list) else []}
              for h in doc.get("hypersections", []) if isinstance(h, dict)]
    total = doc.get("total_est_us")
    if not isinstance(total, int | float):
        total = sum(r["us"] for r in rows)
    if model["summary"].get("estimated_us") is None:
        model["summary"]["estimated_us"] = total
    if model["summary"].get("hardware") is None:
        model["summary"]["hardware"] = [
            {"quantity": k, "value": v,
             "source": "ASSUMED" if k in (limits_doc.get("assumed") or []) else "arch table"}
            for k, v in limits_doc.items()
            if isinstance(v, int | float | str) and not isinstance(v, bool)]
    stage_us = max((c["us"] for c in chips.values()), default=0.0)
    return {
        "arch": doc.get("arch") or _arch_from(model), "arch_limits": limits_doc,
        "limits": limits, "sections": rows, "hypersections": hypers,
        "chips": [chips[c] for c in sorted(chips)], "phases": phases,
        "training": doc.get("training") if isinstance(doc.get("training"), dict) else None,
        "total_us": total, "stage_us": stage_us, "over_limit": over,
        "layers_for_compare": [{"name": r["name"], "index": r["index"], "us": r["us"],
                                "mem": r["pmu"], "mem_unit": "PMU", "ops": r["ops"],
                                "phase": r["phase"]}
                               for r in rows],
    }


def _arch_from(model: dict[str, Any]) -> str | None:
    for row in model["options"]:
        if row["name"] == "arch":
            return str(row["value"])
    return None
