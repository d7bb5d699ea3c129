"""Reading an accel output folder safely: what kind it is, and its files, never outside it.

Every file the dashboard reads or serves goes through `resolve`: a relative path made of
plain names (no `..`, no absolute path, no NUL) whose real path (symlinks followed) lies
under the folder's real path and is a regular file. So a symlink in the folder that points
elsewhere, or a URL with `../` or `%2e%2e`, reaches nothing outside the folder.

Kinds (`detect`):

    accel-compile   option.json written by accel-compile (+ manifest.json or train.json)
    codegen_dir     mncore's codegen_dir: summary.json, l3ir.txt (layout.html, profile.json)
    train-step      a saved train step (train.json; forward/, backward/, optimizer/)
    artifact        a `CompiledModule.save` folder (manifest.json)
    reports         only reports (sections.json, summary.json, compile.log, profile.json)
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accel.diagnostics import AccelError

#: Largest file the dashboard reads as text (IR dumps of big models are tens of MB).
TEXT_LIMIT = 64 << 20
#: Largest JSON report read (profile.json of a long run).
JSON_LIMIT = 256 << 20
#: Files the folder kinds are recognised by.
MARKERS = ("manifest.json", "option.json", "train.json", "summary.json", "sections.json",
           "compile.log", "profile.json", "l3ir.txt")
#: Suffixes shown as text in the file viewer.
TEXT_SUFFIXES = (".mlir", ".ll", ".ptx", ".txt", ".log", ".json", ".html", ".h", ".py",
                 ".yaml", ".md", ".s", ".pef")


def safe_relpath(rel: str) -> str | None:
    """`rel` as a clean relative path ("a/b.txt"), or None when it could leave the folder
    (absolute, `..`, NUL, backslash, empty)."""
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith("/"):
        return None
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


@dataclass
class Folder:
    """An output folder: its real path and what it holds."""

    root: Path
    kind: str
    target: str | None
    names: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.root.name

    def resolve(self, rel: str) -> Path | None:
        """The regular file `rel` names inside the folder, or None (see the module doc)."""
        clean = safe_relpath(rel)
        if clean is None:
            return None
        path = Path(os.path.realpath(self.root / clean))
        if self.root not in path.parents:
            return None
        try:
            info = path.stat()
        except OSError:
            return None
        return path if stat.S_ISREG(info.st_mode) else None

    def has(self, rel: str) -> bool:
        return self.resolve(rel) is not None

    def read_bytes(self, rel: str, limit: int = TEXT_LIMIT) -> bytes | None:
        path = self.resolve(rel)
        if path is None:
            return None
        try:
            if path.stat().st_size > limit:
                return None
            return path.read_bytes()
        except OSError:
            return None

    def text(self, rel: str, limit: int = TEXT_LIMIT) -> str | None:
        data = self.read_bytes(rel, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def json(self, rel: str, limit: int = JSON_LIMIT) -> Any:
        data = self.read_bytes(rel, limit)
        if data is None:
            return None
        try:
            return json.loads(data.decode("utf-8", errors="replace"))
        except ValueError:
            return None

    def files(self, limit: int = 20000) -> list[tuple[str, int]]:
        """(relative path, bytes) of the folder's regular files, sorted, at most `limit`;
        symlinks leading outside the folder are left out."""
        found: list[tuple[str, int]] = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                                 and d != "__pycache__")
            rel_dir = os.path.relpath(dirpath, self.root)
            for fname in sorted(filenames):
                rel = fname if rel_dir == "." else f"{rel_dir}/{fname}".replace(os.sep, "/")
                path = self.resolve(rel)
                if path is None:
                    continue
                found.append((rel, path.stat().st_size))
                if len(found) >= limit:
                    return found
        return found


def detect(path: str | os.PathLike[str]) -> Folder:
    """The `Folder` at `path`; `AccelError` (one line) when it is missing or not an accel
    output folder."""
    given = Path(path)
    if not given.exists():
        raise AccelError(f"folder '{given}' does not exist")
    if not given.is_dir():
        raise AccelError(f"'{given}' is not a folder (give an accel-compile output folder, "
                         "an artifact folder or an mncore codegen_dir)")
    root = Path(os.path.realpath(given))
    try:
        names = {p.name for p in root.iterdir()}
    except OSError as err:
        raise AccelError(f"cannot read folder '{given}': {err.strerror}") from None
    if not names & set(MARKERS):
        raise AccelError(f"'{given}' is not an accel output folder: it has none of "
                         f"{', '.join(MARKERS[:5])}")
    folder = Folder(root, "reports", None, names)
    option = folder.json("option.json") if "option.json" in names else None
    manifest = folder.json("manifest.json") if "manifest.json" in names else None
    if isinstance(option, dict) and option.get("tool") == "accel-compile":
        folder.kind = "accel-compile"
    elif "summary.json" in names and "l3ir.txt" in names:
        folder.kind = "codegen_dir"
    elif "train.json" in names:
        folder.kind = "train-step"
    elif isinstance(manifest, dict):
        folder.kind = "artifact"
    folder.target = _target(folder, option, manifest)
    return folder


def _target(folder: Folder, option: Any, manifest: Any) -> str | None:
    if isinstance(manifest, dict) and isinstance(manifest.get("target"), str):
        return manifest["target"]
    if isinstance(option, dict) and isinstance(option.get("options"), dict):
        target = option["options"].get("target")
        if isinstance(target, str):
            return target
    if "sections.json" in folder.names:
        return "rdu"
    if "l3ir.txt" in folder.names or "summary.json" in folder.names:
        return "mncore"
    for sub in ("forward", "backward", "optimizer"):
        inner = folder.json(f"{sub}/manifest.json")
        if isinstance(inner, dict) and isinstance(inner.get("target"), str):
            return inner["target"]
    if any(n.endswith(".ptx") for n in folder.names):
        return "nvgpu"
    return None
