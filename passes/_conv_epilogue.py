"""Elementwise chains after a convolution, applied in its kernel's write-back
(accel-conv-kernels' `fuse-epilogue`; off in the CPU pipeline: not faster yet).

Why: after bufferization ResNet's conv -> BatchNorm -> ReLU is the conv and then one
`linalg.generic` per step over the whole output (`x - mean`, `* 1/sqrt(var + eps)`,
`* gamma`, `+ beta`, `+ identity`, `max(x, 0)`), which `accel-affine-fusion` merges into one
nest after the kernel: 4.5% of ResNet-50's time at 1 thread (perf, frozen weights).
onnxruntime applies BatchNorm, ReLU and the residual add as its conv writes the output.
Here the kernel's write-back computes the chain on each value while it is in a register,
and the chain's buffers go:

    linalg.conv_2d_nchw_fchw ins(%x, %w) outs(%O)        (zero fill dropped: store mode)
    linalg.generic ins(%O, %mean) outs(%A) { subf }       %mean: memref<Fx1x1xf32>, (d1, 0, 0)
    linalg.generic ins(%A, %id) outs(%B) { addf }         %id: the output's shape, identity
    linalg.generic ins(%B) outs(%D) { cmpf ugt; select }  (uses of %D -> %O)
  ->
    func.call @accel_dconv_..._<h>(%x, %w, %O, %mean, %id)   (at the last generic's place)

Matched, guard first (`collect_chain`): from the conv's output, each buffer of the chain
is a fresh allocation used by the conv (or the previous generic) and by exactly one
`linalg.generic`, later in the same block, all of whose loops are parallel, with one output
of the conv's output type (identity map, a fresh allocation); the chain value comes in
through identity maps, and every other input is the output's shape (identity map, read at
the same element: a residual), per channel (a map of `d1` and zeros) or one scalar (a map
of zeros); the body uses only ops `STEPS` knows, its block arguments (not the output's) and
f32 constants. The kernel call moves to the last generic's place, so every op in between
must be free of memory effects or write only buffers allocated in the function that the
conv does not read and no chain generic read before it (BatchNorm's per-channel
`1/sqrt(var + eps)` is computed there). The chain stops at the first generic that fails a
guard; what it kept still applies. A leading run of per-channel `+ - *` steps (BatchNorm)
becomes one `x * S + T` (`fold_affine_prefix`).

Measured (session 21, 2-core AMD EPYC, AVX2, frozen weights, one process, variants in
turn): ResNet-50 130.1 -> 133.9 ms at 1 thread, 76.7 -> 79.6 ms at 2; a basic block (64
channels, 56x56) 6.97 -> 7.39 ms. perf: the nests went (4.5% -> 1.9% of the samples), but
the kernels grew by more. Affine fusion already runs the chain as one vectorised pass,
parameters hoisted per channel, over an output still in L2, and it writes the next conv's
padded input on the way; the write-back loads each channel's operands per vector and reads
the residual a row per filter.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

from accel.ir import Operation, ir
from accel.passes._affine import base_buffer
from accel.passes._epilogue_code import STEPS, EpilogueCode, Extra, Ref
from accel.passes._gemm_epilogue import defining_op, is_fresh, position

_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
               "ult", "ule", "une", "uno", "true")
#: Ops between the conv and its chain's generics with no memory effects.
_PURE = ("memref.alloc", "memref.alloca", "memref.expand_shape", "memref.collapse_shape",
         "memref.subview", "memref.cast", "memref.get_global", "memref.reinterpret_cast")
#: The map of the output, the chain value and a residual.
_IDENTITY = "(d0, d1, d2, d3) -> (d0, d1, d2, d3)"


@dataclass
class ConvEpilogue:
    """A matched chain: its code, the extras' values (in `code.extras` order), the
    generics in order, and the last generic's output buffer."""

    code: EpilogueCode
    values: list[ir.Value] = field(default_factory=list)
    generics: list[Operation] = field(default_factory=list)
    final: ir.Value | None = None


def _maps(op: Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _extra_kind(t: ir.MemRefType, m: ir.AffineMap, out: ir.MemRefType
                ) -> tuple[str, tuple[str, ...]] | None:
    """("full" | "channel" | "scalar", index template) of an input read through `m`."""
    if m.n_dims != 4 or not t.has_static_shape or not isinstance(t.element_type, ir.F32Type):
        return None
    if str(m) == _IDENTITY:
        strides, offset = t.get_strides_and_offset()
        dense = list(t.shape) == list(out.shape) and offset == 0 and \
            list(strides) == [out.shape[1] * out.shape[2] * out.shape[3],
                              out.shape[2] * out.shape[3], out.shape[3], 1]
        return ("full", ("n", "f", "p")) if dense else None
    index: list[str] = []
    for e, size in zip(m.results, t.shape, strict=True):
        if isinstance(e, ir.AffineConstantExpr) and e.value == 0:
            index.append("0")
        elif isinstance(e, ir.AffineDimExpr) and e.position == 1 \
                and size == out.shape[1] and "f" not in index:
            index.append("f")
        else:
            return None
    return ("channel" if "f" in index else "scalar"), tuple(index)


def _f32_constant(value: ir.Value) -> int | None:
    """The bit pattern of an f32 `arith.constant` outside the body, else None."""
    owner = defining_op(value, "arith.constant")
    if owner is None or not isinstance(value.type, ir.F32Type):
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.FloatAttr):
        return None
    return struct.unpack("<I", struct.pack("<f", attr.value))[0]


class _Builder:
    """Collects extras (each value once) while stages are translated."""

    def __init__(self, out: ir.MemRefType) -> None:
        self.out = out
        self.extras: list[Extra] = []
        self.values: list[ir.Value] = []

    def extra(self, value: ir.Value, m: ir.AffineMap) -> Ref | None:
        t = value.type
        if not isinstance(t, ir.MemRefType):
            return None
        kind = _extra_kind(t, m, self.out)
        if kind is None:
            return None
        ex = Extra(kind[0], str(t), kind[1])
        for k, (v, e) in enumerate(zip(self.values, self.extras, strict=True)):
            if v == value and e == ex:
                return ("x", k)
        self.extras.append(ex)
        self.values.append(value)
        return ("x", len(self.extras) - 1)

    def stage(self, g: Operation, cur: ir.Value) -> tuple | None:
        """The steps of generic `g` applied to the chain value `cur`, or None."""
        sizes = list(ir.DenseI32ArrayAttr(g.attributes["operandSegmentSizes"]))
        if len(sizes) != 2 or sizes[1] != 1 or len(g.regions[0].blocks) != 1:
            return None
        n_in = sizes[0]
        maps = _maps(g)
        if any("parallel" not in str(a) for a in ir.ArrayAttr(g.attributes["iterator_types"])):
            return None
        out = g.operands[n_in]
        if out.type != self.out or str(maps[n_in]) != _IDENTITY:
            return None
        block = g.regions[0].blocks[0]
        args = list(block.arguments)
        if list(args[n_in].uses):
            return None  # reads the output's old value
        refs: dict[ir.Value, Ref] = {}
        for i in range(n_in):
            v = g.operands[i]
            if v == cur:
                if str(maps[i]) != _IDENTITY:
                    return None
                refs[args[i]] = ("cur",)
                continue
            ref = self.extra(v, maps[i])
            if ref is None:
                return None
            refs[args[i]] = ref
        steps = []
        ops = list(block.operations)
        for op in ops[:-1]:
            name = op.operation.name
            if name == "arith.constant" and len(op.results) == 1:  # a constant in the body
                bits = _f32_constant(op.results[0])
                if bits is None:
                    return None
                refs[op.results[0]] = ("k", bits)
                continue
            if name not in STEPS or len(op.operands) != STEPS[name] or len(op.results) != 1:
                return None
            operands = []
            for v in op.operands:
                ref = refs.get(v)
                if ref is None:
                    bits = _f32_constant(v)
                    if bits is None:
                        return None
                    ref = ("k", bits)
                operands.append(ref)
            pred = ""
            if name == "arith.cmpf":
                pred = _PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
            refs[op.results[0]] = ("r", len(steps))
            steps.append((name, tuple(operands), pred))
        term = ops[-1].operation
        if term.name != "linalg.yield" or len(term.operands) != 1 \
                or term.operands[0] not in refs:
            return None
        return tuple(steps), refs[term.operands[0]]


def _writes(op: Operation) -> list[ir.Value] | None:
    """The buffers `op` writes (a linalg op's outputs, memref.copy's target); None when
    its effects are not known here."""
    name = op.name
    if name in _PURE or name.startswith(("arith.", "math.")) and not op.regions:
        return []
    if name in ("linalg.generic", "linalg.map"):
        sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])) \
            if "operandSegmentSizes" in op.attributes else [len(op.operands) - 1, 1]
        return list(op.operands)[sizes[0]:]
    if name == "linalg.fill":
        return [op.operands[1]]
    if name == "memref.copy":
        return [op.operands[1]]
    return None


def collect_chain(conv: Operation) -> ConvEpilogue | None:
    """The elementwise chain after `conv` (a conv writing its output, no fill before it),
    as in the module docstring, or None when not even its first generic qualifies."""
    out = conv.operands[2]
    out_t = out.type
    if not is_fresh(out) or not isinstance(out_t, ir.MemRefType):
        return None
    block_ops = [o.operation for o in conv.block.operations]
    at_conv = position(block_ops, conv)
    build = _Builder(out_t)
    stages: list[tuple] = []
    generics: list[Operation] = []
    read_roots: list[ir.Value] = []  # buffers the accepted generics read as extras
    cur, scan = out, at_conv + 1
    while True:
        users: list[Operation] = []
        for u in cur.uses:
            owner = u.owner.operation
            if owner != conv and not any(owner == o for o in users) and \
                    not any(owner == g for g in generics):
                users.append(owner)
        if len(users) != 1 or users[0].name != "linalg.generic" \
                or users[0].block != conv.block:
            break
        g = users[0]
        at_g = position(block_ops, g)
        if at_g < scan or not _between_ok(block_ops[scan:at_g], conv, read_roots):
            break
        saved = (list(build.extras), list(build.values))
        stage = build.stage(g, cur)
        nxt = g.operands[len(g.operands) - 1]
        if stage is None or not is_fresh(nxt) or defining_op(nxt).block != conv.block:
            build.extras, build.values = saved
            break
        stages.append(stage)
        generics.append(g)
        read_roots = [base_buffer(v) for v in build.values]
        cur, scan = nxt, at_g + 1
    if not generics:
        return None
    return ConvEpilogue(EpilogueCode(tuple(build.extras), tuple(stages)), build.values,
                        generics, cur)


def _between_ok(ops: list[Operation], conv: Operation, read_roots: list[ir.Value]) -> bool:
    """Ops the kernel call moves past: no memory effects, or writes only to buffers
    allocated in this function that the conv does not read and no chain generic read."""
    inputs = [base_buffer(conv.operands[0]), base_buffer(conv.operands[1])]
    for op in ops:
        written = _writes(op)
        if written is None:
            return False
        for buf in written:
            root = base_buffer(buf)
            if defining_op(root, "memref.alloc") is None \
                    or any(root == r for r in inputs + read_roots):
                return False
    return True


def apply_chain(ep: ConvEpilogue, conv: Operation) -> None:
    """Moves `conv` to its chain's last generic, sends the chain's result to the conv's
    output and erases the generics and their buffers (the caller then replaces `conv`
    with the kernel call, passing `ep.values` after its other operands)."""
    out = conv.operands[2]
    conv.move_before(ep.generics[-1])
    buffers = [g.operands[len(g.operands) - 1] for g in ep.generics]
    ep.final.replace_all_uses_with(out)
    for g in reversed(ep.generics):
        g.erase()
    for buf in buffers:
        owner = defining_op(buf)
        if owner is not None and not list(buf.uses):
            owner.erase()


# -- per-channel affine prefix ---------------------------------------------------------------

#: Steps folded into x * S + T. Not divf: x / 0 is inf, and (1/0, 0/0) would make it NaN.
_AFFINE = ("arith.addf", "arith.subf", "arith.mulf")


def _affine_step(stage: tuple, extras: tuple[Extra, ...]) -> tuple[str, Ref] | None:
    """(op, its per-channel, scalar or constant operand) when `stage` is one step
    `cur op p` (or `p op cur` for add and mul), else None."""
    steps, yielded = stage
    if len(steps) != 1 or yielded != ("r", 0):
        return None
    name, refs, _ = steps[0]
    if name not in _AFFINE:
        return None
    if refs[0] == ("cur",):
        p = refs[1]
    elif refs[1] == ("cur",) and name in ("arith.addf", "arith.mulf"):
        p = refs[0]
    else:
        return None
    if p[0] == "k" or p[0] == "x" and extras[p[1]].kind != "full":
        return name, p
    return None


@dataclass
class AffinePrefix:
    """The chain's leading per-channel steps as `x * S[f] + T[f]`: `helper` (module text)
    computes S and T (memref<Fxf32>) from `values`; `code` is the chain with that stage
    first, its extras S, T and then `rest` (the values the other stages read)."""

    name: str
    helper: str
    values: list[ir.Value]
    rest: list[ir.Value]
    code: EpilogueCode


def fold_affine_prefix(ep: ConvEpilogue, channels: int) -> AffinePrefix | None:
    """BatchNorm at inference is four such steps (- mean, * 1/sqrt(var + eps), * gamma,
    + beta), each a load of a channel's value, a broadcast and an op per vector written:
    as one multiply-add the write-back costs less than the nest it replaces. None when
    fewer than two steps lead the chain. Rounding differs from the steps one by one
    (x*(r*g) + (b - m*r*g) against ((x - m)*r)*g + b), as in every BatchNorm folding, and
    an infinite factor (a zero variance with eps = 0) gives NaN where the steps give
    +-inf: one reason the option is off by default."""
    code = ep.code
    prefix = []
    for stage in code.stages:
        step = _affine_step(stage, code.extras)
        if step is None:
            break
        prefix.append(step)
    if len(prefix) < 2:
        return None
    used = sorted({p[1] for _, p in prefix if p[0] == "x"})
    later = sorted({r[1] for steps, y in code.stages[len(prefix):]
                    for r in [y, *(r for _, refs, _ in steps for r in refs)] if r[0] == "x"})
    remap = {k: 2 + i for i, k in enumerate(later)}

    def move(r: Ref) -> Ref:
        return ("x", remap[r[1]]) if r[0] == "x" else r

    rest_stages = tuple((tuple((n, tuple(move(r) for r in refs), p) for n, refs, p in steps),
                         move(y)) for steps, y in code.stages[len(prefix):])
    st = Extra("channel", f"memref<{channels}xf32>", ("f",))
    first = (((("arith.mulf", (("cur",), ("x", 0)), ""),
               ("arith.addf", (("r", 0), ("x", 1)), "")), ("r", 1)),)
    new = EpilogueCode((st, st, *(code.extras[k] for k in later)), first + rest_stages)
    name = "accel_chan_affine_" + hashlib.sha1(repr((prefix, [code.extras[k] for k in used],
                                                     channels)).encode()).hexdigest()[:8]
    return AffinePrefix(name, _render_prefix(name, prefix, [code.extras[k] for k in used],
                                             used, channels),
                        [ep.values[k] for k in used], [ep.values[k] for k in later], new)


def _render_prefix(name: str, prefix: list[tuple[str, Ref]], extras: list[Extra],
                   used: list[int], channels: int) -> str:
    """`@name(used extras..., %S, %T)`: per channel, a = 1, b = 0 through the steps
    (`+ p`: b += p; `- p`: b -= p; `* p`: a *= p, b *= p)."""
    at = {k: i for i, k in enumerate(used)}
    params = [f"%E{i}: {ex.type}" for i, ex in enumerate(extras)]
    lines = ["module {",
             f"  func.func private @{name}({', '.join(params)}, %S: memref<{channels}xf32>, "
             f"%T: memref<{channels}xf32>) {{",
             "    %c0 = arith.constant 0 : index", "    %c1 = arith.constant 1 : index",
             f"    %cf = arith.constant {channels} : index",
             "    %one = arith.constant 1.0 : f32", "    %zero = arith.constant 0.0 : f32",
             "    scf.for %f = %c0 to %cf step %c1 {"]
    a, b = "%one", "%zero"
    for j, (op, p) in enumerate(prefix):
        if p[0] == "k":
            v = f"%k{j}"
            lines.append(f"      {v} = arith.constant 0x{p[1]:08X} : f32")
        else:
            i = at[p[1]]
            idx = ", ".join("%f" if s == "f" else "%c0" for s in extras[i].index)
            v = f"%p{j}"
            lines.append(f"      {v} = memref.load %E{i}[{idx}] : {extras[i].type}")
        if op in ("arith.addf", "arith.subf"):
            lines.append(f"      %b{j} = {op} {b}, {v} : f32")
            b = f"%b{j}"
        else:
            lines += [f"      %a{j} = {op} {a}, {v} : f32", f"      %b{j} = {op} {b}, {v} : f32"]
            a, b = f"%a{j}", f"%b{j}"
    lines += [f"      memref.store {a}, %S[%f] : memref<{channels}xf32>",
              f"      memref.store {b}, %T[%f] : memref<{channels}xf32>",
              "    }", "    return", "  }", "}"]
    return "\n".join(lines)
