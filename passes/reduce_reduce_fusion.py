"""`accel-reduce-reduce-fusion`: attention as one loop nest with an online softmax.

Scope, despite the general name (PolyBlocks' `reduce-reduce fusion`, kept because its
switch `disable_reduce_reduce_fusion` is the seed's option): it fuses attention-shaped
reduction chains only (matmul -> scale/mask -> softmax -> matmul). Other chains of
reductions over one axis (layernorm's mean/variance, logsumexp) are left to
`accel-affine-fusion`.

Why: torch-mlir lowers `softmax(q @ k.T * scale + mask) @ v` (and the decomposition of
`F.scaled_dot_product_attention`) to a chain of whole-tensor ops: a batched matmul, the
elementwise scale/mask generics, the five generics of softmax (max-reduce, sub, exp,
sum-reduce, div) and a second batched matmul. Bufferized as is, every link of that chain
is a B x S x S buffer: 512 MiB per temporary for 8 heads at S = 4096. The three reductions
(the two matmuls' contractions and softmax's max/sum over the same key axis) can share one
loop over key blocks if the softmax is computed online (the flash-attention algorithm):

    for each batch b, query block i:                      m = -inf, l = 0, acc = 0
      for each key block j:
        s     = Q[b, i] @ K^T[b, :, j]  (then the scale/mask generics on this tile)
        m_new = max(m, rowmax(s));   p = exp(s - m_new);   alpha = exp(m - m_new)
        l     = l * alpha + rowsum(p);   acc = acc * alpha + p @ V[b, j]
      out[b, i] = acc / l

so no S x S tensor exists, only block x block tiles. Before and after (shapes abridged):

    %s = linalg.batch_matmul ins(%q, %kt)          %o = scf.for %b ... {
    %x = linalg.generic {mulf %s, 0.125}              scf.for %i ... {
    %m = linalg.generic {maximumf, reduction}  ->       scf.for %j ... iter_args(m, l, acc) {
    ... subf, exp, sum-reduce, divf ...                   extract_slice Q/K^T/V/mask tiles
    %o = linalg.batch_matmul ins(%p, %v)                  tile generics; scf.yield
                                                        tensor.insert_slice acc / l

Where: on linalg on tensors as `accel.import_torch` returns it, before bufferization (the
loops carry tensors; One-Shot Bufferize makes them in-place buffers).

Matched, from the second matmul backwards (all f32, static shapes, every intermediate used
only inside the chain, else the chain is left untouched):
- `linalg.batch_matmul` (or 2-D `linalg.matmul`) of P and V into a zero fill, P optionally
  a `tensor.collapse_shape` of the softmax space's leading (batch x heads) dimensions;
- optionally SDPA's fully-masked-row guard `select(all(s == -inf), 0, P)`;
- softmax over the last axis as torch-mlir decomposes it: max-reduce (its argmax result
  unused), `subf`, `math.exp`, sum-reduce, `divf`, rows broadcast via `(..., 0)` maps;
- any number of elementwise generics on the scores (scale `mulf`/`divf`, additive mask
  `addf`, `masked_fill`/`where` `select`) whose other operands are broadcast by dropping or
  zeroing the batch dimensions (the mask tile is sliced per block; a mask computed from
  `linalg.index` inside the body is not moved);
- the first matmul `Q @ K^T` into a zero fill, optionally `tensor.expand_shape`d.
K^T is read as the first matmul's operand (the transpose torch-mlir materialises, B x D x S).
Fully masked rows give NaN (naive softmax, as eager) or 0 (SDPA's guard, as eager).
Not handled: dynamic shapes, non-f32 types, `linalg.softmax`, other reduce-reduce chains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from accel.ir import InsertionPoint, Operation, ir, walk
from accel.passes._attention_template import (
    BODY_ATTR,
    ScoreOp,
    Slice,
    Spec,
    render_attention,
    render_parallel_attention,
)
from accel.passes.base import ModulePass, ops_named, register_pass

_NO_MATCH = None  # matchers return this when a chain does not have the expected shape
_MATMULS = ("linalg.batch_matmul", "linalg.matmul")
#: Pure ops the rewrite may leave without users (the chain's fills, empties, constants).
_PURE = ("tensor.empty", "linalg.fill", "arith.constant", "tensor.expand_shape",
         "tensor.collapse_shape", "linalg.transpose")


# -- analysis helpers -----------------------------------------------------------------------
def _producer(value: ir.Value) -> Operation | None:
    """The op defining `value`, or None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _users(value: ir.Value) -> list[Operation]:
    return [use.owner.operation for use in value.uses]


def _tensor(value: ir.Value) -> ir.RankedTensorType | None:
    """`value`'s type if it is a statically shaped f32 tensor."""
    if not isinstance(value.type, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(value.type)
    if not t.has_static_shape or not isinstance(t.element_type, ir.F32Type):
        return None
    return t


def _float_constant(value: ir.Value) -> float | None:
    """The value of an `arith.constant` float scalar, else None."""
    op = _producer(value)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def _is_fill(value: ir.Value, expected: float) -> bool:
    """`value` is a `linalg.fill` with the float constant `expected`."""
    op = _producer(value)
    return op is not None and op.name == "linalg.fill" and \
        _float_constant(op.operands[0]) == expected


def _maps(op: Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _iterators(op: Operation) -> list[str]:
    return ["reduction" if "reduction" in str(a) else "parallel"
            for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _dims(amap: ir.AffineMap) -> list[int | None]:
    """Per result: the dim position, -1 for the constant 0, None for anything else."""
    out: list[int | None] = []
    for expr in amap.results:
        if isinstance(expr, ir.AffineDimExpr):
            out.append(expr.position)
        elif isinstance(expr, ir.AffineConstantExpr) and expr.value == 0:
            out.append(-1)
        else:
            out.append(None)
    return out


def _is_identity(amap: ir.AffineMap, rank: int) -> bool:
    return amap.n_dims == rank and _dims(amap) == list(range(rank))


def _is_row_reduction(op: Operation, rank: int) -> bool:
    """Reads its input whole (identity map) and writes one value per row."""
    maps = _maps(op)
    return _is_identity(maps[0], rank) and _is_row_map(maps[1], rank)


def _is_row_map(amap: ir.AffineMap, rank: int) -> bool:
    """`(d0, ..., d[r-2])` or `(d0, ..., d[r-2], 0)`: one value per row, broadcast."""
    rows = list(range(rank - 1))
    return _dims(amap) in (rows, [*rows, -1])


def _body(op: Operation) -> ir.Block:
    return op.regions[0].blocks[0]


def _body_ops(op: Operation) -> list[Operation]:
    """The body's ops without the terminator."""
    return [o.operation for o in _body(op).operations][:-1]


def _yielded(op: Operation) -> list[ir.Value]:
    return list([o.operation for o in _body(op).operations][-1].operands)


def _is_binary(op: Operation, name: str, lhs: int, rhs: int, commutative: bool = False) -> bool:
    """The body is exactly `yield name(arg lhs, arg rhs)`."""
    ops = _body_ops(op)
    if len(ops) != 1 or ops[0].name != name or len(_yielded(op)) != 1:
        return False
    args = _body(op).arguments
    got = list(ops[0].operands)
    want = [args[lhs], args[rhs]]
    ok = got == want or (commutative and got == want[::-1])
    return ok and _yielded(op)[0] == ops[0].results[0]


def _generic(value: ir.Value, rank: int, n_inputs: int, iterators: list[str]) -> Operation | None:
    """The `linalg.generic` defining `value` with these inputs and iterators, else None."""
    op = _producer(value)
    if op is None or op.name != "linalg.generic":
        return _NO_MATCH
    n_outs = len(op.results)
    if len(op.operands) - n_outs != n_inputs or _iterators(op) != iterators:
        return _NO_MATCH
    if len(_maps(op)[0].results) != rank and n_inputs:
        return _NO_MATCH
    return op


def _is_plain_matmul(op: Operation | None) -> bool:
    """A `linalg.matmul`/`batch_matmul` with the default (untransposed) indexing maps."""
    if op is None or op.name not in _MATMULS:
        return False
    want = ([[0, 1, 3], [0, 3, 2], [0, 1, 2]] if op.name == "linalg.batch_matmul"
            else [[0, 2], [2, 1], [0, 1]])
    return [_dims(m) for m in _maps(op)] == want


def _peel_reshape(value: ir.Value, name: str, rank: int) -> tuple[ir.Value, Operation | None]:
    """Through a `name` reshape that only (un)flattens the leading dims, keeping the last two."""
    op = _producer(value)
    if op is None or op.name != name:
        return value, None
    groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)]
              for g in ir.ArrayAttr(op.attributes["reassociation"])]
    full = op.operands[0] if name == "tensor.collapse_shape" else op.result
    shape = ir.RankedTensorType(full.type).shape
    # torch-mlir merges a unit heads dim into the rows ([[0], [1, 2], [3]] for 1 x 1 x S x D):
    # the same rows, so unit dims may join the rows' group.
    if len(groups) != 3 or groups[2] != [rank - 1] or groups[1][-1] != rank - 2 or \
            any(shape[d] != 1 for d in groups[1][:-1]):
        return value, None
    return op.operands[0], op


def _row_source(value: ir.Value, rank: int) -> tuple[ir.Value, Operation | None]:
    """A row operand `[..., M, 1]` is the expand_shape of an `[..., M]` reduction result."""
    op = _producer(value)
    if op is None or op.name != "tensor.expand_shape":
        return value, None
    groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)]
              for g in ir.ArrayAttr(op.attributes["reassociation"])]
    if groups != [[d] for d in range(rank - 2)] + [[rank - 2, rank - 1]]:
        return value, None
    return op.operands[0], op


# -- matching -------------------------------------------------------------------------------
@dataclass
class _Operand:
    """A non-score operand of a score generic: how to slice it per tile."""

    value: ir.Value
    offsets: list[str]  # per dim: "b<k>", "i", "j" or "0"
    kept: list[str]  # tile dims of the slice, in order: "d0" (query row) / "d1" (key)


@dataclass
class _Attention:
    """One matched attention chain (see the module docstring)."""

    mm1: Operation
    mm2: Operation
    rank: int  # rank of the softmax space
    batch_shape: list[int]
    score_ops: list[Operation] = field(default_factory=list)  # program order
    operands: list[list[_Operand | None]] = field(default_factory=list)  # per score op
    guard_input: ir.Value | None = None  # SDPA's fully-masked-row test reads this
    chain: list[Operation] = field(default_factory=list)  # every op the rewrite replaces


def _slice_plan(value: ir.Value, amap: ir.AffineMap, rank: int) -> _Operand | None:
    """How to slice a broadcast operand of a score generic for one (b, i, j) tile."""
    t = ir.RankedTensorType(value.type)
    if not t.has_static_shape:
        return _NO_MATCH
    offsets: list[str] = []
    kept: list[str] = []
    for size, dim in zip(t.shape, _dims(amap), strict=True):
        if dim is None:
            return _NO_MATCH
        if dim == -1 and size == 1:
            offsets.append("0")
        elif 0 <= dim < rank - 2:
            offsets.append(f"b{dim}")
        elif dim in (rank - 2, rank - 1):
            tile_dim = "d0" if dim == rank - 2 else "d1"
            if tile_dim in kept:
                return _NO_MATCH
            offsets.append("i" if tile_dim == "d0" else "j")
            kept.append(tile_dim)
        else:
            return _NO_MATCH
    return _Operand(value, offsets, kept)


def _score_step(op: Operation, rank: int) -> list[int]:
    """Input positions that may carry the scores through an elementwise generic."""
    if op.name != "linalg.generic" or len(op.results) != 1 or _tensor(op.results[0]) is None:
        return []
    n_in = len(op.operands) - 1
    maps = _maps(op)
    if _iterators(op) != ["parallel"] * rank or not _is_identity(maps[-1], rank):
        return []
    body = _body(op)
    # The body is copied into tile generics: tile-local `linalg.index` would mean other
    # positions, and only top-level body ops get their operands remapped.
    if list(body.arguments[n_in].uses) or \
            any(o.name == "linalg.index" or len(o.regions) for o in _body_ops(op)):
        return []
    return [k for k in range(n_in)
            if _is_identity(maps[k], rank) and _tensor(op.operands[k]) is not None]


def _match_scores(value: ir.Value, rank: int, att: _Attention) -> Operation | None:
    """Walk from the softmax input back through score generics to `Q @ K^T`."""
    op = _producer(value)
    if op is None:
        return _NO_MATCH
    if op.name in _MATMULS or op.name == "tensor.expand_shape":
        inner, expand = _peel_reshape(value, "tensor.expand_shape", rank)
        mm = _producer(inner)
        if mm is None or not _is_plain_matmul(mm):
            return _NO_MATCH
        if len(ir.RankedTensorType(inner.type).shape) != (3 if "batch" in mm.name else 2):
            return _NO_MATCH
        if expand is None and rank != len(ir.RankedTensorType(inner.type).shape):
            return _NO_MATCH
        if not _is_fill(mm.operands[2], 0.0) or any(_tensor(v) is None for v in mm.operands):
            return _NO_MATCH
        att.chain += [mm] + ([expand] if expand is not None else [])
        return mm
    for k in _score_step(op, rank):
        others = [v for n, v in enumerate(op.operands[:-1]) if n != k]
        if op.operands[k] in others:
            continue
        mm = _match_scores(op.operands[k], rank, att)
        if mm is None:
            continue
        maps = _maps(op)
        plans: list[_Operand | None] = []
        for n, v in enumerate(op.operands[:-1]):
            plan = None if n == k else _slice_plan(v, maps[n], rank)
            if n != k and plan is None:
                return _NO_MATCH
            plans.append(plan)
        att.score_ops.append(op)
        att.operands.append(plans)
        att.chain.append(op)
        return mm
    return _NO_MATCH


def _match_masked_row_guard(p: ir.Value, rank: int, att: _Attention) -> ir.Value:
    """SDPA's `select(all(s == -inf, row), 0, P)`: returns P, records the guard."""
    par = ["parallel"] * rank
    sel = _generic(p, rank, 3, par)
    if sel is None or not _is_binary_select_zero(sel):
        return p
    maps = _maps(sel)
    cond, zeros, probs = sel.operands[:3]
    if not _is_row_map(maps[0], rank) or not _is_identity(maps[2], rank) or \
            not _is_identity(maps[3], rank):
        return p
    if not _is_splat_zero(zeros):
        return p
    reduce_all = _generic(cond, rank, 1, ["parallel"] * (rank - 1) + ["reduction"])
    if reduce_all is None or not _is_binary(reduce_all, "arith.andi", 0, 1, True):
        return p
    is_ninf = _generic(reduce_all.operands[0], rank, 1, par)
    if is_ninf is None or not _is_ninf_test(is_ninf) or not _is_identity(_maps(is_ninf)[0], rank):
        return p
    att.guard_input = is_ninf.operands[0]
    att.chain += [sel, reduce_all, is_ninf]
    return probs


def _is_splat_zero(value: ir.Value) -> bool:
    """`value` is an `arith.constant dense<0.0>` tensor."""
    op = _producer(value)
    if op is None or op.name != "arith.constant":
        return False
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or not attr.is_splat:
        return False
    splat = attr.get_splat_value()
    return isinstance(splat, ir.FloatAttr) and splat.value == 0.0


def _is_ninf_test(op: Operation) -> bool:
    """Body `yield cmpf oeq, (extf) arg0, -inf`."""
    ops = _body_ops(op)
    cmp = ops[-1] if ops else None
    if cmp is None or cmp.name != "arith.cmpf" or _yielded(op) != [cmp.results[0]]:
        return False
    if ir.IntegerAttr(cmp.attributes["predicate"]).value != 1:  # oeq
        return False
    return all(o.name == "arith.extf" for o in ops[:-1]) and \
        _float_constant(cmp.operands[1]) == -math.inf


def _is_binary_select_zero(op: Operation) -> bool:
    """Body `yield select(arg0, arg1, arg2)`."""
    ops = _body_ops(op)
    args = _body(op).arguments
    return len(ops) == 1 and ops[0].name == "arith.select" and \
        list(ops[0].operands) == [args[0], args[1], args[2]] and \
        _yielded(op) == [ops[0].results[0]]


def _match_softmax(p: ir.Value, rank: int, att: _Attention) -> ir.Value | None:
    """`exp(s - max(s)) / sum(exp(s - max(s)))` over the last axis: returns s."""
    par = ["parallel"] * rank
    red = ["parallel"] * (rank - 1) + ["reduction"]
    div = _generic(p, rank, 2, par)
    if div is None or not _is_binary(div, "arith.divf", 0, 1) or \
            not _is_identity(_maps(div)[0], rank) or not _is_row_map(_maps(div)[1], rank) or \
            not _is_identity(_maps(div)[2], rank):
        return _NO_MATCH
    total, total_expand = _row_source(div.operands[1], rank)
    add = _generic(total, rank, 1, red)
    if add is None or not _is_binary(add, "arith.addf", 0, 1, True) or \
            not _is_row_reduction(add, rank) or not _is_fill(add.operands[1], 0.0) or \
            add.operands[0] != div.operands[0]:
        return _NO_MATCH
    exp = _generic(div.operands[0], rank, 1, par)
    if exp is None or [o.name for o in _body_ops(exp)] != ["math.exp"] or \
            list(_body_ops(exp)[0].operands) != [_body(exp).arguments[0]] or \
            _yielded(exp) != [_body_ops(exp)[0].results[0]] or \
            not _is_identity(_maps(exp)[0], rank) or not _is_identity(_maps(exp)[1], rank):
        return _NO_MATCH
    sub = _generic(exp.operands[0], rank, 2, par)
    if sub is None or not _is_binary(sub, "arith.subf", 0, 1) or \
            not _is_identity(_maps(sub)[0], rank) or not _is_row_map(_maps(sub)[1], rank) or \
            not _is_identity(_maps(sub)[2], rank):
        return _NO_MATCH
    peak, peak_expand = _row_source(sub.operands[1], rank)
    top = _producer(peak)
    if top is None or top.name != "linalg.generic" or _iterators(top) != red or \
            len(top.operands) - len(top.results) != 1 or top.operands[0] != sub.operands[0] or \
            not _is_row_reduction(top, rank):
        return _NO_MATCH
    if peak != top.results[0] or any(list(r.uses) for r in top.results[1:]):
        return _NO_MATCH
    body_ops = _body_ops(top)
    args = _body(top).arguments
    maxes = [o for o in body_ops if o.name == "arith.maximumf"
             and list(o.operands) in ([args[0], args[1]], [args[1], args[0]])]
    if not maxes or _yielded(top)[0] != maxes[0].results[0] or \
            not _is_fill(top.operands[1], -math.inf):
        return _NO_MATCH
    att.chain += [div, add, exp, sub, top]
    att.chain += [op for op in (total_expand, peak_expand) if op is not None]
    return sub.operands[0]


def match_attention(mm2: Operation) -> _Attention | None:
    """The attention chain ending in the matmul `mm2`, or None (see the module docstring)."""
    if not _is_plain_matmul(mm2):
        return _NO_MATCH
    if any(_tensor(v) is None for v in mm2.operands) or not _is_fill(mm2.operands[2], 0.0):
        return _NO_MATCH
    batched = mm2.name == "linalg.batch_matmul"
    p = mm2.operands[0]
    collapse = _producer(p)
    rank = 3 if batched else 2
    if collapse is not None and collapse.name == "tensor.collapse_shape" and batched:
        rank = len(ir.RankedTensorType(collapse.operands[0].type).shape)
        p, collapse = _peel_reshape(p, "tensor.collapse_shape", rank)
        if collapse is None:
            return _NO_MATCH
    else:
        collapse = None
    shape = ir.RankedTensorType(p.type).shape
    att = _Attention(mm1=mm2, mm2=mm2, rank=rank, batch_shape=list(shape[:-2]))
    att.chain += [mm2] + ([collapse] if collapse is not None else [])
    probs = _match_masked_row_guard(p, rank, att)
    scores = _match_softmax(probs, rank, att)
    if scores is None or (att.guard_input is not None and att.guard_input != scores):
        return _NO_MATCH
    mm1 = _match_scores(scores, rank, att)
    if mm1 is None or mm1.name != mm2.name:
        return _NO_MATCH
    att.mm1 = mm1
    if not _closed(att):
        return _NO_MATCH
    return att


def _closed(att: _Attention) -> bool:
    """Every value the chain defines (but the result) is used only inside the chain."""
    for op in att.chain:
        if op == att.mm2:
            continue
        for result in op.results:
            if not all(any(user == c for c in att.chain) for user in _users(result)):
                return False
    return True


# -- rewriting ------------------------------------------------------------------------------
def _spec(att: _Attention, block_q: int, block_k: int) -> tuple[Spec, list[ir.Value]]:
    """The template's parameters and the values its function arguments stand for."""
    q, kt, v = att.mm1.operands[0], att.mm1.operands[1], att.mm2.operands[1]
    values = [q, kt, v]
    extra: list[tuple[str, str]] = []

    def arg(value: ir.Value) -> str:
        names = ["%q", "%kt", "%v"] + [n for n, _ in extra]
        for n, known in enumerate(values):
            if known == value:
                return names[n]
        values.append(value)
        extra.append((f"%x{len(values)}", str(value.type)))
        return extra[-1][0]

    score_ops: list[ScoreOp] = []
    for op, plans in zip(att.score_ops, att.operands, strict=True):
        inputs: list[Slice | None] = []
        for plan in plans:
            if plan is None:
                inputs.append(None)
                continue
            t = ir.RankedTensorType(plan.value.type)
            inputs.append(Slice(arg(plan.value), str(t), t.rank, plan.offsets, plan.kept,
                                str(t.element_type)))
        block_types = [str(a.type) for a in _body(op).arguments]
        score_ops.append(ScoreOp(inputs, block_types))
    q_shape = ir.RankedTensorType(q.type).shape
    out_t = ir.RankedTensorType(att.mm2.results[0].type)
    spec = Spec(batch_shape=att.batch_shape, batched=att.mm2.name == "linalg.batch_matmul",
                m=q_shape[-2], n=ir.RankedTensorType(kt.type).shape[-1], d=q_shape[-1],
                dv=out_t.shape[-1], q_type=str(q.type), kt_type=str(kt.type),
                v_type=str(v.type), out_type=str(out_t), extra_args=extra,
                score_ops=score_ops, zero_masked_rows=att.guard_input is not None,
                block_q=block_q, block_k=block_k)
    return spec, values


def _captured(att: _Attention) -> list[ir.Value]:
    """Values the score generics' bodies use from outside them (constants, scalars)."""
    found: list[ir.Value] = []
    for op in att.score_ops:
        inside = list(_body(op).arguments)
        for body_op in _body_ops(op) + [[o.operation for o in _body(op).operations][-1]]:
            for operand in body_op.operands:
                if operand not in inside and operand not in found:
                    found.append(operand)
            inside += list(body_op.results)
    return found


def _copy_bodies(template: Operation, att: _Attention, hoist: bool = False) -> None:
    """Give each placeholder tile generic a copy of the score generic's body it stands for;
    `hoist`: `template` is a function of its own, the constants the bodies use are cloned
    to its entry."""
    found: list[Operation] = []
    outer: list[tuple[ir.Value, ir.Value]] = []
    if hoist:
        entry = template.regions[0].blocks[0]
        first = [o.operation for o in entry.operations][0]
        for value in _captured(att):
            clone = _producer(value).clone(InsertionPoint(first))
            outer.append((value, clone.results[0]))

    def visit(op: Operation) -> ir.WalkResult:
        if BODY_ATTR in op.attributes:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    walk(template, visit)
    for tile in found:
        original = att.score_ops[ir.IntegerAttr(tile.attributes[BODY_ATTR]).value]
        del tile.attributes[BODY_ATTR]
        old_block, new_block = _body(original), _body(tile)
        placeholder = [o.operation for o in new_block.operations][-1]
        mapping: list[tuple[ir.Value, ir.Value]] = outer + list(
            zip(old_block.arguments, new_block.arguments, strict=True))
        for op in [o.operation for o in old_block.operations]:
            clone = op.clone(InsertionPoint(placeholder))
            for k, operand in enumerate(clone.operands):
                for old, new in mapping:
                    if operand == old:
                        clone.operands[k] = new
                        break
            mapping += list(zip(op.results, clone.results, strict=True))
        placeholder.erase()


def _outside_producers(ops: list[Operation], excluded: list[Operation]) -> list[Operation]:
    """Producers of `ops`' operands that are not in `excluded`, each once."""
    found: list[Operation] = []
    for op in ops:
        for producer in map(_producer, op.operands):
            if producer is not None and not any(producer == x for x in excluded + found):
                found.append(producer)
    return found


def erase_chain(chain: list[Operation]) -> None:
    """Erase the replaced chain, then the pure producers it leaves without users."""
    candidates = _outside_producers(chain, chain)
    pending = list(chain)
    while pending:
        ready = [op for op in pending if not any(list(r.uses) for r in op.results)]
        if not ready:
            raise AssertionError("reduce-reduce fusion left a replaced op with users")
        for op in ready:
            pending = [x for x in pending if x != op]
            op.erase()
    while candidates:
        op = candidates.pop()
        if op.name not in _PURE or any(list(r.uses) for r in op.results):
            continue
        candidates += _outside_producers([op], [op, *candidates])
        op.erase()


#: Smallest work (S_q * S_k * D, times batch x heads) whose batch items run in parallel:
#: below ~4M multiply-adds starting threads (~20-50 us) eats the gain (tiny GPT-2 stays serial).
PARALLEL_MIN_MACS = 1 << 22


def _symbols(module: Operation) -> set[str]:
    return {ir.StringAttr(f.attributes["sym_name"]).value
            for f in ops_named(module, ("func.func",))}


def _is_constant(value: ir.Value) -> bool:
    op = _producer(value)
    return op is not None and op.name == "arith.constant"


def fuse_attention(att: _Attention, block_q: int, block_k: int,
                   parallel_min: int | None = None, module: Operation | None = None) -> None:
    """Replace the matched chain with the blocked online-softmax loop nest; with
    `parallel_min` (and `module`), one whose batch items run across threads with
    `accel_parallel_for` when the work is at least `parallel_min` multiply-adds."""
    spec, values = _spec(att, block_q, block_k)
    items = math.prod(spec.batch_shape) if spec.batched else 1
    parallel = parallel_min is not None and module is not None and items >= 2 and \
        spec.m * spec.n * max(spec.d, spec.dv) * items >= parallel_min and \
        all(_is_constant(v) for v in _captured(att))  # the body function clones them
    if parallel:
        known = _symbols(module)
        count = 0
        while f"accel_attention_{count}_entry" in known:
            count += 1
        name = f"accel_attention_{count}"
        parsed = ir.Module.parse(render_parallel_attention(spec, name), att.mm2.context)
    else:
        parsed = ir.Module.parse(render_attention(spec), att.mm2.context)
    template = parsed.body.operations[0].operation
    if parallel:  # the tile generics are in @name_body
        body = module.regions[0].blocks[0]
        for func in list(parsed.body.operations)[1:]:
            symbol = ir.StringAttr(func.operation.attributes["sym_name"]).value
            if symbol == f"{name}_body":
                _copy_bodies(func.operation, att, hoist=True)
            if symbol == "accel_parallel_for" and symbol in known:
                continue
            func.operation.move_after(body.operations[len(body.operations) - 1])
    entry = template.regions[0].blocks[0]
    _copy_bodies(template, att)
    for block_arg, value in zip(entry.arguments, values, strict=True):
        block_arg.replace_all_uses_with(value)
    ops = [o.operation for o in entry.operations]
    for op in ops[:-1]:
        op.move_before(att.mm2)
    att.mm2.results[0].replace_all_uses_with(ops[-1].operands[0])
    erase_chain(att.chain)


@register_pass
@dataclass(frozen=True)
class ReduceReduceFusion(ModulePass):
    """Fuses matmul -> softmax -> matmul (attention) into a blocked online-softmax loop nest."""

    name = "accel-reduce-reduce-fusion"
    #: Keys per block of the inner loop (the online softmax's step). 128 x 128 tiles halve
    #: the per-block softmax bookkeeping of 64 x 64 and leave fewer tiny remainder tiles:
    #: SDPA at 1 thread, AVX2: 197 keys (ViT) 1.25 -> 0.95 ms, 1024 keys 32.4 -> 31.0 ms.
    block_size: int = field(default=128, metadata={"help": "keys per block"})
    #: Query rows per tile: the loop nest's live memory is O(query-block x block-size).
    query_block_size: int = field(default=128, metadata={"help": "query rows per tile"})
    #: Run the batch x heads items across threads (`accel_parallel_for`, python/accel/
    #: backend/parallel.py; the thread count is a runtime setting) above a work threshold.
    parallel: bool = field(default=True, metadata={"help": "multi-threaded batch items"})
    #: Smallest S_q * S_k * D * items run in parallel.
    parallel_min_macs: int = field(default=PARALLEL_MIN_MACS,
                                   metadata={"help": "smallest work run in parallel"})

    def __post_init__(self) -> None:
        if self.block_size < 1 or self.query_block_size < 1:
            raise ValueError("block-size and query-block-size must be positive")
        if self.parallel_min_macs < 0:
            raise ValueError("parallel-min-macs must not be negative")

    def apply(self, module: Operation) -> None:
        # Rescan after each rewrite: it erases matmuls, which must not be visited again.
        # The loop nest it creates holds no named matmul, so this terminates.
        fused = True
        while fused:
            fused = False
            for mm2 in ops_named(module, _MATMULS):
                att = match_attention(mm2)
                if att is not None:
                    fuse_attention(att, self.query_block_size, self.block_size,
                                   self.parallel_min_macs if self.parallel else None, module)
                    fused = True
                    break
