"""Human decisions (`--mac-human-decision FILE`): section and placement overrides.

SambaFlow's support flag takes a file of decisions the compiler applies instead of its own
(sambaflow-compile-arguments.txt lists `--mac-human-decision` and `--model-parallel
(requires a human decision file)`; the file format is not published). accel's file is JSON:

    {
      "sections": [                                     # operators forced into one section
        {"name": "attn0", "ops": ["linear:transformer.h.0.attn.c_attn", "sdpa:*"]}
      ],
      "placement": {"s12_linear": 1, "attn0": 0},       # section (or decision name) -> chip
      "model_parallel": [{"section": "s40_linear", "ways": 2}]   # or "auto"
    }

`ops` are operator labels as sections.json lists them (`kind:origin`), or shell patterns
(`fnmatch`) over them; each entry must match at least one operator, no operator may be
claimed twice, and the operators must form a convex group (no data path leaves and comes
back). An entry's section is labelled with its `name` (`s<index>_<name>`); it must fit the
chip like any other. `placement` pins sections to chips of `--n-chips` (a name may be a
section name or a decision's `name`); `model_parallel` lists GEMM sections to split over
chips (with `--model-parallel`), or "auto". In a train step's phase graphs a name may be
prefixed with the phase (`backward.s3_linear`): it then applies to that phase only, and
entries that match nothing are not errors (they may belong to another phase).

Every problem is one `AccelError` naming the file and the entry.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from accel.diagnostics import AccelError
from accel.user_files import read_json

KEYS = ("sections", "placement", "model_parallel", "comment")


@dataclass(frozen=True)
class SectionDecision:
    """Operators (labels or patterns) that form one section named `name`."""

    name: str
    ops: tuple[str, ...]
    where: str


@dataclass(frozen=True)
class Decisions:
    """A parsed human-decision file."""

    path: str
    sections: tuple[SectionDecision, ...] = ()
    placement: dict[str, int] = field(default_factory=dict)
    #: (section name, ways); ways 0 in an "auto" entry means "as many as useful".
    model_parallel: tuple[tuple[str, int], ...] = ()
    auto_model_parallel: bool = False

    def error(self, where: str, message: str) -> AccelError:
        return AccelError(f"{self.path}: {where}: {message}")


def _fail(path: str, where: str, message: str) -> AccelError:
    return AccelError(f"{path}: {where}: {message}")


def load(path: str) -> Decisions:
    """The decisions in `path`, schema-checked (names are checked when they are applied)."""
    data = read_json(path, "mac_human_decision")
    if not isinstance(data, dict):
        raise _fail(path, "top level", "must be a JSON object with keys "
                    + ", ".join(KEYS))
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise _fail(path, f"key '{unknown[0]}'", f"unknown (valid: {', '.join(KEYS)})")
    return Decisions(path, _sections(path, data.get("sections", [])),
                     _placement(path, data.get("placement", {})),
                     *_model_parallel(path, data.get("model_parallel", [])))


def _sections(path: str, items: Any) -> tuple[SectionDecision, ...]:
    if not isinstance(items, list):
        raise _fail(path, "sections", "must be a list of {name, ops} objects")
    found: list[SectionDecision] = []
    names: set[str] = set()
    for i, item in enumerate(items):
        where = f"sections[{i}]"
        if not isinstance(item, dict) or set(item) != {"name", "ops"}:
            raise _fail(path, where, f"an entry has exactly the keys name, ops; got {item!r}")
        name, ops = item["name"], item["ops"]
        if not isinstance(name, str) or not name or not name.replace("_", "a").replace(
                ".", "a").isalnum():
            raise _fail(path, where, f"name must be a word (letters, digits, _ and .), got "
                                     f"{name!r}")
        if name in names:
            raise _fail(path, where, f"name '{name}' is used twice")
        if not isinstance(ops, list) or not ops or not all(isinstance(o, str) and o
                                                           for o in ops):
            raise _fail(path, where, "ops must be a non-empty list of operator labels "
                                     "(kind:origin, as sections.json lists them) or patterns")
        names.add(name)
        found.append(SectionDecision(name, tuple(ops), where))
    return tuple(found)


def _placement(path: str, items: Any) -> dict[str, int]:
    if not isinstance(items, dict):
        raise _fail(path, "placement", "must be an object {section: chip}")
    for name, chip in items.items():
        if isinstance(chip, bool) or not isinstance(chip, int) or chip < 0:
            raise _fail(path, f"placement['{name}']", f"chip must be an int >= 0, got "
                                                      f"{chip!r}")
    return dict(items)


def _model_parallel(path: str, items: Any) -> tuple[tuple[tuple[str, int], ...], bool]:
    if items == "auto":
        return (), True
    if not isinstance(items, list):
        raise _fail(path, "model_parallel", "must be \"auto\" or a list of {section, ways}")
    found = []
    for i, item in enumerate(items):
        where = f"model_parallel[{i}]"
        if not isinstance(item, dict) or set(item) != {"section", "ways"}:
            raise _fail(path, where, f"an entry has exactly the keys section, ways; got "
                                     f"{item!r}")
        ways = item["ways"]
        if isinstance(ways, bool) or not isinstance(ways, int) or not 2 <= ways <= 8:
            raise _fail(path, where, f"ways must be an int from 2 to 8, got {ways!r}")
        if not isinstance(item["section"], str):
            raise _fail(path, where, "section must be a section name")
        found.append((item["section"], ways))
    return tuple(found), False


# -- applying -----------------------------------------------------------------------------
def for_phase(name: str, phase: str | None) -> str | None:
    """`name` without its phase prefix if it applies to `phase`, else None."""
    head, dot, rest = name.partition(".")
    if dot and head in ("forward", "backward", "grad_norm", "optimizer", "allreduce"):
        return rest if phase is not None and head == phase else None
    return name


def claim(decisions: Decisions, labels: list[str], phase: str | None
          ) -> list[tuple[str, list[int], str]]:
    """(name, operator indices, where) of each section decision that matches some of the
    operators' `labels` (`unmatched` reports the ones that match nothing anywhere)."""
    owner: dict[int, str] = {}
    found = []
    for entry in decisions.sections:
        name = for_phase(entry.name, phase)
        if name is None:
            continue
        members = [i for i, label in enumerate(labels)
                   if any(label == p or fnmatch.fnmatchcase(label, p) for p in entry.ops)]
        if not members:
            continue
        for i in members:
            if i in owner:
                raise decisions.error(entry.where, f"operator {labels[i]} is already in "
                                                   f"section '{owner[i]}'")
            owner[i] = name
        found.append((name, members, entry.where))
    return found


def unmatched(decisions: Decisions, matched: set[str], labels: list[str]) -> None:
    """Error for the first section decision that matched no operator of the module."""
    for entry in decisions.sections:
        if entry.where not in matched:
            sample = ", ".join(labels[:4]) + (", ..." if len(labels) > 4 else "")
            raise decisions.error(entry.where, f"ops {list(entry.ops)} match no operator of "
                                               f"the model (operators: {sample})")
