"""The cpu page's data: the compiled functions, their vector widths and parallel loops.

Two views of the same code: the LLVM IR accel wrote (module.ll or the last `llvm-ir`
phase: each function's explicit vector types, its `accel_parallel_for` loops and their
bodies, libmvec calls) and the machine code of the object file, read with `objdump -d`
where binutils is installed (packed SIMD instructions by register width: what LLVM's
vectorisers made of the loops). The ISA the code was built for is the manifest's
`versions.features`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

from accel.dashboard.folder import Folder

_DEFINE = re.compile(r"^define\b[^@]*@\"?([\w.$-]+)\"?\(")
_VECTOR = re.compile(r"<(\d+) x (float|double|half|bfloat|i\d+)>")
_PARALLEL = re.compile(r"call\b[^@]*@accel_parallel_for\(ptr @\"?([\w.$-]+)")
_MVEC = re.compile(r"@(_ZGV\w+)")
_BITS = {"float": 32, "double": 64, "half": 16, "bfloat": 16}
_ASM_FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
#: Packed (SIMD) arithmetic and moves: AT&T mnemonics ending in ps/pd, or integer vp*.
_PACKED = re.compile(r"^\s*[0-9a-f]+:\s+(v?\w*p[sd]|vp\w+|p\w+)\s.*%([xyz])mm")
_WIDTH = {"x": 128, "y": 256, "z": 512}


def ir_functions(text: str) -> dict[str, dict[str, Any]]:
    """Per defined function: IR lines, widest vector type (bits), vector types used,
    parallel loops (with their body functions) and libmvec calls."""
    found: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        m = _DEFINE.match(line)
        if m:
            current = found.setdefault(m.group(1), {
                "name": m.group(1), "ir_lines": 0, "ir_vector_bits": 0, "ir_vectors": [],
                "parallel_loops": 0, "parallel_bodies": [], "libmvec": []})
            continue
        if current is None:
            continue
        if line.startswith("}"):
            current = None
            continue
        current["ir_lines"] += 1
        for n, t in _VECTOR.findall(line):
            bits = int(n) * (_BITS.get(t) or int(t[1:]))
            current["ir_vector_bits"] = max(current["ir_vector_bits"], bits)
            name = f"<{n} x {t}>"
            if name not in current["ir_vectors"] and len(current["ir_vectors"]) < 12:
                current["ir_vectors"].append(name)
        p = _PARALLEL.search(line)
        if p:
            current["parallel_loops"] += 1
            if p.group(1) not in current["parallel_bodies"]:
                current["parallel_bodies"].append(p.group(1))
        for call in _MVEC.findall(line):
            if call not in current["libmvec"]:
                current["libmvec"].append(call)
    return found


def machine_functions(folder: Folder, rel: str) -> tuple[dict[str, dict[str, int]], str]:
    """Per function of an object file: instructions and packed SIMD instructions by width
    (`objdump -d`); ({}, why) without binutils."""
    exe = shutil.which("objdump")
    path = folder.resolve(rel)
    if exe is None or path is None:
        return {}, "objdump not found (binutils): machine-code vector widths not shown"
    try:
        proc = subprocess.run([exe, "-d", "--no-show-raw-insn", str(path)],
                              capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        return {}, f"objdump failed: {err}"
    found: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in proc.stdout.splitlines():
        m = _ASM_FUNC.match(line)
        if m:
            current = found.setdefault(m.group(1), {"instructions": 0, "simd128": 0,
                                                     "simd256": 0, "simd512": 0})
            continue
        if current is None or ":\t" not in line:
            continue
        current["instructions"] += 1
        p = _PACKED.match(line)
        if p:
            current[f"simd{_WIDTH[p.group(2)]}"] += 1
    return found, f"objdump -d {rel}"


def _isa(features: str) -> str:
    have = set(f[1:] for f in features.split(",") if f.startswith("+"))
    if "avx512f" in have:
        return "AVX-512 (512-bit)"
    if "avx2" in have:
        return "AVX2 (256-bit)"
    if "avx" in have:
        return "AVX (256-bit)"
    if "sse2" in have:
        return "SSE2 (128-bit)"
    return "unknown"


def collect(folder: Folder, model: dict[str, Any]) -> dict[str, Any] | None:
    files = [rel for rel, _ in folder.files(5000)]
    lls = [r for r in files if r.endswith("-llvm-ir.ll")]
    if folder.has("module.ll"):
        lls = ["module.ll"]
    objects = [r for r in files if r.endswith(".o") and "/" not in r]
    if "module.o" in objects:
        objects = ["module.o"]
    functions: dict[str, dict[str, Any]] = {}
    for rel in lls:
        for name, row in ir_functions(folder.text(rel) or "").items():
            functions.setdefault(name, row)["ir_file"] = rel
    notes = []
    for rel in objects:
        machine, note = machine_functions(folder, rel)
        notes.append(note)
        for name, counts in machine.items():
            row = functions.setdefault(name, {"name": name})
            row.update(counts, object=rel)
    for row in functions.values():
        widths = [w for w in (512, 256, 128) if row.get(f"simd{w}")]
        row["machine_vector_bits"] = widths[0] if widths else 0
    manifest = folder.json("manifest.json")
    versions = manifest.get("versions", {}) if isinstance(manifest, dict) else {}
    features = str(versions.get("features", "")) if isinstance(versions, dict) else ""
    threads = next((r["value"] for r in model["options"] if r["name"] == "num_threads"),
                   None)
    if model["summary"].get("hardware") is None and isinstance(versions, dict):
        model["summary"]["hardware"] = [
            {"quantity": "cpu", "value": versions.get("cpu"), "source": "manifest.json"},
            {"quantity": "triple", "value": versions.get("triple"), "source": "manifest.json"},
            {"quantity": "vector ISA", "value": _isa(features), "source": "features"}]
    return {"functions": sorted(functions.values(), key=lambda r: r["name"]),
            "ir_files": lls, "objects": objects, "notes": notes,
            "isa": _isa(features) if features else None,
            "threads": threads, "parallel_loops": sum(r.get("parallel_loops", 0)
                                                      for r in functions.values()),
            "layers_for_compare": []}
