"""The CPU target's MLIR pipelines, as data: each entry says why it is there.

`pipelines(options)` assembles, for resolved options, (tensor-level fusion, BUFFERIZE,
lowering to LLVM); `accel.host.compile.compile_mlir` runs them in that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Where AFFINE_FUSION goes in BUFFERIZE: before deallocation, whose `memref.dealloc`s make
#: MLIR's fusion keep (and recompute) producer nests it would otherwise remove.
DEALLOCATE_MARK = "buffer-deallocation-pipeline"

#: Tensors -> memrefs with identity layouts (the nvgpu target starts the same way).
ONE_SHOT: list[str] = [
    # arith/math ops on whole tensors (`arith.addf %a, %b : tensor<4xf32>`, hand-written
    # MLIR) have no bufferization: as linalg.generic ops they bufferize and fuse like others.
    "func.func(convert-elementwise-to-linalg)",
    # argmax/max(dim) as two reductions that vectorise (and return NaN's index, as eager).
    "func.func(accel-split-argmax)",
    # tm_tensor ops (scan, scatter, sort, topk) have no One-Shot interface: memrefs first...
    "func.func(tm-tensor-bufferize)",
    # ...which leaves shared `to_buffer`s and non-`restrict` `to_tensor`s One-Shot mishandles.
    "func.func(accel-prepare-one-shot)",
    # Tensors -> memrefs, across calls too; identity layouts keep argument buffers row-major
    # (what kernels and the C interface's bare pointers assume).
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion="
    "identity-layout-map unknown-type-conversion=identity-layout-map}",
    # tm_tensor ops on memrefs -> loops, before deallocation needs their memory effects.
    "func.func(tm-tensor-to-loops)",
]

BUFFERIZE: list[str] = [
    *ONE_SHOT,
    # Frees every temporary and clones returned arguments: callers own all returned buffers.
    DEALLOCATE_MARK,
    # bufferization.clone/dealloc left by the deallocation pipeline -> memref alloc/copy/dealloc.
    "convert-bufferization-to-memref",
]

#: Tensor-level fusion before bufferization at opt_level >= 1, as (the option that switches
#: the entry off, pass); passes not registered in this build are skipped.
FUSE_ON_TENSORS: list[tuple[str, str]] = [
    # Attention and other reduction chains -> one loop nest with an online softmax.
    ("disable_reduce_reduce_fusion", "accel-reduce-reduce-fusion"),
    # Value-changing float rewrites (x/sqrt(y) -> x*rsqrt(y), ...), PolyBlocks' default.
    # (No tensor-level linalg-fuse-elementwise-ops: its reshape propagation turns matmuls
    # into generics the GEMM kernels cannot match; tiny GPT-2 ran 26x slower. Elementwise
    # chains are fused as loops by accel-affine-fusion instead.)
    ("disable_unsafe_math_canonicalizations", "accel-unsafe-math-canonicalize"),
]

#: First of the tensor-level passes at opt_level >= 1: flips (a gather over a zero fill,
#: serial once bufferized) and a transpose of one become a single parallel affine copy
#: (a convolution's input gradient flips and transposes every weight each train step).
FOLD_FLIPS = "accel-fold-flips"

#: Next to FOLD_FLIPS: a matmul of at most 15 rows (a decode step's tokens, a head at batch 1)
#: reads nn.Linear's N x K weight in place instead of a transposed copy, before
#: SPLIT_FUNCTIONS can put the copy and the product in different parts (ResNet-50's head
#: copied 8 MB per call there: 2.8 ms of 71).
FOLD_MATVEC_TRANSPOSES = "accel-fold-matvec-transposes"

#: After the two above, with `conv_layout="nchwc"`: convolutions with whole 8-channel blocks
#: run on blocked activations (N x C/8 x H x W x 8), the layout propagated through the
#: elementwise ops and pads between them, so only the graph's edges reorder; the direct
#: kernel then stores each accumulator as it is (docs/cpu-codegen.md, "Blocked layout").
BLOCKED_LAYOUT = "accel-blocked-layout"

#: Last of the tensor passes (after BLOCKED_LAYOUT, which rewrites the pools it blocks): a
#: max pool becomes one all-parallel generic with an input per window tap, so each output
#: is stored once, not read and written per tap after a fill of -inf (ResNet's stem pool:
#: docs/cpu-codegen.md, "The stem's max pool").
POOL_TAPS = "accel-pool-taps"

#: First at every opt_level when `mm_conv_precision_mode` is not "default": the mode's
#: casts around each matmul/convolution are semantics, not an optimisation, and must be in
#: place before reduce-reduce fusion or the GEMM kernels rewrite the matmuls.
PRECISION = "accel-matmul-precision"


def precision_passes(opts: Mapping[str, Any]) -> list[str]:
    """The precision pass for `mm_conv_precision_mode`, or nothing for "default"."""
    mode = opts.get("mm_conv_precision_mode", "default")
    return [] if mode == "default" else [f"{PRECISION}{{mode={mode}}}"]


#: Goes right before MATMUL_KERNELS: NCHW f32 convolutions become calls to a kernel chosen
#: by shape (1x1 as a GEMM on the input itself, others a direct register-tiled convolution;
#: docs/cpu-codegen.md), so no im2col; what it leaves goes on to MATMUL_KERNELS' im2col.
CONV_KERNELS = "accel-conv-kernels"
#: ...with `freeze_weights`, a conv on a frozen parameter reads a copy packed once
#: (passes/_frozen_weights.py): packing 4 MB of ResNet-50's 2048 x 512 weight on every call
#: took 30% of that layer's time at 1 thread.
#: ...its `fuse-epilogue` (BatchNorm, residual add and ReLU in the kernels' write-back,
#: passes/_conv_epilogue.py) stays off: ResNet-50 measured 2-4% slower with it at 1 and 2
#: threads on the AVX2 host (session 21, docs/cpu-codegen.md); tests turn this on.
CONV_EPILOGUE = False

#: Goes before AFFINE_FUSION at opt_level >= 1: large static f32 matmuls become calls to
#: packed, register-tiled vector GEMM kernels (docs/cpu-codegen.md) before linalg turns
#: into affine loops; the deallocation pipeline then frees the packing buffers.
MATMUL_KERNELS = "accel-matmul-microkernel"

#: Goes before BUFFERIZE's deallocation when affine fusion is on (opt_level >= 1); the
#: linalg ops are then loops already and LOWER_TO_LLVM's linalg-to-loops finds none.
AFFINE_FUSION: list[str] = [
    # Sizes from inside scf loops are no valid affine dims (torch.linalg.det): such linalg
    # ops go into private functions, where their operands' sizes are symbols.
    "accel-outline-nonaffine-linalg",
    # linalg on memrefs -> affine loops, which fusion's dependence analysis understands.
    "func.func(convert-linalg-to-affine-loops)",
    # Loads/stores whose indices are affine after all (a max pool's 2*i + k, computed with
    # arith) become affine ones, which fusion sees; only data-dependent ones stay opaque.
    "func.func(affine-raise-from-memref)",
    # Producer-consumer and sibling fusion of the nests, then scalar replacement.
    "accel-affine-fusion",
    # Unit dims leave one-iteration loops whose variable indexes what others index with 0;
    # promoting them (and folding the constants) makes equal accesses look equal.
    "func.func(affine-loop-normalize{promote-single-iter=true},canonicalize)",
    # Fusion sinks reduction loops innermost: reductions over a leading dim then stride
    # over whole rows (50x slower); the unit-stride loop goes back inside.
    "func.func(accel-loop-interchange)",
    # Transposing nests (unit stride along different loops) in 32 x 32 blocks.
    "func.func(accel-tile-transposes)",
    # Sums kept in a buffer element across a loop (BatchNorm backward's per-channel sums)
    # become loop-carried values: once outlined for threads, LLVM cannot tell the buffer
    # from the others and kept the sum in memory, unvectorised. After the loop passes
    # above, which want loops without results.
    "func.func(accel-promote-accumulators)",
]

#: Goes right after AFFINE_FUSION (so only when it runs): the outermost parallel loop of
#: each large nest runs on threads with `accel_parallel_for` (docs/cpu-codegen.md); options
#: may follow in braces (`{min-work=...}`).
PARALLEL_LOOPS = "accel-parallelize-loops"

#: A model's long `main` as calls to private parts, each optimised by LLVM on its own (LLVM's
#: loop passes cost O(nests²) per function: a tiny T5 took 27 s at -O1 whole, ~5 s split;
#: docs/compile-time.md); equal parts (repeated layers) are then kept once. `pipelines` adds
#: it when the options carry a true `split_functions`, which `compile_mlir` sets by default
#: (the `split_functions` option, or `$ACCEL_SPLIT_FUNCTIONS=0`, turns it off). It runs
#: twice:
#: - right after One-Shot (SPLIT_AFTER), on linalg ops: the kernels, fusion, deallocation and
#:   everything after see each repeated layer's parts once (a 12-layer GPT-2's compile 2.1x
#:   -> 2.0x its 2-layer one), and fusion works part by part, where one part's unfusable
#:   nest no longer keeps the whole model unfused;
#: - at the end of BUFFERIZE: parts that grew past `min-ops` as loops are cut again, and
#:   every function's `memref.dealloc`s move up to their buffers' last uses (the
#:   deallocation pipeline puts them at the end).
SPLIT_FUNCTIONS = "accel-split-functions"
SPLIT_AFTER = "func.func(tm-tensor-to-loops)"

LOWER_TO_LLVM: list[str] = [
    # `_mlir_ciface_<name>` wrappers (descriptors by pointer) are what the JIT calls.
    "accel-emit-c-interface",
    # linalg on memrefs -> scf loops (LLVM's O3 vectorises them).
    "func.func(convert-linalg-to-loops)",
    # affine (from the input) -> scf + arith.
    "lower-affine",
    # Structured control flow -> blocks and branches, as the LLVM dialect needs.
    "convert-scf-to-cf",
    # Integer division by zero raises instead of SIGFPE, INT_MIN / -1 wraps (a safe divisor
    # by select, a flag asserted at each return).
    "accel-guard-division",
    # A failed cf.assert reports and returns instead of abort()ing the process (now that
    # loops are branches, every assert sits in a function body).
    "accel-assert-to-error-return",
    # malloc returning NULL (a result too big for the machine) reports the size and returns:
    # MemoryError, not SIGSEGV.
    "accel-check-allocations",
    # complex arithmetic (abs, exp, div, ...) -> arith/math on the real and imaginary parts.
    "convert-complex-to-standard",
    # math on f16/bf16 runs in f32: no libm calls on types libm lacks.
    "math-extend-to-supported-types{target-type=f32}",
    # bf16 arithmetic runs in f32 too: x86 without AVX512-BF16 has no native bf16 ops.
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}",
    # bf16<->f32 casts as integer bit operations (no __truncsfbf2 libcall), ceildiv & co.
    "arith-expand{include-bf16=true}",
    # expm1 and log1p as libm calls: convert-math-to-llvm would write exp(x) - 1 and
    # log(1 + x), which cancel near 0 (vecmath still widens the calls to libmvec's).
    "accel-precise-math-to-libm",
    # math ops with LLVM intrinsics (exp, log, sqrt, fma, ...) first: they vectorise.
    "convert-math-to-llvm",
    # The rest (tanh, erf, atan, ...) as libm calls, resolved in the process.
    "convert-math-to-libm",
    # subview/expand_shape/collapse_shape -> reinterpret_cast with explicit strides.
    "expand-strided-metadata",
    # ...whose offset/stride arithmetic comes as affine.apply (dynamic shapes, views).
    "lower-affine",
    # memref ops and descriptors -> LLVM (malloc/free, llvm.memcpy for dense copies).
    "finalize-memref-to-llvm",
    # ...whose aligned heap pointers (inttoptr of aligned integers) become GEPs from malloc's
    # result: LLVM then knows buffers do not alias, and promotes and vectorises
    # accumulators (BatchNorm forward 0.52 -> 0.16 ms).
    "accel-aligned-pointer-provenance",
    # vector ops from the input, if any.
    "convert-vector-to-llvm",
    # The remaining scalar dialects and the functions themselves.
    "convert-arith-to-llvm",
    # What convert-complex-to-standard keeps (create, re, im, constant) -> LLVM structs.
    "convert-complex-to-llvm",
    "convert-index-to-llvm",
    "convert-ub-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    # Drop the casts the partial conversions left between each other.
    "reconcile-unrealized-casts",
]


def pipeline_text(passes: list[str]) -> str:
    """`builtin.module(a,b,...)` for a pass list."""
    return "builtin.module(" + ",".join(passes) + ")"


def pipelines(opts: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """(tensor-level fusion, BUFFERIZE, lowering to LLVM) for resolved `compile_mlir` options."""
    from accel.passes import lookup_pass

    precision = precision_passes(opts)
    if opts["opt_level"] == 0:
        return precision, BUFFERIZE, LOWER_TO_LLVM
    tensor_passes = [FOLD_FLIPS, FOLD_MATVEC_TRANSPOSES]
    if opts.get("conv_layout", "nchw") == "nchwc":
        tensor_passes.append(BLOCKED_LAYOUT)
    tensor_passes.append(POOL_TAPS)
    fuse = precision + [p for p in tensor_passes
                        if lookup_pass(p.split("{", 1)[0]) is not None] + \
        [p for flag, p in FUSE_ON_TENSORS if not opts[flag]
         and (p.startswith("func.func(") or lookup_pass(p) is not None)]
    if opts["disable_fast_math"]:  # the rewrites stay, the reassociation flags go
        fuse = [p + "{reassociate-reductions=false}" if p == "accel-unsafe-math-canonicalize"
                else p for p in fuse]
    at = BUFFERIZE.index(DEALLOCATE_MARK)
    middle = [p for p in (CONV_KERNELS, MATMUL_KERNELS) if lookup_pass(p) is not None]
    extra = {CONV_KERNELS: [], MATMUL_KERNELS: []}
    if opts.get("freeze_weights"):  # frozen conv weights packed once, not per call
        extra[CONV_KERNELS].append("prepack-weights=true")
        extra[MATMUL_KERNELS].append("prepack-weights=true")
    if CONV_EPILOGUE:
        extra[CONV_KERNELS].append("fuse-epilogue=true")
    middle = [p + "{" + " ".join(extra[p]) + "}" if extra[p] else p for p in middle]
    if not opts["disable_affine_fusion"]:
        middle += AFFINE_FUSION
        if lookup_pass(PARALLEL_LOOPS.split("{", 1)[0]) is not None:
            middle.append(PARALLEL_LOOPS)
    bufferize = BUFFERIZE[:at] + middle + BUFFERIZE[at:]
    if opts.get("split_functions") and lookup_pass(SPLIT_FUNCTIONS) is not None:
        early = bufferize.index(SPLIT_AFTER) + 1
        bufferize = bufferize[:early] + [SPLIT_FUNCTIONS] + bufferize[early:]
        bufferize.append(SPLIT_FUNCTIONS)
    return fuse, bufferize, LOWER_TO_LLVM


def check(options: Mapping[str, Any]) -> None:
    """Refuse what these pipelines cannot honour (never silently ignore it)."""
    from accel.diagnostics import NotSupportedYet

    # float_dtype is an emulated target's precision (mncore); the host keeps the model's.
    if options.get("float_dtype") is not None:
        raise NotSupportedYet(f"option 'float_dtype' is not supported yet with value "
                              f"{options['float_dtype']!r} on target cpu (supported: the "
                              "default, None)")
