"""The RDU architecture table: compute (PCU) and memory (PMU) units and on-chip SRAM per chip.

Sources and assumptions, number by number:

- `sn10`: 640 PCUs, 640 PMUs, 320 MB on-chip SRAM. Published (SambaNova's SN10 RDU
  disclosures).
- `sn40l`: 1040 PCUs, 1040 PMUs, 520 MB on-chip SRAM. Published (SambaNova's SN40L paper,
  2024).
- `sn20`: ASSUMED 640 PCUs, 640 PMUs, 320 MB, i.e. taken equal to `sn10`; `--arch=sn20` is a
  documented SambaFlow target but no unit counts for it were found.
- `sn30`: ASSUMED 1280 PCUs, 1280 PMUs, 640 MB, i.e. two `sn10`-class dies; no published unit
  counts were found.

`Arch.assumed` names the fields of each entry whose value is assumed rather than published, so
reports built on the table can say so.

Resource scaling follows SambaFlow's `--resources-scaling-factors`: 3 floats scale the
forward, backward and optimizer graphs; 4 floats scale forward, backward, gradient
normalization and optimizer. A section of a phase may use `floor(units * factor)` units.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Phases a section belongs to (SambaFlow compiles forward, backward and optimizer graphs).
PHASES: tuple[str, ...] = ("forward", "backward", "optimizer")
#: Position of each phase's factor in a 3- or 4-float `--resources-scaling-factors` list.
_SCALING_INDEX: dict[int, dict[str, int]] = {
    3: {"forward": 0, "backward": 1, "optimizer": 2},
    4: {"forward": 0, "backward": 1, "optimizer": 3},  # index 2: gradient normalization
}


@dataclass(frozen=True)
class Arch:
    """One RDU target: units per chip and on-chip SRAM."""

    name: str
    pcus: int
    pmus: int
    sram_mb: int
    #: Fields whose value is assumed, not published (empty: every number is published).
    assumed: tuple[str, ...] = ()

    def units(self, resource: str) -> int:
        """Units of `resource` ('pcus' or 'pmus') on one chip."""
        if resource not in ("pcus", "pmus"):
            raise KeyError(f"unknown RDU resource '{resource}' (known: pcus, pmus)")
        return self.pcus if resource == "pcus" else self.pmus


ARCHS: dict[str, Arch] = {
    "sn10": Arch("sn10", pcus=640, pmus=640, sram_mb=320),
    "sn20": Arch("sn20", pcus=640, pmus=640, sram_mb=320, assumed=("pcus", "pmus", "sram_mb")),
    "sn30": Arch("sn30", pcus=1280, pmus=1280, sram_mb=640, assumed=("pcus", "pmus", "sram_mb")),
    "sn40l": Arch("sn40l", pcus=1040, pmus=1040, sram_mb=520),
}


def lookup_arch(name: str) -> Arch | None:
    """The table entry for `name` (SambaFlow's lower-case spelling: 'sn10', 'sn40l')."""
    return ARCHS.get(name)


def scaling_error(factors: Sequence[float]) -> str | None:
    """Why `factors` is not a valid scaling list, or None."""
    if len(factors) not in _SCALING_INDEX:
        return f"needs 3 or 4 scaling factors, got {len(factors)}"
    bad = [f for f in factors if not 0.0 < f <= 1.0]
    if bad:
        return f"scaling factors must lie in (0, 1], got {bad[0]:g}"
    return None


def scaling_for(phase: str, factors: Sequence[float] | None) -> float:
    """The factor that applies to sections of `phase` (1.0 without a scaling list)."""
    if not factors:
        return 1.0
    return float(factors[_SCALING_INDEX[len(factors)][phase]])


def resource_limit(arch: Arch, resource: str, phase: str,
                   factors: Sequence[float] | None = None) -> int:
    """Units of `resource` a section of `phase` may occupy: floor(units * factor)."""
    return math.floor(arch.units(resource) * scaling_for(phase, factors) + 1e-9)


__all__ = ["ARCHS", "PHASES", "Arch", "lookup_arch", "resource_limit", "scaling_error",
           "scaling_for"]
