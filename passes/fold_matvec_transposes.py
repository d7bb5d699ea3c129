"""`accel-fold-matvec-transposes`: a matmul of a few rows reads nn.Linear's weight in place.

Why: torch-mlir lowers `x @ W.t()` (nn.Linear, a classifier head) to a `linalg.transpose`
of W into a new tensor and a `linalg.matmul` on the copy. `accel-matmul-microkernel`
folds that copy away when both sit in one block, but `accel-split-functions` may put them
in different functions first: ResNet-50's head at batch 1 copied its 1000 x 2048 weight
every call in one part (2.8 ms of 71) and ran the product in the next. On tensors, before
any split, the transpose becomes the matmul's indexing map instead:

    %t = linalg.transpose ins(%w : tensor<NxK>) outs(%e) permutation = [1, 0]
    %y = linalg.matmul ins(%x, %t : tensor<MxK>, tensor<KxN>) outs(%c)
  ->
    %y = linalg.matmul indexing_maps = [(m, n, k) -> (m, k), (m, n, k) -> (n, k),
                                        (m, n, k) -> (m, n)]
           ins(%x, %w : tensor<MxK>, tensor<NxK>) outs(%c)

Matched: a `linalg.matmul` with the default indexing maps on static f32 tensors, at most
GEMV_MAX_ROWS rows and a weight the matrix-vector kernels take (`takes_weight` in
`_gemv_kernel.py`: past L1, a reduction at most 4x the output's width; they read B as
N x K directly; the GEMM kernels fold larger products themselves), whose B is the only
use of a 2-D `linalg.transpose` with permutation [1, 0]. The transpose (and its `tensor.empty`)
goes when nothing else uses it.

In the default CPU pipeline at opt_level >= 1 (`accel.host.pipelines.FOLD_FLIPS`'s
neighbour `FOLD_MATVEC_TRANSPOSES`).
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes._gemv_kernel import GEMV_MAX_ROWS, takes_weight
from accel.passes.base import ModulePass, ops_named, register_pass

_DEFAULT_MAPS = ["(d0, d2)", "(d2, d1)", "(d0, d1)"]


def _static_f32_matrix(value: ir.Value) -> ir.RankedTensorType | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType):
        return None
    if t.rank != 2 or not t.has_static_shape or not isinstance(t.element_type, ir.F32Type):
        return None
    return t


def _default_maps(op: Operation) -> bool:
    if "indexing_maps" not in op.attributes:
        return True
    maps = [str(m).rsplit("->", 1)[1].strip().rstrip(">").strip()
            for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    return maps == _DEFAULT_MAPS


def folded_transpose(op: Operation) -> Operation | None:
    """The transpose `op` (a linalg.matmul on tensors) can read through, or None."""
    if op.name != "linalg.matmul" or len(op.operands) != 3 or len(op.results) != 1:
        return None
    if "cast" in op.attributes or not _default_maps(op):
        return None
    types = [_static_f32_matrix(v) for v in op.operands]
    if any(t is None for t in types) or types[0].shape[0] > GEMV_MAX_ROWS:
        return None
    # Only where a matrix-vector kernel takes the product (B past L1). A small product stays
    # loops, and affine fusion, given the transposed map, recomputed a tiny ViT's LayerNorm
    # inside the head's loop over classes with its sums started once per row: wrong logits.
    k, n = types[1].shape  # B (the transposed copy) is K x N
    if not takes_weight(n, k, trans_b=True):
        return None
    owner = op.operands[1].owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "linalg.transpose":
        return None
    transpose = owner.operation
    if list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"])) != [1, 0]:
        return None
    if len(list(transpose.results[0].uses)) != 1:
        return None
    return transpose


@register_pass
@dataclass(frozen=True)
class FoldMatvecTransposes(ModulePass):
    """Matmuls of at most GEMV_MAX_ROWS rows read a transposed weight in place."""

    name = "accel-fold-matvec-transposes"

    def apply(self, module: Operation) -> None:
        for op in ops_named(module, ("linalg.matmul",)):
            transpose = folded_transpose(op)
            if transpose is None:
                continue
            weight, init = transpose.operands[0], transpose.operands[1]
            with InsertionPoint(op), op.location:
                maps = [ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(a),
                                                ir.AffineDimExpr.get(b)])
                        for a, b in ((0, 2), (1, 2), (0, 1))]
                folded = dialects.linalg.matmul(op.operands[0], weight, outs=[op.operands[2]],
                                                indexing_maps=maps)
            op.results[0].replace_all_uses_with(folded)
            op.erase()
            transpose.erase()
            owner = init.owner
            if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "tensor.empty" \
                    and not list(owner.results[0].uses):
                owner.operation.erase()
