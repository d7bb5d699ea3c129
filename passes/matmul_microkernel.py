"""`accel-matmul-microkernel`: f32 matmuls on memrefs -> packed, register-tiled GEMM kernels.

Why: a straight loop lowering of a matmul (what `convert-linalg-to-affine-loops` or
`convert-linalg-to-loops` gives) runs at ~1 GFLOP/s on a core whose FMA peak is ~100x
that: every C element is a scalar reduction over a strided column of B, and nothing keeps
a tile in registers or a panel in cache. This pass replaces each large enough static f32
`linalg.matmul` / `linalg.batch_matmul` (plain or with transposed operands, as
`indexing_maps`, and the `linalg.transpose` of a weight that torch-mlir puts in front of
nn.Linear's matmul) with a call to a private GotoBLAS-style kernel: cache blocking
(NC/KC/MC from the host's cache sizes), packing into contiguous zero-padded panels, and an
MR x NR micro-kernel of `vector.fma`s on MR * NR/VL accumulator registers (VL: 16 f32 lanes
with AVX-512, 8 with AVX2). `passes/_gemm_kernel.py` writes the kernel; tile choices and
measurements are in docs/cpu-codegen.md.

    linalg.matmul ins(%A, %B : memref<512x256xf32>, memref<256x1024xf32>)
                  outs(%C : memref<512x1024xf32>)
  ->
    func.call @accel_gemm_512x1024x256_nn_<h>(%A, %B, %C) : (...) -> ()
    func.func private @accel_gemm_512x1024x256_nn_<h>(...) { <packing, micro-kernel> }

It runs after One-Shot Bufferize and before `convert-linalg-to-affine-loops` (so affine
fusion never sees these matmuls; it treats the call as an opaque reader/writer of its
memrefs) and before the deallocation pipeline, which frees the packing buffers (set
`dealloc` when running it after that pipeline). Kernels of at least `parallel-min-flops`
multiply-adds split their rows or columns across threads with `accel_parallel_for`
(python/accel/host/parallel.py; the thread count is a runtime setting: 1 runs them
serially). The kernel accumulates into C (`C += A @ B`), as `linalg.matmul` on memrefs
does; where a zero fill of a fresh C comes right before the matmul, the fill goes and the
kernel stores C in its first K block instead (`_z`, BLAS's beta = 0; `_gemm_epilogue.py`).

Static f32 `linalg.conv_2d_nchw_fchw` (any strides/dilations; the input already padded,
as torch-mlir emits it) whose GEMM passes the same thresholds becomes a call to a private
function that, per image, packs the input into cols[C*KH*KW][OH*OW] (im2col) and calls the
GEMM kernel on the weight viewed as F x C*KH*KW, cols, and the image's output viewed as
F x OH*OW (`render_conv`; docs/cpu-codegen.md). With `parallel`, an im2col of at least
`im2col-parallel-min` copies (C*KH*KW x OH*OW per image; default 2^18,
`IM2COL_PARALLEL_MIN`) splits the rows of cols across threads with `accel_parallel_for`
too. The module declares `accel_parallel_for` once, however many
kernels and im2cols call it.

Small serial matmuls whose operands fit the cache (`direct`, down to `direct-min-flops`)
call an unpacked kernel instead (`_gemm_direct.py`), and a zero fill + matmul + `C + X`
becomes an accumulation onto X (`_gemm_epilogue.py`: nn.Linear's bias without a pass over
the output); docs/cpu-codegen.md.

Not handled (left as they are): other element types, dynamic shapes, matmuls below
`min-size` in some dimension or below `min-flops`, an output whose innermost stride is
not 1, broadcast `indexing_maps`, and linalg on tensors (run it after bufferization).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from functools import cache

from accel.ir import InsertionPoint, Operation, ir
from accel.passes._epilogue_code import EpilogueCode
from accel.passes._frozen_weights import (
    frozen_weight_sites,
    repack_guard,
    thread_packed_weight,
)
from accel.passes._gemm_direct import (
    conflicting_stride,
    direct_fits,
    dot_fits,
    render_direct_gemm,
    render_dot_gemm,
)
from accel.passes._gemm_epilogue import Epilogue, fold_additive_epilogue, fold_zero_fill
from accel.passes._gemm_kernel import (
    IM2COL_PARALLEL_MIN,
    PARALLEL_MIN_MACS,
    ConvSpec,
    GemmSpec,
    Split,
    Tiles,
    choose_split,
    im2col_split,
    prepacked_a_type,
    prepacked_b_type,
    render_conv,
    render_gemm,
    render_prepack,
)
from accel.passes._gemv_kernel import gemv_fits, plan_gemv, render_gemv
from accel.passes._parallel_abi import PARALLEL_FOR_DECL
from accel.passes.base import ModulePass, ops_named, register_pass

_MM = ("linalg.matmul", "linalg.batch_matmul")
_CONV = "linalg.conv_2d_nchw_fchw"
_GROUPED_CONV = "linalg.conv_2d_ngchw_gfchw"

#: indexing_maps per (op, trans_a, trans_b); anything else (broadcasts) is not matched.
_MAPS = {
    "linalg.matmul": {
        ("(d0, d2)", "(d2, d1)"): (False, False),
        ("(d2, d0)", "(d2, d1)"): (True, False),
        ("(d0, d2)", "(d1, d2)"): (False, True),
        ("(d2, d0)", "(d1, d2)"): (True, True),
    },
    "linalg.batch_matmul": {
        ("(d0, d1, d3)", "(d0, d3, d2)"): (False, False),
        ("(d0, d3, d1)", "(d0, d3, d2)"): (True, False),
        ("(d0, d1, d3)", "(d0, d2, d3)"): (False, True),
        ("(d0, d3, d1)", "(d0, d2, d3)"): (True, True),
    },
}
_OUT_MAP = {"linalg.matmul": "(d0, d1)", "linalg.batch_matmul": "(d0, d1, d2)"}


# -- host model -----------------------------------------------------------------------------
def _cache_bytes(level: int, default: int) -> int:
    """Size of cpu0's data/unified cache at `level` from sysfs, or `default`."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(root)):
            base = os.path.join(root, entry)
            with open(os.path.join(base, "level")) as f:
                if int(f.read()) != level:
                    continue
            with open(os.path.join(base, "type")) as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(os.path.join(base, "size")) as f:
                text = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
            return int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return default


@cache
def host_vector_lanes() -> int:
    """f32 lanes of the widest vector FMA the host has: 16 (AVX-512), 8 (AVX2), else 4."""
    from accel.llvm.engine import host_features

    features = host_features()
    if "avx512f" in features:
        return 16
    return 8 if {"avx2", "fma"} <= features else 4


def choose_tiles(vl: int, l1: int, l2: int, l3: int) -> Tiles:
    """Register and cache tiles for `vl` lanes and the cache sizes (bytes); docs/cpu-codegen.md.

    NR = 2 vectors, MR fills the register file with MR * 2 accumulators (24 of 32 zmm for
    AVX-512, 12 of 16 ymm for AVX2), leaving room for the B vectors and the broadcast;
    KC keeps a KC x NR panel of B in half of L1, MC an MC x KC block of A in half of L2,
    NC a KC x NC block of B in a quarter of L3 (it is shared), capped at 4096.
    """
    nr = 2 * vl
    mr = 12 if vl >= 16 else 6
    kc = max(64, min(512, (l1 // 2) // (nr * 4)) // 16 * 16)
    mc = max(mr, min(1024, (l2 // 2) // (kc * 4)) // mr * mr)
    nc = max(nr, min(4096, (l3 // 4) // (kc * 4)) // nr * nr)
    return Tiles(vl=vl, mr=mr, nr=nr, kc=kc, mc=mc, nc=nc)


def fit_rows(tiles: Tiles, m: int) -> Tiles:
    """`tiles` with MR = 8 instead of AVX-512's 12 when that pads M's row tiles less (packed
    kernels only: unpacked ones pad nothing, `_plan`). M = 64
    (a batch of 64, a conv's 64 filters) computed 72 rows with MR = 12; with 8 the ResNet
    conv ran at 221 instead of 201 GFLOP/s and the MLP at batch 64 in 516 instead of 555 us
    (1024^2 matmul: 268 vs 264, within noise). AVX2's MR = 6 is kept (not measured)."""
    best = 8
    if tiles.mr <= best or -(-m // best) * best >= -(-m // tiles.mr) * tiles.mr:
        return tiles
    return replace(tiles, mr=best, mc=max(best, tiles.mc // tiles.mr * best))


@cache
def host_tiles() -> Tiles:
    """`choose_tiles` for this host (defaults: L1 32K, L2 512K, L3 8M)."""
    return choose_tiles(host_vector_lanes(), _cache_bytes(1, 32 << 10),
                        _cache_bytes(2, 512 << 10), _cache_bytes(3, 8 << 20))


# -- matching -------------------------------------------------------------------------------
def _static_f32(value: ir.Value) -> ir.MemRefType | None:
    """The value's memref type when it is a static f32 memref."""
    t = value.type
    if not isinstance(t, ir.MemRefType):
        return None
    if not t.has_static_shape or not isinstance(t.element_type, ir.F32Type):
        return None
    return t


def _unit_inner_stride(t: ir.MemRefType) -> bool:
    strides, _ = t.get_strides_and_offset()
    return strides[-1] == 1


def _results(map_attr: ir.Attribute) -> str:
    """`(d0, d2)` for `affine_map<(d0, d1, d2) -> (d0, d2)>`."""
    return str(map_attr).rsplit("->", 1)[1].strip().rstrip(">").strip()


def match_gemm(op: Operation, min_size: int, min_flops: int) -> GemmSpec | None:
    """The kernel spec for a static f32 matmul/batch_matmul on memrefs, or None."""
    if op.name not in _MM or len(op.operands) != 3 or op.results:
        return None
    types = [_static_f32(v) for v in op.operands]
    if any(t is None for t in types):
        return None
    maps = [_results(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    trans = _MAPS[op.name].get((maps[0], maps[1]))
    if trans is None or maps[2] != _OUT_MAP[op.name] or not _unit_inner_stride(types[2]):
        return None
    *batch, m, n = types[2].shape
    a_shape = types[0].shape
    k = a_shape[-2] if trans[0] else a_shape[-1]
    if min(m, n, k) < min_size or m * n * k * (batch[0] if batch else 1) < min_flops:
        return None
    return GemmSpec(m=m, n=n, k=k, a_type=str(types[0]), b_type=str(types[1]),
                    c_type=str(types[2]), batch=batch[0] if batch else 0,
                    trans_a=trans[0], trans_b=trans[1])


def _row_major(t: ir.MemRefType) -> bool:
    """Identity layout (or its explicit strided form): the buffer is one dense block."""
    strides, offset = t.get_strides_and_offset()
    expect, size = [], 1
    for dim in reversed(t.shape):
        expect.insert(0, size)
        size *= dim
    return offset == 0 and all(a == b for a, b, d in zip(strides, expect, t.shape, strict=True)
                               if d != 1)


def _pair(op: Operation, name: str) -> tuple[int, int] | None:
    """The op's 2-element `strides`/`dilations` attribute ((1, 1) when absent)."""
    if name not in op.attributes:
        return (1, 1)
    values = [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]
    return (values[0], values[1]) if len(values) == 2 and min(values) >= 1 else None


def match_conv(op: Operation, min_size: int, min_flops: int) -> ConvSpec | None:
    """The spec of a static f32 `linalg.conv_2d_nchw_fchw` on row-major memrefs whose GEMM
    (F x OH*OW x C*KH*KW per image) passes the matmul thresholds, or None."""
    if op.name not in (_CONV, _GROUPED_CONV) or len(op.operands) != 3 or op.results:
        return None
    grouped = op.name == _GROUPED_CONV
    types = [_static_f32(v) for v in op.operands]
    if any(t is None or t.rank != 4 + grouped or not _row_major(t) for t in types):
        return None
    strides, dilations = _pair(op, "strides"), _pair(op, "dilations")
    if strides is None or dilations is None:
        return None
    shapes = [list(t.shape) for t in types]
    groups = 1
    if grouped:  # N x G x C x H x W, G x F x C x KH x KW, N x G x F x OH x OW
        groups = shapes[0].pop(1)
        if shapes[1].pop(0) != groups or shapes[2].pop(1) != groups:
            return None
    (n, c, h, w), (f, c2, kh, kw), (n2, f2, oh, ow) = shapes
    if (n, c, f) != (n2, c2, f2):
        return None
    (sh, sw), (dh, dw) = strides, dilations
    if (oh - 1) * sh + (kh - 1) * dh >= h or (ow - 1) * sw + (kw - 1) * dw >= w:
        return None
    spec = ConvSpec(n=n, c=c, h=h, w=w, f=f, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw,
                    dh=dh, dw=dw, groups=groups)
    g = spec.gemm()
    if min(g.m, g.n, g.k) < min_size or g.m * g.n * g.k * n * groups < min_flops:
        return None
    return spec


def _transposed_source(op: Operation, value: ir.Value) -> ir.Value | None:
    """X when `value` is a fresh buffer only written by `linalg.transpose ins(X)`
    (permutation [1, 0]) and otherwise only read by `op`: the weight of nn.Linear."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "memref.alloc":
        return None
    users = [use.owner for use in value.uses]
    writers = [u for u in users if u.operation != op.operation]
    if len(writers) != 1 or writers[0].name != "linalg.transpose":
        return None
    transpose = writers[0].operation
    perm = list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))
    if perm != [1, 0] or transpose.operands[1] != value:
        return None
    if transpose.block != op.block or not _nothing_writes_between(transpose, op):
        return None
    return transpose.operands[0]


#: Ops that write no existing buffer (a fill writes only its own output, checked below).
#: Views too: nn.Linear on a (batch, seq, features) input collapses the input to 2-D
#: between the weight's transpose and the matmul.
_NO_WRITES = ("memref.alloc", "memref.alloca", "memref.get_global", "arith.constant",
              "linalg.fill", "memref.collapse_shape", "memref.expand_shape",
              "memref.subview", "memref.cast", "memref.reinterpret_cast")


def _nothing_writes_between(first: Operation, last: Operation) -> bool:
    """Only fresh buffers, constants and fills of other buffers lie between `first` and
    `last` (one block), so `first`'s input still holds the same values at `last`."""
    source = first.operands[0]
    ops = [o.operation for o in first.block.operations]
    at = next(i for i, o in enumerate(ops) if o == first)
    for op in ops[at + 1:]:
        if op == last:
            return True
        if op.name not in _NO_WRITES or (op.name == "linalg.fill" and op.operands[1] == source):
            return False
    return False


# -- rewriting ------------------------------------------------------------------------------
def _kernel_name(spec: GemmSpec, tiles: Tiles, split: Split | None = None) -> str:
    key = f"{spec}{tiles}{split or ''}".encode()
    trans = ("t" if spec.trans_a else "n") + ("t" if spec.trans_b else "n")
    batch = f"{spec.batch}x" if spec.batch else ""
    return (f"accel_gemm_{batch}{spec.m}x{spec.n}x{spec.k}_{trans}_"
            f"{hashlib.sha1(key).hexdigest()[:8]}")


def _fold_weight_transpose(op: Operation, spec: GemmSpec) -> GemmSpec:
    """Read B through the transpose's input (B^T packed directly) when B is a transposed
    copy made only for this 2-D matmul; the copy and its buffer go."""
    if spec.batch or spec.trans_b:
        return spec
    source = _transposed_source(op, op.operands[1])
    if source is None or _static_f32(source) is None:
        return spec
    buffer = op.operands[1]
    transpose = next(u.owner for u in buffer.uses if u.owner.operation != op.operation)
    op.operands[1] = source
    transpose.operation.erase()
    if not list(buffer.uses):
        buffer.owner.erase()
    return GemmSpec(m=spec.m, n=spec.n, k=spec.k, a_type=spec.a_type,
                    b_type=str(source.type), c_type=spec.c_type, trans_a=spec.trans_a,
                    trans_b=True)


#: Smallest M*N*K of a GEMM whose operands fit the cache (an unpacked kernel's) that runs
#: in parallel: the packed kernels' threshold until it went to 2^20.
DIRECT_PARALLEL_MIN_MACS = 1 << 23


@dataclass(frozen=True)
class _Plan:
    """How one GEMM is lowered: its tiles, its thread split (None: serial) and whether it
    reads its operands in place (`direct`; `copy_b`: copying B's panels first)."""

    tiles: Tiles
    split: Split | None
    direct: bool
    copy_b: bool


def _plan(module: Operation, spec: GemmSpec, tiles: Tiles, parallel_min: int | None,
          direct: bool) -> _Plan:
    """The kernel for `spec`: threaded when `parallel_min` (the smallest M*N*K that runs in
    parallel, None for none) allows; with `direct`, a serial kernel whose operands fit the
    cache (`direct_fits`) reads them in place instead of packing."""
    # Only packed kernels pad M to whole MR-row tiles (`fit_rows`); an unpacked kernel's
    # last tile is straight-line code of M % MR rows, so it keeps AVX-512's 12-row tiles
    # (fewer B loads per FMA): attention 8 x 1024 x 64 at 1 thread 16.3 -> 15.7 ms.
    packed = fit_rows(tiles, spec.m)
    if direct and parallel_min is not None and parallel_min >= PARALLEL_MIN_MACS and \
            _direct_fits(spec, tiles):
        # In-cache GEMMs (attention tiles, inside a parallel loop of their own) stay unpacked
        # and serial below the threshold they had before packed kernels went parallel from
        # 2^20: threading them would pack them again. (Lower thresholds: tests forcing it.)
        parallel_min = max(parallel_min, DIRECT_PARALLEL_MIN_MACS)
    split = None if parallel_min is None else choose_split(spec, packed, parallel_min)
    direct = direct and split is None and _direct_fits(spec, tiles)
    copy_b = False
    if direct:
        b_type = ir.MemRefType(ir.Type.parse(spec.b_type, module.context))
        copy_b = conflicting_stride(b_type.get_strides_and_offset()[0][-2], spec.k)
    return _Plan(tiles if direct else packed, split, direct, copy_b)


def _add_kernel(module: Operation, spec: GemmSpec, tiles: Tiles, dealloc: bool,
                known: set[str], parallel_min: int | None = None, direct: bool = False,
                epilogue: Epilogue | None = None, plan: _Plan | None = None,
                chain: EpilogueCode | None = None) -> str:
    """The kernel's symbol, adding its private functions to `module` on first use (and the
    declaration of `accel_parallel_for` when it runs in parallel), as `_plan` chooses it.
    An `epilogue` (`fold_zero_fill`) starts from zero; on unpacked kernels it may also
    scale and write row maxima, packed ones take only the zero start (`Epilogue()`) and,
    with it, an elementwise `chain` in the last K block's write-back (`render_gemm`)."""
    if plan is None:  # `plan`: what `_plan` gave the caller for these same arguments
        plan = _plan(module, spec, tiles, parallel_min, direct)
    tiles, split = plan.tiles, plan.split
    name = _kernel_name(spec, tiles, split) + \
        ("_dc" if plan.copy_b else "_d" if plan.direct else "") + \
        (epilogue.suffix if epilogue is not None else "") + epilogue_suffix(chain)
    if name in known:
        return name
    if plan.direct:
        if chain is not None:
            raise ValueError("unpacked GEMM kernels take no elementwise chain")
        _move_new_funcs(module, render_direct_gemm(spec, tiles, name, plan.copy_b, epilogue),
                        known)
        return name
    assert epilogue is None or epilogue == Epilogue(), "packed kernels only start from zero"
    text = render_gemm(spec, tiles, name, dealloc=dealloc, split=split,
                       zero_start=epilogue is not None, epilogue=chain)
    if split is not None:  # every parallel kernel's text needs it to verify on its own
        text = text.replace("module {", "module {\n" + PARALLEL_FOR_DECL, 1)
    _move_new_funcs(module, text, known)
    return name


def epilogue_suffix(code: EpilogueCode | None) -> str:
    """A kernel name's mark for an elementwise chain in its write-back (none without)."""
    return "" if code is None else "_e" + hashlib.sha1(repr(code).encode()).hexdigest()[:8]


def add_prepacked_kernel(module: Operation, spec: GemmSpec, tiles: Tiles, dealloc: bool,
                         known: set[str], parallel_min: int | None = None,
                         zero_start: bool = False, chain: EpilogueCode | None = None
                         ) -> tuple[str, str, str]:
    """(kernel, prepack function, packed A's type) for `spec` with A packed once
    (`render_prepack`): `@kernel(PA, B, C)` is the packed kernel `_add_kernel` would
    give, minus its packing of A; `@prepack(A, PA)` fills PA. Added to `module` on first
    use. `chain` (with `zero_start`): the elementwise chain the last K block applies, its
    inputs after C (`epilogue_params`)."""
    plan = _plan(module, spec, tiles, parallel_min, direct=False)
    tiles, split = plan.tiles, plan.split
    base = _kernel_name(spec, tiles, split) + ("_paz" if zero_start else "_pa")
    name = base + epilogue_suffix(chain)
    pa_t = prepacked_a_type(spec, tiles)
    if name not in known:
        text = render_gemm(replace(spec, a_type=pa_t), tiles, name, dealloc=dealloc,
                           split=split, zero_start=zero_start, a_prepacked=True,
                           epilogue=chain)
        if split is not None:
            text = text.replace("module {", "module {\n" + PARALLEL_FOR_DECL, 1)
        _move_new_funcs(module, text, known)
    if f"{base}_prepack" not in known:  # one for every chain
        _move_new_funcs(module, render_prepack(spec, tiles, f"{base}_prepack", "a"), known)
    return name, f"{base}_prepack", pa_t


def add_prepacked_b_kernel(module: Operation, spec: GemmSpec, tiles: Tiles, dealloc: bool,
                           known: set[str], plan: _Plan, zero_start: bool
                           ) -> tuple[str, str]:
    """(`@wrapper(A, B, C, PB, SRC)`, PB's type) for the packed kernel `plan` gives `spec`
    with B packed once (a frozen weight): the wrapper packs B into PB
    (`render_prepack`) when B's address differs from the one in SRC, then calls the
    kernel on PB. Added to `module` on first use."""
    tiles, split = plan.tiles, plan.split
    name = _kernel_name(spec, tiles, split) + ("_pbz" if zero_start else "_pb")
    pb_t = prepacked_b_type(spec, tiles)
    wrapper = f"{name}_frozen"
    if wrapper in known:
        return wrapper, pb_t
    text = render_gemm(replace(spec, b_type=pb_t), tiles, name, dealloc=dealloc, split=split,
                       zero_start=zero_start, b_prepacked=True)
    if split is not None:
        text = text.replace("module {", "module {\n" + PARALLEL_FOR_DECL, 1)
    _move_new_funcs(module, text, known)
    _move_new_funcs(module, render_prepack(spec, tiles, f"{name}_prepack", "b"), known)
    a_t, b_t, c_t = spec.a_type, spec.b_type, spec.c_type
    _move_new_funcs(module, "\n".join([
        "module {",
        f"  func.func private @{name}({a_t}, {pb_t}, {c_t})",
        f"  func.func private @{name}_prepack({b_t}, {pb_t})",
        f"  func.func private @{wrapper}(%A: {a_t}, %B: {b_t}, %C: {c_t}, %PB: {pb_t}, "
        "%SRC: memref<1xi64>) {",
        "    %c0 = arith.constant 0 : index",
        *("    " + line for line in repack_guard(
            "%B", b_t, f"func.call @{name}_prepack(%B, %PB) : ({b_t}, {pb_t}) -> ()")),
        f"    func.call @{name}(%A, %PB, %C) : ({a_t}, {pb_t}, {c_t}) -> ()",
        "    return", "  }", "}"]), known)
    return wrapper, pb_t


def _move_new_funcs(module: Operation, text: str, known: set[str]) -> None:
    """Parse `text` (a module of functions) and move each function whose symbol is not in
    `known` to the end of `module`, adding it to `known`. The others are declarations the
    text carries to verify on its own and the module already has: `accel_parallel_for`
    (declared by an earlier kernel or im2col) or a conv's GEMM kernel."""
    parsed = ir.Module.parse(text, module.context)
    body = module.regions[0].blocks[0]
    for func in list(parsed.body.operations):
        symbol = ir.StringAttr(func.operation.attributes["sym_name"]).value
        if symbol in known:
            continue
        func.operation.move_after(body.operations[len(body.operations) - 1])
        known.add(symbol)


def _direct_fits(spec: GemmSpec, tiles: Tiles) -> bool:
    return direct_fits(spec, tiles, _cache_bytes(1, 32 << 10), _cache_bytes(2, 512 << 10))


def replace_with_call(op: Operation, name: str, operands: list[ir.Value] | None = None
                      ) -> None:
    """`op` -> `func.call @name(operands)` (by default the op's own operands)."""
    with InsertionPoint(op), op.location:
        ir.Operation.create("func.call", results=[],
                            operands=list(op.operands) if operands is None else operands,
                            attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
    op.erase()


def _lower_dot(module: Operation, op: Operation, tiles: Tiles, known: set[str]) -> bool:
    """Replace `op` with a call to a dot-product kernel (`render_dot_gemm`) when its output
    is tiny and its reduction long, B read along K (directly or through the transpose
    that is folded away): False, IR unchanged, otherwise."""
    spec = match_gemm(op, 1, 0)
    if spec is None or spec.batch:
        return False
    if not spec.trans_b:
        source = _transposed_source(op, op.operands[1])
        if source is None or _static_f32(source) is None:
            return False
    if not dot_fits(replace(spec, trans_b=True)):
        return False
    spec = _fold_weight_transpose(op, spec)
    name = _kernel_name(spec, tiles) + "_dot"
    if name not in known:
        _move_new_funcs(module, render_dot_gemm(spec, tiles, name), known)
    replace_with_call(op, name)
    return True


def _lower_gemv(module: Operation, op: Operation, tiles: Tiles, known: set[str],
                parallel_min: int | None) -> bool:
    """Replace `op` with a call to a matrix-vector kernel (`_gemv_kernel.py`) when it has
    at most GEMV_MAX_ROWS rows, reading nn.Linear's weight through the transpose that is
    folded away: False, IR unchanged, otherwise."""
    spec = match_gemm(op, 1, 0)
    if spec is None or spec.batch or spec.trans_a:
        return False
    if not spec.trans_b:
        source = _transposed_source(op, op.operands[1])
        if source is not None and _static_f32(source) is not None and \
                gemv_fits(replace(spec, trans_b=True), tiles.vl):
            spec = _fold_weight_transpose(op, spec)
    if not gemv_fits(spec, tiles.vl):
        return False
    # Vectors run along B's rows (nn) or along K in A and B (nt): unit strides there.
    a_t, b_t = (ir.MemRefType(v.type) for v in list(op.operands)[:2])
    if not _unit_inner_stride(b_t) or (spec.trans_b and not _unit_inner_stride(a_t)):
        return False
    fold_additive_epilogue(op)
    plan = plan_gemv(spec, tiles.vl, parallel_min)
    key = hashlib.sha1(f"{spec}{plan}{tiles.vl}".encode()).hexdigest()[:8]
    name = f"accel_gemv_{spec.m}x{spec.n}x{spec.k}_n{'t' if spec.trans_b else 'n'}_{key}"
    if name not in known:
        _move_new_funcs(module, render_gemv(spec, tiles.vl, name, plan), known)
    replace_with_call(op, name)
    return True


def lower_matmul(module: Operation, op: Operation, tiles: Tiles, min_size: int,
                 min_flops: int, dealloc: bool, known: set[str],
                 parallel_min: int | None = None, direct_min: int | None = None,
                 prepack: bool = False) -> bool:
    """Replace `op` (a matched matmul) with a call to its kernel; False if it is no match.
    `direct_min` (None: no unpacked kernels) is the smallest M*N*K given an unpacked kernel
    (`_gemm_direct.py`) when its operands fit the cache; only larger ones are packed."""
    if direct_min is not None and (_lower_dot(module, op, tiles, known) or
                                   _lower_gemv(module, op, tiles, known, parallel_min)):
        return True
    low = min_flops if direct_min is None else min(min_flops, direct_min)
    spec = match_gemm(op, min_size, low)
    if spec is None:
        return False
    small = spec.m * spec.n * spec.k * max(spec.batch, 1) < min_flops
    if small and not _direct_fits(spec, fit_rows(tiles, spec.m)):
        return False
    if not small:  # an unpacked kernel cannot read nn.Linear's N x K weight: keep the copy
        spec = _fold_weight_transpose(op, spec)
    fold_additive_epilogue(op)
    direct = direct_min is not None
    # BLAS's beta = 0: no zero fill (the kernel's first K block stores C). Unpacked kernels
    # also take alpha (a constant scale) and attention's row maxima from their registers.
    plan = _plan(module, spec, tiles, parallel_min, direct)
    folded = fold_zero_fill(op, row_max=plan.direct and not spec.batch, scale=plan.direct)
    epilogue, extra = folded if folded else (None, [])
    sites = frozen_weight_sites(module, op) \
        if prepack and not plan.direct and not spec.batch and not extra else None
    if sites is not None:  # `freeze_weights`: nn.Linear's weight packed once
        name, pb_t = add_prepacked_b_kernel(module, spec, tiles, dealloc, known, plan,
                                            zero_start=epilogue is not None)
        packed = thread_packed_weight(module, op, sites, name, pb_t, known)
        replace_with_call(op, name, [*op.operands, *packed])
        return True
    name = _add_kernel(module, spec, tiles, dealloc, known, parallel_min, direct, epilogue,
                       plan)
    replace_with_call(op, name, list(op.operands) + extra)
    return True


def _conv_name(spec: ConvSpec, gemm: str, split: tuple[int, int] | None = None) -> str:
    key = f"{spec}{gemm}{split or ''}".encode()
    return (f"accel_conv_{spec.n}x{spec.c}x{spec.h}x{spec.w}_{spec.f}x{spec.kh}x{spec.kw}_"
            f"{hashlib.sha1(key).hexdigest()[:8]}")


def lower_conv(module: Operation, op: Operation, tiles: Tiles, min_size: int,
               min_flops: int, dealloc: bool, known: set[str],
               parallel_min: int | None = None, im2col_min: int | None = None) -> bool:
    """Replace `op` (a matched conv_2d_nchw_fchw) with a call to an im2col + GEMM function
    (`render_conv`); False if it is no match. `parallel_min` is the GEMM's threshold (as
    in `lower_matmul`), `im2col_min` the smallest im2col (copies per image) whose rows
    are split across threads (None: a serial im2col)."""
    spec = match_conv(op, min_size, min_flops)
    if spec is None:
        return False
    gemm = _add_kernel(module, spec.gemm(), tiles, dealloc, known, parallel_min)
    split = None if im2col_min is None or spec.groups > 1 else im2col_split(spec, im2col_min)
    name = _conv_name(spec, gemm, split)
    if name not in known:
        text = render_conv(spec, name, gemm, dealloc=dealloc,
                           parallel_min=None if split is None else im2col_min)
        _move_new_funcs(module, text, known)  # not the GEMM's or a known parallel_for decl
    replace_with_call(op, name)
    return True


@register_pass
@dataclass(frozen=True)
class MatmulMicrokernel(ModulePass):
    """Lowers static f32 matmuls on memrefs to packed, register-tiled vector GEMM kernels."""

    name = "accel-matmul-microkernel"
    #: f32 lanes per vector (0: the host's, 16 with AVX-512, 8 with AVX2).
    vector_width: int = field(default=0, metadata={"help": "f32 lanes (0: host)"})
    #: Smallest M, N and K matched: below it the zero padding of the tiles costs too much.
    min_size: int = field(default=16, metadata={"help": "smallest M, N and K matched"})
    #: Smallest (batch x) M x N x K matched: below it packing does not pay off.
    min_flops: int = field(default=1 << 18, metadata={"help": "smallest M*N*K matched"})
    #: Serial matmuls whose operands fit the cache (B read along N; docs/cpu-codegen.md)
    #: skip packing: attention's 64 x 64 tiles ran 25% faster (1x6x1500x64 SDPA, 1 thread).
    direct: bool = field(default=True, metadata={"help": "unpacked kernels for small GEMMs"})
    #: Smallest M*N*K given an unpacked kernel (below `min-flops` too: no packing to repay).
    direct_min_flops: int = field(default=1 << 13,
                                  metadata={"help": "smallest M*N*K of an unpacked kernel"})
    #: Cache tiles (0: chosen from the host's cache sizes, `choose_tiles`).
    kc: int = field(default=0, metadata={"help": "k block (0: from L1)"})
    mc: int = field(default=0, metadata={"help": "m block (0: from L2)"})
    nc: int = field(default=0, metadata={"help": "n block (0: from L3)"})
    #: Free the packing buffers in the kernel (only after the deallocation pipeline).
    dealloc: bool = field(default=False, metadata={"help": "emit memref.dealloc"})
    #: Split large kernels across threads with `accel_parallel_for` (python/accel/host/
    #: parallel.py; the thread count is a runtime setting, 1 runs them serially).
    parallel: bool = field(default=True, metadata={"help": "multi-threaded kernels"})
    #: Smallest (batch x) M x N x K run in parallel: below it starting threads costs more.
    parallel_min_flops: int = field(default=PARALLEL_MIN_MACS,
                                    metadata={"help": "smallest M*N*K run in parallel"})
    #: Smallest conv im2col (C*KH*KW x OH*OW copies per image) whose rows are split across
    #: threads (with `parallel`): below it starting threads costs more than the copies.
    im2col_parallel_min: int = field(default=IM2COL_PARALLEL_MIN,
                                     metadata={"help": "smallest im2col (copies per image) "
                                                       "run in parallel"})

    #: A matmul's B that is an external global (nn.Linear's frozen weight), directly or as
    #: an argument of a private function every call of which passes one, is packed once
    #: into a private global (the `freeze_weights` option; passes/_frozen_weights.py).
    prepack_weights: bool = field(default=False,
                                  metadata={"help": "pack frozen matmul weights once"})

    def __post_init__(self) -> None:
        if self.vector_width not in (0, 4, 8, 16):
            raise ValueError("vector-width must be 0, 4, 8 or 16")
        if min(self.kc, self.mc, self.nc, self.min_size, self.min_flops, self.direct_min_flops,
               self.parallel_min_flops, self.im2col_parallel_min) < 0:
            raise ValueError("sizes must not be negative")

    def tiles(self) -> Tiles:
        """The tiles for this pass's options."""
        base = host_tiles()
        if self.vector_width and self.vector_width != base.vl:
            base = choose_tiles(self.vector_width, _cache_bytes(1, 32 << 10),
                                _cache_bytes(2, 512 << 10), _cache_bytes(3, 8 << 20))
        kc = self.kc or base.kc
        mc = self.mc or base.mc
        nc = self.nc or base.nc
        kc = max(base.ku, kc // base.ku * base.ku)
        return Tiles(vl=base.vl, mr=base.mr, nr=base.nr, kc=kc,
                     mc=max(base.mr, mc // base.mr * base.mr),
                     nc=max(base.nr, nc // base.nr * base.nr), ku=base.ku)

    def apply(self, module: Operation) -> None:
        tiles = self.tiles()
        known = {str(ir.StringAttr(f.attributes["sym_name"]).value)
                 for f in ops_named(module, ("func.func",))}
        parallel_min = self.parallel_min_flops if self.parallel else None
        im2col_min = self.im2col_parallel_min if self.parallel else None
        for op in ops_named(module, _MM):
            lower_matmul(module, op, tiles, self.min_size, self.min_flops, self.dealloc,
                         known, parallel_min, self.direct_min_flops if self.direct else None,
                         self.prepack_weights)
        for op in ops_named(module, (_CONV, _GROUPED_CONV)):
            lower_conv(module, op, tiles, self.min_size, self.min_flops, self.dealloc,
                       known, parallel_min, im2col_min)
