"""accel-compile's settings: option.json, the command line and the options table, merged.

Resolution: defaults < the target's preset < option.json's values < the command line
(a preset asked for on the command line wins over option.json's values of what it sets).
Every value is validated by `accel.options`; option.json records every resolved value.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accel.build import PROG
from accel.diagnostics import AccelError

#: Version of option.json's layout.
OPTION_JSON_FORMAT = 1
OPTION_JSON = "option.json"
#: Top-level keys of option.json besides "options" (the accel.compile options).
SETTINGS = ("pef_name", "entry", "batch_size", "inference")
def mlir_options() -> tuple[str, ...]:
    """accel options that apply to .mlir input: not the call/torch.compile/training ones,
    not verify_numerics (there is no eager model), not output_folder (the AOT files go into
    the artifact folder)."""
    from accel.options import OPTIONS

    return tuple(n for n, o in OPTIONS.items()
                 if o.scope not in ("call", "torch_compile", "train")
                 and n not in ("verify_numerics", "output_folder"))


#: option.json's "aot" object of format 1 before AOT settings were options: key -> option.
LEGACY_AOT = {"name": "aot_name", "target_cpu": "device", "user_memory": "user_memory"}
#: Options accel-compile runs after compiling instead of compiling them into the program.
RUN_OPTIONS = ("num_iters",)


@dataclass
class BuildSettings:
    """Everything that determines a build: what option.json holds."""

    pef_name: str
    entry: str | None = None
    batch_size: int | None = None
    inference: bool = False
    #: accel options, all of them once resolved.
    options: dict[str, Any] = field(default_factory=dict)
    #: --num-iters: run the function this many times after compiling (None: not at all).
    num_iters: int | None = None
    #: The resolved `accel.settings.Settings` the compile runs with (`options` is what
    #: option.json records: for .mlir input only the options that apply to it).
    settings: Any = None

    @property
    def aot(self) -> bool:
        """Whether an AOT library is built (the `aot` option)."""
        return bool(self.options.get("aot"))

    def to_json(self) -> dict[str, Any]:
        return {"format": OPTION_JSON_FORMAT, "tool": PROG, "pef_name": self.pef_name,
                "entry": self.entry, "batch_size": self.batch_size,
                "inference": self.inference, "options": dict(self.options)}


def read_option_json(path: Path) -> dict[str, Any]:
    """The settings in an option.json, checked; keys missing from it are left out."""
    text = _read(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise AccelError(f"invalid JSON: {err.msg}", file=str(path), line=err.lineno,
                         col=err.colno) from None
    if not isinstance(data, dict):
        raise AccelError(f"expected a JSON object, got {type(data).__name__}", file=str(path))
    known = ("format", "tool", *SETTINGS, "options", "aot")
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise AccelError(f"unknown key '{unknown[0]}' (valid: {', '.join(known)})",
                         file=str(path))
    if data.get("format", OPTION_JSON_FORMAT) != OPTION_JSON_FORMAT:
        raise AccelError(f"format {data['format']!r} is not supported (this "
                         f"accel-compile reads format {OPTION_JSON_FORMAT})", file=str(path))
    checks: dict[str, tuple[tuple[type, ...], str]] = {
        "pef_name": ((str,), "a string"), "entry": ((str, type(None)), "a string or null"),
        "batch_size": ((int, type(None)), "an int or null"), "inference": ((bool,), "a bool"),
        "options": ((dict,), "an object"), "aot": ((dict, type(None)), "an object or null"),
    }
    for key, (types, what) in checks.items():
        if key not in data:
            continue
        value = data[key]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise AccelError(f"'{key}' must be {what}, got {json.dumps(value)}", file=str(path))
    found = {k: data[k] for k in (*SETTINGS, "options") if k in data}
    if data.get("aot") is not None:  # the "aot" object of earlier builds: options now
        unknown = sorted(set(data["aot"]) - set(LEGACY_AOT))
        if unknown:
            raise AccelError(f"unknown key '{unknown[0]}' in \"aot\" (valid: "
                             f"{', '.join(LEGACY_AOT)})", file=str(path))
        found["options"] = {"aot": True, **{LEGACY_AOT[k]: v for k, v in data["aot"].items()},
                            **found.get("options", {})}
    return found


def resolve_settings(a: argparse.Namespace, path: Path, is_mlir: bool,
                     flags: dict[str, Any] | None = None) -> BuildSettings:
    """Defaults, then --option-json, then the command line (`--option` items, then the
    table's flags, `flags`); options validated."""
    from accel.api import resolve_options
    from accel.cli import parse_option_items
    from accel.options import OPTIONS, check_value, named
    from accel.options import defaults as table_defaults

    try:
        base = read_option_json(Path(a.option_json)) if a.option_json else {}
        given = {**named(parse_option_items(a.option)), **(flags or {})}
        base_options = {k: v for k, v in named(base.get("options", {})).items()
                        if k not in RUN_OPTIONS}
        num_iters = given.pop("num_iters", None)
        if num_iters is not None:
            check_value(OPTIONS["num_iters"], num_iters)
    except (ValueError, TypeError) as err:
        raise AccelError(str(err)) from None
    options = {**base_options, **given}
    if given.get("preset") is not None:  # a preset asked for now wins over option.json's
        from accel import targets

        try:
            preset = targets.get(options.get("target", "cpu")).presets().get(
                given["preset"], {})
        except AccelError:
            preset = {}
        options = {k: v for k, v in options.items() if k not in preset or k in given}
    if not options.get("aot"):
        used = [k for k in given if OPTIONS[k].scope == "aot" and k != "aot"]
        if used:
            raise AccelError(f"{OPTIONS[used[0]].flags[0]} applies to AOT libraries: add --aot")
    if "output_folder" in given:
        raise AccelError("option 'output_folder': accel-compile writes the AOT files into "
                         "the artifact folder (--output-folder)")
    options.setdefault("cache", False)  # every phase runs (and leaves its IR) unless asked
    if is_mlir:
        if base.get("options"):  # a .py build's option.json: its defaults do not matter here
            defaults = table_defaults()  # the table's: no second resolution
            options = {k: v for k, v in options.items()
                       if k in mlir_options() or k not in defaults or v != defaults[k]}
        unknown = sorted(set(options) - set(mlir_options()))
        if unknown:
            raise AccelError(f"option '{unknown[0]}' does not apply to .mlir input (valid: "
                             f"{', '.join(sorted(mlir_options()))})")
    try:
        settings = resolve_options(options)  # once: the compile below reuses it
    except (ValueError, NotImplementedError) as err:
        raise AccelError(str(err)) from None
    resolved = {k: settings[k] for k in (mlir_options() if is_mlir else settings)
                if k in settings}
    pef_name = a.pef_name if a.pef_name is not None else base.get("pef_name", path.stem)
    if not pef_name or pef_name in (".", "..") or "/" in pef_name or "\\" in pef_name:
        raise AccelError(f"--pef-name must be a plain file name, got '{pef_name}'")
    batch_size = a.batch_size if a.batch_size is not None else base.get("batch_size")
    if batch_size is not None and batch_size < 1:
        raise AccelError(f"--batch-size must be at least 1, got {batch_size}")
    if batch_size is not None and is_mlir:
        raise AccelError("-b/--batch-size applies to .py models only (an .mlir file has "
                         "fixed shapes)")
    inference = a.inference if a.inference is not None else base.get("inference", False)
    entry = a.entry if a.entry is not None else base.get("entry")
    return BuildSettings(pef_name, entry, batch_size, bool(inference), resolved, num_iters,
                         settings)




def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AccelError(f"no such file: '{path}'") from None
    except IsADirectoryError:
        raise AccelError(f"'{path}' is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise AccelError(f"could not read '{path}': {err}") from None


