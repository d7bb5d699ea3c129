"""Catalogue of the upstream MLIR passes (and pass pipelines) the bindings' PassManager knows.

The bindings have no API to enumerate registered passes, so `accel-opt --list-passes` reads a
catalogue generated once from the installed bindings and checked in as a Python literal
(`accel/upstream_passes.json`; regenerate with `python -m accel._gen_upstream_passes`).

Why checked-in data rather than a lazily built cache: the bindings are pinned to one exact
version (pyproject), so the data changes only with the pin, and a reviewable diff then shows
what changed; building it takes about two minutes of probing (far too slow for a first
`--list-passes`) and reads the pass registry through `ctypes`, which belongs in a tool, not in
every CLI run; a `.py` literal needs no package-data configuration and loads in milliseconds
without importing the bindings. `catalogue_is_current()` tells whether the installed bindings
still match the version the catalogue was generated from.

Every entry parses in the bindings' PassManager (validated when generated and by the unit
tests). Summaries are the registry's own strings; an entry without one shows `NO_SUMMARY`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

#: Upstream passes that crash (or have crashed) on some inputs even with valid options:
#: `accel.pass_run` runs them in a forked child (`accel.isolation`). Option values known to
#: crash passes are refused earlier (`accel.upstream_checks.LIMITS`).
FRAGILE_PASSES = frozenset({
    "affine-loop-fusion",  # llvm-project issues 212046, 212048
    "affine-loop-tile",
    "affine-loop-unroll-jam",
    "convert-to-llvm",  # nested under func.func it replaces the op it runs on: SIGSEGV
    "linalg-block-pack-matmul",
})

#: Options whose value is a pass pipeline, which the pass builds when it runs (a pipeline
#: that fails to build there aborts the process, or is reported and skipped): such elements
#: are checked by accel's pipeline parser and run isolated too.
PIPELINE_OPTIONS = {"inline": ("default-pipeline", "op-pipelines"),
                    "composite-fixed-point-pass": ("pipeline",)}

#: Shown in place of a summary the generator could not determine reliably.
NO_SUMMARY = "(upstream pass; no summary available)"


@dataclass(frozen=True)
class UpstreamPassOption:
    """One option of an upstream pass.

    `default` is the value `str(PassManager)` prints ("" for an empty string or list), None
    when unknown (pipeline options). `type` is one of "bool", "int", "uint" (32-bit),
    "int64", "uint64", "float", "string", "enum", "list", "pipeline" (a textual pass
    pipeline), or None when unknown.
    """

    name: str
    default: str | None
    type: str | None


@dataclass(frozen=True)
class UpstreamPass:
    """An upstream pass or pass pipeline, as registered in the bindings.

    `anchor` is the op the pass is restricted to (e.g. "func.func", "builtin.module",
    "gpu.module"), None for an op-agnostic pass (which includes interface passes);
    pipelines report "builtin.module", where they were validated.
    """

    name: str
    summary: str
    options: tuple[UpstreamPassOption, ...]
    anchor: str | None
    pipeline: bool = False

    @property
    def has_summary(self) -> bool:
        """Whether `summary` is the pass's real summary (not the `NO_SUMMARY` fallback)."""
        return self.summary != NO_SUMMARY


@cache
def _data() -> dict[str, Any]:
    import json
    from importlib import resources

    return json.loads(resources.files("accel").joinpath("upstream_passes.json")
                      .read_text(encoding="utf-8"))


@cache
def _catalogue() -> dict[str, UpstreamPass]:
    entries = (
        UpstreamPass(name=name, summary=summary or NO_SUMMARY,
                     options=tuple(UpstreamPassOption(*o) for o in options),
                     anchor=anchor, pipeline=pipeline)
        for name, summary, anchor, pipeline, options in _data()["passes"]
    )
    return {p.name: p for p in sorted(entries, key=lambda p: p.name)}


def upstream_passes() -> list[UpstreamPass]:
    """Every upstream pass and pipeline the bindings register, sorted by name."""
    return list(_catalogue().values())


def is_upstream_pass(name: str) -> bool:
    """Whether `name` is a registered upstream pass or pass pipeline."""
    return name in _catalogue()


def get_upstream_pass(name: str) -> UpstreamPass | None:
    """The catalogue entry for `name`, or None."""
    return _catalogue().get(name)


def is_fragile(name: str, options: str | None = None) -> bool:
    """Whether upstream pass `name` with option text `options` must run isolated
    (`FRAGILE_PASSES`, or an option holding a pipeline: `PIPELINE_OPTIONS`)."""
    return name in FRAGILE_PASSES or holds_pipeline(name, options)


def holds_pipeline(name: str, options: str | None) -> bool:
    """Whether `options` (a pass's option text) sets an option that holds a pipeline."""
    import re

    keys = PIPELINE_OPTIONS.get(name, ())
    return bool(options) and any(re.search(rf"(?:^|\s){k}\s*=", options or "") for k in keys)


def catalogue_version() -> tuple[str, str]:
    """(provider, version) of the bindings the catalogue was generated from."""
    return _data()["provider"], _data()["provider_version"]


def catalogue_is_current() -> bool:
    """Whether the installed bindings are the version the catalogue was generated from."""
    from importlib.metadata import PackageNotFoundError, version

    provider, generated = catalogue_version()
    try:
        return version(provider) == generated
    except PackageNotFoundError:
        return False


__all__ = [
    "FRAGILE_PASSES",
    "NO_SUMMARY",
    "PIPELINE_OPTIONS",
    "UpstreamPass",
    "UpstreamPassOption",
    "catalogue_is_current",
    "catalogue_version",
    "get_upstream_pass",
    "holds_pipeline",
    "is_fragile",
    "is_upstream_pass",
    "upstream_passes",
]
