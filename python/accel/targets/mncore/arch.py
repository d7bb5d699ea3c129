"""MN-Core 2 (codename GPFN3): the one arch table of the `mncore` target.

Every number has its public source or says ASSUMED (then it is a plausible value kept here,
in one place, so it can be corrected). Sources, as listed in shared/reference/hardware-facts.md:

- [MLSDK-HW]  MLSDK 0.5 docs, hardware specification section 7.1.1 (the hierarchy)
- [DEV-1.3]   MN-Core 2 developer manual section 1.3 (long word = 64 bit)
- [DEV-1.4]   developer manual section 1.4 (MAU FMAs per cycle)
- [DEV-1.5]   developer manual section 1.5 (memories, sizes and bandwidths)
- [PFN]       Preferred Networks' MN-Core 2 product page (peak TFLOPS)
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

#: Hierarchy [MLSDK-HW]: 4 groups x 2 L2B x 8 L1B x 16 MAB x 4 PE.
GROUPS = 4
L2B_PER_GROUP = 2
L1B_PER_L2B = 8
MAB_PER_L1B = 16
PE_PER_MAB = 4
#: 4096 PEs (derived).
PES = GROUPS * L2B_PER_GROUP * L1B_PER_L2B * MAB_PER_L1B * PE_PER_MAB
#: Bits per long word [DEV-1.3].
LONG_WORD_BITS = 64

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class Memory:
    """One memory level: bytes per instance, instances on the board, bandwidth, source."""

    name: str
    bytes_each: int
    count: int
    #: Bytes per second of the whole board (all instances together).
    bandwidth: float
    source: str

    @property
    def total_bytes(self) -> int:
        return self.bytes_each * self.count


#: Clock (derived from [PFN]'s peaks and [DEV-1.4]: 49 TFLOPS FP32 = 1024 MAB x 32 FMA x 2
#: x f, f ~ 0.75 GHz).
CLOCK_HZ = 0.75e9

#: Memories, outermost first. The LM bandwidth is [DEV-1.5]'s 2 long words per cycle per PE.
MEMORIES: MappingProxyType[str, Memory] = MappingProxyType({
    "dram": Memory("DRAM", 4 * GIB, GROUPS, GROUPS * 128e9,
                   "[DEV-1.5] 4 GiB and ~128 GB/s per group"),
    "pdm": Memory("PDM", 4 * MIB, GROUPS, GROUPS * 256e9,
                  "[DEV-1.5] 4 MiB per group; bandwidth ASSUMED 2x DRAM"),
    "l2bm": Memory("L2BM", 256 * KIB, GROUPS * L2B_PER_GROUP, 8 * 512e9,
                   "[DEV-1.5] 256 KiB per L2B; bandwidth ASSUMED 512 GB/s per L2B"),
    "l1bm": Memory("L1BM", 64 * KIB, GROUPS * L2B_PER_GROUP * L1B_PER_L2B, 64 * 256e9,
                   "[DEV-1.5] 64 KiB per L1B; bandwidth ASSUMED 256 GB/s per L1B"),
    "lm": Memory("LM0+LM1", 32 * KIB, PES, PES * 2 * 8 * CLOCK_HZ,
                 "[DEV-1.5] 16 KiB LM0 + 16 KiB LM1 per PE, 2 long words/cycle"),
})

#: Peak FLOP/s by element width [PFN]: FP64 12, FP32 49, FP16 393 TFLOPS.
PEAK_FLOPS: MappingProxyType[str, float] = MappingProxyType({
    "double": 12e12, "float": 49e12, "half": 393e12,
})
#: Bytes per element of each float_dtype's storage.
ELEMENT_BYTES: MappingProxyType[str, int] = MappingProxyType({
    "double": 8, "float": 4, "half": 2,
})

#: Fraction of peak a non-GEMM (vector) layer reaches: ASSUMED 0.25 (elementwise work uses
#: the MAU's adders, not its FMA array, and reductions need cross-PE trees).
VECTOR_EFFICIENCY = 0.25
#: Fixed cost of starting one layer (instruction issue, barrier): ASSUMED 2 us.
LAYER_OVERHEAD_S = 2e-6
#: Fixed cost of starting one DMA between DRAM and LM: ASSUMED 1 us.
DMA_OVERHEAD_S = 1e-6
#: Relayouts move data through the L1B/L2B networks: ASSUMED to run at the L2BM bandwidth.
RELAYOUT_BANDWIDTH = MEMORIES["l2bm"].bandwidth
#: One step of L1Merge's reduction of partial sums across the L1Bs (a barrier and the
#: exchange's start): ASSUMED 0.5 us; the bytes move at the L1BM bandwidth.
MERGE_STEP_S = 0.5e-6
#: Emulated devices `accel-smi` lists (one board). ASSUMED: one board per host.
EMULATED_DEVICES = ("mnc2emu0",)

# -- the host side (MLSDK section 4.5: transfers through TensorProxy) ------------------------
#: Host <-> board link for H2D and D2H: not published for MN-Core 2 (hardware-facts.md has
#: no host interface figure): ASSUMED 25 GB/s per direction (a PCIe Gen4 x16 link's
#: effective rate).
HOST_LINK_BANDWIDTH = 25e9
#: Start of one host transfer (driver call, DMA descriptor): ASSUMED 5 us.
HOST_TRANSFER_OVERHEAD_S = 5e-6
#: One copy stream reaches at most this share of the link (CODEGEN_N_DEV_COPY_STREAMS_THREADS
#: streams share it): ASSUMED a quarter.
STREAM_FRACTION = 0.25
#: Host-side transpose into the device layout before an H2D (the reference: "transpose
#: operations are required to match the MN-Core's memory layout"), per thread: ASSUMED
#: 4 GB/s (a memory-bound strided copy on one core).
HOST_TRANSPOSE_BYTES_PER_S = 4e9
#: Defaults of CODEGEN_N_TRANSPOSE_THREADS and CODEGEN_N_DEV_COPY_STREAMS_THREADS (the
#: reference: "Default is 8").
DEFAULT_TRANSPOSE_THREADS = 8
DEFAULT_COPY_STREAMS = 8
#: Host compute for CODEGEN_OPS_ON_HOST layers: ASSUMED 100 GFLOP/s (a few vectorised cores).
HOST_FLOPS = 100e9


def sram_bytes(budget: float = 1.0) -> int:
    """Local memory the scheduler may use: all PEs' LM times `sram_budget`."""
    return int(MEMORIES["lm"].total_bytes * budget)


def table() -> list[dict[str, object]]:
    """The arch table as rows (docs, summary.json): quantity, value, source."""
    rows: list[dict[str, object]] = [
        {"quantity": "PEs", "value": PES, "source": "[MLSDK-HW] 4x2x8x16x4 (derived)"},
        {"quantity": "clock_hz", "value": CLOCK_HZ, "source": "derived from [PFN], [DEV-1.4]"},
    ]
    for key, mem in MEMORIES.items():
        rows.append({"quantity": f"{key}_bytes", "value": mem.total_bytes, "source": mem.source})
        rows.append({"quantity": f"{key}_bandwidth", "value": mem.bandwidth,
                     "source": mem.source})
    for key, peak in PEAK_FLOPS.items():
        rows.append({"quantity": f"peak_{key}_flops", "value": peak, "source": "[PFN]"})
    return rows
