"""`accel-nvgpu-tensor-core-matmul`: f16 matmuls -> tensor-core (WMMA) kernels, fp32 accumulation.

Why: a GPU's tensor cores do f16 matrix products many times faster than its scalar FMA
units, and the loop path gives each thread one output element on the scalar units.
`linalg.matmul` / `linalg.batch_matmul` on memrefs of f16 with static, identity-layout
shapes whose M, N and K are multiples of 16 become a `gpu.launch` with one warp per 16x16
output tile: `gpu.subgroup_mma_*` ops (PTX `wmma.load` / `wmma.mma.sync` m16n16k16, tensor
cores on sm_70 and later) accumulating in f32 from zero into an f32 buffer, then an
elementwise `linalg.generic` adds the f32 sums to the output's initial value and rounds to
f16 once (as torch does; linalg's f16 semantics would round at every step):

    linalg.matmul ins(%a, %b : memref<64x32xf16>, memref<32x48xf16>) outs(%c : memref<64x48xf16>)
  ->
    %t = memref.alloc() : memref<64x48xf32>
    gpu.launch blocks(3, 4, 1) threads(32, 1, 1) { ... wmma over k ... store %t }
    linalg.generic ins(%t) outs(%c) { %c = truncf(extf(%c) + %t) }

(The f32 -> f16 rounding is a separate loop because this MLIR's NVVM lowering of
`subgroup_mma_elementwise truncf` crashes.) Anything else is left alone: other types,
strided views, sizes not multiples of 16, dynamic shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accel.ir import InsertionPoint, Module, Operation, ir
from accel.passes.base import ModulePass, ops_named, register_pass

TILE = 16
_FRAG = '!gpu.mma_matrix<16x16x{t}, "{k}">'
#: The plain (row-major A times row-major B) maps of each op, as MLIR prints them.
_DEFAULT_MAPS = {
    "linalg.matmul": "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> "
                     "(d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]",
    "linalg.batch_matmul": "[affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, "
                           "d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> "
                           "(d0, d1, d2)>]",
}


def _static_identity(t: ir.Type) -> ir.MemRefType | None:
    if not isinstance(t, ir.MemRefType):
        return None
    mt = ir.MemRefType(t)
    layout = mt.layout
    if not mt.has_static_shape or not isinstance(layout, ir.AffineMapAttr) or \
            layout.value != ir.AffineMap.get_identity(mt.rank):
        return None
    return mt


def call_helper(op: Operation, name: str, body: Any, made: set[str],
                render: Any) -> None:
    """Replace matmul `op` by a call of `@name(A, B, C)`; the first time a name is used,
    `render()`'s functions are added at the top of the module `body`."""
    from accel.ir import func

    if name not in made:
        helper = Module.parse(render())
        for fn in list(helper.body.operations):
            fn.operation.move_before(body.operations[0])
        made.add(name)
    with InsertionPoint(op), op.location:
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), list(op.operands))
    op.erase()


def matmul_dims(name: str, a: list[int], b: list[int], c: list[int]
                ) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of a `linalg.matmul` / `batch_matmul` with operand shapes a, b, c
    (batch 1 for matmul), or None when the shapes do not agree."""
    a, b, c = list(a), list(b), list(c)
    batch = 1
    if name == "linalg.batch_matmul":
        if not a[0] == b[0] == c[0]:
            return None
        batch, a, b, c = a[0], a[1:], b[1:], c[1:]
    m, k = a
    n = b[1]
    if b[0] != k or c != [m, n]:
        return None
    return batch, m, n, k


def _shapes(op: Operation) -> tuple[int, int, int, int, str] | None:
    """(batch, M, N, K, C element type) of a matmul this pass handles, else None."""
    if op.name not in ("linalg.matmul", "linalg.batch_matmul") or len(op.operands) != 3 or \
            len(op.results):
        return None
    a, b, c = (_static_identity(v.type) for v in op.operands)
    if a is None or b is None or c is None:
        return None
    if str(a.element_type) != "f16" or str(b.element_type) != "f16" or \
            str(c.element_type) not in ("f16", "f32"):
        return None
    if "indexing_maps" in op.attributes and \
            str(op.attributes["indexing_maps"]) != _DEFAULT_MAPS[op.name]:
        return None  # transposed/broadcast variants keep the loop path
    dims = matmul_dims(op.name, a.shape, b.shape, c.shape)
    if dims is None or any(d % TILE for d in dims[1:]):
        return None
    batch, m, n, k = dims
    return batch, m, n, k, str(c.element_type)


def _helper(name: str, batch: int, m: int, n: int, k: int, ctype: str,
            batched: bool) -> str:
    """A private function doing one matmul with tensor cores (inlined by the pipeline)."""
    lead = "[%b, " if batched else "["
    pre = f"{batch}x" if batched else ""
    a, b = f"memref<{pre}{m}x{k}xf16>", f"memref<{pre}{k}x{n}xf16>"
    c, t = f"memref<{pre}{m}x{n}x{ctype}>", f"memref<{pre}{m}x{n}xf32>"
    fa, fb = _FRAG.format(t="f16", k="AOp"), _FRAG.format(t="f16", k="BOp")
    fc = _FRAG.format(t="f32", k="COp")
    dims = "(d0, d1, d2)" if batched else "(d0, d1)"
    iters = ", ".join(['"parallel"'] * (3 if batched else 2))
    ext = "%e = arith.extf %o : f16 to f32\n      " if ctype == "f16" else ""
    acc = "%e" if ctype == "f16" else "%o"
    trunc = "\n      %r = arith.truncf %s : f32 to f16" if ctype == "f16" else ""
    res = "%r" if ctype == "f16" else "%s"
    return f"""
func.func private @{name}(%A: {a}, %B: {b}, %C: {c}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %cK = arith.constant {k} : index
  %gx = arith.constant {n // TILE} : index
  %gy = arith.constant {m // TILE} : index
  %gz = arith.constant {batch} : index
  %T = memref.alloc() : {t}
  gpu.launch blocks(%bx, %by, %b) in (%sgx = %gx, %sgy = %gy, %sgz = %gz)
      threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {{
    %row = arith.muli %by, %c16 : index
    %col = arith.muli %bx, %c16 : index
    %zero = arith.constant 0.0 : f32
    %init = gpu.subgroup_mma_constant_matrix %zero : {fc}
    %acc = scf.for %kk = %c0 to %cK step %c16 iter_args(%sum = %init) -> ({fc}) {{
      %ta = gpu.subgroup_mma_load_matrix %A{lead}%row, %kk] {{leadDimension = {k} : index}}
          : {a} -> {fa}
      %tb = gpu.subgroup_mma_load_matrix %B{lead}%kk, %col] {{leadDimension = {n} : index}}
          : {b} -> {fb}
      %r = gpu.subgroup_mma_compute %ta, %tb, %sum : {fa}, {fb} -> {fc}
      scf.yield %r : {fc}
    }}
    gpu.subgroup_mma_store_matrix %acc, %T{lead}%row, %col] {{leadDimension = {n} : index}}
        : {fc}, {t}
    gpu.terminator
  }}
  linalg.generic {{indexing_maps = [affine_map<{dims} -> {dims}>, affine_map<{dims} -> {dims}>],
      iterator_types = [{iters}]}} ins(%T : {t}) outs(%C : {c}) {{
    ^bb0(%s0: f32, %o: {ctype}):
      {ext}%s = arith.addf {acc}, %s0 : f32{trunc}
      linalg.yield {res} : {ctype}
  }}
  return
}}
"""


@register_pass
@dataclass(frozen=True)
class NvgpuTensorCoreMatmul(ModulePass):
    """Rewrites static f16 matmuls on memrefs as tensor-core (WMMA) kernels, f32 accumulation."""

    name = "accel-nvgpu-tensor-core-matmul"

    def apply(self, module: Operation) -> None:

        found: list[tuple[Operation, tuple[int, int, int, int, str]]] = [
            (op, shape) for op in ops_named(module) if (shape := _shapes(op)) is not None]
        body = module.regions[0].blocks[0]
        made: set[str] = set()
        for op, (batch, m, n, k, ctype) in found:
            batched = op.name == "linalg.batch_matmul"
            name = f"__accel_wmma_{batch}x{m}x{n}x{k}_{ctype}" + ("_b" if batched else "")
            call_helper(op, name, body, made,
                        lambda: _helper(name, batch, m, n, k, ctype, batched))  # noqa: B023
