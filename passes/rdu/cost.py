"""The RDU resource and performance model: PCUs, PMUs and run time of a section.

A section is a spatial pipeline: every compute op is a stage on its own PCUs, tensors
flowing between stages sit in PMU buffers, and the section's inputs and outputs stream
from and to DRAM. The model, per section (numbers from `accel.dialects.rdu_arch`; the
constants below are ASSUMED, no RDU microarchitecture figures are published for them):

- FLOPs of an op: `linalg.matmul`/`batch_matmul`/`matvec`-like contractions 2 x output
  elements x K; every other linalg op (elementwise, reductions) its largest operand's
  elements x the arithmetic ops in its body (at least 1); data movement (transpose,
  reshape, copies) 0.
- PCUs of a stage: ceil(FLOPs / (PCU FLOPs per cycle x `TARGET_CYCLES`)), at least 1:
  enough PCUs that each stage finishes a sample in about `TARGET_CYCLES` cycles. A PCU's
  FLOPs per cycle is derived: peak_tflops / (pcus x clock_ghz).
- PMUs: each on-chip tensor (a stage's result used inside the section) is double buffered
  (`STAGE_DEPTH` slots) and each section input and output has one staging buffer, each
  ceil(bytes / PMU bytes) PMUs with PMU bytes = sram / pmus (sn40l: 0.5 MB).
- Time: the slowest stage bounds the pipeline (its FLOPs over its PCUs' rate), the DRAM
  traffic (inputs + outputs at dram_gbps) may bound it instead, plus the pipeline fill:
  `STAGE_LATENCY_CYCLES` per stage, plus `SECTION_SWITCH_CYCLES` to load the section.
  est_us = max(compute, dram) + fill + switch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from accel.dialects.rdu_arch import Arch
from accel.ir import Operation, Value
from accel.passes.rdu.operators import nbytes, numel

#: ASSUMED: cycles per sample a stage is sized for (the pipeline's initiation interval).
TARGET_CYCLES = 1024
#: ASSUMED: fill latency of one pipeline stage, in cycles.
STAGE_LATENCY_CYCLES = 64
#: ASSUMED: cycles to switch the chip to a section (load its configuration, start its
#: pipeline): why fewer, larger sections run faster.
SECTION_SWITCH_CYCLES = 2000
#: Double buffering between stages (rdu.stage_buffer depth).
STAGE_DEPTH = 2
CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.vecmat",
                "linalg.batch_matvec", "linalg.dot", "linalg.matmul_transpose_b",
                "linalg.batch_matmul_transpose_b")
MOVES = ("linalg.transpose", "linalg.copy", "linalg.broadcast", "linalg.fill",
         "tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
         "tensor.insert_slice", "tensor.cast", "tensor.pad", "tensor.concat")


def flops(op: Operation) -> int:
    """Floating-point (or integer) operations of one op, per the model above."""
    name = op.name
    if name in MOVES or not name.startswith("linalg."):
        return 0
    if name in CONTRACTIONS:
        lhs = op.operands[0].type
        k = lhs.shape[-1] if lhs.rank else 1
        return 2 * numel(op.results[0]) * max(k, 1) if op.results else 0
    body = 0
    for region in op.regions:
        for block in region.blocks:
            body += sum(1 for inner in block.operations
                        if inner.operation.name.split(".")[0] in ("arith", "math"))
    largest = max((numel(v) for v in list(op.operands) + list(op.results)), default=1)
    return largest * max(body, 1)


@dataclass(frozen=True)
class Estimate:
    """A section's resources and estimated time."""

    pcus: int
    pmus: int
    est_us: float
    flops: int
    dram_bytes: int
    stages: int

    def fits(self, pcu_limit: int, pmu_limit: int) -> bool:
        return self.pcus <= pcu_limit and self.pmus <= pmu_limit


def pcu_flops_per_cycle(arch: Arch) -> float:
    return arch.peak_tflops * 1e12 / (arch.pcus * arch.clock_ghz * 1e9)


def pmu_bytes(arch: Arch) -> int:
    return arch.sram_mb * (1 << 20) // arch.pmus


def stage_pcus(op_flops: int, arch: Arch) -> int:
    if op_flops <= 0:
        return 1
    return max(1, math.ceil(op_flops / (pcu_flops_per_cycle(arch) * TARGET_CYCLES)))


def _buffer_pmus(size: int, arch: Arch, depth: int = 1) -> int:
    return max(1, math.ceil(depth * size / pmu_bytes(arch)))


def combine(stage_flops: Sequence[int], io_bytes: Sequence[int],
            intermediate_bytes: Sequence[int], arch: Arch, spatial: int = 1) -> Estimate:
    """The estimate of a section from its stages' FLOPs, the sizes of its DRAM inputs and
    outputs, and the sizes of the tensors its stages pass each other. `spatial` > 1
    (--num-spatial-batches): the batch streams through the pipeline in that many parts, so
    stages are sized and buffers hold one part (fewer PCUs and PMUs) while the pipeline runs
    all parts (the slowest stage's time covers the whole batch, as before)."""
    stages = [(f, stage_pcus(math.ceil(f / spatial), arch)) for f in stage_flops]
    pcus = sum(p for _, p in stages)
    pmus = sum(_buffer_pmus(math.ceil(size / spatial), arch) for size in io_bytes)
    pmus += sum(_buffer_pmus(math.ceil(size / spatial), arch, STAGE_DEPTH)
                for size in intermediate_bytes)
    rate = pcu_flops_per_cycle(arch) * arch.clock_ghz * 1e3  # FLOPs per us per PCU
    compute_us = max((f / (p * rate) for f, p in stages), default=0.0)
    dram = sum(io_bytes)
    dram_us = dram / (arch.dram_gbps * 1e3)
    cycles = len(stages) * STAGE_LATENCY_CYCLES + SECTION_SWITCH_CYCLES
    fill_us = cycles / (arch.clock_ghz * 1e3)
    return Estimate(pcus, pmus, max(compute_us, dram_us) + fill_us, sum(stage_flops), dram,
                    len(stages))


def estimate(ops: Sequence[Operation], inputs: Iterable[Value], outputs: Iterable[Value],
             arch: Arch) -> Estimate:
    """The estimate of a section made of `ops` (compute ops, in program order) reading
    `inputs` from DRAM and writing `outputs` back."""
    inside = set(ops)
    intermediate = [nbytes(r) for op in ops for r in op.results
                    if any(use.owner.operation in inside for use in r.uses)]
    return combine([flops(op) for op in ops],
                   [nbytes(v) for v in list(inputs) + list(outputs)], intermediate, arch)


def transfer_us(size: int, arch: Arch) -> float:
    """Time to move `size` bytes between two chips (link_gbps)."""
    return size / (arch.link_gbps * 1e3)


#: Gradient bucket size of the all-reduce (torch DistributedDataParallel's default
#: bucket_cap_mb=25, its documented default): one all-reduce section per bucket.
ALLREDUCE_BUCKET_BYTES = 25 * (1 << 20)


def allreduce(size: int, elements: int, world: int, arch: Arch) -> Estimate:
    """A ring all-reduce of one gradient bucket (`size` bytes, `elements` values) across
    `world` data-parallel replicas: every chip sums `world - 1` incoming chunks (one PCU
    stage, the bucket in and out of DRAM) and sends and receives 2 (world - 1) / world of the
    bucket over the chip link (the ring algorithm's volume); the two are not overlapped."""
    base = combine([(world - 1) * elements], [size, size], [], arch)
    link_us = 2 * (world - 1) / world * transfer_us(size, arch) if world > 1 else 0.0
    return Estimate(base.pcus, base.pmus, base.est_us + link_us, base.flops, base.dram_bytes,
                    base.stages)
