"""`option_json`: MLSDK option files ({"name", "envs", "args"}) and CODEGEN_* variables.

Precedence (reference section 4.2): options given directly win over the file's args (the
target's file layer in `accel.settings.merge`: defaults < preset < file args < given); the
file's envs apply unless the process environment already has the variable. An arg is
`--name=value` of an mncore option or `float_dtype`; the file's own `option_json` args are
ignored (no nesting, as MLSDK). A preset name (O0..O4, debug) or MLSDK's path of one
(`/opt/pfn/pfcomp/codegen/preset_options/O1.json`) reads the JSON shipped in
`preset_options/`. Variables the reference documents but this model cannot apply are
refused with the reason (`REFUSED`), in files and in the environment alike. codegen_dir's
option.json has this format, so it reproduces a build.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from accel.diagnostics import AccelError
from accel.options import OPTIONS, OptionError, check_value, parse_text

PRESETS = ("O0", "O1", "O2", "O3", "O4", "debug")
#: Options an option file may set (args), besides the mncore-scoped ones.
_COMMON_ARGS = ("float_dtype",)
#: Options that say where outputs go: not part of a build's identity, never in option.json.
OUTPUT_OPTIONS = ("option_json", "codegen_dir", "out_onnx")

#: Environment variables MLSDK documents (section 4.2.3) that change the plan here, each as
#: the reference describes (docs/mncore.md has the table and test/unit/test_mncore_envs.py a
#: test per variable showing the change).
_HONOURED = (
    "CODEGEN_SA_STEPS", "CODEGEN_NUM_SA_THREADS", "CODEGEN_ALLOW_UNUSED_LAYOUT_SPEC",
    "CODEGEN_LAYOUT_PLANNER_Z_HONOR_LAYOUT_SPEC", "CODEGEN_IGNORE_LAYOUT_CHECK",
    "CODEGEN_MAX_TIME_SLICE", "CODEGEN_LAYOUT_PLANNER_Z", "CODEGEN_USE_MERGE",
    "CODEGEN_USE_PARALLEL_MERGE", "CODEGEN_FIND_BEST_COMPILE_OPTIONS",
    "CODEGEN_FIND_BETTER_COMPILE_OPTIONS", "CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN",
    "CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT", "CODEGEN_SCHEDULE_PP_BEAM_WIDTH",
    "CODEGEN_N_TRANSPOSE_THREADS", "CODEGEN_N_DEV_COPY_STREAMS_THREADS",
    "CODEGEN_GEMM_FORCE_CHANNEL_SPLIT", "CODEGEN_GEMM_FORCE_WEIGHT_ON_DRAM",
    "CODEGEN_OPS_ON_HOST", "CODEGEN_ALARM", "MNCORE_USE_EXTERNAL_DATA_FORMAT",
)
#: Documented variables this model has nothing to apply to: an error with the reason, never
#: silently ignored.
REFUSED: dict[str, str] = {
    "CODEGEN_ENABLE_SET_PARTIAL_LOCATION": "the SRAM model always keeps the part of a "
    "working set that fits in LM and streams only the excess (partial locations are on)",
    "CODEGEN_OP_DEF": "accel has one implementation per operator; there are no alternative "
    "op definitions to choose",
    "CODEGEN_SKIP_RESOLVE_NEGATIVE_INDICES": "torch-mlir resolves negative indices before "
    "codegen; nothing is left to skip",
    "CODEGEN_TIME_SLICE_SCATTERED_INDEXING_BCAST": "Gather layers are not time-sliced apart "
    "from other layers in this model",
    "CODEGEN_USE_ADDR_FIRST_Z": "layouts here come from two generated schemes; there is no "
    "address assignment order to change",
    "CODEGEN_IGNORE_REUSED_VALUE_LAYOUT": "reused values are planned like every other value; "
    "there is no separate constraint to ignore",
    "CODEGEN_DEFER_SIMPLIFY": "accel has no PFVM simplify passes (MLIR canonicalisation "
    "replaces them)",
    "CODEGEN_NODE_SIM_ALLOW_UNEXPECTED_FAIL": "node simulations here are analytic and "
    "cannot fail",
    "CODEGEN_FORCE_ATTENTION_GRAD_AFTER_FORWARD": "training compiles forward and backward "
    "as separate programs, so attention gradients always run after the forward",
    "CODEGEN_AUTO_RECOMPUTE_HACK_FOR_QWEN": "accel has no Qwen-specific recompute rules "
    "(auto_recompute_sa's choice is model-independent)",
    "CODEGEN_STOP_USING_GENERIC_INDEXING_GATHER_INDEX_ADD": "there is one Gather/IndexAdd "
    "implementation, no generic-indexing variant to switch off",
    "CODEGEN_LPZ_SKIP_PROPAGATE_TIME": "lpz here does not propagate time-slice dimensions "
    "between layers",
    "PFVM_DISABLE_CONSTANT_REUSE": "accel has no PFVM passes; constants are handled by MLIR "
    "folding",
}
ENVS: dict[str, bool] = {**dict.fromkeys(_HONOURED, True), **dict.fromkeys(REFUSED, False)}


def refuse(name: str, where: str) -> OptionError:
    """The one-line error for a refused variable."""
    return OptionError(f"{where}: {name} is not supported by the emulated MN-Core: "
                       f"{REFUSED[name]}")


def arg_options() -> list[str]:
    """Option names an option file's args may set."""
    return [n for n, o in OPTIONS.items() if o.scope == "mncore" and n not in OUTPUT_OPTIONS] \
        + list(_COMMON_ARGS)


def preset_of(spec: str) -> str | None:
    """The preset `spec` names: a preset name, or MLSDK's path of a preset file
    (`/opt/pfn/pfcomp/codegen/preset_options/O1.json`) when no such file exists here."""
    if spec in PRESETS:
        return spec
    path = Path(spec)
    if path.suffix == ".json" and path.stem in PRESETS and \
            path.parent.name == "preset_options" and not path.exists():
        return path.stem
    return None


def read(spec: str) -> dict[str, Any]:
    """The option file `spec` (a preset name or a path), validated."""
    preset = preset_of(spec)
    if preset is not None:
        spec = preset
        text = resources.files(__package__).joinpath("preset_options", f"{spec}.json") \
            .read_text("utf-8")
        where = f"preset {spec}"
    else:
        where = spec
        try:
            text = Path(spec).read_text(encoding="utf-8")
        except OSError as err:
            raise OptionError(f"option 'option_json': cannot read {spec!r} ({err.strerror}); "
                              f"give a file or a preset: {', '.join(PRESETS)}") from None
    try:
        data = json.loads(text)
    except ValueError as err:
        raise OptionError(f"option 'option_json': {where} is not valid JSON: {err}") from None
    if not isinstance(data, dict) or not set(data) <= {"name", "envs", "args"}:
        raise OptionError(f"option 'option_json': {where} must be a JSON object with keys "
                          "name, envs, args")
    envs = data.get("envs", {})
    args = data.get("args", [])
    if not isinstance(envs, dict) or not isinstance(args, list):
        raise OptionError(f"option 'option_json': {where}: envs must be an object and args "
                          "a list")
    for name, value in envs.items():
        if name not in ENVS:
            raise OptionError(f"option 'option_json': {where}: unknown environment variable "
                              f"{name!r} (known: {', '.join(sorted(ENVS))})")
        if name in REFUSED:
            raise refuse(name, f"option 'option_json': {where}")
        if not isinstance(value, str | int | float | bool):
            raise OptionError(f"option 'option_json': {where}: {name} must be a scalar")
    parsed: dict[str, Any] = {}
    valid = arg_options()
    for arg in args:
        if not isinstance(arg, str) or not arg.startswith("--") or "=" not in arg:
            raise OptionError(f"option 'option_json': {where}: args are '--name=value', got "
                              f"{arg!r}")
        name, text_value = arg[2:].split("=", 1)
        if name == "option_json":
            continue  # no nesting (MLSDK ignores it too)
        if name not in valid:
            raise OptionError(f"option 'option_json': {where}: unknown option {name!r} in "
                              f"args (valid: {', '.join(valid)})")
        parsed[name] = check_value(OPTIONS[name], parse_text(OPTIONS[name], text_value))
    return {"name": data.get("name", where), "envs": {k: str(v) for k, v in envs.items()},
            "args": parsed}


def file_args(options: Mapping[str, Any]) -> dict[str, Any]:
    """The args of the option file `options` names (none without one): the target's file
    layer (`Target.file_options`), which `accel.settings.merge` puts over the preset and
    under what was given, so an option given directly always wins over the file."""
    spec = options.get("option_json")
    if not isinstance(spec, str) or not spec:
        return {}  # None, or a wrong type that resolve's check reports
    return dict(read(spec)["args"])


def effective(options: Mapping[str, Any]
              ) -> tuple[dict[str, Any], dict[str, str], str | None]:
    """(resolved `options`, CODEGEN_* environment, the option file's name): the file's envs,
    then the process environment over them (the file's args are already in `options`,
    applied by `accel.settings.merge` through `file_args`)."""
    envs: dict[str, str] = {}
    name = None
    spec = options.get("option_json")
    if spec:
        data = read(spec)
        name = data["name"]
        envs.update(data["envs"])
    for key in ENVS:  # the process environment wins over the file
        if key in os.environ:
            if key in REFUSED:
                raise refuse(key, "environment")
            envs[key] = os.environ[key]
    return dict(options), envs, name


def option_file(options: Mapping[str, Any], envs: Mapping[str, str], name: str) -> str:
    """option.json text that reproduces a build: every arg and the envs it used."""
    args = [f"--{k}={_text(options[k])}" for k in arg_options() if k in options]
    return json.dumps({"name": name, "envs": dict(sorted(envs.items())), "args": args},
                      indent=2) + "\n"


def _text(value: Any) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) \
        else str(value)


def int_env(envs: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    """A CODEGEN_* variable's integer value (`default` when unset or empty): plain ASCII
    digits, as the MLSDK's C++ reads them (`int()` would also take `1_0` or `４`)."""
    text = envs.get(name)
    if text in (None, ""):
        return default
    if not re.fullmatch(r"-?[0-9]{1,18}", str(text).strip()):
        raise AccelError(f"environment {name}={text!r}: expected an integer")
    value = int(str(text).strip())
    if value < minimum:
        raise AccelError(f"environment {name}={text!r}: must be at least {minimum}")
    return value
