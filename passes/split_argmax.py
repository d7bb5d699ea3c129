"""`accel-split-argmax`: argmax (argmin) as a max (min), then the first index of it.

Why: torch-mlir lowers `argmax` / `max(dim)` to one `linalg.generic` that carries the
running max and its index together (`maximumf`, `cmpf ogt`, `select`). LLVM cannot
vectorise that coupled pair, so it runs one element at a time (2048 x 1024 rows: ~6 ms,
eager ~1.2 ms), and it is wrong for NaN: `maximumf` makes the max NaN but `ogt` against NaN
is false, so the index stays where it was, while eager returns the NaN's index. Two
reductions that each vectorise give eager's answer:

    %max = max over r of x                                   (maximumf: NaN wins)
    %idx = min over r of (x == max || x is NaN ? r : N)       (the first such r)

    %r:2 = linalg.generic {iterator_types = [parallel, reduction]}
        ins(%x) outs(%neg_inf_fill, %zero_fill) {
      ^bb0(%in: f32, %m: f32, %i: i64):
        %k = linalg.index 1; %ki = arith.index_cast %k
        %mx = arith.maximumf %in, %m; %gt = arith.cmpf ogt, %in, %m
        %sel = arith.select %gt, %ki, %i;  linalg.yield %mx, %sel }
  ->
    %max = linalg.generic ins(%x) outs(%neg_inf_fill) { maximumf }
    %idx = linalg.generic ins(%x, %max) outs(fill N) {
        %hit = (in == max) or (in != in); %c = select %hit, k, N; minsi %c, %i }

argmin is the same with `minimumf`, `olt` and +inf. When the indices are not used (torch's
amax and softmax lower to this generic too) only the max is left. Ties go to the first index, as in
eager and as before. Fires on exactly those generics (one float input, a float and an
integer output with the same map, one static reduction dim, inits -inf/+inf and 0);
anything else is left alone. Runs on tensors, before bufferization.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.base import FunctionPass, ops_named, register_pass

#: Combining op -> (its strict `arith.cmpf` predicate: ogt, olt; the init it needs).
_KINDS = {"arith.maximumf": (2, -math.inf), "arith.minimumf": (4, math.inf)}


def _fill_value(value: ir.Value) -> ir.Attribute | None:
    """The constant a `linalg.fill` result is filled with (None: not a constant fill)."""
    fill = value.owner
    if not isinstance(fill, ir.OpView | ir.Operation) or fill.name != "linalg.fill":
        return None
    scalar = fill.operands[0].owner
    if not isinstance(scalar, ir.OpView | ir.Operation) or scalar.name != "arith.constant":
        return None
    return scalar.attributes["value"]


def _match(op: Operation) -> tuple[int, str] | None:
    """(reduction dim, combining op) of an argmax/argmin generic, or None."""
    if op.name != "linalg.generic" or len(op.operands) != 3 or len(op.results) != 2:
        return None
    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    reductions = [i for i, it in enumerate(iterators) if "reduction" in it]
    maps_attr = ir.ArrayAttr(op.attributes["indexing_maps"])
    maps = [str(m) for m in maps_attr]
    if len(reductions) != 1 or maps[1] != maps[2]:
        return None
    block = op.regions[0].blocks[0]
    body = [o.operation for o in block.operations]
    names = [o.name for o in body]
    if len(body) != 6 or names[2] not in _KINDS or names != [
            "linalg.index", "arith.index_cast", names[2], "arith.cmpf", "arith.select",
            "linalg.yield"]:
        return None
    predicate, identity = _KINDS[names[2]]
    index, cast, mx, cmp, sel, yld = body
    arg_in, arg_max, arg_idx = block.arguments
    if not isinstance(arg_in.type, ir.FloatType) or not isinstance(arg_idx.type, ir.IntegerType):
        return None
    if ir.IntegerAttr(index.attributes["dim"]).value != reductions[0]:
        return None
    if ir.IntegerAttr(cmp.attributes["predicate"]).value != predicate:
        return None
    if list(cast.operands) != [index.results[0]] or \
            list(mx.operands) != [arg_in, arg_max] or \
            list(cmp.operands) != [arg_in, arg_max] or \
            list(sel.operands) != [cmp.results[0], cast.results[0], arg_idx] or \
            list(yld.operands) != [mx.results[0], sel.results[0]]:
        return None
    results = list(ir.AffineMapAttr(maps_attr[0]).value.results)
    at = [i for i, e in enumerate(results)
          if isinstance(e, ir.AffineDimExpr) and e.position == reductions[0]]
    if len(at) != 1 or ir.RankedTensorType(op.operands[0].type).is_dynamic_dim(at[0]):
        return None
    neg = _fill_value(op.operands[1])
    zero = _fill_value(op.operands[2])
    if not isinstance(neg, ir.FloatAttr) or neg.value != identity or \
            not isinstance(zero, ir.IntegerAttr) or zero.value != 0:
        return None
    return reductions[0], names[2]


def split(op: Operation, dim: int, combine: str) -> None:
    """Replace the argmax/argmin generic `op` with the two reductions."""
    x, max_init, idx_init = op.operands
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    iterators = op.attributes["iterator_types"]
    in_map, out_map = maps[0], maps[1]
    float_t = ir.RankedTensorType(op.results[0].type).element_type
    idx_tensor = ir.RankedTensorType(op.results[1].type)
    idx_t = idx_tensor.element_type
    results = list(ir.AffineMapAttr(in_map).value.results)
    at = [i for i, e in enumerate(results)
          if isinstance(e, ir.AffineDimExpr) and e.position == dim]
    extent = ir.RankedTensorType(x.type).shape[at[0]]
    with op.location, InsertionPoint(op):
        gmax = dialects.linalg.GenericOp([op.results[0].type], [x], [max_init],
                                         ir.ArrayAttr.get([in_map, out_map]), iterators)
        block = gmax.regions[0].blocks.append(float_t, float_t)
        with InsertionPoint(block):
            kind = dialects.arith.MaximumFOp if combine == "arith.maximumf" else \
                dialects.arith.MinimumFOp
            m = kind(block.arguments[0], block.arguments[1])
            dialects.linalg.YieldOp([m.result])
        if not list(op.results[1].uses):  # amax/softmax's max(dim): the indices are dead
            op.results[0].replace_all_uses_with(gmax.result)
            op.erase()
            _erase_if_unused(idx_init)
            return
        n = dialects.arith.ConstantOp(idx_t, extent)
        empty = dialects.tensor.EmptyOp(idx_tensor.shape, idx_t)
        init = dialects.linalg.fill(n.result, outs=[empty.result])
        gidx = dialects.linalg.GenericOp([idx_tensor], [x, gmax.result], [init],
                                         ir.ArrayAttr.get([in_map, out_map, out_map]),
                                         iterators)
        block = gidx.regions[0].blocks.append(float_t, float_t, idx_t)
        with InsertionPoint(block):
            value, best, current = block.arguments
            k = dialects.linalg.IndexOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                           dim))
            ki = dialects.arith.IndexCastOp(idx_t, k.result)
            equal = dialects.arith.CmpFOp(dialects.arith.CmpFPredicate.OEQ, value, best)
            nan = dialects.arith.CmpFOp(dialects.arith.CmpFPredicate.UNO, value, value)
            hit = dialects.arith.OrIOp(equal.result, nan.result)
            candidate = dialects.arith.SelectOp(hit.result, ki.result, n.result)
            first = dialects.arith.MinSIOp(candidate.result, current)
            dialects.linalg.YieldOp([first.result])
    op.results[0].replace_all_uses_with(gmax.result)
    op.results[1].replace_all_uses_with(gidx.result)
    op.erase()
    _erase_if_unused(idx_init)


def _erase_if_unused(fill_result: ir.Value) -> None:
    """Erase the zero fill of the old index init, and its empty tensor, if now unused."""
    for value in (fill_result, *fill_result.owner.operands[1:]):
        owner = value.owner
        if isinstance(owner, ir.OpView | ir.Operation) and not list(value.uses):
            owner.erase()


@register_pass
@dataclass(frozen=True)
class SplitArgmax(FunctionPass):
    """Splits argmax/argmin generics into a max (min) and a first-index-of-it reduction."""

    name = "accel-split-argmax"

    def apply(self, func: Operation) -> None:
        for op in ops_named(func, ("linalg.generic",)):
            found = _match(op)
            if found is not None:
                split(op, *found)
