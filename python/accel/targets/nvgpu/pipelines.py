"""The nvgpu target's MLIR pipelines, as data: each entry says why it is there.

`compile.compile_gpu` runs FUSE (opt_level >= 1), BUFFERIZE, TO_GPU, then KERNEL_TO_NVVM on
each outlined `gpu.module`; what stays in the host function (allocations, views, weights,
`gpu.launch_func`) becomes the kernel sequence of `program.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accel.host.pipelines import ONE_SHOT, precision_passes

#: Tensor-level fusion at opt_level >= 1, as (the option that switches it off, pass).
FUSE: list[tuple[str | None, str]] = [
    # Elementwise producers fold into their consumers (bias + ReLU + ... become one loop
    # nest, hence one kernel): on a GPU every unfused op is a launch and a round trip
    # through DRAM. (The CPU target avoids this pass because its GEMM kernels must match
    # plain linalg.matmul; the GPU kernels here tile any generic alike.)
    (None, "func.func(linalg-fuse-elementwise-ops)"),
]

#: The cpu target's bufferization (identity layouts: the kernels take bare pointers), and
#: no deallocation pipeline after it: device buffers are the runtime's (program.py frees
#: temporaries after each call).
BUFFERIZE: list[str] = list(ONE_SHOT)


#: Where `to_gpu` leaves plain loops for kernels (`compile.emulate_on_host` stops here).
LAUNCH_MARK = "func.func(convert-parallel-loops-to-gpu)"


#: Before `to_gpu` unless `disable_tensor_core`: linalg.matmul/batch_matmul of f16 or int8
#: (M, N, K multiples of 16; f32 with mm_conv_precision_mode=tf32, K a multiple of 8) ->
#: calls of private functions holding a WMMA gpu.launch (f16 sums: only with mode fp16).
TENSOR_CORES = "accel-nvgpu-tensor-core-matmul"
#: Before FUSE (which would merge the softmax's generics the matcher reads) at opt_level
#: >= 1 unless `disable_reduce_reduce_fusion`: f32 attention chains -> one flash-style
#: kernel (online softmax, K/V tiles in shared memory, no S x S scores).
FLASH_ATTENTION = "accel-nvgpu-flash-attention"
#: Around FUSE at opt_level >= 1: half-precision operands read directly instead of through
#: the f32 copies torch's CPU decompositions make (exact, and tensor cores can take them),
#: then every matmul/convolution outlined, so that elementwise fusion (which turns a named
#: matmul consumer into a generic) leaves them named for the kernel passes; INLINE_BACK
#: puts them back after the fusion.
BEFORE_FUSE = ["accel-fold-matmul-upcasts", "accel-outline-contractions"]
INLINE_BACK = "inline"
#: After FUSE (its reshape propagation would turn the batch_matmul into a generic) unless
#: `disable_tensor_core`: NCHW convolutions of tensor-core sizes -> im2col + batch_matmul,
#: which TENSOR_CORES then maps to WMMA.
CONV_TO_MATMUL = "accel-nvgpu-conv-to-matmul"
#: The tensor-core pass's options for a precision mode: tf32 tensor cores for the f32
#: matmuls of mode tf32 (their operands were rounded to tf32 on tensors), f16 sums for fp16.
TENSOR_CORE_MODES = {"tf32": "{tf32=true}", "fp16": "{f16-accumulate=true}"}
#: Before `to_gpu` at opt_level >= 1: f32 matmuls (M, N multiples of 4) -> calls of private
#: functions whose threads each keep a 4x4 output tile in registers (4x less traffic).
REGISTER_TILES = "accel-nvgpu-register-tile-matmul"
#: After either: the private functions inlined into the host function, where their loops
#: and launches are mapped and outlined like the others.
INLINE = "inline"


def to_gpu(threads: int) -> list[str]:
    """linalg on memrefs -> `gpu.launch_func`s of outlined kernels, `threads` per block."""
    return [
        # Copies between (strided) views become kernels like every other op.
        "func.func(accel-nvgpu-copy-to-linalg)",
        # Parallel dimensions -> scf.parallel (one thread each); reductions stay scf.for
        # inside it, so a thread owns each output element and needs no atomics.
        "func.func(convert-linalg-to-parallel-loops)",
        # Nests with no parallel dimension (a full reduction) still need a kernel: one
        # thread runs them (accel-nvgpu-wrap-serial).
        "func.func(accel-nvgpu-wrap-serial)",
        # Each nest flattened to blocks x threads, the innermost (unit-stride) dimension
        # fastest: neighbouring threads touch neighbouring addresses (coalesced).
        f"func.func(accel-nvgpu-map-loops{{threads={threads}}})",
        # Tiled scf.parallel with a mapping -> gpu.launch with constant grid and block.
        LAUNCH_MARK,
        # Grid/block sizes become constants the launch manifest records.
        "canonicalize",
        # Constants and index math move into kernels instead of being passed as arguments.
        "gpu-launch-sink-index-computations",
        # gpu.launch bodies -> gpu.func kernels in gpu.modules; launches -> launch_func.
        "gpu-kernel-outlining",
    ]


KERNEL_TO_NVVM: list[str] = [
    # Views (subview, expand/collapse_shape) in kernels -> explicit offsets and strides...
    "expand-strided-metadata",
    # ...given as affine.apply, and loops/if's -> scf -> blocks and branches.
    "lower-affine",
    "convert-scf-to-cf",
    # f16/bf16 math (exp, tanh, ...) in f32: libdevice has f32 and f64 versions only.
    "math-extend-to-supported-types{target-type=f32}",
    # gpu/arith/math/memref -> NVVM + LLVM; bare pointers: a memref kernel argument is one
    # device pointer (static shapes, identity layouts) and math calls libdevice's __nv_*.
    "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1}",
    # What it leaves of math (integer abs, ctlz, ...) -> LLVM intrinsics NVPTX lowers.
    "convert-math-to-llvm",
    "canonicalize",
    "cse",
    "reconcile-unrealized-casts",
]


def pipelines(opts: Mapping[str, Any], *, kernels: bool = True
              ) -> tuple[list[str], list[str], list[str], list[str]]:
    """(fuse, bufferize, to-gpu, kernel-to-nvvm) for resolved nvgpu options;
    `kernels=False` leaves matmuls and attention to the loop path (no hand-written GPU
    kernels: what the loop-level host emulation needs) whatever the options say."""
    # The precision mode's casts (accel-matmul-precision) come first, at every opt_level.
    fuse = precision_passes(opts)
    if opts["opt_level"] >= 1:
        if kernels and not opts.get("disable_reduce_reduce_fusion"):
            fuse.append(FLASH_ATTENTION + ("{tensor-cores=false}" if opts["disable_tensor_core"]
                                           else ""))
        fuse += BEFORE_FUSE
        fuse += [p for flag, p in FUSE if flag is None or not opts[flag]]
        fuse.append(INLINE_BACK)
    mode = opts.get("mm_conv_precision_mode", "default")
    wmma = kernels and not opts["disable_tensor_core"]
    if wmma:
        fuse.append(CONV_TO_MATMUL + ("{tf32=true}" if mode == "tf32" else ""))
    matmuls = [TENSOR_CORES + TENSOR_CORE_MODES.get(mode, "")] if wmma else []
    matmuls += [REGISTER_TILES] if opts["opt_level"] >= 1 else []
    matmuls += [INLINE] if matmuls else []
    return fuse, BUFFERIZE, matmuls + to_gpu(opts["threads_per_block"]), KERNEL_TO_NVVM
