"""`accel-blocked-layout`: convolutions' activations in a channel-blocked layout (NCHW8c).

Why: in NCHW a direct convolution's tile reads PT positions of one channel (20-24 bytes of a
cache line) and walks all C rows once per filter block, and its write-back transposes
every 8 x 8 block of accumulators (positions x filters) into output rows. With the
activations blocked by 8 channels, N x C/8 x H x W x 8 (oneDNN's and onnxruntime's NCHWc),
a tile's inputs are a few contiguous runs (positions x 8 channels), and each accumulator
(8 filters at one position) is 8 consecutive floats of the output: stored as it is. 1x1
convolutions then need no packing of the input either (onnxruntime's pointwise scheme,
which measured 0.56-1.04x the GEMM on NCHW in session 23, docs/cpu-codegen.md).

The layout is chosen once, at the graph's edges: each eligible convolution becomes

    %xp = linalg.pack %x inner_dims_pos = [1] inner_tiles = [8]     N x C/8 x H x W x 8
    %op = linalg.pack %init ...                                     (a fill: folds)
    %ob = linalg.generic {conv on blocked X and O, W as it is} ins(%xp, %w) outs(%op)
    %o  = linalg.unpack %ob ...

and MLIR's data-layout propagation (`transform.apply_patterns.linalg.data_layout_propagation`,
with canonicalization) moves each unpack down and each pack up through the elementwise
generics (BatchNorm, ReLU, residual add) and pads between convolutions, where an unpack
meets a pack and both fold away. Max pools over whole blocks are blocked the same way (one
all-parallel generic with a window tap per input), so the stem's pool stays blocked;
per-channel operands are read in place (`_read_parameters_in_place`). What is left, at the
edges (before the global pool; around 1x1 convs, which stay NCHW GEMMs unless `pointwise`),
is lowered to expand_shape + transpose (`transform.structured.lower_pack`) and
collapse_shape + transpose (`lower_unpack`): plain generics that bufferize and fuse.
`accel-conv-kernels` then matches the blocked generic (`match_blocked_conv`) and calls
the direct kernel with blocked addressing (`passes/_conv_kernel.py`, `ConvSpec.block`).

Matched: a `linalg.conv_2d_nchw_fchw` on static f32 tensors whose filters F are a multiple
of 8 (its input is blocked too when C is; the stem's 3 channels stay NCHW), with at most
`max-taps` taps and at least `min-flops` MACs (what `accel-conv-kernels` would give a
kernel); 1x1 convolutions only with `pointwise` (on the direct kernel they lost to the NCHW
GEMM: docs/cpu-codegen.md, "Blocked layout"); a `linalg.pooling_nchw_max` over whole
blocks with strides of at least 2, when some conv is blocked (at stride 1 a tap's map would
be the loop itself, and linalg would take the loop's extent from the larger input). With
`conv_layout="nchwc"` in the CPU pipeline; level with NCHW on the AVX2 host, so off by
default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accel.ir import Module, Operation, apply_transform_script, ir
from accel.passes.base import ModulePass, ops_named, register_pass, replace_with_function_body
from accel.passes.matmul_microkernel import _pair

#: Channels per block: one AVX2 vector; an AVX-512 accumulator spans two blocks.
BLOCK = 8

_CONV = "linalg.conv_2d_nchw_fchw"
_POOL = "linalg.pooling_nchw_max"

#: MLIR's propagation: each unpack down and each pack up through elementwise ops and pads.
_PROPAGATE = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %f = transform.structured.match ops{["func.func"]} in %root
      : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.linalg.data_layout_propagation
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
"""

#: The edges' packs and unpacks as reshapes and transposes.
_LOWER = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %f = transform.structured.match ops{["func.func"]} in %root
      : (!transform.any_op) -> !transform.any_op
    %p = transform.structured.match ops{["linalg.pack"]} in %root
      : (!transform.any_op) -> !transform.op<"linalg.pack">
    transform.structured.lower_pack %p : (!transform.op<"linalg.pack">)
      -> (!transform.op<"tensor.pad">, !transform.op<"tensor.expand_shape">,
          !transform.op<"linalg.transpose">)
    %u = transform.structured.match ops{["linalg.unpack"]} in %root
      : (!transform.any_op) -> !transform.op<"linalg.unpack">
    transform.structured.lower_unpack %u : (!transform.op<"linalg.unpack">)
      -> (!transform.op<"tensor.empty">, !transform.op<"linalg.transpose">,
          !transform.op<"tensor.collapse_shape">, !transform.op<"tensor.extract_slice">,
          !transform.op<"linalg.copy">)
    transform.apply_patterns to %f {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f : !transform.any_op
    transform.yield
  }
}
"""


#: The blocked generic's [sh, sw, dh, dw, input blocked (0 or 1)]: `match_blocked_conv`
#: rebuilds the indexing maps from them and compares (the attribute alone proves nothing).
GEOMETRY_ATTR = "accel.blocked_conv"


def blocked_maps(strides: tuple[int, int], dilations: tuple[int, int],
                 in_blocked: bool = True) -> list[str]:
    """The blocked convolution's indexing maps (X, W, O), as text. Loops (n, fb, oh, ow,
    fi, cb, ci, kh, kw) with a blocked input; (n, fb, oh, ow, fi, c, kh, kw) with an NCHW
    one (the stem's 3 channels: only its output is blocked)."""
    (sh, sw), (dh, dw) = strides, dilations
    b = BLOCK
    if in_blocked:
        dims = "(d0, d1, d2, d3, d4, d5, d6, d7, d8)"
        return [f"affine_map<{dims} -> (d0, d5, d2 * {sh} + d7 * {dh}, "
                f"d3 * {sw} + d8 * {dw}, d6)>",
                f"affine_map<{dims} -> (d1 * {b} + d4, d5 * {b} + d6, d7, d8)>",
                f"affine_map<{dims} -> (d0, d1, d2, d3, d4)>"]
    dims = "(d0, d1, d2, d3, d4, d5, d6, d7)"
    return [f"affine_map<{dims} -> (d0, d5, d2 * {sh} + d6 * {dh}, d3 * {sw} + d7 * {dw})>",
            f"affine_map<{dims} -> (d1 * {b} + d4, d5, d6, d7)>",
            f"affine_map<{dims} -> (d0, d1, d2, d3, d4)>"]


def blocked_geometry(op: Operation) -> tuple[int, int, int, int, bool] | None:
    """(sh, sw, dh, dw, input blocked) when `op` is the blocked convolution this pass
    writes (on tensors or memrefs): a `linalg.generic` with its maps, iterators and a
    multiply-add body."""
    if op.name != "linalg.generic" or GEOMETRY_ATTR not in op.attributes \
            or len(op.operands) != 3:
        return None
    geometry = [int(v) for v in ir.DenseI64ArrayAttr(op.attributes[GEOMETRY_ATTR])]
    if len(geometry) != 5 or min(geometry[:4]) < 1 or geometry[4] not in (0, 1):
        return None
    sh, sw, dh, dw, blocked = geometry
    maps = list(ir.ArrayAttr(op.attributes["indexing_maps"]))
    if [str(m) for m in maps] != [str(ir.Attribute.parse(m)) for m in
                                  blocked_maps((sh, sw), (dh, dw), bool(blocked))]:
        return None
    iters = [str(it) for it in ir.ArrayAttr(op.attributes["iterator_types"])]
    if ["parallel" in it for it in iters] != [True] * 5 + [False] * (3 + blocked):
        return None
    body = [o.operation for o in op.regions[0].blocks[0].operations]
    args = list(op.regions[0].blocks[0].arguments)
    if [o.name for o in body] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return None
    mul, add, done = body
    if set(mul.operands) != {args[0], args[1]} or set(add.operands) != {args[2], mul.result} \
            or done.operands[0] != add.result:
        return None
    return sh, sw, dh, dw, bool(blocked)


def _tensor(shape: list[int]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _blocked(shape: list[int]) -> str:
    n, c, h, w = shape
    return _tensor([n, c // BLOCK, h, w, BLOCK])


def _pack(value: str, shape: list[int], name: str) -> list[str]:
    return [f"  %{name}e = tensor.empty() : {_blocked(shape)}",
            f"  %{name} = linalg.pack {value} inner_dims_pos = [1] inner_tiles = [{BLOCK}] "
            f"into %{name}e : {_tensor(shape)} -> {_blocked(shape)}"]


def _unpack(value: str, shape: list[int]) -> list[str]:
    return [f"  %ue = tensor.empty() : {_tensor(shape)}",
            f"  %u = linalg.unpack {value} inner_dims_pos = [1] inner_tiles = [{BLOCK}] into "
            f"%ue : {_blocked(shape)} -> {_tensor(shape)}",
            f"  return %u : {_tensor(shape)}", "}"]


def helper_text(x: list[int], w: list[int], o: list[int], strides: tuple[int, int],
                dilations: tuple[int, int]) -> str:
    """A function (%x, %w, %init) -> conv, through blocked copies of %x (when C is whole
    blocks) and %init."""
    in_blocked = x[1] % BLOCK == 0
    (sh, sw), (dh, dw) = strides, dilations
    maps = blocked_maps(strides, dilations, in_blocked)
    iters = ", ".join(['"parallel"'] * 5 + ['"reduction"'] * (3 + in_blocked))
    x_in, x_t = ("%xp", _blocked(x)) if in_blocked else ("%x", _tensor(x))
    return "\n".join([
        f"func.func private @h(%x: {_tensor(x)}, %w: {_tensor(w)}, %o: {_tensor(o)}) -> "
        f"{_tensor(o)} {{",
        *(_pack("%x", x, "xp") if in_blocked else []), *_pack("%o", o, "op"),
        f"  %ob = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = "
        f"[{iters}], {GEOMETRY_ATTR} = array<i64: {sh}, {sw}, {dh}, {dw}, {int(in_blocked)}>}}"
        f" ins({x_in}, %w : {x_t}, {_tensor(w)}) outs(%op : {_blocked(o)}) {{",
        "  ^bb0(%i: f32, %k: f32, %a: f32):",
        "    %m = arith.mulf %i, %k : f32",
        "    %s = arith.addf %a, %m : f32",
        "    linalg.yield %s : f32",
        f"  }} -> {_blocked(o)}", *_unpack("%ob", o)])


def pool_text(x: list[int], window: list[int], o: list[int], strides: tuple[int, int],
              dilations: tuple[int, int]) -> str:
    """A function (%x, %window, %init) -> max pool, on blocked copies of %x and %init. The
    window's taps are inputs of one all-parallel generic (each the input at its own
    offset, maxima taken in the named op's order; `nsz` as in `accel-pool-taps`), the
    channels innermost: a vector of 8 per tap. (As window loops, fusion sinks them inside
    the channel loop, which LLVM then leaves scalar.)"""
    (sh, sw), (dh, dw) = strides, dilations
    kh, kw = window
    dims = "(d0, d1, d2, d3, d4)"
    taps = [(i, j) for i in range(kh) for j in range(kw)]
    maps = [f"affine_map<{dims} -> (d0, d1, d2 * {sh} + {i * dh}, d3 * {sw} + {j * dw}, d4)>"
            for i, j in taps] + [f"affine_map<{dims} -> (d0, d1, d2, d3, d4)>"]
    iters = ", ".join(['"parallel"'] * 5)
    args = ", ".join(f"%t{k}: f32" for k in range(len(taps)))
    body, acc = [], "%a"
    for k in range(len(taps)):
        body.append(f"    %m{k} = arith.maximumf {acc}, %t{k} fastmath<nsz> : f32")
        acc = f"%m{k}"
    return "\n".join([
        f"func.func private @h(%x: {_tensor(x)}, %k: {_tensor(window)}, %o: {_tensor(o)}) "
        f"-> {_tensor(o)} {{", *_pack("%x", x, "xp"), *_pack("%o", o, "op"),
        f"  %ob = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = "
        f"[{iters}]}} ins({', '.join(['%xp'] * len(taps))} : "
        f"{', '.join([_blocked(x)] * len(taps))}) outs(%op : {_blocked(o)}) {{",
        f"  ^bb0({args}, %a: f32):", *body,
        f"    linalg.yield {acc} : f32",
        f"  }} -> {_blocked(o)}", *_unpack("%ob", o)])


def _shapes(op: Operation) -> tuple[list[list[int]], tuple[int, int], tuple[int, int]] | None:
    """(operand shapes, strides, dilations) of a static f32 NCHW conv or max pool."""
    if len(op.operands) != 3 or len(op.results) != 1:
        return None
    types = [op.operands[0].type, op.operands[1].type, op.operands[2].type]
    if not all(isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape
               and isinstance(ir.RankedTensorType(t).element_type, ir.F32Type)
               for t in types):
        return None
    strides, dilations = _pair(op, "strides"), _pair(op, "dilations")
    if strides is None or dilations is None:
        return None
    return [list(ir.RankedTensorType(t).shape) for t in types], strides, dilations


def _read_parameters_in_place(module: Operation) -> None:
    """A generic input that is a pack of per-channel values (C x 1 x 1, C/8 x 1 x 1 x 8
    packed: BatchNorm's parameters after propagation) reads the values in place instead,
    through the map `(..., d1 * 8 + d4, 0, 0)`. As a pack, each became a transposing nest
    that fusion put inside the channel-block loop, and the elementwise nest around it then
    fused no further: BatchNorm, ReLU and the pad copy stayed three passes over the
    activations (NCHW fuses them into one)."""
    for pack in ops_named(module, ("linalg.pack",)):
        source = pack.operands[0]
        if not isinstance(source.type, ir.RankedTensorType):
            continue
        shape = list(ir.RankedTensorType(source.type).shape)
        inner = list(ir.DenseI64ArrayAttr(pack.attributes["inner_dims_pos"]))
        if inner != [0] or shape[0] % BLOCK or any(d != 1 for d in shape[1:]) \
                or list(ir.DenseI64ArrayAttr(pack.attributes["static_inner_tiles"])) != [BLOCK]:
            continue
        for use in list(pack.results[0].uses):
            user = use.owner
            if user.name != "linalg.generic" or use.operand_number >= \
                    len(user.operands) - len(user.results):
                continue
            maps = list(ir.ArrayAttr(user.attributes["indexing_maps"]))
            old = ir.AffineMapAttr(maps[use.operand_number]).value
            results = list(old.results)
            if len(results) != len(shape) + 1:
                continue
            outer, lane = results[0], results[-1]
            if not (isinstance(outer, ir.AffineDimExpr) and isinstance(lane, ir.AffineDimExpr)):
                continue
            exprs = [outer * BLOCK + lane] + results[1:-1]
            maps[use.operand_number] = ir.AffineMapAttr.get(
                ir.AffineMap.get(old.n_dims, old.n_symbols, exprs))
            user.attributes["indexing_maps"] = ir.ArrayAttr.get(maps)
            user.operands[use.operand_number] = source
        if not list(pack.results[0].uses):
            pack.erase()


def _drop_copies_into_empty(module: Operation) -> None:
    """`lower_unpack` ends with `linalg.copy ins(%v) outs(tensor.empty)`: on tensors that is
    %v itself, and bufferized it would be one more pass over the output."""
    for op in ops_named(module, ("linalg.copy",)):
        if len(op.operands) != 2 or len(op.results) != 1:
            continue
        init = op.operands[1].owner
        if not isinstance(init, ir.OpView | ir.Operation) or init.name != "tensor.empty" \
                or op.operands[0].type != op.results[0].type:
            continue
        op.results[0].replace_all_uses_with(op.operands[0])
        op.erase()
        if not list(init.results[0].uses):
            init.operation.erase()


@register_pass
@dataclass(frozen=True)
class BlockedLayout(ModulePass):
    """Runs NCHW convolutions (and the elementwise ops between them) on NCHW8c tensors."""

    name = "accel-blocked-layout"
    #: Smallest N*F*OH*OW*C*KH*KW blocked (`accel-conv-kernels`' own threshold).
    min_flops: int = field(default=1 << 16, metadata={"help": "smallest MACs blocked"})
    #: Largest KH*KW blocked (`accel-conv-kernels`' max-taps: larger ones go to im2col).
    max_taps: int = field(default=256, metadata={"help": "largest KH*KW blocked"})
    #: 1x1 convolutions too (else they stay NCHW GEMMs, with a reorder on each side).
    pointwise: bool = field(default=False, metadata={"help": "block 1x1 convolutions too"})

    def __post_init__(self) -> None:
        if self.min_flops < 0 or self.max_taps < 1:
            raise ValueError("min-flops must not be negative, max-taps at least 1")

    def eligible(self, op: Operation) -> bool:
        """A conv with whole blocks of filters (of input channels too, or only its output
        is blocked), at most `max-taps` taps and `min-flops` MACs; a strided max pool over
        whole blocks of channels."""
        found = _shapes(op)
        if found is None or [len(s) for s in found[0]] != [4, 4 if op.name == _CONV else 2, 4]:
            return False
        (x, w, o), strides, _ = found
        if op.name == _POOL:  # stride 1: a tap would index the input by the loop alone, and
            # linalg would take the loop's extent from the (larger) input
            return x[1] % BLOCK == 0 and x[:2] == o[:2] and min(strides) > 1
        (n, c, _, _), (f, c2, kh, kw), (_, _, oh, ow) = x, w, o
        if f % BLOCK or c != c2 or kh * kw > self.max_taps:
            return False
        if (kh, kw) == (1, 1) and not self.pointwise:
            return False
        return n * f * oh * ow * c * kh * kw >= self.min_flops

    def apply(self, module: Operation) -> None:
        convs = [op for op in ops_named(module, (_CONV,)) if self.eligible(op)]
        if not convs:
            return  # pools alone stay as they are: nothing to keep blocked around them
        for op in convs + [op for op in ops_named(module, (_POOL,)) if self.eligible(op)]:
            (x, w, o), strides, dilations = _shapes(op)  # type: ignore[misc]
            text = helper_text if op.name == _CONV else pool_text
            replace_with_function_body(op, Module.parse(text(x, w, o, strides, dilations)))
        self._propagate(module)
        _drop_copies_into_empty(module)

    @staticmethod
    def _propagate(module: Operation) -> None:
        apply_transform_script(module, Module.parse(_PROPAGATE))
        _read_parameters_in_place(module)
        apply_transform_script(module, Module.parse(_LOWER))
