"""Artifact-folder cases: copy a fixture folder, damage it, load it with `accel.load` (or
build again from its option.json) and check what comes back.

Damage that the folder's checksums must catch is made without fixing them; damage to data
that `accel.load` validates against the code (weights, manifest) is also made with the
checksums fixed up, as a hostile writer would. Machine code whose checksum is fixed up is
not made: an artifact's code is as trusted as a shared library (docs/aot.md), except for
damage to the object's structure, which the loader checks (`accel.llvm.elf`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from fz_execute import (
    ADD_X,
    ADD_Y,
    Env,
    Result,
    check_model,
    cli_case,
    close,
    defect,
    guarded,
    ok,
)

Native = Callable[[], str]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _regular(path: Path) -> bool:
    """Damage only regular files (an earlier op may have made it a FIFO or /dev/zero)."""
    return path.is_file() and not path.is_symlink()


def _manifest(root: Path) -> dict[str, Any]:
    if not _regular(root / "manifest.json"):  # an earlier op made it a FIFO: never read
        raise OSError("manifest.json is not a regular file")
    return json.loads((root / "manifest.json").read_text())


def _save_manifest(root: Path, manifest: dict[str, Any]) -> None:
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _flip(path: Path, rng: random.Random, count: int = 4) -> None:
    if not _regular(path):
        return
    data = bytearray(path.read_bytes())
    if not data:
        path.write_bytes(b"\x00")
        return
    action = rng.randrange(3)
    if action == 0:
        path.write_bytes(bytes(data[:rng.randrange(len(data))]))
        return
    for _ in range(count):
        i = rng.randrange(len(data))
        data[i] = rng.randrange(256) if action == 1 else data[i] ^ 0x80
    path.write_bytes(bytes(data))


def _pick_node(node: Any, rng: random.Random) -> tuple[Any, Any] | None:
    """A random (container, key) inside a JSON value."""
    spots: list[tuple[Any, Any]] = []

    def walk(n: Any) -> None:
        items = n.items() if isinstance(n, dict) else enumerate(n) \
            if isinstance(n, list) else ()
        for k, v in items:
            spots.append((n, k))
            walk(v)

    walk(node)
    return rng.choice(spots) if spots else None


def _json_edit(path: Path, rng: random.Random, value: Any) -> None:
    if not _regular(path):
        return
    data = json.loads(path.read_text())
    spot = _pick_node(data, rng)
    if spot is None:
        return
    container, key = spot
    if rng.random() < 0.25 and isinstance(container, dict):
        del container[key]
    else:
        container[key] = value
    path.write_text(json.dumps(data))


def _weights(root: Path) -> list[tuple[str, dict[str, Any]]]:
    return sorted(_manifest(root).get("weights", {}).items())


def _damage_weights(root: Path, rng: random.Random, consistent: bool) -> None:
    """Replace a weight file with an array of another shape/dtype/size; fix the manifest's
    checksum (and with `consistent`, its dtype and shape too)."""
    entries = _weights(root)
    if not entries:
        return
    name, entry = rng.choice(entries)
    path = root / entry["file"]
    if not _regular(path):
        return
    old = np.load(path)
    # Other shapes, sizes or dtypes only: new values of the same shape and dtype are just
    # another model (the checksum is not a defence against a writer).
    choice = rng.randrange(4)
    if choice == 0:
        new = old.reshape(-1)[: max(old.size // 2, 1)].copy()
    elif choice == 1:
        new = np.concatenate([old.reshape(-1)] * 2)
    elif choice == 2:
        new = old.astype(rng.choice((np.float64, np.float16, np.int32, np.int8)))
    else:
        new = old.reshape(-1) if old.ndim > 1 else old.reshape(1, -1)  # same bytes
    np.save(path, new)
    manifest = _manifest(root)
    manifest["weights"][name]["sha256"] = _sha(path)
    if consistent:
        manifest["weights"][name]["dtype"] = new.dtype.str
        manifest["weights"][name]["shape"] = list(new.shape)
    _save_manifest(root, manifest)


def _damage_object(root: Path, rng: random.Random) -> None:
    path = root / "module.o"
    if not _regular(path):
        return
    if rng.random() < 0.5:
        _flip(path, rng)  # the manifest checksum no longer matches: module.ll is compiled
        return
    data = bytearray(path.read_bytes())  # structure damaged, checksum fixed up
    if len(data) < 64:
        return
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shnum = int.from_bytes(data[0x3C:0x3E], "little")
    field = rng.choice((0x28, 0x3A, 0x3C, 0x3E))
    if rng.random() < 0.6 and shnum and shoff + 64 * shnum <= len(data):
        field = shoff + 64 * rng.randrange(shnum) + rng.choice((0, 4, 8, 24, 32, 40, 48, 56))
    data[field] = rng.randrange(256)
    path.write_bytes(bytes(data))
    manifest = _manifest(root)
    manifest["target_files"]["module.o"] = _sha(path)
    _save_manifest(root, manifest)


def _file_kind(root: Path, rng: random.Random) -> None:
    files = ["manifest.json", "module.ll", "module.o", "model.mlir"] + [
        e["file"] for _, e in _weights(root) if isinstance(e, dict) and "file" in e]
    path = root / rng.choice(files)
    if path.exists() or path.is_symlink():
        path.unlink()
    action = rng.randrange(5)
    if action == 0:
        path.mkdir()
    elif action == 1:
        path.symlink_to("/dev/zero")
    elif action == 2:
        os.mkfifo(path)
    elif action == 3:
        path.symlink_to(path.name)  # a loop
    # action 4: the file is simply missing


def apply(root: Path, op: dict[str, Any]) -> None:
    rng = random.Random(op["seed"])
    kind = op["op"]
    if kind == "manifest-json":
        _json_edit(root / "manifest.json", rng, op["value"])
    elif kind == "manifest-bytes":
        _flip(root / "manifest.json", rng)
    elif kind == "weights":
        entries = _weights(root)
        if entries and rng.random() < 0.5:
            _flip(root / rng.choice(entries)[1]["file"], rng)
        else:
            _damage_weights(root, rng, consistent=False)
    elif kind == "weights-consistent":
        _damage_weights(root, rng, consistent=True)
    elif kind == "object":
        _damage_object(root, rng)
    elif kind == "module-ll":
        _flip(root / "module.ll", rng)
    elif kind == "model-mlir":
        if (root / "model.mlir").exists():
            _flip(root / "model.mlir", rng)
    elif kind == "file-kind":
        _file_kind(root, rng)
    elif kind == "option-json":
        if rng.random() < 0.7:
            _json_edit(root / "option.json", rng, op["value"])
        else:
            _flip(root / "option.json", rng)


def _prepare(case: dict[str, Any], env: Env) -> Path:
    root = env.work / "artifact"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(env.fixtures / case["folder"], root, symlinks=True)
    for op in case["ops"]:
        try:
            apply(root, op)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, MemoryError):
            pass  # the damage did not apply (e.g. an earlier op removed the file)
    return root


def run(case: dict[str, Any], env: Env, native: Native) -> Result:
    root = _prepare(case, env)
    if case["kind"] == "artifact-option-json":
        argv = [str(env.fixtures / "add.mlir"), "--option-json", str(root / "option.json"),
                "--output-folder", str(env.work / "out"), "-q"]
        return cli_case(env, "accel-compile", argv, case, native)

    def body() -> Result:
        import accel

        module = accel.load(root)
        if case["folder"] == "add_artifact":
            env.notify("execute")
            got = module(ADD_X, ADD_Y)
            if not close(got, (ADD_X + 2 * ADD_Y).astype(np.float64), 1e-6, 1e-6):
                return defect("wrong result", f"loaded artifact gave {got!r}")
            return ok("numerics checked")
        return check_model(module, env, as_torch=False)

    return guarded(body)
