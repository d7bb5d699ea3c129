"""Compiling for the RDU: sectioning, placement on chips, and the emulated program.

`compile_program(module_text, options, weights)`:

1. parse the linalg-on-tensors module (each op's torch operator in its location, see
   `accel.frontend.provenance`);
2. `rdu-sectioning` (level from the preset: o0, o1 with a rule list, o3) and, when on,
   `rdu-hypersection`; the module-wide `rdu` verifier then checks every section against
   the chip times the scaling factor;
3. read the sections back (name, index, phase, operators, PCUs, PMUs, estimated time,
   hypersection) and place them on `n_chips` chips: contiguous pipeline stages balanced by
   estimated time, each tensor crossing chips costing a transfer over the chip link;
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

#: Options of the CPU target the emulation is compiled with (the rest are the RDU's).
CPU_OPTIONS = ("opt_level", "cache", "mm_conv_precision_mode", "float_dtype")


@dataclass
class Section:
    """One section as sections.json lists it."""

    name: str
    index: int
    phase: str
    ops: list[str]
    pcu: int
    pmu: int
    hypersection: str | None
    est_us: float
    chip: int = 0
    transfer_us: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "index": self.index, "phase": self.phase, "ops": self.ops,
                "pcu": self.pcu, "pmu": self.pmu, "hypersection": self.hypersection,
                "chip": self.chip, "est_us": round(self.est_us, 4),
                "transfer_us": round(self.transfer_us, 4)}


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

    def sections_json(self) -> dict[str, Any]:
        return {"arch": self.arch.name, "arch_limits": self.limits,
                "sections": [s.to_json() for s in self.sections],
                "hypersections": [{"name": n, "instances": len(v), "members": v}
                                  for n, v in self.hypersections.items()],
                "total_est_us": round(total_us(self.sections), 4)}


def total_us(sections: list[Section]) -> float:
    """Estimated time of one run: sections run one after another (plus transfers)."""
    return sum(s.est_us + s.transfer_us for s in sections)


def arch_limits(arch: Arch, factors: tuple[float, ...] | None,
                phase: str = "forward") -> dict[str, Any]:
    return {"pcu": arch.pcus, "pmu": arch.pmus, "sram_mb": arch.sram_mb,
            "peak_tflops": arch.peak_tflops, "dram_gbps": arch.dram_gbps,
            "clock_ghz": arch.clock_ghz, "link_gbps": arch.link_gbps,
            "assumed": list(arch.assumed),
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
    from accel.ir import enable_torch_mlir_extensions, load_torch_dialects
    from accel.passes.rdu import sections as sec
    from accel.passes.rdu.sectioning import Hypersections, Sectioning
    from accel.pipeline import RunConfig, run_passes
    from accel.targets.cpu.compile import compile_mlir

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
    passes: list[object] = [Sectioning(
        level=options["sectioning"], rule_list=options["o1_rule_list"], arch=arch.name,
        scaling=",".join(f"{f:g}" for f in factors) if factors else "",
        nlp=options.get("compiler_mode") == "nlp", hypersections=hyper, phase=phase,
        norm_result=outputs.index("grad_norm") if "grad_norm" in outputs else -1)]
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
            sections, hypers = read_sections(module.operation)
            place(sections, module.operation, arch, options.get("n_chips", 1))
        phases.snapshot("rdu-sections", sectioned_ir)
        with phases.phase("rdu-outline"), module.operation.location:
            sec.outline(module.operation)
            emulation_ir = module.operation.get_asm(enable_debug_info=False,
                                                    assume_verified=True)
            # Compiled with locations, so a CPU diagnostic points at the user's source.
            located_ir = module.operation.get_asm(enable_debug_info=True,
                                                  assume_verified=True)
        phases.snapshot("rdu-outline", emulation_ir)
    cpu = {k: options[k] for k in CPU_OPTIONS if k in options}
    emulation = compile_mlir(located_ir, {**cpu, "filename": filename}, weights=weights)
    return RduProgram(emulation, arch, arch_limits(arch, factors, phase), sections, hypers,
                      sectioned_ir, emulation_ir, _json_options(options))


def _json_options(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items()
            if v is None or isinstance(v, bool | int | float | str | list | tuple)}


def _attr(op: Any, name: str, default: Any = None) -> Any:
    return op.attributes[name].value if name in op.attributes else default


def read_sections(module: Any) -> tuple[list[Section], dict[str, list[str]]]:
    """The top-level sections of the entry functions, and hypersection -> instances."""
    from accel.passes.rdu import sections as sec

    top = module.regions[0].blocks[0]
    bodies = {_attr(op.operation, "sym_name"): op.operation for op in top.operations
              if op.operation.name == "rdu.hypersection"}
    found: list[Section] = []
    hypers: dict[str, list[str]] = {}
    for fn in top.operations:
        if fn.operation.name != "func.func" or not fn.operation.regions[0].blocks:
            continue
        for op in sec.sections_of(fn.operation.regions[0].blocks[0]):
            ref = op.attributes["hypersection"].value if "hypersection" in op.attributes \
                else None
            inner = sec.sections_of(bodies[ref].regions[0].blocks[0]) if ref else [op]
            ops = [str(a.value) for a in (op.attributes[sec.OPS_ATTR]
                                          if sec.OPS_ATTR in op.attributes else [])]
            est = sum(_attr(s, sec.EST_ATTR, 0.0) for s in inner)
            name = _attr(op, "sym_name")
            found.append(Section(name, _attr(op, "index", 0), _attr(op, "phase", "forward"),
                                 ops, _attr(op, "pcus", 0), _attr(op, "pmus", 0), ref, est))
            if ref:
                hypers.setdefault(ref, []).append(name)
    return found, hypers


def place(sections: list[Section], module: Any, arch: Arch, n_chips: int) -> None:
    """Cut the section sequence into `n_chips` contiguous stages of about equal estimated
    time; a tensor a section reads from a section on another chip costs a link transfer."""
    from accel.passes.rdu.operators import nbytes
    from accel.passes.rdu.sections import sections_of

    total = sum(s.est_us for s in sections) or 1.0
    chip, acc = 0, 0.0
    for s in sections:
        if chip < n_chips - 1 and acc >= total * (chip + 1) / n_chips:
            chip += 1
        s.chip = chip
        acc += s.est_us
    if n_chips == 1:
        return
    by_name = {s.name: s for s in sections}
    top = module.regions[0].blocks[0]
    for fn in top.operations:
        if fn.operation.name != "func.func" or not fn.operation.regions[0].blocks:
            continue
        for op in sections_of(fn.operation.regions[0].blocks[0]):
            me = by_name.get(_attr(op, "sym_name"))
            for value in op.operands:
                owner = value.owner
                src = owner.operation if hasattr(owner, "operation") else None
                if me is None or src is None or src.name != "rdu.section":
                    continue
                other = by_name.get(_attr(src, "sym_name"))
                if other is not None and other.chip != me.chip:
                    from accel.passes.rdu.cost import transfer_us

                    me.transfer_us += transfer_us(nbytes(value), arch)
