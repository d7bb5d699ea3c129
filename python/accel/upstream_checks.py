"""Checks on upstream passes that the bindings do not make: option values.

The bindings hand option text to LLVM's command-line parser, which accepts any value its C
type holds, prints its complaints to the process's stderr, and lets values through that crash
the pass (SIGFPE, SIGSEGV, SIGABRT: the process dies). `check_options` runs first: numbers
must be plain ASCII (`-12`, `0x1f`; not `1_0`, not other scripts' digits, no octal-looking
leading zeros) within their type's range, and the values listed in `LIMITS` (found by fuzzing
the pinned bindings' passes with edge values) are refused with the reason. Passes that crash
on some inputs even with valid options (`accel.upstream_passes.FRAGILE_PASSES`) run in a
forked child instead (`accel.pass_run`, `accel.isolation`)."""

from __future__ import annotations

import re

from accel.upstream_passes import FRAGILE_PASSES, get_upstream_pass, is_fragile

#: (pass, option) -> (smallest, largest) value that does not crash the pass (None: the type's
#: own bound). For a list option the limits apply to every element.
LIMITS: dict[tuple[str, str], tuple[int | None, int | None]] = {
    ("affine-loop-unroll-jam", "unroll-jam-factor"): (1, (1 << 31) - 1),  # 2^31: SIGABRT
    ("affine-loop-tile", "tile-sizes"): (1, None),  # 0: SIGFPE (division by the tile size)
    ("linalg-block-pack-matmul", "block-factors"): (1, None),  # 0: SIGSEGV
    # Each repetition walks the whole function again, even when no loop is left to unroll:
    # 2^31 of them ran for hours (a hang, not an answer). 1024 is far past any useful depth.
    ("affine-loop-unroll", "unroll-num-reps"): (None, 1024),
}
#: What happens past a limit, where it is not a crash.
_PAST_LIMIT = {("affine-loop-unroll", "unroll-num-reps"): "the pass runs for hours"}

#: Ranges of the LLVM option types in the catalogue (`accel.upstream_passes`).
RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
          "uint": (0, (1 << 32) - 1), "uint64": (0, (1 << 64) - 1)}
_INT = re.compile(r"-?(?:0|[1-9][0-9]*|0x[0-9a-fA-F]+)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BOOLS = ("true", "false", "TRUE", "FALSE", "True", "False", "1", "0")


class OptionValueError(ValueError):
    """A bad value for an upstream pass option; the message names the pass and option."""


_OPTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def check_options(name: str, option_text: str | None) -> None:
    """Raise `OptionValueError` for a value of pass `name`'s options that is malformed, out
    of its type's range or known to crash the pass. Unknown passes and options are left to
    the bindings (which name them)."""
    info = get_upstream_pass(name)
    if info is None or not option_text:
        return
    from accel.passes.base import split_options

    types = {o.name: o.type for o in info.options}
    try:
        pairs = list(split_options(option_text))
    except ValueError as err:
        raise OptionValueError(f"pass '{name}': {err}") from None
    for key, raw in pairs:
        # The bindings' option parser takes `{=1}` and `{==x}` and ignores them: say so.
        if not _OPTION_NAME.fullmatch(key):
            raise OptionValueError(f"pass '{name}': {key!r} is not an option name "
                                   f"(options are name=value)")
        if key not in types:
            continue
        where = f"option '{key}' of pass '{name}'"
        kind = types[key]
        limits = LIMITS.get((name, key))
        why = _PAST_LIMIT.get((name, key), "the pass crashes")
        if raw is None:
            if kind not in ("bool", None):
                raise OptionValueError(f"{where} needs a value ({kind})")
            continue
        if kind == "list" and raw and any(not item.strip() for item in raw.split(",")):
            # An empty element (`source-types=,x`) crashes the bindings' list parser.
            raise OptionValueError(f"{where}: empty element in the list '{raw}'")
        if kind == "list" and limits is not None:
            for item in raw.split(","):
                _check_int(where, item.strip(), "int64", limits, why)
        elif kind in RANGES:
            _check_int(where, raw, kind, limits, why)
        elif kind == "bool" and raw not in _BOOLS:
            raise OptionValueError(f"{where}: '{raw}' is not a bool (true or false)")
        elif kind == "float" and not _FLOAT.fullmatch(raw):
            raise OptionValueError(f"{where}: '{raw}' is not a number")


def _check_int(where: str, raw: str, kind: str, limits: tuple[int | None, int | None] | None,
               why: str = "the pass crashes") -> None:
    if not _INT.fullmatch(raw):
        hint = " (leading zeros read as octal)" if re.fullmatch(r"-?0[0-9]+", raw) else ""
        raise OptionValueError(f"{where}: '{raw}' is not an integer{hint}")
    value = int(raw, 16 if "x" in raw else 10) if not raw.startswith("-") \
        else -int(raw[1:], 16 if "x" in raw else 10)
    low, high = RANGES[kind]
    if not low <= value <= high:
        raise OptionValueError(f"{where}: {raw} is out of range ({kind}: from {low} to {high})")
    lo, hi = limits or (None, None)
    if lo is not None and value < lo:
        raise OptionValueError(f"{where}: {raw} is out of range (min {lo}; {why} on smaller "
                               "values)")
    if hi is not None and value > hi:
        raise OptionValueError(f"{where}: {raw} is out of range (max {hi}; {why} on larger "
                               "values)")


__all__ = ["FRAGILE_PASSES", "LIMITS", "RANGES", "OptionValueError", "check_options",
           "is_fragile"]
