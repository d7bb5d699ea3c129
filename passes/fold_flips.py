"""`accel-fold-flips`: gathers that only mirror or permute indices become affine copies.

Why: torch-mlir lowers `aten.flip` to a `linalg.generic` over a zero-filled output whose
body reads the input with `tensor.extract` at `size - 1 - index`. After bufferization that
is a loop nest with a non-affine `memref.load`, which affine fusion and
`accel-parallelize-loops` leave alone: it runs on one thread, after a second pass that
fills its output with zeros. A convolution's input gradient flips and transposes each
weight (`weight.flip(2, 3).transpose(0, 1)`, accel's `convolution_backward`): three passes
over every weight per train step, one of them serial. As one generic with an affine
indexing map, the flip and the transpose are one parallel copy:

    %z = linalg.fill 0 -> %e                      %t = linalg.generic {indexing_maps = [
    %f = linalg.generic ins(%w) outs(%z) {          (d0, d1, d2, d3) -> (d1, d0, -d2 + 2,
      %k = linalg.index 2 ...                                                -d3 + 2),
      %a = arith.subi %c2, %k                       (d0, d1, d2, d3) -> (d0, d1, d2, d3)]}
      %v = tensor.extract %w[%i, %j, %a, %b]  ->      ins(%w) outs(tensor.empty) {
      linalg.yield %v                               ^bb0(%in: f32, %out: f32):
    }                                                 linalg.yield %in
    %t = linalg.transpose ins(%f) [1, 0, 2, 3]    }

Matched: a `linalg.generic` with one result, all-parallel iterators, a static result type
and block arguments its body does not use, whose body is `linalg.index` ops, `arith.subi`
of an `arith.constant` and one of those indices, one `tensor.extract` from a static tensor
defined outside the generic whose every index is one of those values, and a yield of the
extracted value; every index stays in bounds over the iteration space (`c - d` for `d` in
[0, n) within the dimension it reads). A `linalg.transpose` that is the result's only user
folds into the same map. The fill and the generic, left unused, are erased.

In the default CPU pipeline at opt_level >= 1 (`accel.host.pipelines.FOLD_FLIPS`): the
ResNet-18 train step 1-2% faster (min) and 3% (median) at 1 and 2 threads, and the copy
runs on every thread (docs/training.md, "Sixteenth session").
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import Module, Operation, ir
from accel.passes.base import ModulePass, ops_named, register_pass, replace_with_function_body

#: An index of the extract: ("d", k) for iteration dim k, ("c-d", c, k) for c - dim k.
Index = tuple


def _constant_index(value: ir.Value) -> int | None:
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "arith.constant":
        return None
    attr = owner.operation.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def gather_indices(op: Operation) -> tuple[ir.Value, list[Index]] | None:
    """(the source, its index expressions) when `op` is a flip-like gather, else None."""
    if op.name != "linalg.generic" or len(op.results) != 1 or len(op.regions) != 1:
        return None
    if any("parallel" not in str(it)
           for it in ir.ArrayAttr(op.attributes["iterator_types"])):
        return None
    result_t = op.results[0].type
    if not isinstance(result_t, ir.RankedTensorType) or \
            not ir.RankedTensorType(result_t).has_static_shape:
        return None
    block = op.regions[0].blocks[0]
    if any(list(arg.uses) for arg in block.arguments):
        return None
    known: list[tuple[ir.Value, Index]] = []

    def index_of(value: ir.Value) -> Index | None:
        return next((e for v, e in known if v == value), None)

    extract: Operation | None = None
    body = [o.operation for o in block.operations]
    for inner in body[:-1]:
        if inner.name == "linalg.index":
            known.append((inner.results[0], ("d", ir.IntegerAttr(inner.attributes["dim"]).value)))
        elif inner.name == "arith.subi":
            c, d = _constant_index(inner.operands[0]), index_of(inner.operands[1])
            if c is None or d is None or d[0] != "d":
                return None
            known.append((inner.results[0], ("c-d", c, d[1])))
        elif inner.name == "tensor.extract" and extract is None:
            extract = inner
        else:
            return None
    yielded = body[-1]
    if extract is None or yielded.name != "linalg.yield" or len(yielded.operands) != 1 or \
            yielded.operands[0] != extract.results[0]:
        return None
    source = extract.operands[0]
    source_t = source.type
    if not isinstance(source_t, ir.RankedTensorType) or \
            not ir.RankedTensorType(source_t).has_static_shape or \
            ir.RankedTensorType(source_t).element_type != \
            ir.RankedTensorType(result_t).element_type:
        return None
    # (The source is defined outside: the block's arguments are unused, and the body
    # defines no tensors.)
    indices: list[Index] = []
    for v in list(extract.operands)[1:]:
        index = index_of(v)
        if index is None:
            return None
        indices.append(index)
    out_shape = ir.RankedTensorType(result_t).shape
    src_shape = ir.RankedTensorType(source_t).shape
    for position, index in enumerate(indices):
        n = out_shape[index[-1]]
        lo, hi = (0, n - 1) if index[0] == "d" else (index[1] - (n - 1), index[1])
        if lo < 0 or hi > src_shape[position] - 1:
            return None
    return source, indices


def _map_text(indices: list[Index], rank: int, dim_of: list[int]) -> str:
    dims = ", ".join(f"d{k}" for k in range(rank))
    exprs = [f"d{dim_of[i[1]]}" if i[0] == "d" else f"-d{dim_of[i[2]]} + {i[1]}"
             for i in indices]
    return f"affine_map<({dims}) -> ({', '.join(exprs)})>"


def affine_copy(source: ir.Value, indices: list[Index], result_t: ir.Type,
                dim_of: list[int]) -> Module:
    """A helper function whose body is the gather as one affine-indexed generic."""
    rank = ir.RankedTensorType(result_t).rank
    elem = ir.RankedTensorType(result_t).element_type
    dims = ", ".join(f"d{k}" for k in range(rank))
    identity = f"affine_map<({dims}) -> ({dims})>"
    parallel = ", ".join(['"parallel"'] * rank)
    return Module.parse("\n".join([
        f"func.func private @h(%arg0: {source.type}) -> {result_t} {{",
        f"  %e = tensor.empty() : {result_t}",
        f"  %r = linalg.generic {{indexing_maps = [{_map_text(indices, rank, dim_of)}, "
        f"{identity}], iterator_types = [{parallel}]}} ins(%arg0 : {source.type}) "
        f"outs(%e : {result_t}) {{",
        f"  ^bb0(%in: {elem}, %out: {elem}):",
        f"    linalg.yield %in : {elem}",
        f"  }} -> {result_t}",
        f"  return %r : {result_t}",
        "}"]))


def _erase_unused(ops: list[Operation]) -> None:
    """Erase each of `ops` (in order: users before what they use) left without uses."""
    for op in ops:
        if op.parent is not None and not any(list(r.uses) for r in op.results):
            op.erase()


def _init_chain(op: Operation) -> list[Operation]:
    """The fill of `op`'s output and the `tensor.empty` under it (torch-mlir's init)."""
    chain: list[Operation] = []
    owner = op.operands[len(op.operands) - 1].owner if len(op.operands) else None
    while isinstance(owner, ir.OpView | ir.Operation) and \
            owner.name in ("linalg.fill", "tensor.empty"):
        chain.append(owner.operation)
        operands = list(owner.operation.operands)
        owner = operands[-1].owner if operands else None
    return chain


@register_pass
@dataclass(frozen=True)
class FoldFlips(ModulePass):
    """Rewrites flip-like gathers (and a transpose of one) as one affine-indexed copy."""

    name = "accel-fold-flips"

    def apply(self, module: Operation) -> None:
        for op in ops_named(module, ("linalg.generic",)):
            if op.parent is None:
                continue
            found = gather_indices(op)
            if found is None:
                continue
            source, indices = found
            rank = ir.RankedTensorType(op.results[0].type).rank
            target, dim_of = op, list(range(rank))
            uses = list(op.results[0].uses)
            if len(uses) == 1 and uses[0].owner.name == "linalg.transpose" and \
                    uses[0].operand_number == 0:
                transpose = uses[0].owner.operation
                perm = list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))
                # Output dim i of the transpose is dim perm[i] of the gather's output.
                dim_of = [perm.index(k) for k in range(rank)]
                target = transpose
            init = _init_chain(op)
            replace_with_function_body(
                target, affine_copy(source, indices, target.results[0].type, dim_of),
                [source])
            _erase_unused(([op] if target is not op else []) + init)
