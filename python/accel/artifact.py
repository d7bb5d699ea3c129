"""Artifact folders: what `CompiledModule.save(folder)` writes and `accel.load(folder)` reads.

    folder/
      manifest.json      format, versions, target, entry, options, signatures, inputs and
                         outputs, the target's files and every weight file with checksums
      model.mlir         the imported linalg-on-tensors module (when known)
      weights/<n>.npy    one array per external weight (read back memory-mapped)
      ...                the target's own files (cpu: module.ll, module.o)

The format is documented in docs/cache.md. Loading validates everything it reads (the
manifest's fields, each file's checksum, each weight's dtype, shape and size against the
manifest) before the target links any code: a damaged folder is an `AccelError`, never a
crash. An artifact's machine code runs in the loading process: a folder is as trusted as a
shared library.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accel.cache import atomic_write, environment
from accel.diagnostics import AccelError
from accel.runtime.signature import ValueSpec, signature_from_json, signature_to_json

#: Bump when the folder layout changes: older folders then get a clear error.
FORMAT_VERSION = 3
MANIFEST = "manifest.json"
MODEL_MLIR = "model.mlir"
WEIGHTS = "weights"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def folder_path(folder: Any, what: str) -> Path:
    """`folder` (str, bytes or os.PathLike) as a Path; `TypeError` naming the argument."""
    try:
        return Path(os.fsdecode(os.fspath(folder)))
    except TypeError:
        raise TypeError(f"{what} must be a path (str or os.PathLike), got "
                        f"{type(folder).__name__}") from None


@contextlib.contextmanager
def staged_folder(out: Path) -> Iterator[Path]:
    """A new hidden folder beside `out` (`.<name>.<random>.partial`) to write an artifact
    into. When the block ends normally its contents move into `out` (one `rename` when
    `out` does not exist yet; else each file and subfolder replaces its namesake) with
    Ctrl-C held off (`accel.interrupts.deferred`); on an error or Ctrl-C it is deleted.
    So `out` never holds half an artifact."""
    import shutil
    import tempfile

    from accel import interrupts

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial",
                                      dir=out.parent))
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None
    try:
        yield stage
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(stage, 0o777 & ~umask)  # mkdtemp's 0700: an artifact is shared as a folder
        with interrupts.deferred():
            _move_into(stage, out)
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _move_into(stage: Path, out: Path) -> None:
    """`stage`'s contents into `out` (see `staged_folder`)."""
    import shutil

    if not out.exists():
        os.rename(stage, out)
        return
    for item in stage.iterdir():
        target = out / item.name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(item, target)


def save_executable(folder: str | os.PathLike[str], executable: Any, *, target: Any,
                    entry: str, options: Mapping[str, Any], model_mlir: str | None = None,
                    outputs: Any = None, inputs: Any = None, staged: bool = True) -> Path:
    """Write `target`'s executable (e.g. a `compile_mlir` result) as an artifact folder
    callable through `entry`; returns its Path. `target`: the `accel.targets.base.Target`
    that compiled it (the caller looks it up: this format layer imports no target).
    `outputs`/`inputs`: the model's output and input structures (`accel.frontend.outputs`/
    `.inputs`), kept when they can be written as text. `staged`: written beside the folder
    first and moved in whole (`staged_folder`); False when `folder` already is such a
    stage."""
    if entry not in executable.functions:
        raise AccelError(f"no public function @{entry} to save; available: "
                         f"{', '.join('@' + n for n in executable.functions) or 'none'}")
    out = folder_path(folder, "save: folder")
    if staged:
        with staged_folder(out) as stage:
            save_executable(stage, executable, target=target, entry=entry, options=options,
                            model_mlir=model_mlir, outputs=outputs, inputs=inputs,
                            staged=False)
        return out
    options = dict(options)
    sig = executable.functions[entry]
    manifest: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "versions": environment(),
        "target": target.name,
        "entry": entry,
        "options": {k: v for k, v in options.items() if _is_json_scalar(v)},
        "signatures": [signature_to_json(s) for s in executable.functions.values()],
        "inputs": [_io_spec(a) for a in sig.args],
        "outputs": [_io_spec(r) for r in sig.results],
        "output_structure": outputs.to_json() if outputs is not None else None,
        "input_structure": inputs.to_json() if inputs is not None else None,
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        manifest["weights"] = save_weights(out, executable.weights)
        manifest["target_files"] = target.save(executable, out)
        if model_mlir is not None:
            atomic_write(out / MODEL_MLIR, model_mlir.encode())
        atomic_write(out / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None
    return out


@dataclass
class Loaded:
    """What an artifact folder holds, ready to call (`accel.load` wraps it)."""

    executable: Any
    entry: str
    options: dict[str, Any]
    model_mlir: str | None
    #: The saved output structure (JSON; accel.frontend.outputs), None for flat results.
    output_structure: Any = None
    #: The saved input structure (JSON; accel.frontend.inputs), None for flat arguments.
    input_structure: Any = None


def load(folder: str | os.PathLike[str], get_target: Callable[[str], Any]) -> Loaded:
    """Reload an artifact folder without compiling MLIR; `get_target(name)` gives the
    manifest's target (`accel.targets.get`: this format layer imports no target).

    Raises `AccelError` when the folder is missing, from another format, or damaged.
    """
    root = folder_path(folder, "accel.load: folder")
    manifest = read_manifest(root)
    try:
        signatures = {s["name"]: signature_from_json(s) for s in manifest["signatures"]}
        entry = manifest["entry"]
        if entry not in signatures:
            raise ValueError(f"entry @{entry} has no signature")
        options = dict(manifest.get("options", {}))
        target = get_target(manifest.get("target", "cpu"))
    except (KeyError, TypeError, ValueError) as err:
        raise AccelError(f"artifact '{root}': malformed {MANIFEST} ({err})") from None
    options = _checked_options(root, options)
    arrays = load_weights(root, manifest.get("weights", {}))
    executable = target.load(root, manifest, arrays)
    options["verify_numerics"] = False  # no eager model to compare with
    return Loaded(executable, entry, options, _model_mlir(root),
                  manifest.get("output_structure"), manifest.get("input_structure"))


def _checked_options(root: Path, options: dict[str, Any]) -> dict[str, Any]:
    """The manifest's options that accel knows, each valid (they decide how calls run:
    threads, iterations); others are dropped (an internal setting such as `filename`)."""
    from accel.options import FROM_TARGET, OPTIONS, OptionError, check_value

    known = {}
    for key, value in options.items():
        option = OPTIONS.get(key) if isinstance(key, str) else None
        if option is None:
            continue
        try:
            if option.choices == FROM_TARGET:  # the target checks its own names
                if not isinstance(value, str):
                    raise OptionError(f"option '{key}' must be a string")
            else:
                check_value(option, value)
        except (OptionError, NotImplementedError) as err:
            raise AccelError(f"artifact '{root}': malformed {MANIFEST} ({err})") from None
        known[key] = value
    return known


def _model_mlir(root: Path) -> str | None:
    """The folder's model.mlir (for `module_text()` only: nothing runs it); None when it is
    missing or unreadable."""
    try:
        return read_regular(root / MODEL_MLIR, 1 << 30).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def read_manifest(root: Path) -> dict[str, Any]:
    """The folder's manifest, checked for format; `AccelError` otherwise."""
    try:
        manifest = json.loads(read_regular(root / MANIFEST, 64 << 20).decode("utf-8"))
    except FileNotFoundError as err:
        raise AccelError(f"'{root}' is not an accel artifact folder: {err.filename} is "
                         "missing") from None
    except (OSError, ValueError) as err:
        raise AccelError(f"could not read artifact folder '{root}': {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        got = manifest.get("format") if isinstance(manifest, dict) else None
        raise AccelError(f"artifact '{root}' has format {got!r}; this accel reads format "
                         f"{FORMAT_VERSION}: compile it again")
    return manifest


def read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes (FIFOs and devices refused: they could block forever)."""
    import stat

    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"'{path}' is not a regular file")
    if info.st_size > limit:
        raise OSError(f"'{path}' is larger than {limit} bytes")
    return path.read_bytes()


def checked_file(root: Path, name: str, files: Mapping[str, Any], limit: int = 1 << 34
                 ) -> bytes:
    """`root/name` whose SHA-256 matches `files[name]`; `AccelError` otherwise."""
    want = files.get(name) if isinstance(files, Mapping) else None
    if not isinstance(want, str):
        raise AccelError(f"artifact '{root}': {MANIFEST} has no checksum for {name}")
    try:
        data = read_regular(root / name, limit)
    except OSError as err:
        raise AccelError(f"artifact '{root}': cannot read {name}: {err}") from None
    if sha256(data) != want:
        raise AccelError(f"artifact '{root}': {name} does not match its checksum in "
                         f"{MANIFEST} (corrupt or edited): compile it again")
    return data


# -- weights --------------------------------------------------------------------------------
def save_weights(folder: Path, weights: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Write each weight as `weights/<name>.npy`; returns {name: {file, dtype, shape,
    sha256}} for the manifest."""
    out = folder / WEIGHTS
    out.mkdir(parents=True, exist_ok=True)
    entries = {}
    for name, array in weights.items():
        path = out / f"{name}.npy"
        np.save(path, array, allow_pickle=False)
        entries[name] = {"file": str(path.relative_to(folder)), "dtype": array.dtype.str,
                         "shape": list(array.shape), "sha256": sha256(path.read_bytes())}
    return entries


def load_weights(folder: Path, entries: Any) -> dict[str, np.ndarray]:
    """Memory-map the weights `save_weights` wrote, each checked against the manifest
    (file checksum, dtype, shape): a wrong-sized weight would be read out of bounds."""
    if not isinstance(entries, Mapping):
        raise AccelError(f"artifact '{folder}': malformed {MANIFEST} (weights)")
    loaded = {}
    for name, entry in entries.items():
        if not isinstance(entry, Mapping) or not all(
                isinstance(entry.get(k), t) for k, t in
                (("file", str), ("dtype", str), ("shape", list), ("sha256", str))):
            raise AccelError(f"artifact '{folder}': malformed {MANIFEST} (weight {name!r})")
        rel = entry["file"]
        # realpath, not Path.resolve: a symlink loop must not raise RuntimeError.
        path = Path(os.path.realpath(folder / rel))
        if Path(os.path.realpath(folder)) not in path.parents:
            raise AccelError(f"artifact '{folder}': weight file {rel} is outside the folder")
        try:
            checked_file(folder, rel, {rel: entry["sha256"]})
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except (AccelError, OSError, ValueError) as err:
            raise AccelError(f"artifact '{folder}': weight file {rel} is unreadable: "
                             f"{err}") from None
        if array.dtype.str != entry["dtype"] or list(array.shape) != entry["shape"]:
            raise AccelError(f"artifact '{folder}': weight file {rel} holds "
                             f"{array.dtype.str}{list(array.shape)}, the manifest says "
                             f"{entry['dtype']}{entry['shape']}")
        loaded[name] = array
    return loaded


def _is_json_scalar(v: Any) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _io_spec(spec: ValueSpec) -> dict[str, Any]:
    dtype = spec.dtype.mlir if spec.dtype else None
    return {"type": spec.type_str, "dtype": dtype, "shape": list(spec.shape)}
