"""SambaFlow's support arguments around the options table: `--compiler-configs-file`, and
the checks that tie `--model-parallel`, `--mac-human-decision`, `--n-chips` and
`--o1-rule-list` together (sambaflow-compile-arguments.txt).

`--compiler-configs-file FILE` is a JSON object of compiler settings: rdu option names
(`n_chips` or SambaFlow's `n-chips`, with or without leading dashes) and values, e.g.

    {"arch": "sn30", "n-chips": 2, "resources-scaling-factors": "1 0.8 0.8"}

Options given directly win over the file: an option still at its default or preset value
counts as not given (the resolved options do not record which keys a caller typed, as
mncore's option_json).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from accel.diagnostics import AccelError
from accel.user_files import read_json

#: Options the configs file may not set (itself: no nesting).
_NOT_IN_FILE = ("compiler_configs_file",)


def _valid_keys() -> list[str]:
    from accel.options import OPTIONS

    return [n for n, o in OPTIONS.items() if o.scope == "rdu" and n not in _NOT_IN_FILE]


def read_configs(path: str) -> dict[str, Any]:
    """The settings in a compiler-configs file, each validated by the options table."""
    from accel.options import OPTIONS, check_value

    data = read_json(path, "compiler_configs_file")
    if not isinstance(data, dict):
        raise AccelError(f"{path}: a compiler-configs file is a JSON object of settings, "
                         f"got {type(data).__name__}")
    valid = _valid_keys()
    found: dict[str, Any] = {}
    for key, value in data.items():
        name = str(key).lstrip("-").replace("-", "_")
        if name not in valid:
            raise AccelError(f"{path}: unknown setting '{key}' (valid: {', '.join(valid)})")
        if name == "resources_scaling_factors" and isinstance(value, list):
            value = " ".join(str(v) for v in value)
        try:
            found[name] = check_value(OPTIONS[name], value)
        except AccelError as err:
            raise AccelError(f"{path}: setting '{key}': {err}") from None
    return found


def effective(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """`options` with the compiler-configs file's settings for those not given directly."""
    from accel.settings import Settings

    path = options.get("compiler_configs_file")
    if not path:
        return options if isinstance(options, Settings) else dict(options)
    if isinstance(options, Settings):  # it knows what was given: no baseline to compare
        return options.replace(**{k: v for k, v in read_configs(path).items()
                                  if k not in options.given})
    from accel.settings import merge as resolve

    baseline = resolve({"target": "rdu", "preset": options.get("preset")})
    result = dict(options)
    for key, value in read_configs(path).items():
        if result.get(key) == baseline.get(key):
            result[key] = value
    return result


def check(options: Mapping[str, Any], *, warn: bool = True) -> None:
    """Refuse inconsistent support arguments before the model is exported; with `warn`,
    warn about arguments that have no effect."""
    if options.get("sectioning") == "o1":
        from accel.passes.rdu.rules import load_rules

        load_rules(options["o1_rule_list"])
    elif warn and options.get("o1_rule_list", "default") != "default":
        warnings.warn(f"rdu: --o1-rule-list {options['o1_rule_list']} has no effect without "
                      f"-o1 (sectioning is {options.get('sectioning')})", stacklevel=2)
    decisions = None
    if options.get("mac_human_decision"):
        from accel.passes.rdu.decisions import load

        decisions = load(options["mac_human_decision"])
    n_chips = int(options.get("n_chips", 1))
    if options.get("model_parallel"):
        if decisions is None:
            raise AccelError("--model-parallel requires a human decision file "
                             "(--mac-human-decision FILE with \"model_parallel\" entries)")
        if n_chips < 2:
            raise AccelError("--model-parallel splits GEMMs across chips: give --n-chips 2 "
                             "or more")
        if not decisions.model_parallel and not decisions.auto_model_parallel:
            raise AccelError(f"{decisions.path}: --model-parallel needs \"model_parallel\" "
                             "entries (a list of {section, ways}, or \"auto\")")
    elif decisions is not None and (decisions.model_parallel or decisions.auto_model_parallel):
        raise AccelError(f"{decisions.path}: \"model_parallel\" entries apply with "
                         "--model-parallel only")
    if decisions is not None:
        bad = [(name, chip) for name, chip in decisions.placement.items() if chip >= n_chips]
        if bad:
            raise AccelError(f"{decisions.path}: placement['{bad[0][0]}']: chip {bad[0][1]} "
                             f"does not exist with --n-chips {n_chips} (chips 0..{n_chips - 1})")
