"""The on-disk compile cache and compiled-artifact folders (`accel.load`).

Compile cache. `compile_mlir` looks every compilation up by a content hash (`cache_key`) of
the input MLIR text (after import, with locations), the options that change code
(`opt_level`), the accel, MLIR bindings and llvmlite versions, and the host (triple, CPU
name and features). A hit skips the whole MLIR pipeline and LLVM: for the cpu target the
entry's bytes are the host object code, linked as it is, and its metadata the normalised
LLVM IR, the LLVM-dialect MLIR, the function signatures and the external weights' sizes
(`accel.host.jit`; nvgpu keeps its PTX and kernel programs). Weight values are not part of
the key (the code reads them from buffers bound at load time), so a model with new weights
reuses the entry.
Entries live in `cache_dir()`: `$ACCEL_CACHE_DIR`, else `$XDG_CACHE_HOME/accel`, else
`~/.cache/accel`. Each is one file `<key>.entry`: a header line
`ACCEL-CACHE <format> <sha256 of the body> <metadata length>`, then the body: the metadata
as zlib-compressed JSON and the bytes as they are (`Entry`). Writes are
atomic (temporary file + `os.replace`), so concurrent processes never see half an entry; a
truncated or garbled entry fails its checksum, is deleted and rebuilt. `STATS` counts hits,
misses, stores and dropped corrupt entries in this process; `CompiledMLIR.cache_hit` tells
whether one compilation came from the cache.

Front entries (`<key>.front`, same format, metadata only) let `accel.compile` skip the
import too: keyed by the `torch.export` program before decompositions
(`accel.frontend.program_fingerprint`, weight values included, with `environment()` and the
options: `front_key`), each names the code entry to link and how to bind its weights
(`accel.frontend.FrontCache`).

The cache stores bytes and metadata by key and knows nothing of what they mean: the
targets build and read their entries (`accel.host.jit`), artifact folders are
`accel.artifact`.
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
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

log = logging.getLogger("accel.cache")

#: Bump when the entry or artifact layout changes: older entries then simply miss.
FORMAT_VERSION = 2
_MAGIC = "ACCEL-CACHE"


@dataclass(frozen=True)
class Entry:
    """What the cache holds under a key: opaque bytes (object code) and JSON metadata."""

    data: bytes
    metadata: dict[str, Any]

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


# -- who may write here ----------------------------------------------------------------------
#: Largest entry read (a compiled model's object code and IR); larger files are not entries.
MAX_ENTRY_BYTES = 1 << 30
_WARNED: set[str] = set()


def _unsafe(info: os.stat_result) -> str | None:
    """Why a folder or entry with this status must not be trusted, or None."""
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "is owned by another user"
    if info.st_mode & 0o022:
        return "can be written by other users"
    return None


def usable() -> bool:
    """Whether the cache folder may be used: it is ours and nobody else may write it (as ssh
    and ccache require), or it does not exist yet and is to be made (0700) in a folder that
    is ours or sticky (/tmp). Otherwise one warning, and the process compiles without the
    cache: anyone who can write the folder could plant an entry that runs as machine code."""
    import stat

    folder = cache_dir()
    try:
        info = folder.stat()
        where = folder
    except FileNotFoundError:
        try:
            info = folder.parent.stat()
        except OSError:
            return True  # nothing there yet: made with our umask, 0700 at the leaf
        where = folder.parent
        if info.st_mode & stat.S_ISVTX:
            return True
    except OSError:
        return True  # unreadable: reads fail and writes log on their own
    reason = _unsafe(info)
    if reason is None:
        return True
    if str(where) not in _WARNED:
        _WARNED.add(str(where))
        log.warning("accel cache: not using %s: it %s (compiling without the cache; see "
                    "docs/cache.md)", where, reason)
    STATS["untrusted"] += 1
    return False


def _read_own_file(path: Path) -> bytes:
    """An entry's bytes if it is a regular file of ours that others cannot write (a FIFO or
    device named like an entry would block or lie) and not over MAX_ENTRY_BYTES."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        reason = _unsafe(info)
        if reason is not None:
            if str(path) not in _WARNED:
                _WARNED.add(str(path))
                log.warning("accel cache: not using %s: it %s", path, reason)
            raise OSError(reason)
        if info.st_size > MAX_ENTRY_BYTES:
            raise OSError(f"{path} is larger than {MAX_ENTRY_BYTES} bytes")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


# -- key ------------------------------------------------------------------------------------
@cache
def _code_digest() -> str:
    """SHA-256 of accel's own Python sources: any change to a pass or pipeline (even without
    a version bump, as during development) makes new cache keys."""
    from importlib.util import find_spec

    digest = hashlib.sha256()
    # Located, not imported: importing the passes would load the MLIR bindings.
    roots = {Path(p) for name in ("accel", "accel.passes", "accel.dialects")
             for p in (find_spec(name).submodule_search_locations or [])}  # type: ignore[union-attr]
    for root in sorted(roots):
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@cache
def environment() -> dict[str, str]:
    """Versions and host facts that a cached compilation depends on (also in manifests)."""
    from importlib.metadata import PackageNotFoundError, version

    import accel
    from accel.llvm import engine
    from accel.versions import PROVIDER, provider_version

    try:
        llvmlite_version = version("llvmlite")
    except PackageNotFoundError:  # pragma: no cover - source checkouts
        llvmlite_version = engine.llvmlite_version()
    cpu, features = engine.host_cpu()
    return {
        "accel": accel.__version__,
        "code": _code_digest(),
        "bindings": f"{PROVIDER} {provider_version()}",
        "llvmlite": llvmlite_version,
        "triple": engine.process_triple(),
        "cpu": cpu,
        "features": features,
    }


#: Environment variables that change the code compiled (not its meaning): part of the key,
#: so that e.g. ACCEL_SPLIT_FUNCTIONS=0 (looking for a miscompile) builds afresh.
CODE_ENVIRONMENT = ("ACCEL_SPLIT_FUNCTIONS", "ACCEL_VECTORIZER_MIN_TRIP_COUNT")


def _add_knobs(material: dict[str, Any]) -> None:
    knobs = {name: os.environ[name] for name in CODE_ENVIRONMENT if name in os.environ}
    if knobs:  # only when set: unset, the keys stay what they were
        material["knobs"] = knobs


def cache_key(mlir_text: str, options: Mapping[str, Any]) -> str:
    """Hex SHA-256 naming the compilation of `mlir_text` with the code-changing `options`."""
    material = {
        "format": FORMAT_VERSION,
        "input": hashlib.sha256(mlir_text.encode()).hexdigest(),
        "options": dict(sorted(options.items())),
        "env": environment(),
    }
    _add_knobs(material)
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
    _add_knobs(material)
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


# -- atomic files ---------------------------------------------------------------------------
def atomic_write(path: Path, data: bytes, *, private: bool = False) -> None:
    """Write `data` to `path` via a temporary file in the same folder and `os.replace`.

    `private`: the file is 0600 and a created folder 0700 (cache entries: compiled code and
    constants that may be a model's weights); otherwise 0644, as artifacts are shared."""
    path.parent.mkdir(mode=0o700 if private else 0o777, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o600 if private else 0o644)
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


def encode_entry(data: bytes, metadata: Mapping[str, Any]) -> bytes:
    """Header line (format, the body's checksum, the metadata's length), then the body:
    zlib-compressed JSON metadata followed by `data`."""
    meta = zlib.compress(json.dumps(metadata, sort_keys=True).encode(), 6)
    body = meta + data
    header = (f"{_MAGIC} {FORMAT_VERSION} {hashlib.sha256(body).hexdigest()} "
              f"{len(meta)}\n").encode()
    return header + body


def decode_entry(blob: bytes) -> Entry:
    """The entry in `blob`; `ValueError` when it is truncated, garbled or foreign."""
    header, sep, body = blob.partition(b"\n")
    parts = header.decode("ascii", "replace").split()
    if not sep or len(parts) != 4 or parts[0] != _MAGIC or parts[1] != str(FORMAT_VERSION) \
            or not parts[3].isdigit() or int(parts[3]) > len(body):
        raise ValueError("bad header")
    if hashlib.sha256(body).hexdigest() != parts[2]:
        raise ValueError("checksum mismatch")
    split = int(parts[3])
    metadata = json.loads(zlib.decompress(body[:split]))
    if not isinstance(metadata, dict):
        raise ValueError("metadata is not an object")
    return Entry(body[split:], metadata)


def lookup(key: str, fields: Mapping[str, type] | None = None) -> Entry | None:
    """The entry for `key`, or None (a corrupt one is deleted and counts a miss; so does one
    whose metadata lacks `fields`, name -> type, which its reader needs)."""
    entry = _read(_entry_path(key), fields or {})
    STATS["hit" if entry is not None else "miss"] += 1
    if entry is not None:
        log.info("accel cache: hit %s", key)
    return entry


def _read(path: Path, fields: Mapping[str, type]) -> Entry | None:
    """`path`'s entry if its metadata has `fields` (name -> type); a corrupt one is deleted."""
    if not usable():
        return None
    try:
        blob = _read_own_file(path)
    except OSError:
        return None
    try:
        entry = decode_entry(blob)
        if not all(isinstance(entry.metadata.get(f), t) for f, t in fields.items()):
            raise ValueError("missing fields")
    except (ValueError, zlib.error, UnicodeDecodeError) as err:
        _discard(path, "corrupt", err)
        return None
    return entry


def drop(key: str, reason: str) -> None:
    """Delete entry `key`, which a target found damaged (`reason`): the next compile that
    needs it rebuilds and stores it again. Counts as "corrupt" in `STATS`."""
    _discard(_entry_path(key), "damaged", reason)


def _discard(path: Path, what: str, reason: object) -> None:
    """Delete a bad entry (best effort), with one warning; counted as "corrupt"."""
    log.warning("accel cache: dropping %s entry %s (%s)", what, path, reason)
    STATS["corrupt"] += 1
    try:
        path.unlink()
    except OSError:
        pass


def store(key: str, data: bytes, metadata: Mapping[str, Any]) -> None:
    """Save `data` and `metadata` under `key`; a cache that cannot be written only logs a
    warning."""
    _write(_entry_path(key), data, metadata, "store")


def _write(path: Path, data: bytes, metadata: Mapping[str, Any], counter: str) -> None:
    if not usable():
        return
    try:
        atomic_write(path, encode_entry(data, metadata), private=True)
    except OSError as err:
        log.warning("accel cache: could not write %s: %s", path, err)
        return
    STATS[counter] += 1


# -- front entries: exported program -> cache entry ------------------------------------------
_FRONT_FIELDS = {"mlir_key": str, "weights": dict, "mutations": list, "mlir": str}


def _front_path(key: str) -> Path:
    return cache_dir() / f"{key}.front"


def lookup_front(key: str) -> dict[str, Any] | None:
    """The front entry for `key`, or None (a corrupt one is deleted). `FrontCache` counts
    `front_hit` (entry used) and `front_miss` in `STATS`."""
    entry = _read(_front_path(key), _FRONT_FIELDS)
    return entry.metadata if entry is not None else None


def store_front(key: str, payload: Mapping[str, Any]) -> None:
    """Save a front entry; a cache that cannot be written only logs a warning."""
    _write(_front_path(key), b"", payload, "front_store")


# -- train-step entries: a whole compile_train_step -> its phases' front entries ------------
_STEP_FIELDS = {"phases": list, "trained": list}


def lookup_step(key: str) -> dict[str, Any] | None:
    """The train-step entry for `key` (accel.training.step_cache), or None."""
    entry = _read(cache_dir() / f"{key}.step", _STEP_FIELDS)
    return entry.metadata if entry is not None else None


def store_step(key: str, payload: Mapping[str, Any]) -> None:
    """Save a train-step entry; a cache that cannot be written only logs a warning."""
    _write(cache_dir() / f"{key}.step", b"", payload, "step_store")


# -- part entries: one cut part's object code (accel.host.codegen) ----------------------------
@cache
def _object_maker_digest() -> str:
    """SHA-256 of the sources that turn LLVM IR into an object (the target machine, LLVM's
    options and pipeline, the worker, the cutting): a part's object depends on its IR and
    these, not on the passes that made the IR, so a changed pass reuses the parts it left
    alone."""
    from importlib.util import find_spec

    root = Path(find_spec("accel").origin).parent  # type: ignore[arg-type, union-attr]
    digest = hashlib.sha256()
    for path in sorted([*(root / "llvm").glob("*.py"), root / "host" / "worker.py",
                        root / "host" / "codegen.py"]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def part_key(llvm_ir: str, opt_level: int, cpu: str, features: str) -> str:
    """Hex SHA-256 naming the object code of one part (`accel.host.codegen.partition`)."""
    env = environment()
    material = {
        "format": FORMAT_VERSION,
        "kind": "part",
        "ir": hashlib.sha256(llvm_ir.encode()).hexdigest(),
        "opt_level": opt_level, "cpu": cpu, "features": features,
        "llvmlite": env["llvmlite"], "triple": env["triple"],
        "maker": _object_maker_digest(),
    }
    _add_knobs(material)
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def lookup_part(key: str) -> bytes | None:
    """The object code stored under part key `key`, or None; counts "part_hit" /
    "part_miss" in `STATS`."""
    entry = _read(cache_dir() / f"{key}.part", {})
    STATS["part_hit" if entry is not None else "part_miss"] += 1
    return entry.data if entry is not None else None


def store_part(key: str, data: bytes) -> None:
    """Save one part's object code; a cache that cannot be written only logs a warning."""
    _write(cache_dir() / f"{key}.part", data, {}, "part_store")
