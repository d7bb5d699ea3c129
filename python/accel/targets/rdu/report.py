"""The human-readable summary of an RDU program (compile.log, `Target.report`)."""

from __future__ import annotations

from typing import Any

from accel.targets.rdu.program import total_us


def summary(program: Any) -> str:
    arch, limits = program.arch, program.limits
    assumed = ", ".join(arch.assumed) or "none"
    scaling = limits.get("scaling_factors")
    lines = [
        f"rdu: arch {arch.name}: {arch.pcus} PCUs, {arch.pmus} PMUs, {arch.sram_mb} MB SRAM, "
        f"{arch.peak_tflops:g} TFLOPS, DRAM {arch.dram_gbps:g} GB/s (ASSUMED: {assumed})",
        f"rdu: a section may use {limits.get('section_pcu_limit')} PCUs and "
        f"{limits.get('section_pmu_limit')} PMUs"
        + (f" (resources scaling factors {' '.join(f'{f:g}' for f in scaling)})"
           if scaling else ""),
        f"rdu: {len(program.sections)} sections, {len(program.hypersections)} hypersections, "
        f"estimated {total_us(program.sections):.2f} us per run "
        f"on {1 + max((s.chip for s in program.sections), default=0)} chip(s)",
        "rdu:  index name                         phase    chip  PCU  PMU   est_us  ops",
    ]
    for s in program.sections:
        ops = ", ".join(s.ops[:4]) + (f", ... ({len(s.ops)})" if len(s.ops) > 4 else "")
        name = s.name + (f" -> @{s.hypersection}" if s.hypersection else "")
        lines.append(f"rdu: {s.index:6d} {name:28.28s} {s.phase:8s} {s.chip:4d} {s.pcu:4d} "
                     f"{s.pmu:4d} {s.est_us + s.transfer_us:8.2f}  {ops}")
    chips = sorted({s.chip for s in program.sections})
    if len(chips) > 1:
        times = {c: sum(s.est_us + s.transfer_us for s in program.sections if s.chip == c)
                 for c in chips}
        for c in chips:
            count = sum(1 for s in program.sections if s.chip == c)
            lines.append(f"rdu: chip {c}: {count} sections, {times[c]:.2f} us")
        lines.append(f"rdu: pipelined over {len(chips)} chips: one input every "
                     f"{max(times.values()):.2f} us")
    for name, members in program.hypersections.items():
        lines.append(f"rdu: hypersection @{name}: {len(members)} instances "
                     f"({', '.join(members)}), compiled once")
    return "\n".join(lines)
