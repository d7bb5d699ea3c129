"""The RDU program of a compiled train step: forward, backward, all-reduce and optimizer.

`accel.compile_train_step(..., options={"target": "rdu"})` compiles each phase graph on its
own (`accel.training.compile`), so each is an `RduProgram` whose sections carry the phase
(`forward`, `backward`, `optimizer`, and `grad_norm` for the total-norm computation of
`clip_grad_norm`), each sized by its phase's `--resources-scaling-factors`. A step runs
forward and backward once per micro-batch, sums the gradients across the data-parallel
processes, then runs the optimizer; `step_sections` lays that out as one schedule:

    forward.s0_linear ... backward.s0_matmul ... allreduce.s0_grads ... optimizer.s0_mul

The all-reduce sections exist with `data_parallel` only: the gradients in buckets of
`ALLREDUCE_BUCKET_BYTES` (torch DDP's default), last layer first as backward produces
them, each estimated by `accel.passes.rdu.cost.allreduce` for `world_size` replicas. On the
host they are emulated by the step's torch.distributed all-reduce (gloo). Without a
`world_size` and outside a process group the estimate assumes 2 replicas (said so in
`training.world_size_assumed`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from accel.targets.rdu.schedule import Section

#: Phase graphs in the order one step runs them (the all-reduce comes after backward).
GRAPHS = ("forward", "backward", "optimizer")
#: World size the all-reduce estimate assumes when none is given or known (ASSUMED).
DEFAULT_WORLD = 2


def _programs(step: Any) -> dict[str, Any]:
    return {name: step.compiled[name].compiled for name in GRAPHS if name in step.compiled}


def _world(settings: dict[str, Any]) -> tuple[int, bool]:
    """(replicas, whether that number is assumed)."""
    if settings.get("world_size"):
        return int(settings["world_size"]), False
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_world_size(), False
    except ImportError:  # a torch without distributed support
        pass
    return DEFAULT_WORLD, True


def allreduce_sections(step: Any, arch: Any, chip: int) -> list[Section]:
    """One section per gradient bucket, in the order backward produces the gradients."""
    from accel.passes.rdu.cost import ALLREDUCE_BUCKET_BYTES, allreduce

    world, _ = _world(step.settings)
    buckets: list[list[tuple[str, int, int]]] = [[]]
    for name in reversed(step.spec.names):
        p = step._params[name]
        size = p.numel() * p.element_size()
        if buckets[-1] and sum(s for _, s, _ in buckets[-1]) + size > ALLREDUCE_BUCKET_BYTES:
            buckets.append([])
        buckets[-1].append((name, size, p.numel()))
    found = []
    for k, bucket in enumerate(b for b in buckets if b):
        est = allreduce(sum(s for _, s, _ in bucket), sum(n for _, _, n in bucket), world, arch)
        found.append(Section(f"s{k}_grads", k, "allreduce",
                             [f"all_reduce:{name}" for name, _, _ in bucket], est.pcus,
                             est.pmus, None, est.est_us, chip))
    return found


def step_sections(step: Any) -> dict[str, Any]:
    """The train step's sections.json: every phase's sections in run order, renamed
    `<graph>.<section>` and numbered through, with the training settings and the estimated
    time of one step (forward and backward once per micro-batch)."""
    programs = _programs(step)
    first = programs["forward"]
    settings = dict(step.settings)
    micro = int(settings.get("grad_accumulation_steps") or 1)
    world, assumed = _world(settings)
    ordered: list[tuple[str, Section]] = []
    hypers: list[dict[str, Any]] = []
    for graph, program in programs.items():
        ordered += [(graph, s) for s in program.sections]
        for h in program.hypersections_json():
            hypers.append({**h, "name": f"{graph}.{h['name']}",
                           "members": [f"{graph}.{m}" for m in h["members"]]})
        if graph == "backward" and settings.get("data_parallel"):
            last = max((s.chip for s in program.sections), default=0)
            ordered += [("allreduce", s) for s in allreduce_sections(step, first.arch, last)]
    sections = [replace(s, name=f"{graph}.{s.name}", index=i)
                for i, (graph, s) in enumerate(ordered)]
    from accel.dialects.rdu_arch import resource_limit

    factors = first.limits.get("scaling_factors")
    limits = {phase: {"pcu": resource_limit(first.arch, "pcus", phase, factors),
                      "pmu": resource_limit(first.arch, "pmus", phase, factors)}
              for phase in dict.fromkeys(s.phase for s in sections)}  # in run order
    per_step = sum((s.est_us + s.transfer_us) * (micro if s.phase in ("forward", "backward")
                                                 else 1) for s in sections)
    arch_limits = {k: v for k, v in first.limits.items()
                   if k not in ("phase", "section_pcu_limit", "section_pmu_limit")}
    return {"arch": first.arch.name, "arch_limits": {**arch_limits, "phases": limits},
            "training": {"phases": list(programs),
                         "grad_accumulation_steps": micro,
                         "data_parallel": bool(settings.get("data_parallel")),
                         "world_size": world, "world_size_assumed": assumed,
                         "clip_grad_norm": settings.get("clip_grad_norm")},
            "sections": [s.to_json() for s in sections], "hypersections": hypers,
            "total_est_us": round(per_step, 4),
            # Each phase graph is placed on the chips on its own (placement.py).
            "pipeline": {graph: program.pipeline for graph, program in programs.items()}}


def summary(step: Any) -> str:
    """compile.log's lines for a train step: the whole schedule, then per phase."""
    doc = step_sections(step)
    train = doc["training"]
    sections = doc["sections"]
    lines = [f"rdu: train step on {doc['arch']}: {len(sections)} sections, estimated "
             f"{doc['total_est_us']:.2f} us per step"
             + (f" ({train['grad_accumulation_steps']} micro-batches)"
                if train["grad_accumulation_steps"] > 1 else "")]
    if train["data_parallel"]:
        lines.append(f"rdu: data parallel over {train['world_size']} replicas"
                     + (" (ASSUMED: no world_size given)" if train["world_size_assumed"]
                        else "") + ": gradient all-reduce sections after backward")
    for phase, limit in doc["arch_limits"]["phases"].items():
        count = [s for s in sections if s["phase"] == phase]
        lines.append(f"rdu: {phase}: {len(count)} sections, "
                     f"{sum(s['est_us'] + s['transfer_us'] for s in count):.2f} us, "
                     f"each at most {limit['pcu']} PCUs and {limit['pmu']} PMUs")
    lines.append("rdu:  index name                                   phase      chip  PCU  "
                 "PMU   est_us  ops")
    for s in sections:
        ops = ", ".join(s["ops"][:3]) + (f", ... ({len(s['ops'])})" if len(s["ops"]) > 3
                                         else "")
        lines.append(f"rdu: {s['index']:6d} {s['name']:38.38s} {s['phase']:10s} "
                     f"{s['chip']:4d} {s['pcu']:4d} {s['pmu']:4d} "
                     f"{s['est_us'] + s['transfer_us']:8.2f}  {ops}")
    for h in doc["hypersections"]:
        lines.append(f"rdu: hypersection @{h['name']}: {h['instances']} instances, "
                     "compiled once")
    from accel.targets.rdu.report import chip_lines

    for graph, pipeline in doc["pipeline"].items():
        lines += [line.replace("rdu: ", f"rdu: {graph}: ", 1) for line in chip_lines(pipeline)]
    return "\n".join(lines)


def save(step: Any, folder: Path, name: str) -> None:
    """`<name>.pef` (the step's index: each phase's PEF with its checksum, and the whole
    schedule) and `sections.json` (`step_sections`) in the train-step folder."""
    from accel.artifact import sha256
    from accel.cache import atomic_write
    from accel.targets.rdu.pef import PEF_FORMAT, PEF_VERSION, SECTIONS_JSON, pef_name

    doc = step_sections(step)
    phases = []
    for graph, program in _programs(step).items():
        pef = pef_name(program, folder / graph)
        data = (folder / graph / pef).read_bytes()
        phases.append({"name": graph, "pef": f"{graph}/{pef}", "sha256": sha256(data)})
    index = {"format": PEF_FORMAT, "version": PEF_VERSION, "kind": "train-step",
             "arch": doc["arch"], "arch_limits": doc["arch_limits"],
             "training": doc["training"], "phases": phases, "sections": doc["sections"],
             "schedule": [{"index": s["index"], "section": s["name"], "phase": s["phase"],
                           "chip": s["chip"]} for s in doc["sections"]]}
    atomic_write(folder / f"{name}.pef", (json.dumps(index, indent=1) + "\n").encode())
    atomic_write(folder / SECTIONS_JSON, (json.dumps(doc, indent=2) + "\n").encode())


__all__ = ["allreduce_sections", "save", "step_sections", "summary"]
