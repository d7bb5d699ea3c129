"""accel-compile's settings: option.json, the command line and the options table, merged.

Resolution: defaults < the target's preset < option.json's values < the command line
(a preset asked for on the command line wins over option.json's values of what it sets).
Every value is validated by `accel.options`; option.json records every resolved value.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accel.build import PROG
from accel.diagnostics import AccelError
from accel.targets.cpu import DEVICES

#: Version of option.json's layout.
OPTION_JSON_FORMAT = 1
OPTION_JSON = "option.json"
#: Top-level keys of option.json besides "options" (the accel.compile options).
SETTINGS = ("pef_name", "entry", "batch_size", "inference")
#: accel options that apply to .mlir input (the rest belong to accel.compile).
def mlir_options() -> tuple[str, ...]:
    """accel options that apply to .mlir input: not the call/AOT/torch.compile/training
    ones, not verify_numerics (there is no eager model)."""
    from accel.options import OPTIONS

    return tuple(n for n, o in OPTIONS.items()
                 if o.scope not in ("call", "aot", "torch_compile", "train")
                 and n != "verify_numerics")


#: AOT library settings (the "aot" object of option.json, present only with --aot).
AOT_DEFAULT_NAME = "accel_artifact"
#: The cpu target's devices (= accel.targets.cpu.aot.TARGET_CPUS), host (the default) first.
AOT_CPUS = DEVICES


# -- settings -------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """`true`/`false` -> bool, `none` -> None, an int literal -> int, else the string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        return text


def parse_options(items: list[str]) -> dict[str, Any]:
    """`--option key=value` items (and an optimisation level) as an options dict."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AccelError(f"--option expects KEY=VALUE, got '{item}'")
        options[key.strip()] = parse_value(value)
    return options


@dataclass
class Settings:
    """Everything that determines a build: what option.json holds."""

    pef_name: str
    entry: str | None = None
    batch_size: int | None = None
    inference: bool = False
    #: accel options, all of them once resolved.
    options: dict[str, Any] = field(default_factory=dict)
    #: AOT library settings (name, target_cpu, user_memory), None without --aot.
    aot: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"format": OPTION_JSON_FORMAT, "tool": PROG, "pef_name": self.pef_name,
                "entry": self.entry, "batch_size": self.batch_size,
                "inference": self.inference, "options": dict(self.options)}
        if self.aot is not None:
            data["aot"] = dict(self.aot)
        return data


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
    return {k: data[k] for k in (*SETTINGS, "options", "aot") if k in data}


def resolve_settings(a: argparse.Namespace, path: Path, is_mlir: bool,
                     table_flags: dict[str, Any] | None = None) -> Settings:
    """Defaults, then --option-json, then the command line; options validated."""
    from accel.api import resolve_options

    base = read_option_json(Path(a.option_json)) if a.option_json else {}
    flags = {k: v for k, v in (("target", a.target), ("preset", a.preset),
                                ("opt_level", a.opt_level)) if v is not None}
    flags.update(table_flags or {})
    options = {**base.get("options", {}), **parse_options(a.option), **flags}
    if a.preset is not None:  # a preset asked for now wins over option.json's values of it
        from accel import targets

        try:
            preset = targets.get(options.get("target", "cpu")).presets().get(a.preset, {})
        except AccelError:
            preset = {}
        given = {**parse_options(a.option), **flags}
        options = {k: v for k, v in options.items() if k not in preset or k in given}
    options.setdefault("cache", False)  # every phase runs (and leaves its IR) unless asked
    if is_mlir:
        if base.get("options"):  # a .py build's option.json: its defaults do not matter here
            defaults = resolve_options({})
            options = {k: v for k, v in options.items()
                       if k in mlir_options() or k not in defaults or v != defaults[k]}
        unknown = sorted(set(options) - set(mlir_options()))
        if unknown:
            raise AccelError(f"option '{unknown[0]}' does not apply to .mlir input (valid: "
                             f"{', '.join(sorted(mlir_options()))})")
    try:
        resolved = resolve_options(options)
    except (ValueError, NotImplementedError) as err:
        raise AccelError(str(err)) from None
    if is_mlir:
        resolved = {k: resolved[k] for k in mlir_options() if k in resolved}
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
    return Settings(pef_name, entry, batch_size, bool(inference), resolved,
                    resolve_aot(a, base.get("aot")))


def resolve_aot(a: argparse.Namespace, base: dict[str, Any] | None) -> dict[str, Any] | None:
    """The AOT settings: option.json's "aot" object, then --aot/--aot-name/... (None: off)."""
    given = {"name": a.aot_name, "target_cpu": a.target_cpu, "user_memory": a.user_memory}
    if not a.aot and base is None:
        used = [flag for flag, v in (("--aot-name", a.aot_name), ("--target-cpu", a.target_cpu),
                                     ("--user-memory", a.user_memory)) if v is not None]
        if used:
            raise AccelError(f"{used[0]} applies to AOT libraries: add --aot")
        return None
    aot = {"name": AOT_DEFAULT_NAME, "target_cpu": "host", "user_memory": False}
    for key, value in (base or {}).items():
        if key not in aot:
            raise AccelError(f"unknown key '{key}' in option.json's \"aot\" (valid: "
                             f"{', '.join(aot)})")
        aot[key] = value
    aot.update({k: v for k, v in given.items() if v is not None})
    if not isinstance(aot["name"], str) or not re.fullmatch(r"[A-Za-z_]\w*", aot["name"]):
        raise AccelError(f"--aot-name must be a C identifier, got '{aot['name']}'")
    if aot["target_cpu"] not in AOT_CPUS:
        raise AccelError(f"--target-cpu must be one of {', '.join(AOT_CPUS)}, got "
                         f"'{aot['target_cpu']}'")
    aot["user_memory"] = bool(aot["user_memory"])
    return aot




def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AccelError(f"no such file: '{path}'") from None
    except IsADirectoryError:
        raise AccelError(f"'{path}' is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise AccelError(f"could not read '{path}': {err}") from None


