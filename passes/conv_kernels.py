"""`accel-conv-kernels`: f32 convolutions on memrefs -> a kernel chosen by shape.

Why: `accel-matmul-microkernel` lowers every `linalg.conv_2d_nchw_fchw` as im2col + GEMM,
which writes C*KH*KW x OH*OW values per image (7 MB for a 64-channel 3x3 layer at 56x56)
and packs them again for the GEMM, and leaves convolutions with fewer than 16 filters as
scalar loops (a 16->8 channel conv: 9 ms against eager's 0.7 ms). This pass runs first
and takes the convolutions it has a better kernel for:

- 1x1, stride 1, unpadded (H = OH, W = OW): each image's output is the GEMM
  W (F x C) @ X[n] (C x H*W); the GEMM kernel of `accel-matmul-microkernel` is called
  on the input itself (no im2col copy), when that GEMM passes its thresholds. A strided
  1x1 (ResNet's downsample shortcut) gathers X[n]'s strided positions (C x OH*OW) first
  and calls the same GEMM: ResNet-50's 1024 -> 2048 one at 14x14 took 5.1 ms as a direct
  kernel, 4.0 as a GEMM (1 thread).
- every other groups = 1 conv with at least `min-flops` MACs: a direct convolution
  (`passes/_conv_kernel.py`), the weights packed into filter blocks of FB = FV*VL, an
  FV x PT register tile of accumulators over (output channels, output positions), the
  input read as broadcast scalars, no im2col; large ones run their (image, filter
  block, position tile) items across threads (`parallel`).
- `accel-blocked-layout`'s convolution (a `linalg.generic` on channel-blocked memrefs,
  `match_blocked_conv`): the same direct kernel with blocked addressing, each accumulator
  stored as 8 consecutive floats of the output.

    linalg.conv_2d_nchw_fchw ins(%x, %w : memref<1x64x58x58xf32>, memref<64x64x3x3xf32>)
                             outs(%o : memref<1x64x56x56xf32>)
  ->
    func.call @accel_dconv_1x64x58x58_64x3x3_<h>(%x, %w, %o)

The kernels accumulate into the output (`O += conv`), as the linalg op does, so the bias
fill before it stays. It runs where `accel-matmul-microkernel` does (after One-Shot
Bufferize, before affine fusion and deallocation), before it; what it leaves (grouped
convs, other element types, dynamic shapes) goes on to that pass. `dealloc` frees the
packed weights in the kernel (when running after the deallocation pipeline).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes._conv_epilogue import apply_chain, collect_chain, fold_affine_prefix
from accel.passes._conv_kernel import choose_conv_tile, conv_items, render_direct_conv
from accel.passes._conv_shared_panel import panel_type, shares_panel
from accel.passes._depthwise_kernel import DepthwiseSpec, items_of, render_depthwise
from accel.passes._epilogue_code import EpilogueCode
from accel.passes._frozen_weights import (
    frozen_weight_sites,
    repack_guard,
    thread_packed_weight,
)
from accel.passes._gemm_epilogue import Epilogue, defining_op, is_fresh, is_zero_fill, position
from accel.passes._gemm_kernel import PARALLEL_MIN_MACS, ConvSpec, GemmSpec, epilogue_params
from accel.passes.base import ModulePass, ops_named, register_pass
from accel.passes.blocked_layout import BLOCK, blocked_geometry
from accel.passes.matmul_microkernel import (
    MatmulMicrokernel,
    _add_kernel,
    _move_new_funcs,
    _pair,
    _plan,
    _row_major,
    _static_f32,
    add_prepacked_kernel,
    host_vector_lanes,
    match_conv,
    replace_with_call,
)

_CONV = "linalg.conv_2d_nchw_fchw"
_DEPTHWISE = "linalg.depthwise_conv_2d_nchw_chw"


def match_depthwise(op: Operation, min_flops: int) -> DepthwiseSpec | None:
    """The spec of a static f32 `linalg.depthwise_conv_2d_nchw_chw` on row-major memrefs
    with a width stride of 1 or 2 and at least `min_flops` MACs, or None."""
    if op.name != _DEPTHWISE or len(op.operands) != 3 or op.results:
        return None
    types = [_static_f32(v) for v in op.operands]
    if any(t is None or not _row_major(t) for t in types) \
            or [t.rank for t in types] != [4, 3, 4]:
        return None
    strides, dilations = _pair(op, "strides"), _pair(op, "dilations")
    if strides is None or dilations is None or strides[1] not in (1, 2):
        return None
    (n, c, h, w), (c2, kh, kw), (n2, c3, oh, ow) = (list(t.shape) for t in types)
    (sh, sw), (dh, dw) = strides, dilations
    if (n, c, c) != (n2, c2, c3) or (oh - 1) * sh + (kh - 1) * dh >= h \
            or (ow - 1) * sw + (kw - 1) * dw >= w:
        return None
    spec = DepthwiseSpec(n=n, c=c, h=h, w=w, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw,
                         dh=dh, dw=dw)
    return spec if spec.macs() >= min_flops else None


def match_blocked_conv(op: Operation, min_flops: int) -> ConvSpec | None:
    """The spec (`block` set, and `in_block` with a blocked input) of `accel-blocked-layout`'s
    convolution on row-major static f32 memrefs (X N x C/B x H x W x B or N x C x H x W,
    W F x C x KH x KW, O N x F/B x OH x OW x B) with at least `min_flops` MACs, or None."""
    geometry = blocked_geometry(op)
    if geometry is None or op.results:
        return None
    sh, sw, dh, dw, in_blocked = geometry
    types = [_static_f32(v) for v in op.operands]
    if any(t is None or not _row_major(t) for t in types) \
            or [t.rank for t in types] != [4 + in_blocked, 4, 5]:
        return None
    x, (f, c, kh, kw), (n2, fb, oh, ow, b2) = (list(t.shape) for t in types)
    n, cx, h, w = x[:4]
    b = x[4] if in_blocked else BLOCK
    if (b, b2) != (BLOCK, BLOCK) or (n, cx * (b if in_blocked else 1), fb * b) != (n2, c, f) \
            or (oh - 1) * sh + (kh - 1) * dh >= h or (ow - 1) * sw + (kw - 1) * dw >= w:
        return None
    spec = ConvSpec(n=n, c=c, h=h, w=w, f=f, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw,
                    dh=dh, dw=dw, block=b, in_block=b if in_blocked else 0)
    return spec if n * f * oh * ow * c * kh * kw >= min_flops else None


def _uncollapsed_weight(op: Operation, spec: DepthwiseSpec) -> ir.Value | None:
    """The C x 1 x KH x KW weight under torch-mlir's `memref.collapse_shape` of a depthwise
    conv's weight, or None."""
    owner = op.operands[1].owner
    if not isinstance(owner, ir.OpView | ir.Operation) or \
            owner.operation.name != "memref.collapse_shape":
        return None
    source = owner.operation.operands[0]
    t = _static_f32(source)
    if t is None or not _row_major(t) or list(t.shape) != [spec.c, 1, spec.kh, spec.kw]:
        return None
    return source


def _zero_fill_before(op: Operation) -> Operation | None:
    """The `linalg.fill` of 0.0 into the conv's output that only initialises it (a fresh
    allocation in the conv's block, filled before the conv and used by nothing between the
    two), or None: the kernel then writes O instead of adding into zeros, and the fill (a
    pass over the whole output) goes."""
    out = op.operands[2]
    if not is_fresh(out) or defining_op(out).block != op.block:
        return None
    users = [u.owner.operation for u in out.uses]
    fills = [u for u in users if u.name == "linalg.fill"]
    if len(fills) != 1 or not is_zero_fill(fills[0]) or fills[0].block != op.block \
            or fills[0].operands[1] != out:
        return None
    ops = [o.operation for o in op.block.operations]
    at_fill, at_conv = position(ops, fills[0]), position(ops, op)
    if not at_fill < at_conv or any(at_fill < position(ops, u) < at_conv for u in users
                                    if u.block == op.block):
        return None
    if any(u.block != op.block for u in users):
        return None  # a use in a nested region could sit between them
    return fills[0]


def _name(prefix: str, spec: ConvSpec | DepthwiseSpec, key: str) -> str:
    digest = hashlib.sha1(f"{spec}{key}".encode()).hexdigest()[:8]
    f = getattr(spec, "f", spec.c)
    return f"{prefix}_{spec.n}x{spec.c}x{spec.h}x{spec.w}_{f}x{spec.kh}x{spec.kw}_{digest}"


def is_pointwise(spec: ConvSpec) -> bool:
    """1x1, stride 1, no padding: X[n] viewed as C x H*W is the GEMM's B as it is."""
    return (spec.kh, spec.kw, spec.sh, spec.sw) == (1, 1, 1, 1) \
        and (spec.h, spec.w) == (spec.oh, spec.ow)


def is_strided_pointwise(spec: ConvSpec) -> bool:
    """1x1 with a stride (ResNet's downsample shortcut): the GEMM's B is X[n]'s every
    sh-th row and sw-th column, gathered first (C x OH*OW floats, a quarter of the input
    at stride 2)."""
    return (spec.kh, spec.kw) == (1, 1) and not is_pointwise(spec)


def _packed_weight(g: GemmSpec, w_t: str, packed: tuple[str, str] | None
                   ) -> tuple[str, list[str], str, str, list[str]]:
    """(extra parameters, guard lines, the GEMM's A operand and type, declarations) of a
    pointwise wrapper; with `packed` = (prepack function, its type), A is the weight packed
    once (%PA), repacked only when the weight's address differs from the one in %SRC."""
    if packed is None:
        return "", [], "%Wm", g.a_type, []
    prepack, pa_t = packed
    guard = ["    " + line for line in repack_guard(
        "%Wt", w_t, f"func.call @{prepack}(%Wm, %PA) : ({g.a_type}, {pa_t}) -> ()")]
    return (f", %PA: {pa_t}, %SRC: memref<1xi64>", guard, "%PA", pa_t,
            [f"  func.func private @{prepack}({g.a_type}, {pa_t})"])


def _chain_operands(spec: ConvSpec, g: GemmSpec, chain: EpilogueCode | None
                    ) -> tuple[str, str, list[str], str]:
    """(the wrapper's parameters, the GEMM's extra types, lines to put in the image loop,
    the GEMM call's extra operands) for an elementwise chain's inputs (`epilogue_params`):
    a full one is viewed per image as F x P, like O[n]."""
    if chain is None:
        return "", "", [], ""
    p = spec.oh * spec.ow
    params = "".join(f", %E{k}: {ex.type}" for k, ex in enumerate(chain.extras))
    types = "".join(f", {t}" for _, t in epilogue_params(g, chain))
    lines, args = [], ""
    for k, ex in enumerate(chain.extras):
        if ex.kind == "full":
            lines += [f"      %E3{k} = memref.collapse_shape %E{k} [[0], [1], [2, 3]] : "
                      f"{ex.type} into memref<{spec.n}x{spec.f}x{p}xf32>",
                      f"      %Ef{k} = memref.subview %E3{k}[%n, 0, 0] [1, {spec.f}, {p}] "
                      f"[1, 1, 1] : memref<{spec.n}x{spec.f}x{p}xf32> to {g.c_type}"]
            args += f", %Ef{k}"
        else:
            args += f", %E{k}"
    return params, types, lines, args


def render_pointwise(spec: ConvSpec, name: str, gemm: str, g: GemmSpec,
                     packed: tuple[str, str] | None = None,
                     chain: EpilogueCode | None = None) -> str:
    """`@name(%X, %Wt, %O)`: per image, `@gemm(W as F x C, X[n] as C x P, O[n] as F x P)`;
    a strided 1x1 conv first gathers X[n]'s strided positions into a C x P buffer. With
    `packed` (`_packed_weight`), `@name(%X, %Wt, %O, %PA, %SRC)` and the GEMM reads %PA.
    With `chain` (the GEMM applies it), its inputs `%E<k>` come last."""
    if is_strided_pointwise(spec):
        return _render_strided_pointwise(spec, name, gemm, g, packed, chain)
    s = spec
    x_t, w_t, o_t = s.types()
    p = s.h * s.w
    extra, guard, a, a_t, decls = _packed_weight(g, w_t, packed)
    e_params, e_types, e_lines, e_args = _chain_operands(spec, g, chain)
    lines = [
        "module {",
        f"  func.func private @{gemm}({a_t}, {g.b_type}, {g.c_type}{e_types})", *decls,
        f"  func.func private @{name}(%X: {x_t}, %Wt: {w_t}, %O: {o_t}{extra}{e_params}) {{",
        "    %c0 = arith.constant 0 : index", "    %c1 = arith.constant 1 : index",
        f"    %cn = arith.constant {s.n} : index",
        f"    %Wm = memref.collapse_shape %Wt [[0], [1, 2, 3]] : {w_t} into {g.a_type}",
        *guard,
        f"    %X3 = memref.collapse_shape %X [[0], [1], [2, 3]] : {x_t} into "
        f"memref<{s.n}x{s.c}x{p}xf32>",
        f"    %O3 = memref.collapse_shape %O [[0], [1], [2, 3]] : {o_t} into "
        f"memref<{s.n}x{s.f}x{p}xf32>",
        "    scf.for %n = %c0 to %cn step %c1 {",
        f"      %xn = memref.subview %X3[%n, 0, 0] [1, {s.c}, {p}] [1, 1, 1] : "
        f"memref<{s.n}x{s.c}x{p}xf32> to {g.b_type}",
        f"      %on = memref.subview %O3[%n, 0, 0] [1, {s.f}, {p}] [1, 1, 1] : "
        f"memref<{s.n}x{s.f}x{p}xf32> to {g.c_type}", *e_lines,
        f"      func.call @{gemm}({a}, %xn, %on{e_args}) : ({a_t}, {g.b_type}, {g.c_type}"
        f"{e_types}) -> ()",
        "    }", "    return", "  }", "}"]
    return "\n".join(lines)


def _render_strided_pointwise(spec: ConvSpec, name: str, gemm: str, g: GemmSpec,
                              packed: tuple[str, str] | None,
                              chain: EpilogueCode | None) -> str:
    s = spec
    x_t, w_t, o_t = s.types()
    p = s.oh * s.ow
    xs_t = f"memref<{s.c}x{p}xf32>"
    extra, guard, a, a_t, decls = _packed_weight(g, w_t, packed)
    e_params, e_types, e_lines, e_args = _chain_operands(spec, g, chain)
    lines = [
        "module {",
        f"  func.func private @{gemm}({a_t}, {g.b_type}, {g.c_type}{e_types})", *decls,
        f"  func.func private @{name}(%X: {x_t}, %Wt: {w_t}, %O: {o_t}{extra}{e_params}) {{",
        "    %c0 = arith.constant 0 : index", "    %c1 = arith.constant 1 : index",
        f"    %cn = arith.constant {s.n} : index", f"    %cc = arith.constant {s.c} : index",
        f"    %coh = arith.constant {s.oh} : index", f"    %cow = arith.constant {s.ow} : index",
        f"    %csh = arith.constant {s.sh} : index", f"    %csw = arith.constant {s.sw} : index",
        f"    %Wm = memref.collapse_shape %Wt [[0], [1, 2, 3]] : {w_t} into {g.a_type}",
        *guard,
        f"    %O3 = memref.collapse_shape %O [[0], [1], [2, 3]] : {o_t} into "
        f"memref<{s.n}x{s.f}x{p}xf32>",
        f"    %Xs = memref.alloc() {{alignment = 64 : i64}} : {xs_t}",
        f"    %Xs3 = memref.expand_shape %Xs [[0], [1, 2]] output_shape [{s.c}, {s.oh}, "
        f"{s.ow}] : {xs_t} into memref<{s.c}x{s.oh}x{s.ow}xf32>",
        f"    %xn = memref.cast %Xs : {xs_t} to {g.b_type}",
        "    scf.for %n = %c0 to %cn step %c1 {",
        "      scf.for %ch = %c0 to %cc step %c1 {",
        "        scf.for %i = %c0 to %coh step %c1 {",
        "          %hi = arith.muli %i, %csh : index",
        "          scf.for %j = %c0 to %cow step %c1 {",
        "            %wj = arith.muli %j, %csw : index",
        f"            %v = memref.load %X[%n, %ch, %hi, %wj] : {x_t}",
        f"            memref.store %v, %Xs3[%ch, %i, %j] : memref<{s.c}x{s.oh}x{s.ow}xf32>",
        "          }", "        }", "      }",
        f"      %on = memref.subview %O3[%n, 0, 0] [1, {s.f}, {p}] [1, 1, 1] : "
        f"memref<{s.n}x{s.f}x{p}xf32> to {g.c_type}", *e_lines,
        f"      func.call @{gemm}({a}, %xn, %on{e_args}) : ({a_t}, {g.b_type}, {g.c_type}"
        f"{e_types}) -> ()",
        "    }", "    return", "  }", "}"]
    return "\n".join(lines)


@register_pass
@dataclass(frozen=True)
class ConvKernels(ModulePass):
    """Lowers static f32 NCHW convolutions to pointwise GEMMs or direct conv kernels."""

    name = "accel-conv-kernels"
    #: f32 lanes per vector (0: the host's, 16 with AVX-512, 8 with AVX2).
    vector_width: int = field(default=0, metadata={"help": "f32 lanes (0: host)"})
    #: Smallest N*F*OH*OW*C*KH*KW matched: below it the loops are as good.
    min_flops: int = field(default=1 << 16, metadata={"help": "smallest MACs matched"})
    #: Free the packed weights in the kernel (only after the deallocation pipeline).
    dealloc: bool = field(default=False, metadata={"help": "emit memref.dealloc"})
    #: Run large kernels across threads with `accel_parallel_for`.
    parallel: bool = field(default=True, metadata={"help": "multi-threaded kernels"})
    #: Smallest MACs run in parallel (as `accel-matmul-microkernel`'s threshold).
    parallel_min_flops: int = field(default=PARALLEL_MIN_MACS,
                                    metadata={"help": "smallest MACs run in parallel"})
    #: 1x1 stride-1 convs as GEMMs on the input itself (false: direct kernel for them too).
    pointwise_gemm: bool = field(default=True, metadata={"help": "1x1 convs as GEMMs"})
    #: A 1x1 (GEMM) or direct conv whose weight is an external global (a frozen parameter)
    #: reads it packed once into a private global, repacked only when the weight's address
    #: changes: the `freeze_weights` option (in-place changes to the weight are not seen).
    prepack_weights: bool = field(default=False,
                                  metadata={"help": "pack frozen conv weights once"})
    #: Largest KH*KW of a direct kernel: its body unrolls every tap, and CLIP's 32x32 patch
    #: embedding (1024 taps) made 3.2 MB of LLVM IR and 60 s of LLVM -O3; larger windows
    #: (patchify convs) keep the im2col + GEMM path. ViT's 16x16 (256) stays direct.
    max_taps: int = field(default=256, metadata={"help": "largest KH*KW of a direct kernel"})
    #: Direct kernels write (not add into) an output whose only initialisation is a zero
    #: fill right before the conv, and the fill goes (a pass over the output, and the
    #: kernel's read of it).
    store_output: bool = field(default=True, metadata={"help": "drop zero fills of outputs"})
    #: A kernel that stores its output (direct, or a 1x1 conv's packed GEMM) applies the
    #: elementwise chain after it (BatchNorm folded to x * S + T, residual add, ReLU:
    #: passes/_conv_epilogue.py) as it writes each value, and the chain's passes over the
    #: output go. Off: not faster yet (docs/cpu-codegen.md, "Conv epilogues").
    fuse_epilogue: bool = field(default=False,
                                metadata={"help": "apply elementwise chains in the write-back"})

    def __post_init__(self) -> None:
        if self.vector_width not in (0, 4, 8, 16):
            raise ValueError("vector-width must be 0, 4, 8 or 16")
        if min(self.min_flops, self.parallel_min_flops) < 0:
            raise ValueError("sizes must not be negative")
        if self.max_taps < 1:
            raise ValueError("max-taps must be at least 1")

    def apply(self, module: Operation) -> None:
        vl = self.vector_width or host_vector_lanes()
        mm = MatmulMicrokernel(vector_width=self.vector_width, dealloc=self.dealloc,
                               parallel=self.parallel,
                               parallel_min_flops=self.parallel_min_flops)
        tiles = mm.tiles()
        known = {str(ir.StringAttr(f.attributes["sym_name"]).value)
                 for f in ops_named(module, ("func.func", "llvm.mlir.global"))}
        for op in ops_named(module, (_DEPTHWISE,)):
            dspec = match_depthwise(op, self.min_flops)
            if dspec is None:
                continue
            parallel = self.parallel and dspec.macs() >= self.parallel_min_flops \
                and items_of(dspec) >= 2
            w4 = _uncollapsed_weight(op, dspec)
            if w4 is not None:
                dspec = replace(dspec, w4=True)
            name = _name("accel_dwconv", dspec, f"{vl}{parallel}")
            if name not in known:
                _move_new_funcs(module, render_depthwise(dspec, vl, name, parallel=parallel),
                                known)
            self._replace(op, name, w4)
        for op in ops_named(module, (_CONV,)):
            spec = match_conv(op, 1, self.min_flops)
            if spec is None:
                continue
            macs = spec.n * spec.f * spec.oh * spec.ow * spec.c * spec.kh * spec.kw
            parallel = self.parallel and macs >= self.parallel_min_flops
            g = spec.gemm()
            if (self.pointwise_gemm and (is_pointwise(spec) or is_strided_pointwise(spec))
                    and min(g.m, g.n, g.k) >= mm.min_size and macs >= mm.min_flops):
                p = spec.oh * spec.ow
                g = GemmSpec(m=spec.f, n=p, k=spec.c, a_type=f"memref<{spec.f}x{spec.c}xf32>",
                             b_type=f"memref<{spec.c}x{p}xf32, strided<[{p}, 1], offset: ?>>",
                             c_type=f"memref<{spec.f}x{p}xf32, strided<[{p}, 1], offset: ?>>")
                # BLAS's beta = 0: the GEMM's first K block stores O, and its zero fill
                # (a memset of every 1x1 conv's output: 3.4% of ResNet-50) goes.
                fill = _zero_fill_before(op) if self.store_output else None
                if fill is not None:
                    fill.erase()
                parallel_min = self.parallel_min_flops if self.parallel else None
                plan = _plan(module, g, tiles, parallel_min, False)
                code, extras = self._chain(module, op, spec.f, known) \
                    if fill is not None and not plan.direct else (None, [])
                frozen = frozen_weight_sites(module, op) if self.prepack_weights else None
                if frozen is not None:
                    gemm, prepack, pa_t = add_prepacked_kernel(
                        module, g, tiles, self.dealloc, known, parallel_min,
                        zero_start=fill is not None, chain=code)
                    name = _name("accel_pwconv", spec, gemm)
                    if name not in known:
                        _move_new_funcs(module, render_pointwise(
                            spec, name, gemm, g, (prepack, pa_t), code), known)
                    packed = thread_packed_weight(module, op, frozen, gemm, pa_t, known)
                    replace_with_call(op, name, [*op.operands, *packed, *extras])
                    continue
                gemm = _add_kernel(module, g, tiles, self.dealloc, known, parallel_min,
                                   epilogue=Epilogue() if fill is not None else None,
                                   plan=plan, chain=code)
                name = _name("accel_pwconv", spec, gemm)
                if name not in known:
                    _move_new_funcs(module, render_pointwise(spec, name, gemm, g, chain=code),
                                    known)
                replace_with_call(op, name, [*op.operands, *extras])
                continue
            elif spec.kh * spec.kw > self.max_taps:
                continue  # im2col + GEMM (accel-matmul-microkernel)
            else:
                self._direct(module, op, spec, vl, known, parallel)
        for op in ops_named(module, ("linalg.generic",)):  # accel-blocked-layout's convs
            spec = match_blocked_conv(op, self.min_flops)
            if spec is None or spec.kh * spec.kw > self.max_taps or vl % BLOCK:
                continue  # (4-lane vectors hold half a block: the generic's loops run)
            macs = spec.n * spec.f * spec.oh * spec.ow * spec.c * spec.kh * spec.kw
            self._direct(module, op, spec, vl, known,
                         self.parallel and macs >= self.parallel_min_flops)

    def _direct(self, module: Operation, op: Operation, spec: ConvSpec, vl: int,
                known: set[str], parallel: bool) -> None:
        """`op` -> a call of the direct kernel for `spec`."""
        tile = choose_conv_tile(spec, vl)
        parallel = parallel and conv_items(spec, tile) >= 2
        fill = _zero_fill_before(op) if self.store_output else None
        if fill is not None:
            fill.erase()
        store = fill is not None
        code, extras = self._chain(module, op, spec.f, known) if store and not spec.block \
            else (None, [])
        frozen = frozen_weight_sites(module, op) if self.prepack_weights else None
        if frozen is not None:  # every block packed once (passes/_frozen_weights.py)
            name = _name("accel_dconv", spec,
                         f"{tile}{parallel}{self.dealloc}{store}frozen{code}")
            if name not in known:
                _move_new_funcs(module, render_direct_conv(
                    spec, tile, name, parallel=parallel, dealloc=self.dealloc,
                    store=store, frozen=True, epilogue=code), known)
            packed = thread_packed_weight(module, op, frozen, name,
                                          panel_type(spec, tile.fb), known)
            replace_with_call(op, name, [*op.operands, *packed, *extras])
            return
        name = _name("accel_dconv", spec,
                     f"{tile}{parallel}{self.dealloc}{store}{code or ''}")
        if name not in known:
            text = render_direct_conv(spec, tile, name, parallel=parallel,
                                      dealloc=self.dealloc, store=store,
                                      epilogue=code)
            _move_new_funcs(module, text, known)
        if parallel and shares_panel(spec, tile.fb):  # threads > filter blocks
            self._replace_with_panel(op, name, panel_type(spec, tile.fb), extras)
            return
        replace_with_call(op, name, [*op.operands, *extras])
        return

    def _chain(self, module: Operation, op: Operation, channels: int, known: set[str]
               ) -> tuple[EpilogueCode | None, list[ir.Value]]:
        """(the elementwise chain after `op` and its operands) for a kernel that stores its
        output, or (None, []): the chain's generics go and `op` moves to the last one's
        place (`apply_chain`); a leading per-channel affine part (BatchNorm) becomes
        x * S + T, S and T computed before the kernel by a helper (`fold_affine_prefix`)."""
        chain = collect_chain(op) if self.fuse_epilogue else None
        if chain is None:
            return None, []
        apply_chain(chain, op)
        folded = fold_affine_prefix(chain, channels)
        if folded is None:
            return chain.code, chain.values
        if folded.name not in known:
            _move_new_funcs(module, folded.helper, known)
        with InsertionPoint(op), op.location:
            t = ir.MemRefType(ir.Type.parse(f"memref<{channels}xf32>"))
            scale = dialects.memref.AllocaOp(t, [], [], alignment=64).result
            shift = dialects.memref.AllocaOp(t, [], [], alignment=64).result
            ir.Operation.create("func.call", results=[],
                                operands=[*folded.values, scale, shift],
                                attributes={"callee": ir.FlatSymbolRefAttr.get(folded.name)})
        return folded.code, [scale, shift, *folded.rest]

    def _replace_with_panel(self, op: Operation, name: str, panel: str,
                            extras: list[ir.Value]) -> None:
        """`op` -> `func.call @name(X, W, O, P)` with P a new buffer of type `panel` (only
        touched when the kernel uses it: malloc hands out untouched pages)."""
        with InsertionPoint(op), op.location:
            buffer = dialects.memref.AllocOp(ir.MemRefType(ir.Type.parse(panel)), [], [],
                                             alignment=64).result
        block_ops = [o.operation for o in op.block.operations]
        after = block_ops[position(block_ops, op) + 1]
        replace_with_call(op, name, [*op.operands, buffer, *extras])
        if self.dealloc:  # after the deallocation pipeline: free it here
            with InsertionPoint(after), after.location:
                dialects.memref.DeallocOp(buffer)

    @staticmethod
    def _replace(op: Operation, name: str, weight: ir.Value | None = None) -> None:
        """`op` -> `func.call @name(its operands)` (`weight` instead of the second one)."""
        operands = list(op.operands)
        if weight is not None:
            operands[1] = weight
        replace_with_call(op, name, operands)
