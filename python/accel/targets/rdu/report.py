"""The human-readable summary of an RDU program (compile.log, `Target.report`)."""

from __future__ import annotations

from typing import Any

from accel.targets.rdu.program import total_us


def summary(program: Any) -> str:
    arch, limits = program.arch, program.limits
    assumed = ", ".join(arch.assumed) or "none"
    scaling = limits.get("scaling_factors")
    chips = 1 + max((s.chip for s in program.sections), default=0)
    lines = [
        f"rdu: arch {arch.name}: {arch.pcus} PCUs, {arch.pmus} PMUs, {arch.sram_mb} MB SRAM, "
        f"{arch.peak_tflops:g} TFLOPS, DRAM {arch.dram_gbps:g} GB/s, chip link "
        f"{arch.link_gbps:g} GB/s (ASSUMED: {assumed})",
        f"rdu: a section may use {limits.get('section_pcu_limit')} PCUs and "
        f"{limits.get('section_pmu_limit')} PMUs"
        + (f" (resources scaling factors {' '.join(f'{f:g}' for f in scaling)})"
           if scaling else ""),
        f"rdu: {len(program.sections)} sections, {len(program.hypersections)} hypersections, "
        f"estimated {total_us(program.sections):.2f} us per run on {chips} chip(s)",
        "rdu:  index name                         phase    chip  PCU  PMU   est_us  ops",
    ]
    for s in program.sections:
        ops = ", ".join(s.ops[:4]) + (f", ... ({len(s.ops)})" if len(s.ops) > 4 else "")
        name = s.name if len(s.name) <= 28 else s.name[:27] + "~"
        where = f"  [@{s.hypersection} {s.instance}: {s.body}" \
            + (", reused]" if s.reused else ", compiled]") if s.hypersection else ""
        lines.append(f"rdu: {s.index:6d} {name:28s} {s.phase:8s} {s.chip:4d} {s.pcu:4d} "
                     f"{s.pmu:4d} {s.est_us + s.transfer_us:8.2f}  {ops}{where}")
    lines += chip_lines(program.pipeline)
    for h in program.hypersections_json():
        lines.append(f"rdu: hypersection @{h['name']}: {h['instances']} instances "
                     f"({', '.join(h['members'])}) of {h['compiled_sections']} sections, "
                     f"compiled once: {h['reused_sections']} section compiles reused")
    return "\n".join(lines)


def chip_lines(pipeline: dict[str, Any]) -> list[str]:
    """Per-chip loads and the pipeline's throughput (empty for one chip)."""
    if not pipeline or pipeline.get("n_chips", 1) <= 1:
        return []
    lines = [f"rdu: placement over {pipeline['n_chips']} chips ({pipeline['placement']}):"]
    for c in pipeline["chips"]:
        lines.append(f"rdu: chip {c['chip']}: {c['sections']} sections, {c['load_us']:.2f} us "
                     f"compute + {c['transfer_us']:.2f} us transfers = {c['stage_us']:.2f} us")
    lines.append(f"rdu: pipelined over {pipeline['chips_used']} chips: one input every "
                 f"{pipeline['bottleneck_us']:.2f} us ({pipeline['throughput_per_s']:g} "
                 f"inputs/s; one chip: {pipeline['one_chip_us']:.2f} us, speedup "
                 f"{pipeline['speedup']:g}x; latency {pipeline['latency_us']:.2f} us)")
    return lines
