"""Compiling for the RDU: sectioning, placement on chips, and the emulated program.

`compile_program(module_text, options, weights)`:

1. parse the linalg-on-tensors module (each op's torch operator in its location, see
   `accel.frontend.provenance`);
2. `rdu-sectioning` (level from the preset: o0, o1 with a rule list, o3) and, when on,
   `rdu-hypersection`; the module-wide `rdu` verifier then checks every section against
   the chip times the scaling factor;
3. read the sections back (name, index, phase, operators, PCUs, PMUs, estimated time,
   hypersection; a hypersection instance as the sections of its body, each marked with
   the instance and whether it reuses the body compiled for an earlier one), split GEMMs
   with `--model-parallel`, and place them on `n_chips` chips (`placement.py`: the
   pipeline partition minimising the slowest chip, tensors crossing chips costed over the
   chip link);
4. outline every section body (a hypersection's once) into a function and compile the
   result with the CPU target: the entry runs the sections in order, each through its own
   compiled function, so numerics are PyTorch's up to the CPU target's rounding.

The `RduProgram` it returns is the executable `CompiledModule` calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.dialects.rdu_arch import Arch, lookup_arch, parse_scaling_factors, resource_limit
from accel.targets.rdu.schedule import Section  # noqa: F401 - re-exported: the section record

#: Options of the CPU target the emulation is compiled with (the rest are the RDU's).
CPU_OPTIONS = ("opt_level", "cache", "mm_conv_precision_mode", "float_dtype")


@dataclass
class RduProgram:
    """A sectioned program: its description and the host code that emulates it."""

    emulation: Any                     # CompiledMLIR of the outlined program
    arch: Arch
    limits: dict[str, Any]
    sections: list[Section]
    hypersections: dict[str, list[str]]
    sectioned_ir: str
    emulation_ir: str
    options: dict[str, Any] = field(default_factory=dict)
    #: The artifact's name (accel-compile's --pef-name): the PEF file is `<name>.pef`.
    artifact_name: str | None = None
    #: Per-chip loads and the pipeline's figures (placement.pipeline).
    pipeline: dict[str, Any] = field(default_factory=dict)
    #: hypersection -> its body's section names (compiled once).
    bodies: dict[str, list[str]] = field(default_factory=dict)

    @property
    def functions(self) -> Mapping[str, Any]:
        return {n: s for n, s in self.emulation.functions.items() if not n.startswith("rdu_")}

    @property
    def weights(self) -> Mapping[str, np.ndarray]:
        return self.emulation.weights

    def __getitem__(self, name: str) -> Any:
        if name not in self.functions:
            raise ValueError(f"no public function @{name}; available: "
                             f"{', '.join('@' + n for n in self.functions) or 'none'}")
        return self.emulation[name]

    def hypersections_json(self) -> list[dict[str, Any]]:
        """Each hypersection: its instances (`members`), the body's sections (compiled
        once) and how many section compiles reusing them saved."""
        found = []
        for name, members in self.hypersections.items():
            body = self.bodies.get(name, [])
            found.append({"name": name, "instances": len(members), "members": members,
                          "body": body, "compiled_sections": len(body),
                          "reused_sections": len(body) * (len(members) - 1)})
        return found

    def sections_json(self) -> dict[str, Any]:
        return {"arch": self.arch.name, "arch_limits": self.limits,
                "sections": [s.to_json() for s in self.sections],
                "hypersections": self.hypersections_json(),
                "total_est_us": round(total_us(self.sections), 4),
                "pipeline": self.pipeline}


def total_us(sections: list[Section]) -> float:
    """Estimated time of one run: sections run one after another (plus transfers)."""
    return sum(s.est_us + s.transfer_us for s in sections)


def arch_limits(arch: Arch, factors: tuple[float, ...] | None,
                phase: str = "forward") -> dict[str, Any]:
    return {"pcu": arch.pcus, "pmu": arch.pmus, "sram_mb": arch.sram_mb,
            "peak_tflops": arch.peak_tflops, "dram_gbps": arch.dram_gbps,
            "clock_ghz": arch.clock_ghz, "link_gbps": arch.link_gbps,
            "assumed": list(arch.assumed), "sources": dict(arch.sources),
            "scaling_factors": list(factors) if factors else None,
            "phase": phase,
            "section_pcu_limit": resource_limit(arch, "pcus", phase, factors),
            "section_pmu_limit": resource_limit(arch, "pmus", phase, factors)}


def _hypersections_on(options: Mapping[str, Any]) -> bool:
    value = options.get("enable_hypersection")
    return options["sectioning"] in ("o0", "o1") if value is None else bool(value)


def compile_program(module_text: str, options: Mapping[str, Any],
                    weights: Mapping[str, np.ndarray] | None) -> RduProgram:
    from accel import phases
    from accel.context import make_context
    from accel.host.compile import compile_mlir
    from accel.ir import enable_torch_mlir_extensions, load_torch_dialects
    from accel.passes.rdu import sections as sec
    from accel.passes.rdu.sectioning import Hypersections, Sectioning
    from accel.pipeline import RunConfig, run_passes
    from accel.targets.rdu.schedule import read_schedule

    arch = lookup_arch(options["arch"])
    if arch is None:
        raise AccelError(f"unknown RDU architecture {options['arch']!r}")
    raw = options.get("resources_scaling_factors")
    factors = parse_scaling_factors(raw) if raw is not None else None
    filename = options.get("filename", "<input>")
    hyper = _hypersections_on(options)
    # Compiled training passes each phase graph's name and outputs (accel.training.compile):
    # its sections carry the phase, and the optimizer's norm computation is `grad_norm`.
    phase = options.get("graph_phase") or "forward"
    outputs = list(options.get("graph_outputs") or ())
    n_chips = int(options.get("n_chips", 1))
    legacy = bool(options.get("mac_v2"))
    passes: list[object] = [Sectioning(
        level=options["sectioning"], rule_list=options["o1_rule_list"], arch=arch.name,
        scaling=",".join(f"{f:g}" for f in factors) if factors else "",
        nlp=options.get("compiler_mode") == "nlp", hypersections=hyper, phase=phase,
        norm_result=outputs.index("grad_norm") if "grad_norm" in outputs else -1,
        stages=1 if legacy else n_chips, decisions=options.get("mac_human_decision") or "",
        train_phase=bool(options.get("graph_phase")),
        spatial_batches=int(options.get("num_spatial_batches") or 1), legacy=legacy)]
    if hyper:
        passes.append(Hypersections())
    enable_torch_mlir_extensions()
    with make_context() as ctx:
        load_torch_dialects(ctx)
        if isinstance(module_text, str):
            from accel.safe_parse import parse_module

            module = parse_module(module_text, filename)
        else:
            module = module_text
        # verify_each=False: IRDL makes every value of a variadic group share one type, so
        # rdu.section ops with operands of different types do not pass the IRDL verifier
        # (docs/rdu.md, "Limits"); the rdu module verifier (resources, indices,
        # hypersections) still runs, and the outlined program is verified by the CPU target.
        with phases.phase("rdu-sections"):
            run_passes(module, passes, RunConfig(filename=filename, reproducer=False,
                                                 verify_each=False))
            sectioned_ir = module.operation.get_asm(enable_debug_info=False,
                                                    assume_verified=True)
            schedule = read_schedule(module.operation)
        with phases.phase("rdu-place"):
            sections, pipeline = place(schedule, arch, options)
        phases.snapshot("rdu-sections", sectioned_ir)
        with phases.phase("rdu-outline"), module.operation.location:
            sec.outline(module.operation)
            emulation_ir = module.operation.get_asm(enable_debug_info=False,
                                                    assume_verified=True)
            # Compiled with locations, so a CPU diagnostic points at the user's source.
            located_ir = module.operation.get_asm(enable_debug_info=True,
                                                  assume_verified=True)
        phases.snapshot("rdu-outline", emulation_ir)
    from accel.settings import host_settings

    emulation = compile_mlir(located_ir, host_settings(options, *CPU_OPTIONS, filename=filename),
                             weights=weights)
    return RduProgram(emulation, arch, arch_limits(arch, factors, phase), sections,
                      schedule.hypersections, sectioned_ir, emulation_ir,
                      _json_options(options), pipeline=pipeline, bodies=schedule.bodies)


def _json_options(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items()
            if v is None or isinstance(v, bool | int | float | str | list | tuple)}


def place(schedule: Any, arch: Arch, options: Mapping[str, Any]
          ) -> tuple[list[Section], dict[str, Any]]:
    """Split the human decisions' GEMMs (--model-parallel) and place the schedule on
    `n_chips` chips (the optimal pipeline partition; greedy with --mac-v2); returns the
    sections with their chips and transfers, and the pipeline's figures."""
    import warnings

    from accel.targets.rdu import placement

    sections, edges = list(schedule.sections), list(schedule.edges)
    n_chips = int(options.get("n_chips", 1))
    train = options.get("graph_phase") or None
    decisions = None
    if options.get("mac_human_decision"):
        from accel.passes.rdu.decisions import load

        decisions = load(options["mac_human_decision"])
    pins: dict[int, int] = {}
    if decisions is not None:
        pins = placement.pins_of(sections, decisions, n_chips, train)
        if options.get("model_parallel"):
            wanted = placement.model_parallel_plan(sections, decisions, n_chips, train)
            sections, edges, remap = placement.split_gemms(sections, edges, wanted, arch)
            pins = {new: chip for old, chip in pins.items() for new in remap[old]}
    if 0 < len(sections) < n_chips:
        warnings.warn(f"rdu: {len(sections)} section(s) cannot fill {n_chips} chips: "
                      f"placed on {len(sections)}", stacklevel=2)
    per_byte = placement.link_us_per_byte(arch)
    times = [s.est_us for s in sections]
    if options.get("mac_v2") and not pins:
        chip_of, method = placement.greedy(times, n_chips), "greedy (--mac-v2)"
    else:
        chip_of = placement.partition(times, edges, n_chips, per_byte, pins)
        method = "optimal pipeline partition" + (" with pins" if pins else "")
    xfer = placement.transfers(chip_of, edges, per_byte)
    for s, chip, t in zip(sections, chip_of, xfer, strict=True):
        s.chip, s.transfer_us = chip, t
    return sections, placement.pipeline(sections, n_chips, method)
