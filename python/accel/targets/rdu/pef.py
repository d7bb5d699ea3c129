"""The RDU artifact files: `<NAME>.pef` and `sections.json` (docs/rdu.md, "Artifact").

`<NAME>.pef` (NAME: the artifact folder's name, i.e. `--pef-name`) is a JSON container,
SambaFlow's PEF in spirit: everything needed to run the sectioned program, checksummed in
the manifest like every artifact file.

    {"format": "accel-rdu-pef", "version": 1,
     "arch": "sn40l", "arch_limits": {...},           # the resource model used
     "options": {...},                                # the RDU options it was compiled with
     "sections": [...], "hypersections": [...],       # as in sections.json
     "schedule": [{"index": 0, "section": "s0_linear", "chip": 0}, ...],
     "weights": [{"name": "accel_w0", "dtype": "<f4", "shape": [16, 8]}, ...],
     "ir": {"sectioned": "<rdu.section IR>", "emulation": "<outlined IR the host runs>"}}

The weights themselves are the artifact's `weights/*.npy` (one copy, checksummed in
manifest.json); the PEF lists which it needs. `sections.json` is the human and tool view:
{"arch_limits", "sections": [{"name", "index", "phase", "ops", "pcu", "pmu",
"hypersection", "chip", "est_us", "transfer_us"} plus, for a hypersection's sections,
"instance", "body", "reused"], "hypersections": [{"name", "instances", "members", "body",
...}], "pipeline": {...}} (docs/rdu.md, "Artifact").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accel.diagnostics import AccelError

PEF_FORMAT = "accel-rdu-pef"
PEF_VERSION = 1
SECTIONS_JSON = "sections.json"


#: A folder being written (`accel.artifact.staged_folder`): `.<name>.<random>.partial`.
_STAGED = re.compile(r"^\.(.+)\.[^.]+\.partial$")


def pef_name(program: Any, folder: Path) -> str:
    """`<pef-name>.pef` (accel-compile sets `artifact_name`), else the folder's name (the
    final one when `folder` is the staging folder it is written in first)."""
    name = getattr(program, "artifact_name", None) or folder.resolve().name or "model"
    staged = _STAGED.match(name)
    return f"{staged.group(1) if staged else name}.pef"


def pef_document(program: Any) -> dict[str, Any]:
    return {
        "format": PEF_FORMAT, "version": PEF_VERSION, "arch": program.arch.name,
        "arch_limits": program.limits, "options": program.options,
        "sections": [s.to_json() for s in program.sections],
        "hypersections": program.hypersections_json(),
        "pipeline": program.pipeline,
        "schedule": [{"index": s.index, "section": s.name, "chip": s.chip,
                      "hypersection": s.hypersection} for s in program.sections],
        "weights": [{"name": n, "dtype": a.dtype.str, "shape": list(a.shape)}
                    for n, a in program.weights.items()],
        "ir": {"sectioned": program.sectioned_ir, "emulation": program.emulation_ir},
    }


def save(program: Any, folder: Path) -> dict[str, Any]:
    from accel.artifact import sha256
    from accel.cache import atomic_write

    name = pef_name(program, folder)
    pef = (json.dumps(pef_document(program), indent=1) + "\n").encode()
    table = (json.dumps(program.sections_json(), indent=2) + "\n").encode()
    atomic_write(folder / name, pef)
    atomic_write(folder / SECTIONS_JSON, table)
    return {"pef": name, name: sha256(pef), SECTIONS_JSON: sha256(table)}


def _malformed(folder: Path, what: str) -> AccelError:
    return AccelError(f"artifact '{folder}': malformed PEF ({what}): compile it again")


def load(folder: Path, manifest: Mapping[str, Any], weights: Mapping[str, np.ndarray]) -> Any:
    from accel.artifact import checked_file
    from accel.dialects.rdu_arch import lookup_arch
    from accel.host.compile import compile_mlir
    from accel.targets.rdu.program import RduProgram
    from accel.targets.rdu.schedule import Section

    files = manifest.get("target_files")
    name = files.get("pef") if isinstance(files, Mapping) else None
    if not isinstance(name, str) or "/" in name or not name.endswith(".pef"):
        raise AccelError(f"artifact '{folder}': malformed manifest (target_files.pef)")
    try:
        doc = json.loads(checked_file(folder, name, files).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _malformed(folder, "not JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != PEF_FORMAT or \
            doc.get("version") != PEF_VERSION:
        raise _malformed(folder, f"format {doc.get('format') if isinstance(doc, dict) else None!r}")
    arch = lookup_arch(str(doc.get("arch")))
    ir = doc.get("ir")
    if arch is None or not isinstance(ir, dict) or not all(
            isinstance(ir.get(k), str) for k in ("sectioned", "emulation")):
        raise _malformed(folder, "arch or ir")
    try:
        sections = [Section(s["name"], int(s["index"]), s["phase"], list(s["ops"]),
                            int(s["pcu"]), int(s["pmu"]), s["hypersection"],
                            float(s["est_us"]), int(s["chip"]), float(s.get("transfer_us", 0)),
                            s.get("instance"), s.get("body"), bool(s.get("reused", False)),
                            shard=s.get("shard"), shards=int(s.get("shards", 1)))
                    for s in doc["sections"]]
        hypers = {h["name"]: list(h["members"]) for h in doc["hypersections"]}
        bodies = {h["name"]: list(h.get("body", [])) for h in doc["hypersections"]}
        needed = [w["name"] for w in doc["weights"]]
    except (KeyError, TypeError, ValueError) as err:
        raise _malformed(folder, f"sections: {err}") from None
    missing = [n for n in needed if n not in weights]
    if missing:
        raise AccelError(f"artifact '{folder}': the PEF needs weight {missing[0]}, which the "
                         "folder does not hold")
    options = doc.get("options") if isinstance(doc.get("options"), dict) else {}
    from accel.settings import host_settings

    carried = ("opt_level",) if isinstance(options.get("opt_level"), int) else ()
    emulation = compile_mlir(ir["emulation"], host_settings(
        options, *carried, cache=False, filename=f"{folder}/{name}"), weights=weights)
    limits = doc.get("arch_limits") if isinstance(doc.get("arch_limits"), dict) else {}
    pipeline = doc.get("pipeline") if isinstance(doc.get("pipeline"), dict) else {}
    return RduProgram(emulation, arch, limits, sections, hypers, ir["sectioned"],
                      ir["emulation"], options, pipeline=pipeline, bodies=bodies)
