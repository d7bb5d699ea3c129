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

Performance numbers (the cost model of `accel.passes.rdu.cost` reads them):

- `peak_tflops` (BF16, per chip): sn10 320 (Hot Chips 33, 2021: "> 320"), sn40l 638 (Hot Chips
  2024 SN40L talk, slide 2); sn30 640 derived as two sn10 dies (The Next Platform, 2022:
  "about twice SN10's resources"), so ASSUMED; sn20 ASSUMED equal to sn10.
- `dram_gbps`, the off-chip bandwidth sections exchange tensors through: sn40l 1600 GB/s HBM
  ASSUMED (the HC2024 slide 3 "1600 GB/s" figure, unconfirmed as per-socket HBM); sn10 and
  sn20 154 GB/s ASSUMED (6 DDR4 channels, ISSCC 2022, at an assumed DDR4-3200: 6 x 25.6);
  sn30 307 GB/s ASSUMED (two sn10 dies).
- `clock_ghz`: not published for any RDU; ASSUMED 1.0 GHz (Plasticine, ISCA 2017, ran at
  1 GHz).
- `link_gbps`, chip-to-chip bandwidth for `--n-chips` (the placement's transfer cost): not
  published for any RDU (hardware-facts.md lists none); ASSUMED 100 GB/s.

`Arch.sources` gives each number's source (or says ASSUMED) in words, so sections.json and
compile.log can cite it.

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

#: Phases a section belongs to. SambaFlow compiles forward, backward and optimizer graphs;
#: accel also labels the gradient all-reduce of data-parallel training (`allreduce`) and,
#: with gradient clipping, the total-norm computation (`grad_norm`: SambaFlow's "gradient
#: normalization" graph, the third of four scaling factors).
PHASES: tuple[str, ...] = ("forward", "backward", "allreduce", "grad_norm", "optimizer")
#: Position of each phase's factor in a 3- or 4-float `--resources-scaling-factors` list.
#: The all-reduce sums gradients as the backward graph's last step: the backward factor.
#: Without a gradient-normalization factor (3 floats), its sections take the optimizer's.
_SCALING_INDEX: dict[int, dict[str, int]] = {
    3: {"forward": 0, "backward": 1, "allreduce": 1, "grad_norm": 2, "optimizer": 2},
    4: {"forward": 0, "backward": 1, "allreduce": 1, "grad_norm": 2, "optimizer": 3},
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
    peak_tflops: float = 320.0
    dram_gbps: float = 154.0
    clock_ghz: float = 1.0
    link_gbps: float = 100.0
    #: Field -> where its value comes from (a publication, "derived: ...", or "ASSUMED: ...").
    sources: tuple[tuple[str, str], ...] = ()

    def units(self, resource: str) -> int:
        """Units of `resource` ('pcus' or 'pmus') on one chip."""
        if resource not in ("pcus", "pmus"):
            raise KeyError(f"unknown RDU resource '{resource}' (known: pcus, pmus)")
        return self.pcus if resource == "pcus" else self.pmus


#: Not published for any RDU (see the module docstring): ASSUMED everywhere.
_ALWAYS_ASSUMED = ("clock_ghz", "link_gbps")

_COMMON_SOURCES = (
    ("clock_ghz", "ASSUMED 1 GHz: not published for any RDU (Plasticine, ISCA 2017, ran at "
                  "1 GHz)"),
    ("link_gbps", "ASSUMED 100 GB/s: no chip-to-chip bandwidth is published"),
)
_SN10_SOURCES = (
    ("pcus", "Hot Chips 33 (2021); ISSCC 2022 'SambaNova SN10 RDU'"),
    ("pmus", "Hot Chips 33 (2021); ISSCC 2022"), ("sram_mb", "Hot Chips 33 (2021)"),
    ("peak_tflops", "Hot Chips 33 (2021): > 320 BF16 TFLOPS"),
    ("dram_gbps", "ASSUMED: 6 DDR4 channels (ISSCC 2022) at DDR4-3200 (6 x 25.6 GB/s)"),
)
ARCHS: dict[str, Arch] = {
    "sn10": Arch("sn10", pcus=640, pmus=640, sram_mb=320, peak_tflops=320.0, dram_gbps=154.0,
                 assumed=("dram_gbps", *_ALWAYS_ASSUMED),
                 sources=(*_SN10_SOURCES, *_COMMON_SOURCES)),
    "sn20": Arch("sn20", pcus=640, pmus=640, sram_mb=320, peak_tflops=320.0, dram_gbps=154.0,
                 assumed=("pcus", "pmus", "sram_mb", "peak_tflops", "dram_gbps",
                          *_ALWAYS_ASSUMED),
                 sources=(*((k, "ASSUMED equal to sn10: nothing about SN20 is published")
                            for k in ("pcus", "pmus", "sram_mb", "peak_tflops", "dram_gbps")),
                          *_COMMON_SOURCES)),
    "sn30": Arch("sn30", pcus=1280, pmus=1280, sram_mb=640, peak_tflops=640.0,
                 dram_gbps=307.0, assumed=("pcus", "pmus", "sram_mb", "peak_tflops",
                                           "dram_gbps", *_ALWAYS_ASSUMED),
                 sources=(*((k, "ASSUMED 2 x sn10: 'two SN10-class dies' (The Next Platform, "
                                "2022), no unit counts published")
                            for k in ("pcus", "pmus", "sram_mb", "peak_tflops", "dram_gbps")),
                          *_COMMON_SOURCES)),
    "sn40l": Arch("sn40l", pcus=1040, pmus=1040, sram_mb=520, peak_tflops=638.0,
                  dram_gbps=1600.0, assumed=("dram_gbps", *_ALWAYS_ASSUMED),
                  sources=(("pcus", "Prabhakar, Hot Chips 2024 SN40L talk, slides 2 and 4"),
                           ("pmus", "Hot Chips 2024, slides 2 and 4"),
                           ("sram_mb", "Hot Chips 2024, slide 2: 520 MB on-chip SRAM"),
                           ("peak_tflops", "Hot Chips 2024, slide 2: 638 BF16 TFLOPS"),
                           ("dram_gbps", "ASSUMED 1600 GB/s HBM: Hot Chips 2024 slide 3's "
                                         "'1600 GB/s', unconfirmed as per-socket HBM"),
                           *_COMMON_SOURCES)),
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


def parse_scaling_factors(value: object) -> tuple[float, ...]:
    """`--resources-scaling-factors` as floats: a list, or text like '1 0.8 0.8' / '1,0.8,0.8'.
    Raises ValueError for anything that is not numbers."""
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or any(isinstance(x, bool) for x in items):
        raise ValueError("scaling factors must be numbers")
    try:
        return tuple(float(x) for x in items)
    except (TypeError, ValueError):
        raise ValueError("scaling factors must be numbers") from None


def scaling_factors_error(value: object) -> str | None:
    """Why `value` is not a valid `--resources-scaling-factors` setting, or None."""
    try:
        factors = parse_scaling_factors(value)
    except ValueError as err:
        return str(err)
    if len(factors) not in _SCALING_INDEX:
        return (f"needs 3 floats (forward, backward, optimizer) or 4 (forward, backward, "
                f"gradient normalisation, optimizer), not {len(factors)}")
    return scaling_error(factors)


def scaling_for(phase: str, factors: Sequence[float] | None) -> float:
    """The factor that applies to sections of `phase` (1.0 without a scaling list)."""
    if not factors:
        return 1.0
    return float(factors[_SCALING_INDEX[len(factors)][phase]])


def resource_limit(arch: Arch, resource: str, phase: str,
                   factors: Sequence[float] | None = None) -> int:
    """Units of `resource` a section of `phase` may occupy: floor(units * factor)."""
    return math.floor(arch.units(resource) * scaling_for(phase, factors) + 1e-9)


__all__ = ["ARCHS", "PHASES", "Arch", "lookup_arch", "parse_scaling_factors", "resource_limit",
           "scaling_error", "scaling_factors_error", "scaling_for"]
