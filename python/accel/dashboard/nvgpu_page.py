"""The nvgpu page's data: every kernel launch with its sizes, and what ptxas says of it.

The artifact's manifest holds each function's kernel sequence (`target_files.programs`,
accel.targets.nvgpu.program: grid, block, dynamic shared memory, buffers). Registers,
static shared memory, spills and barriers come from `ptxas -v` run on each PTX file for
the folder's arch (`accel.targets.nvgpu.toolkit.ptxas_check`, the check CI runs on every
kernel), in parallel; without ptxas the page shows the PTX's own `.shared` declarations.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from accel.dashboard.folder import Folder

_FUNC = re.compile(r"Function properties for (\S+)")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill "
                    r"loads")
_SHARED = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+[\w$]+\[(\d+)\]", re.M)
#: Environment variable that turns the ptxas run off (big models, no toolkit wanted).
NO_PTXAS = "ACCEL_DASHBOARD_NO_PTXAS"


def parse_ptxas(report: str) -> dict[str, dict[str, int]]:
    """`ptxas -v` output -> {function: {registers, barriers, smem, stack, spill_stores,
    spill_loads}}."""
    found: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in report.splitlines():
        m = _FUNC.search(line)
        if m:
            current = found.setdefault(m.group(1).strip("'"), {})
            continue
        if current is None:
            continue
        m = _STACK.search(line)
        if m:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                           spill_loads=int(m.group(3)))
        m = _USED.search(line)
        if m:
            current["registers"] = int(m.group(1))
            current["barriers"] = int(m.group(2) or 0)
            current["smem"] = int(m.group(3) or 0)
    return found


def _ptxas(folder: Folder, files: list[str], arch: str) -> tuple[dict[str, Any], str]:
    if os.environ.get(NO_PTXAS):
        return {}, f"ptxas not run ({NO_PTXAS} is set)"
    try:
        from accel.targets.nvgpu import toolkit
    except Exception as err:  # noqa: BLE001 - the target is optional here
        return {}, f"ptxas not run: {err}"
    if toolkit.ptxas_path() is None:
        return {}, "ptxas not found (pip install nvidia-cuda-nvcc): registers unknown"

    def one(name: str) -> tuple[str, Any]:
        text = folder.text(name) or ""
        try:
            return name, parse_ptxas(toolkit.ptxas_check(text, arch, name=name[:-4]))
        except Exception as err:  # noqa: BLE001 - a refused kernel: shown on its row
            return name, {"error": str(err)[:300]}

    with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
        results = dict(pool.map(one, files))
    return results, f"ptxas -v -arch={arch} on {len(files)} PTX files"


def collect(folder: Folder, model: dict[str, Any]) -> dict[str, Any] | None:
    manifest = folder.json("manifest.json")
    files = manifest.get("target_files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        model["notes"].append("nvgpu: no manifest.json with target_files")
        return None
    arch = str(files.get("arch") or "sm_80")
    if model["summary"].get("hardware") is None:
        model["summary"]["hardware"] = [{"quantity": "arch", "value": arch,
                                         "source": "manifest.json"}]
    if "host_module.mlir" in files:
        return {"arch": arch, "kernels": [], "launches": [], "buffers": {},
                "host_reason": files.get("host_reason"), "ptxas_note": "",
                "layers_for_compare": []}
    kernels = files.get("kernels") if isinstance(files.get("kernels"), dict) else {}
    ptx_files = sorted({k["file"] for k in kernels.values()
                        if isinstance(k, dict) and isinstance(k.get("file"), str)
                        and folder.has(k["file"])})
    info, note = _ptxas(folder, ptx_files, arch)
    rows = {}
    for name, k in kernels.items():
        if not isinstance(k, dict):
            continue
        file, entry = str(k.get("file")), str(k.get("entry"))
        ptx = info.get(file, {})
        props = ptx.get(entry, {}) if "error" not in ptx else {}
        static_smem = props.get("smem")
        if static_smem is None:
            static_smem = sum(int(n) for n in _SHARED.findall(folder.text(file) or ""))
        rows[name] = {"name": name, "file": file, "entry": entry,
                      "registers": props.get("registers"), "barriers": props.get("barriers"),
                      "smem": static_smem, "stack": props.get("stack"),
                      "spill_stores": props.get("spill_stores"),
                      "spill_loads": props.get("spill_loads"), "error": ptx.get("error"),
                      "launches": 0}
    launches = []
    buffers: dict[str, dict[str, int]] = {}
    for program in files.get("programs") or []:
        if not isinstance(program, dict):
            continue
        for b in program.get("buffers") or []:
            if isinstance(b, dict):
                kind = buffers.setdefault(str(b.get("kind")), {"count": 0, "bytes": 0})
                kind["count"] += 1
                kind["bytes"] += int(b.get("nbytes") or 0)
        for i, step in enumerate(program.get("steps") or []):
            if not isinstance(step, dict):
                continue
            grid, block = step.get("grid") or [], step.get("block") or []
            row = {"function": program.get("name"), "index": i, "op": step.get("op"),
                   "kernel": step.get("kernel"), "grid": grid, "block": block,
                   "threads": _prod(grid) * _prod(block),
                   "dynamic_smem": step.get("shared_bytes", 0),
                   "args": len(step.get("args") or []), "nbytes": step.get("nbytes", 0)}
            launches.append(row)
            if row["kernel"] in rows:
                rows[row["kernel"]]["launches"] += 1
    return {"arch": arch, "kernels": list(rows.values()), "launches": launches,
            "buffers": buffers, "ptxas_note": note, "host_reason": None,
            "layers_for_compare": []}


def _prod(values: list[Any]) -> int:
    out = 1
    for v in values:
        out *= int(v) if isinstance(v, int) else 1
    return out
