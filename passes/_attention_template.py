"""The blocked online-softmax loop nest of `accel-reduce-reduce-fusion`, as MLIR text.

`render_attention(spec)` returns a `func.func @fused(%q, %kt, %v, %x...)` computing
`softmax(scores(Q @ K^T)) @ V` block by block (flash attention) with static tile shapes:
full query/key blocks in `scf.for` loops, the remainders (S not a multiple of the block
size) as one peeled tile each, so every linalg op has static sizes (the affine lowering
downstream needs them). Each score generic (scale, mask) is a placeholder `linalg.generic`
with the attribute `accel.rrf_body = <index>` and a trivial body: the pass copies the
original body in. The pass splices the function body in place of the matched chain.

Per (batch b, query tile i), with m = -inf, l = 0, acc = 0 and for each key tile j:

    s = Q[b, i] @ K^T[b, :, j];  s = score_ops(s, mask tiles)
    mb = rowmax(s);  m_new = max(m, mb);  m_safe = m_new == -inf ? 0 : m_new
    p = exp(s - m_safe);  alpha = exp(m - m_safe)
    l = l * alpha + rowsum(p);  acc = acc * alpha + p @ V[b, j];  m = max(m, mb)
    out[b, i] = acc / l          (SDPA: 0 where m == -inf)

Every loop-carried tensor is updated by an op whose `outs` is its iter_arg, after the last
read of the old value, so One-Shot Bufferize keeps them in place (it rejects loops whose
yields are not equivalent to their iter_args) even after elementwise fusion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from accel.passes._parallel_abi import PARALLEL_FOR_DECL, fork_join

BODY_ATTR = "accel.rrf_body"

_ID1 = "affine_map<(d0) -> (d0)>"
_ID2 = "affine_map<(d0, d1) -> (d0, d1)>"
_ROW = "affine_map<(d0, d1) -> (d0)>"
_PAR1 = '["parallel"]'
_PAR2 = '["parallel", "parallel"]'
_RED2 = '["parallel", "reduction"]'
_MM_MAPS = ("affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
            "affine_map<(d0, d1, d2) -> (d0, d2)>")
_MM_ITERS = '["parallel", "reduction", "parallel"]'


@dataclass
class Slice:
    """A broadcast operand of a score op: function argument `arg` sliced per tile."""

    arg: str  # "%x3"
    type: str  # its full tensor type
    rank: int
    offsets: list[str]  # per dim: "b<k>" (batch index k), "i", "j" or "0"
    kept: list[str]  # tile dims the slice keeps, in order: "d0" (query) / "d1" (key)
    elt: str


@dataclass
class ScoreOp:
    """A score generic: per input, None for the scores or the operand's slice."""

    inputs: list[Slice | None]
    block_types: list[str]  # element types of the body's arguments (inputs, then out)


@dataclass
class Spec:
    """Everything the template needs (shapes are static)."""

    batch_shape: list[int]  # leading dims of the softmax space ([] for 2-D matmuls)
    batched: bool
    m: int  # query rows
    n: int  # keys
    d: int  # head dim of Q and K
    dv: int  # head dim of V
    q_type: str
    kt_type: str
    v_type: str
    out_type: str
    extra_args: list[tuple[str, str]]  # (name, type) after %q, %kt, %v
    score_ops: list[ScoreOp] = field(default_factory=list)
    zero_masked_rows: bool = False
    block_q: int = 64
    block_k: int = 64


#: Cephes' expf: exp(x) = 2^n * P(r), n = round(x * log2(e)), r = x - n * ln(2) in two
#: parts (C1 + C2), P a degree-7 polynomial (its coefficients), 2^n built in the exponent
#: bits. For x <= 0 only (the scores minus their running maximum): below -87.3365 (where
#: 2^n would leave the normal range) the result is 0, NaN stays NaN.
_EXP_LO, _LOG2E, _C1, _C2 = "-87.3365447", "1.44269504", "-0.693359375", "2.12194440e-4"
_EXP_POLY = ("1.9875691500E-4", "1.3981999507E-3", "8.3334519073E-3", "4.1665795894E-2",
             "1.6666665459E-1", "5.0000001201E-1")


def exp_nonpositive(x: str, stem: str = "%xe") -> list[str]:
    """Lines computing exp(`x`) (an f32 SSA value <= 0 or NaN) into `<stem>_res`, as plain
    arith/math ops that LLVM vectorises inline, where a `math.exp` became a call of
    libmvec's vector exp per 16 lanes: attention 8 x 1024 x 64 at 1 thread 14.9 -> 14.3 ms.
    At most 1 ulp from exp over [-88, 0] (`test_exp_nonpositive_is_within_one_ulp`), with
    results below the normal range (exp(x) < 1.2e-38) flushed to zero."""
    v = f"{stem}_"
    lines = [f"{v}lo = arith.constant {_EXP_LO} : f32",
             f"{v}small = arith.cmpf olt, {x}, {v}lo : f32",
             f"{v}xc = arith.select {v}small, {v}lo, {x} : f32",
             f"{v}l2e = arith.constant {_LOG2E} : f32",
             f"{v}half = arith.constant 0.5 : f32",
             f"{v}t = math.fma {v}xc, {v}l2e, {v}half : f32",
             f"{v}n = math.floor {v}t : f32",
             f"{v}c1 = arith.constant {_C1} : f32",
             f"{v}c2 = arith.constant {_C2} : f32",
             f"{v}r0 = math.fma {v}n, {v}c1, {v}xc : f32",
             f"{v}r = math.fma {v}n, {v}c2, {v}r0 : f32",
             f"{v}z = arith.mulf {v}r, {v}r : f32"]
    acc = None
    for k, coeff in enumerate(_EXP_POLY):
        lines.append(f"{v}p{k} = arith.constant {coeff} : f32")
        if acc is not None:
            lines.append(f"{v}y{k} = math.fma {acc}, {v}r, {v}p{k} : f32")
            acc = f"{v}y{k}"
        else:
            acc = f"{v}p{k}"
    lines += [f"{v}ry = math.fma {acc}, {v}z, {v}r : f32",
              f"{v}one = arith.constant 1.0 : f32",
              f"{v}y = arith.addf {v}ry, {v}one : f32",
              # 2^n: n in [-126, 0] once x is clamped, so n + 127 is a valid exponent.
              f"{v}ni = arith.fptosi {v}n : f32 to i32",
              f"{v}bias = arith.constant 127 : i32",
              f"{v}shift = arith.constant 23 : i32",
              f"{v}e0 = arith.addi {v}ni, {v}bias : i32",
              f"{v}e1 = arith.shli {v}e0, {v}shift : i32",
              f"{v}pow = arith.bitcast {v}e1 : i32 to f32",
              f"{v}v = arith.mulf {v}y, {v}pow : f32",
              f"{v}zero = arith.constant 0.0 : f32",
              f"{v}v2 = arith.select {v}small, {v}zero, {v}v : f32",
              f"{v}nan = arith.cmpf uno, {x}, {x} : f32",
              f"{v}res = arith.select {v}nan, {x}, {v}v2 : f32"]
    return lines


class _Text:
    """Lines of MLIR and fresh SSA names (unique across the whole function)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"%{stem}{self.count}"

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def generic(self, maps: str, iters: str, ins: list[tuple[str, str]],
                outs: tuple[str, str], args: list[str], body: list[str], stem: str,
                attrs: str = "") -> str:
        """Emit a `linalg.generic`; `body` uses the argument names in `args`."""
        name = self.fresh(stem)
        ins_text = f"ins({', '.join(v for v, _ in ins)} : {', '.join(t for _, t in ins)}) " \
            if ins else ""
        extra = f" attrs = {{{attrs}}}" if attrs else ""
        self.emit(f"{name} = linalg.generic {{indexing_maps = [{maps}], iterator_types = "
                  f"{iters}}} {ins_text}outs({outs[0]} : {outs[1]}){extra} {{")
        self.emit(f"^bb0({', '.join(args)}):")
        self.lines += ["  " + line for line in body]
        self.emit(f"}} -> {outs[1]}")
        return name

    def empty(self, shape: list[int]) -> str:
        name = self.fresh("e")
        self.emit(f"{name} = tensor.empty() : {_ty(shape)}")
        return name

    def fill(self, value: str, shape: list[int]) -> str:
        empty = self.empty(shape)
        name = self.fresh("f")
        self.emit(f"{name} = linalg.fill ins({value} : f32) outs({empty} : {_ty(shape)}) "
                  f"-> {_ty(shape)}")
        return name


def _ty(shape: list[int], elt: str = "f32") -> str:
    return "tensor<" + "".join(f"{s}x" for s in shape) + f"{elt}>"


def _slice(t: _Text, source: str, source_type: str, offsets: list[str], sizes: list[str],
           result_type: str) -> str:
    name = t.fresh("sl")
    ones = ", ".join("1" for _ in offsets)
    t.emit(f"{name} = tensor.extract_slice {source}[{', '.join(offsets)}] "
           f"[{', '.join(sizes)}] [{ones}] : {source_type} to {result_type}")
    return name


#: Tile products at least this large (M*N*K, each side >= 16) are `linalg.matmul`s, which
#: accel-matmul-microkernel turns into register-tiled kernel calls (its `direct-min-flops`:
#: the tiles' operands sit in cache, so the kernels read them unpacked; the peeled 64 x 28
#: tiles of S = 1500 ran as loops at a third of the speed); smaller ones stay generics in
#: (m, k, n) order, whose loops vectorise along n.
KERNEL_MIN_MACS = 1 << 13


def _tile_matmul(t: _Text, a: tuple[str, str], b: tuple[str, str], out: tuple[str, str],
                 mac: list[str], stem: str) -> str:
    """`out += a @ b` for one tile pair."""
    m, k = _dims(a[1])
    n = _dims(b[1])[1]
    if min(m, n, k) >= 16 and m * n * k >= KERNEL_MIN_MACS:
        name = t.fresh(stem)
        t.emit(f"{name} = linalg.matmul ins({a[0]}, {b[0]} : {a[1]}, {b[1]}) "
               f"outs({out[0]} : {out[1]}) -> {out[1]}")
        return name
    return t.generic(_MM_MAPS, _MM_ITERS, [a, b], out, ["%a: f32", "%b: f32", "%c: f32"], mac,
                     stem)


def _dims(tensor_type: str) -> list[int]:
    return [int(d) for d in tensor_type.removeprefix("tensor<").split("x")[:-1]]


def _key_step(t: _Text, spec: Spec, tile: dict[str, str], qs: int, j: str, ks: int,
              carried: tuple[str, str, str]) -> tuple[str, str, str]:
    """One key block of the online softmax; returns the new (m, l, acc)."""
    m, total, acc = carried
    lead = [tile["b"]] if spec.batched else []
    one = ["1"] if spec.batched else []
    kt = _slice(t, "%kt", spec.kt_type, [*lead, "0", j], [*one, str(spec.d), str(ks)],
                _ty([spec.d, ks]))
    v = _slice(t, "%v", spec.v_type, [*lead, j, "0"], [*one, str(ks), str(spec.dv)],
               _ty([ks, spec.dv]))
    s_t = _ty([qs, ks])
    row_t = _ty([qs])
    acc_t = _ty([qs, spec.dv])
    mac = ["%p0 = arith.mulf %a, %b : f32", "%p1 = arith.addf %c, %p0 : f32",
           "linalg.yield %p1 : f32"]
    s = _tile_matmul(t, (tile["q"], _ty([qs, spec.d])), (kt, _ty([spec.d, ks])),
                     (t.fill("%zero", [qs, ks]), s_t), mac, "s")
    for n, op in enumerate(spec.score_ops):
        ins: list[tuple[str, str]] = []
        maps: list[str] = []
        for operand in op.inputs:
            if operand is None:
                ins.append((s, s_t))
                maps.append(_ID2)
            elif operand.rank == 0:
                ins.append((operand.arg, operand.type))
                maps.append("affine_map<(d0, d1) -> ()>")
            else:
                where = {"i": tile["i"], "j": j, "0": "0"}
                offsets = [where.get(o, tile.get(o, o)) for o in operand.offsets]
                sizes = [str(qs) if o == "i" else str(ks) if o == "j" else "1"
                         for o in operand.offsets]
                shape = [qs if k == "d0" else ks for k in operand.kept]
                sliced = _slice(t, operand.arg, operand.type, offsets, sizes,
                                _ty(shape, operand.elt))
                ins.append((sliced, _ty(shape, operand.elt)))
                maps.append(f"affine_map<(d0, d1) -> ({', '.join(operand.kept)})>")
        args = [f"%ba{k}: {ty}" for k, ty in enumerate(op.block_types)]
        s = t.generic(", ".join([*maps, _ID2]), _PAR2, ins, (t.empty([qs, ks]), s_t), args,
                      [f"linalg.yield %ba{op.inputs.index(None)} : f32"], "sc",
                      attrs=f"{BODY_ATTR} = {n} : i64")
    mb = t.generic(f"{_ID2}, {_ROW}", _RED2, [(s, s_t)], (t.fill("%ninf", [qs]), row_t),
                   ["%a: f32", "%o: f32"],
                   ["%r = arith.maximumf %a, %o : f32", "linalg.yield %r : f32"], "mb")
    safe = t.generic(f"{_ID1}, {_ID1}, {_ID1}", _PAR1, [(m, row_t), (mb, row_t)],
                     (t.empty([qs]), row_t), ["%a: f32", "%b: f32", "%o: f32"],
                     ["%r = arith.maximumf %a, %b : f32",
                      "%inf = arith.cmpf oeq, %r, %ninf : f32",
                      "%r2 = arith.select %inf, %zero, %r : f32", "linalg.yield %r2 : f32"],
                     "ms")
    expm = ["%d = arith.subf %a, %b : f32", "%r = math.exp %d : f32", "linalg.yield %r : f32"]
    alpha = t.generic(f"{_ID1}, {_ID1}, {_ID1}", _PAR1, [(m, row_t), (safe, row_t)],
                      (t.empty([qs]), row_t), ["%a: f32", "%b: f32", "%o: f32"], expm, "al")
    # p = exp(s - m): <= 0 by construction (m is at least the row's maximum).
    p_body = ["%d = arith.subf %a, %b : f32", *exp_nonpositive("%d"), "linalg.yield %xe_res : f32"]
    p = t.generic(f"{_ID2}, {_ROW}, {_ID2}", _PAR2, [(s, s_t), (safe, row_t)],
                  (t.empty([qs, ks]), s_t), ["%a: f32", "%b: f32", "%o: f32"], p_body, "p")
    scale = ["%r = arith.mulf %o, %a : f32", "linalg.yield %r : f32"]
    l_scaled = t.generic(f"{_ID1}, {_ID1}", _PAR1, [(alpha, row_t)], (total, row_t),
                         ["%a: f32", "%o: f32"], scale, "ls")
    l_new = t.generic(f"{_ID2}, {_ROW}", _RED2, [(p, s_t)], (l_scaled, row_t),
                      ["%a: f32", "%o: f32"],
                      ["%r = arith.addf %a, %o : f32", "linalg.yield %r : f32"], "l")
    acc_scaled = t.generic(f"{_ROW}, {_ID2}", _PAR2, [(alpha, row_t)], (acc, acc_t),
                           ["%a: f32", "%o: f32"], scale, "as")
    acc_new = _tile_matmul(t, (p, s_t), (v, _ty([ks, spec.dv])), (acc_scaled, acc_t), mac,
                           "acc")
    # Last, in place on the carried max: every read of the old m is above.
    m_new = t.generic(f"{_ID1}, {_ID1}", _PAR1, [(mb, row_t)], (m, row_t),
                      ["%a: f32", "%o: f32"],
                      ["%r = arith.maximumf %o, %a : f32", "linalg.yield %r : f32"], "m")
    return m_new, l_new, acc_new


def _query_tile(t: _Text, spec: Spec, b: dict[str, str], i: str, qs: int,
                out: str | None) -> str | None:
    """Attention for query rows [i, i + qs) of batch b; returns `out` with them inserted
    (`out` None: stores them into the output buffer `%ob` instead)."""
    lead = [b["b"]] if spec.batched else []
    one = ["1"] if spec.batched else []
    q = _slice(t, "%q", spec.q_type, [*lead, i, "0"], [*one, str(qs), str(spec.d)],
               _ty([qs, spec.d]))
    tile = {**b, "q": q, "i": i}
    row_t, acc_t = _ty([qs]), _ty([qs, spec.dv])
    carried = (t.fill("%ninf", [qs]), t.fill("%zero", [qs]), t.fill("%zero", [qs, spec.dv]))
    full = spec.n // spec.block_k * spec.block_k
    if full:
        j = t.fresh("j")
        names = (t.fresh("m"), t.fresh("l"), t.fresh("acc"))
        loop = t.fresh("kl")
        t.emit(f"{loop}:3 = scf.for {j} = %c0 to %c{full} step %c{spec.block_k} iter_args("
               f"{names[0]} = {carried[0]}, {names[1]} = {carried[1]}, "
               f"{names[2]} = {carried[2]}) -> ({row_t}, {row_t}, {acc_t}) {{")
        result = _key_step(t, spec, tile, qs, j, spec.block_k, names)
        t.emit(f"scf.yield {', '.join(result)} : {row_t}, {row_t}, {acc_t}")
        t.emit("}")
        carried = (f"{loop}#0", f"{loop}#1", f"{loop}#2")
    if spec.n - full:
        carried = _key_step(t, spec, tile, qs, str(full), spec.n - full, carried)
    m, total, acc = carried
    if spec.zero_masked_rows:  # SDPA: rows with every score -inf give 0, not 0 / 0
        body = ["%q0 = arith.divf %a, %b : f32", "%inf = arith.cmpf oeq, %c, %ninf : f32",
                "%r = arith.select %inf, %zero, %q0 : f32", "linalg.yield %r : f32"]
    else:
        body = ["%q0 = arith.divf %a, %b : f32", "linalg.yield %q0 : f32"]
    normed = t.generic(f"{_ID2}, {_ROW}, {_ROW}, {_ID2}", _PAR2,
                       [(acc, acc_t), (total, row_t), (m, row_t)], (t.empty([qs, spec.dv]), acc_t),
                       ["%a: f32", "%b: f32", "%c: f32", "%o: f32"], body, "o")
    if out is None:  # parallel body: write the tile straight into the output buffer
        view = t.fresh("ov")
        t.emit(f"{view} = memref.subview %ob[{b['b']}, {i}, 0] [1, {qs}, {spec.dv}] [1, 1, 1] : "
               f"{_memref(spec.out_type)} to memref<{qs}x{spec.dv}xf32, strided<[{spec.dv}, 1], "
               "offset: ?>>")
        t.emit(f"bufferization.materialize_in_destination {normed} in restrict writable {view} "
               f": ({acc_t}, memref<{qs}x{spec.dv}xf32, strided<[{spec.dv}, 1], offset: ?>>) "
               "-> ()")
        return None
    name = t.fresh("ins")
    t.emit(f"{name} = tensor.insert_slice {normed} into {out}[{', '.join([*lead, i, '0'])}] "
           f"[{', '.join([*one, str(qs), str(spec.dv)])}] "
           f"[{', '.join('1' for _ in [*lead, i, '0'])}] : {acc_t} into {spec.out_type}")
    return name


def _batch(t: _Text, spec: Spec, bt: str, out: str | None) -> str | None:
    """All query tiles of flat batch index `bt` (`out` threaded through; None: each tile
    is stored into the output buffer `%ob`)."""
    b = {"b": bt}
    if spec.batched:
        for k, size in enumerate(spec.batch_shape):
            inner = math.prod(spec.batch_shape[k + 1:])
            quot = t.fresh("bq")
            t.emit(f"{quot} = arith.divui {bt}, %c{inner} : index")
            b[f"b{k}"] = t.fresh("b")
            t.emit(f"{b[f'b{k}']} = arith.remui {quot}, %c{size} : index")
    full = spec.m // spec.block_q * spec.block_q
    if full and out is None:
        i = t.fresh("i")
        t.emit(f"scf.for {i} = %c0 to %c{full} step %c{spec.block_q} {{")
        _query_tile(t, spec, b, i, spec.block_q, None)
        t.emit("}")
    elif full:
        i, acc, loop = t.fresh("i"), t.fresh("out"), t.fresh("ql")
        t.emit(f"{loop} = scf.for {i} = %c0 to %c{full} step %c{spec.block_q} "
               f"iter_args({acc} = {out}) -> ({spec.out_type}) {{")
        t.emit(f"scf.yield {_query_tile(t, spec, b, i, spec.block_q, acc)} : {spec.out_type}")
        t.emit("}")
        out = loop
    if spec.m - full:
        out = _query_tile(t, spec, b, str(full), spec.m - full, out)
    return out


def _memref(tensor_type: str) -> str:
    return tensor_type.replace("tensor<", "memref<", 1)


def _descriptor(tensor_type: str) -> str:
    rank = tensor_type.count("x") if "x" in tensor_type else 0
    if rank == 0:
        return "!llvm.struct<(ptr, ptr, i64)>"
    return f"!llvm.struct<(ptr, ptr, i64, array<{rank} x i64>, array<{rank} x i64>)>"


def _constants(t: _Text, spec: Spec) -> None:
    consts = {0, 1, spec.block_q, spec.block_k, spec.m // spec.block_q * spec.block_q,
              spec.n // spec.block_k * spec.block_k}
    if spec.batched:
        consts.add(math.prod(spec.batch_shape))
        consts |= set(spec.batch_shape)
        consts |= {math.prod(spec.batch_shape[k + 1:]) for k in range(len(spec.batch_shape))}
    for c in sorted(consts):
        t.emit(f"%c{c} = arith.constant {c} : index")
    t.emit("%zero = arith.constant 0.0 : f32")
    t.emit("%ninf = arith.constant 0xFF800000 : f32")


def render_parallel_attention(spec: Spec, name: str) -> str:
    """A module with `func.func @fused` (as `render_attention`'s) that runs the batch items
    across threads: it passes the operands' buffers (`bufferization.to_buffer`) and a fresh
    output buffer through a stack context to `accel_parallel_for(@name_entry, ctx, items)`;
    `@name_entry(ctx, lo, hi)` loads them back and calls `@name_body(buffers..., lo, hi)`,
    which computes batch items [lo, hi) on tensors (`to_tensor` views of the buffers) and
    stores each output tile into its own rows of the output buffer. Also declares
    `accel_parallel_for` (the module is verified on its own). Batched specs only."""
    args = [("%q", spec.q_type), ("%kt", spec.kt_type), ("%v", spec.v_type),
            *spec.extra_args]
    types = [ty for _, ty in args] + [spec.out_type]
    descs = [_descriptor(ty) for ty in types]
    ctx_t = f"!llvm.struct<({', '.join(descs)})>"
    out_m = _memref(spec.out_type)
    signature = ", ".join(f"{n}: {ty}" for n, ty in args)
    lines = [f"func.func @fused({signature}) -> {spec.out_type} {{"]
    bufs = []
    for k, (n, ty) in enumerate(args):
        bufs.append(f"%buf{k}")
        lines.append(f"%buf{k} = bufferization.to_buffer {n} read_only : {ty} to {_memref(ty)}")
    bufs.append("%ob")
    lines += [f"%ob = memref.alloc() {{alignment = 64 : i64}} : {out_m}",
              "%one = llvm.mlir.constant(1 : i64) : i64",
              f"%ctx = llvm.alloca %one x {ctx_t} : (i64) -> !llvm.ptr"]
    for k, (buf, ty, desc) in enumerate(zip(bufs, types, descs, strict=True)):
        lines += [f"%d{k} = builtin.unrealized_conversion_cast {buf} : {_memref(ty)} to {desc}",
                  f"%p{k} = llvm.getelementptr %ctx[0, {k}] : (!llvm.ptr) -> !llvm.ptr, {ctx_t}",
                  f"llvm.store %d{k}, %p{k} : {desc}, !llvm.ptr"]
    lines += [f"%items = arith.constant {math.prod(spec.batch_shape)} : index",
              *fork_join(f"{name}_entry", "%ctx", "%items"),
              f"%res = bufferization.to_tensor %ob restrict writable : {out_m} to "
              f"{spec.out_type}",
              f"return %res : {spec.out_type}", "}",
              f"func.func private @{name}_entry(%ctx: !llvm.ptr, %lo: index, %hi: index) {{"]
    for k, (ty, desc) in enumerate(zip(types, descs, strict=True)):
        lines += [f"%p{k} = llvm.getelementptr %ctx[0, {k}] : (!llvm.ptr) -> !llvm.ptr, {ctx_t}",
                  f"%d{k} = llvm.load %p{k} : !llvm.ptr -> {desc}",
                  f"%m{k} = builtin.unrealized_conversion_cast %d{k} : {desc} to {_memref(ty)}"]
    memrefs = ", ".join(_memref(ty) for ty in types)
    lines += [f"func.call @{name}_body({', '.join(f'%m{k}' for k in range(len(types)))}, "
              f"%lo, %hi) : ({memrefs}, index, index) -> ()", "return", "}"]
    t = _Text()
    _constants(t, spec)
    for k, (n, ty) in enumerate(args):
        t.emit(f"{n} = bufferization.to_tensor %a{k} restrict : {_memref(ty)} to {ty}")
    bt = t.fresh("bt")
    t.emit(f"scf.for {bt} = %lo to %hi step %c1 {{")
    _batch(t, spec, bt, None)
    t.emit("}")
    params = ", ".join([*(f"%a{k}: {_memref(ty)}" for k, (_, ty) in enumerate(args)),
                        f"%ob: {out_m}", "%lo: index", "%hi: index"])
    lines += [f"func.func private @{name}_body({params}) {{", *t.lines, "return", "}",
              PARALLEL_FOR_DECL]
    return "module {\n" + "\n".join(lines) + "\n}"


def render_attention(spec: Spec) -> str:
    """The fused attention as `func.func @fused` (see the module docstring)."""
    t = _Text()
    _constants(t, spec)
    t.emit(f"%init = tensor.empty() : {spec.out_type}")
    if spec.batched:
        bt, out, result = t.fresh("bt"), t.fresh("out"), t.fresh("res")
        t.emit(f"{result} = scf.for {bt} = %c0 to %c{math.prod(spec.batch_shape)} step %c1 "
               f"iter_args({out} = %init) -> ({spec.out_type}) {{")
        t.emit(f"scf.yield {_batch(t, spec, bt, out)} : {spec.out_type}")
        t.emit("}")
    else:
        result = _batch(t, spec, "", "%init")
    args = [("%q", spec.q_type), ("%kt", spec.kt_type), ("%v", spec.v_type),
            *spec.extra_args]
    signature = ", ".join(f"{n}: {ty}" for n, ty in args)
    return (f"func.func @fused({signature}) -> {spec.out_type} {{\n" +
            "\n".join(t.lines) + f"\nreturn {result} : {spec.out_type}\n}}")
