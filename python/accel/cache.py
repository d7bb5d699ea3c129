"""The on-disk compile cache and compiled-artifact folders (`accel.load`).

Compile cache. `compile_mlir` looks every compilation up by a content hash (`cache_key`) of
the input MLIR text (after import, with locations), the options that change code
(`opt_level`), the accel, MLIR bindings and llvmlite versions, and the host (triple, CPU
name and features). A hit skips the whole MLIR pipeline and LLVM: the entry holds the
normalised LLVM IR, the LLVM-dialect MLIR, the function signatures, the external weights'
sizes and the host object code, which is linked as it is. Weight values are not part of
the key (the code reads them from buffers bound at load time), so a model with new weights
reuses the entry.
Entries live in `cache_dir()`: `$ACCEL_CACHE_DIR`, else `$XDG_CACHE_HOME/accel`, else
`~/.cache/accel`. Each is one file `<key>.entry`: a header line
`ACCEL-CACHE <format> <sha256 of the body>` and a zlib-compressed JSON body. Writes are
atomic (temporary file + `os.replace`), so concurrent processes never see half an entry; a
truncated or garbled entry fails its checksum, is deleted and rebuilt. `STATS` counts hits,
misses, stores and dropped corrupt entries in this process; `CompiledMLIR.cache_hit` tells
whether one compilation came from the cache.

Front entries (`<key>.front`, same format) let `accel.compile` skip the import too: keyed by
the `torch.export` program before decompositions (`accel.frontend.program_fingerprint`,
weight values included, with `environment()` and the options: `front_key`), each names the
code entry to link and how to bind its weights (`accel.frontend.FrontCache`).

Artifacts. `CompiledModule.save(folder)` (or `save_artifact`) writes a folder that
`accel.load(folder)` turns back into a callable without compiling MLIR again; the format is
in docs/cache.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import zlib
from collections import Counter
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from accel import weights
from accel.diagnostics import AccelError
from accel.runtime import DTYPES, Signature, ValueSpec

log = logging.getLogger("accel.cache")

#: Bump when the entry or artifact layout changes: older entries then simply miss.
FORMAT_VERSION = 1
_MAGIC = "ACCEL-CACHE"
MANIFEST = "manifest.json"
MODULE_LL = "module.ll"
MODEL_MLIR = "model.mlir"
#: The host object code: reused by `load` on the host that built it (same `environment()`).
MODULE_O = "module.o"

#: Counters for this process: "hit", "miss", "store", "corrupt" (MLIR-level entries) and
#: "front_hit", "front_miss", "front_store" (front entries; see `accel.frontend.FrontCache`).
STATS: Counter[str] = Counter()


# -- where ----------------------------------------------------------------------------------
def cache_dir() -> Path:
    """The cache folder: `$ACCEL_CACHE_DIR`, `$XDG_CACHE_HOME/accel` or `~/.cache/accel`."""
    explicit = os.environ.get("ACCEL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "accel"


# -- key ------------------------------------------------------------------------------------
@cache
def _code_digest() -> str:
    """SHA-256 of accel's own Python sources: any change to a pass or pipeline (even without
    a version bump, as during development) makes new cache keys."""
    import accel.dialects
    import accel.passes

    digest = hashlib.sha256()
    roots = {Path(p) for pkg in (accel, accel.passes, accel.dialects) for p in pkg.__path__}
    for root in sorted(roots):
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@cache
def environment() -> dict[str, str]:
    """Versions and host facts that a cached compilation depends on (also in manifests)."""
    from importlib.metadata import PackageNotFoundError, version

    import llvmlite
    import llvmlite.binding as llvm

    import accel
    from accel.ir import PROVIDER, provider_version

    try:
        llvmlite_version = version("llvmlite")
    except PackageNotFoundError:  # pragma: no cover - source checkouts
        llvmlite_version = llvmlite.__version__
    llvm.initialize_native_target()
    return {
        "accel": accel.__version__,
        "code": _code_digest(),
        "bindings": f"{PROVIDER} {provider_version()}",
        "llvmlite": llvmlite_version,
        "triple": llvm.get_process_triple(),
        "cpu": llvm.get_host_cpu_name(),
        "features": llvm.get_host_cpu_features().flatten(),
    }


def cache_key(mlir_text: str, options: Mapping[str, Any]) -> str:
    """Hex SHA-256 naming the compilation of `mlir_text` with the code-changing `options`."""
    material = {
        "format": FORMAT_VERSION,
        "input": hashlib.sha256(mlir_text.encode()).hexdigest(),
        "options": dict(sorted(options.items())),
        "env": environment(),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def front_key(fingerprint: str, options: Mapping[str, Any]) -> str:
    """Hex SHA-256 naming a front entry: an exported program's fingerprint
    (`accel.frontend.program_fingerprint`) compiled with the code-changing `options`."""
    material = {
        "format": FORMAT_VERSION,
        "kind": "front",
        "program": fingerprint,
        "options": dict(sorted(options.items())),
        "env": environment(),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


# -- signatures as JSON ---------------------------------------------------------------------
def _spec_to_json(spec: ValueSpec) -> dict[str, Any]:
    return {"kind": spec.kind, "dtype": spec.dtype.mlir if spec.dtype else None,
            "type": spec.type_str, "shape": list(spec.shape), "identity": spec.identity,
            "strides": list(spec.strides), "offset": spec.offset}


def _spec_from_json(d: Mapping[str, Any]) -> ValueSpec:
    return ValueSpec(d["kind"], DTYPES[d["dtype"]] if d["dtype"] else None, d["type"],
                     tuple(d["shape"]), d["identity"], tuple(d["strides"]), d["offset"])


def signature_to_json(sig: Signature) -> dict[str, Any]:
    """A `Signature` as JSON-compatible data (`signature_from_json` inverts it)."""
    return {"name": sig.name, "args": [_spec_to_json(a) for a in sig.args],
            "results": [_spec_to_json(r) for r in sig.results], "callee": sig.callee,
            "results_by_pointer": sig.results_by_pointer, "unsupported": sig.unsupported}


def signature_from_json(d: Mapping[str, Any]) -> Signature:
    """The `Signature` that `signature_to_json` wrote."""
    return Signature(d["name"], tuple(_spec_from_json(a) for a in d["args"]),
                     tuple(_spec_from_json(r) for r in d["results"]), d["callee"],
                     d["results_by_pointer"], d["unsupported"])


# -- atomic files ---------------------------------------------------------------------------
def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a temporary file in the same folder and `os.replace`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide artifacts from other users
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# -- cache entries --------------------------------------------------------------------------
def _entry_path(key: str) -> Path:
    return cache_dir() / f"{key}.entry"


def encode_entry(payload: Mapping[str, Any]) -> bytes:
    """Header line with the body's checksum, then the zlib-compressed JSON body."""
    body = zlib.compress(json.dumps(payload, sort_keys=True).encode(), 6)
    header = f"{_MAGIC} {FORMAT_VERSION} {hashlib.sha256(body).hexdigest()}\n".encode()
    return header + body


def decode_entry(data: bytes) -> dict[str, Any]:
    """The payload of an entry; `ValueError` when it is truncated, garbled or foreign."""
    header, sep, body = data.partition(b"\n")
    parts = header.decode("ascii", "replace").split()
    if not sep or len(parts) != 3 or parts[0] != _MAGIC or parts[1] != str(FORMAT_VERSION):
        raise ValueError("bad header")
    if hashlib.sha256(body).hexdigest() != parts[2]:
        raise ValueError("checksum mismatch")
    payload = json.loads(zlib.decompress(body))
    if not isinstance(payload, dict):
        raise ValueError("body is not an object")
    return payload


def lookup(key: str) -> dict[str, Any] | None:
    """The cached payload for `key`, or None (a corrupt entry is deleted and counts a miss)."""
    payload = _read(_entry_path(key), {"llvm_ir": str, "signatures": list})
    STATS["hit" if payload is not None else "miss"] += 1
    if payload is not None:
        log.info("accel cache: hit %s", key)
    return payload


def _read(path: Path, fields: Mapping[str, type]) -> dict[str, Any] | None:
    """`path`'s payload if it has `fields` (name -> type); a corrupt one is deleted."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        payload = decode_entry(data)
        if not all(isinstance(payload.get(f), t) for f, t in fields.items()):
            raise ValueError("missing fields")
    except (ValueError, zlib.error, UnicodeDecodeError) as err:
        log.warning("accel cache: dropping corrupt entry %s (%s)", path, err)
        STATS["corrupt"] += 1
        try:
            path.unlink()
        except OSError:
            pass
        return None
    return payload


def store(key: str, payload: Mapping[str, Any]) -> None:
    """Save `payload` under `key`; a cache that cannot be written only logs a warning."""
    try:
        atomic_write(_entry_path(key), encode_entry(payload))
    except OSError as err:
        log.warning("accel cache: could not write %s: %s", _entry_path(key), err)
        return
    STATS["store"] += 1


# -- front entries: exported program -> cache entry ------------------------------------------
_FRONT_FIELDS = {"mlir_key": str, "weights": dict, "mutations": list, "mlir": str}


def _front_path(key: str) -> Path:
    return cache_dir() / f"{key}.front"


def lookup_front(key: str) -> dict[str, Any] | None:
    """The front entry for `key`, or None (a corrupt one is deleted). `FrontCache` counts
    `front_hit` (entry used) and `front_miss` in `STATS`."""
    return _read(_front_path(key), _FRONT_FIELDS)


def store_front(key: str, payload: Mapping[str, Any]) -> None:
    """Save a front entry; a cache that cannot be written only logs a warning."""
    try:
        atomic_write(_front_path(key), encode_entry(payload))
    except OSError as err:
        log.warning("accel cache: could not write %s: %s", _front_path(key), err)
        return
    STATS["front_store"] += 1


def compiled_from_entry(key: str, opt_level: int, bound: Mapping[str, Any]) -> Any:
    """The `CompiledMLIR` of the cache entry `key` with `bound` weights, or None (no entry,
    or one that does not fit): what `compile_mlir` does on a hit."""
    import base64

    from accel import phases
    from accel.backend.cpu import CompiledMLIR

    hit = lookup(key)
    if hit is None:
        return None
    try:
        sigs = {s["name"]: signature_from_json(s) for s in hit["signatures"]}
    except (KeyError, TypeError, ValueError):
        return None
    specs = hit.get("weights", {})
    if not isinstance(specs, dict) or set(specs) != set(bound):
        return None
    obj = hit.get("object")
    compiled = CompiledMLIR.from_llvm_ir(hit["llvm_ir"], sigs, opt_level,
                                         hit.get("mlir_llvm", ""), cache_hit=True,
                                         weights=bound, weight_specs=specs,
                                         object_code=base64.b64decode(obj) if
                                         isinstance(obj, str) else None)
    rec = phases.current()
    if rec is not None:
        rec.cache_hit = True
    return compiled


# -- artifacts ------------------------------------------------------------------------------
def save_artifact(folder: str | os.PathLike[str], compiled: Any, *, entry: str,
                  options: Mapping[str, Any], model_mlir: str | None = None) -> Path:
    """Write `compiled` (a `CompiledMLIR`) as an artifact folder callable through `entry`."""
    if entry not in compiled.functions:
        raise AccelError(f"no public function @{entry} to save; available: "
                         f"{', '.join('@' + n for n in compiled.functions) or 'none'}")
    out = Path(folder)
    ll = compiled.llvm_ir.encode()
    sig = compiled.functions[entry]
    manifest = {
        "format": FORMAT_VERSION,
        "versions": environment(),
        "entry": entry,
        "opt_level": options.get("opt_level", 3),
        "options": {k: v for k, v in options.items() if _is_json_scalar(v)},
        "signatures": [signature_to_json(s) for s in compiled.functions.values()],
        "inputs": [_io_spec(a) for a in sig.args],
        "outputs": [_io_spec(r) for r in sig.results],
        "files": {MODULE_LL: hashlib.sha256(ll).hexdigest()},
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        manifest["weights"] = weights.save(out, compiled.weights)
        if compiled.object_code:
            atomic_write(out / MODULE_O, compiled.object_code)
            manifest["files"][MODULE_O] = hashlib.sha256(compiled.object_code).hexdigest()
        atomic_write(out / MODULE_LL, ll)
        if model_mlir is not None:
            atomic_write(out / MODEL_MLIR, model_mlir.encode())
        atomic_write(out / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None
    return out


def _is_json_scalar(v: Any) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _io_spec(spec: ValueSpec) -> dict[str, Any]:
    dtype = spec.dtype.mlir if spec.dtype else None
    return {"type": spec.type_str, "dtype": dtype, "shape": list(spec.shape)}


def _reusable_object(root: Path, manifest: Mapping[str, Any]) -> bytes | None:
    """The artifact's object code if it was built here (same versions, CPU and features)
    and is intact; otherwise None and `load` compiles module.ll again."""
    if manifest.get("versions") != environment():
        return None
    try:
        obj = (root / MODULE_O).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(obj).hexdigest() != manifest.get("files", {}).get(MODULE_O):
        log.warning("accel: %s does not match its checksum; compiling %s instead",
                    root / MODULE_O, MODULE_LL)
        return None
    return obj


def load(folder: str | os.PathLike[str]) -> Any:
    """Reload an artifact folder without compiling MLIR: a `CompiledModule` (no eager model).

    Call it with torch tensors or numpy arrays like the module `accel.compile` returned.
    Raises `AccelError` when the folder is missing, from another format, or corrupt.
    """
    from accel.api import CompiledModule
    from accel.backend.cpu import CompiledMLIR

    root = Path(folder)
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        ll = (root / MODULE_LL).read_bytes()
    except FileNotFoundError as err:
        raise AccelError(f"'{root}' is not an accel artifact folder: {err.filename} is "
                         "missing") from None
    except (OSError, ValueError) as err:
        raise AccelError(f"could not read artifact folder '{root}': {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        got = manifest.get("format") if isinstance(manifest, dict) else None
        raise AccelError(f"artifact '{root}' has format {got!r}; this accel reads format "
                         f"{FORMAT_VERSION}: compile it again")
    if hashlib.sha256(ll).hexdigest() != manifest.get("files", {}).get(MODULE_LL):
        raise AccelError(f"artifact '{root}': {MODULE_LL} does not match its checksum in "
                         f"{MANIFEST} (corrupt or edited): compile it again")
    try:
        signatures = {s["name"]: signature_from_json(s) for s in manifest["signatures"]}
        entry = manifest["entry"]
        opt_level = int(manifest["opt_level"])
    except (KeyError, TypeError, ValueError) as err:
        raise AccelError(f"artifact '{root}': malformed {MANIFEST} ({err!r})") from None
    files = manifest.get("weights", {})
    if not isinstance(files, dict):
        raise AccelError(f"artifact '{root}': malformed {MANIFEST} (weights)")
    arrays = weights.load_saved(root, files)
    compiled = CompiledMLIR.from_llvm_ir(ll.decode(), signatures, opt_level, weights=arrays,
                                         weight_specs={n: a.nbytes for n, a in arrays.items()},
                                         object_code=_reusable_object(root, manifest))
    options = dict(manifest.get("options", {}))
    options["verify_numerics"] = False  # no eager model to compare with
    module = (root / MODEL_MLIR).read_text(encoding="utf-8") \
        if (root / MODEL_MLIR).is_file() else None
    return CompiledModule(None, compiled, module, entry, options)
