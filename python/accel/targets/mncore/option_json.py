"""`option_json`: MLSDK option files ({"name", "envs", "args"}) and CODEGEN_* variables.

Precedence (reference section 4.2): options given directly win over the file's args; the
file's envs apply unless the process environment already has the variable. An arg is
`--name=value` of an mncore option or `float_dtype`; the file's own `option_json` args are
ignored (no nesting, as MLSDK). A preset name (O0..O4, debug) reads the JSON shipped in
`preset_options/`. codegen_dir's option.json has this format, so it reproduces a build.
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

#: Environment variables MLSDK documents (section 4.2.3), value = honoured here.
_HONOURED = (
    "CODEGEN_SA_STEPS", "CODEGEN_NUM_SA_THREADS", "CODEGEN_ALLOW_UNUSED_LAYOUT_SPEC",
    "CODEGEN_LAYOUT_PLANNER_Z_HONOR_LAYOUT_SPEC", "CODEGEN_IGNORE_LAYOUT_CHECK",
    "CODEGEN_MAX_TIME_SLICE", "CODEGEN_LAYOUT_PLANNER_Z", "CODEGEN_USE_MERGE",
)
#: Accepted (MLSDK documents them) but without effect here: docs/mncore.md lists them.
_WITHOUT_EFFECT = (
    "CODEGEN_USE_PARALLEL_MERGE", "CODEGEN_FIND_BEST_COMPILE_OPTIONS",
    "CODEGEN_FIND_BETTER_COMPILE_OPTIONS", "CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN",
    "CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT", "CODEGEN_SCHEDULE_PP_BEAM_WIDTH",
    "CODEGEN_N_TRANSPOSE_THREADS", "CODEGEN_N_DEV_COPY_STREAMS_THREADS",
    "CODEGEN_ENABLE_SET_PARTIAL_LOCATION", "CODEGEN_GEMM_FORCE_CHANNEL_SPLIT", "CODEGEN_OP_DEF",
    "CODEGEN_SKIP_RESOLVE_NEGATIVE_INDICES", "CODEGEN_TIME_SLICE_SCATTERED_INDEXING_BCAST",
    "CODEGEN_USE_ADDR_FIRST_Z", "CODEGEN_ALARM", "CODEGEN_IGNORE_REUSED_VALUE_LAYOUT",
    "CODEGEN_DEFER_SIMPLIFY", "CODEGEN_NODE_SIM_ALLOW_UNEXPECTED_FAIL",
    "CODEGEN_FORCE_ATTENTION_GRAD_AFTER_FORWARD", "CODEGEN_AUTO_RECOMPUTE_HACK_FOR_QWEN",
    "CODEGEN_STOP_USING_GENERIC_INDEXING_GATHER_INDEX_ADD", "CODEGEN_GEMM_FORCE_WEIGHT_ON_DRAM",
    "CODEGEN_LPZ_SKIP_PROPAGATE_TIME", "CODEGEN_OPS_ON_HOST", "MNCORE_USE_EXTERNAL_DATA_FORMAT",
    "PFVM_DISABLE_CONSTANT_REUSE",
)
ENVS: dict[str, bool] = {**dict.fromkeys(_HONOURED, True), **dict.fromkeys(_WITHOUT_EFFECT, False)}


def arg_options() -> list[str]:
    """Option names an option file's args may set."""
    return [n for n, o in OPTIONS.items() if o.scope == "mncore" and n not in OUTPUT_OPTIONS] \
        + list(_COMMON_ARGS)


def read(spec: str) -> dict[str, Any]:
    """The option file `spec` (a preset name or a path), validated."""
    if spec in PRESETS:
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


def effective(options: Mapping[str, Any], baseline: Mapping[str, Any]
              ) -> tuple[dict[str, Any], dict[str, str], str | None]:
    """(options after the option file, CODEGEN_* environment, the file's name).

    `baseline` is what the options would be had the user given none (defaults and the
    preset): an option still at its baseline value was not given, so the file sets it.
    """
    result = dict(options)
    envs: dict[str, str] = {}
    name = None
    spec = options.get("option_json")
    if spec:
        data = read(spec)
        name = data["name"]
        for key, value in data["args"].items():
            if result.get(key) == baseline.get(key):
                result[key] = value
        envs.update(data["envs"])
    for key in ENVS:  # the process environment wins over the file
        if key in os.environ:
            envs[key] = os.environ[key]
    return result, envs, name


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
