"""`accel-nvgpu-tensor-core-matmul`: f16, int8 and tf32 matmuls -> tensor-core (WMMA) kernels.

Why: a GPU's tensor cores do small matrix products many times faster than its scalar FMA
units, and the loop path gives each thread one output element on the scalar units.
`linalg.matmul` / `linalg.batch_matmul` on static, identity-layout memrefs become a
`gpu.launch` with one warp per 16x16 output tile of `gpu.subgroup_mma_*` ops (PTX
`wmma.load` / `wmma.mma.sync`, tensor cores on sm_70 and later):

| A, B | C | WMMA | sums |
| --- | --- | --- | --- |
| f16 | f32 | m16n16k16 f16 -> f32 | in C |
| f16 | f16 | m16n16k16 f16 -> f32 | in an f32 temporary, added to C and rounded once (torch) |
| f16 | f16, `f16-accumulate` | m16n16k16 f16 -> f16 | in C (mm_conv_precision_mode=fp16) |
| f32, `tf32` | f32 | m16n16k8 tf32 -> f32 | in C (mm_conv_precision_mode=tf32) |
| i8 | i32 | m16n16k16 s8 -> s32 | in C (mixed_int8_int32; blocked kernel only) |

M and N must be multiples of 16 and K of the WMMA k. Sizes that fit 64 x 64 x 32 tiles use
the blocked kernel of `_nvgpu_wmma_tiles` (4 warps per block, A and B slices staged in
shared memory); others one warp per 16 x 16 tile reading global memory. WMMA pointers
must be 32-byte aligned, which int8's 16-byte k-steps only meet in the blocked kernel's
spread-out shared rows. "In C": C's values are loaded as the accumulator's start, the
warp's sums stored back over them:

    linalg.matmul ins(%a, %b : memref<64x32xf16>, memref<32x48xf16>) outs(%c : memref<64x48xf32>)
  ->
    gpu.launch blocks(3, 4, 1) threads(32, 1, 1) { load C tile; wmma over k; store C tile }

(The f32 -> f16 rounding of the f16-C case is a separate loop because this MLIR's NVVM
lowering of `subgroup_mma_elementwise truncf` crashes. bf16 has no WMMA type in this MLIR:
bf16 matmuls keep the loop path.) Anything else is left alone: other types, strided views,
sizes not multiples of the tile, dynamic shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accel.ir import InsertionPoint, Module, Operation, ir
from accel.passes import _nvgpu_wmma_tiles
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


@dataclass(frozen=True)
class Spec:
    """One matmul this pass rewrites: sizes, types and the kernel style."""

    batch: int
    m: int
    n: int
    k: int
    operand: str      # A and B element type in memory (f16, f32, i8)
    fragment: str     # their WMMA fragment element type (si8 for i8)
    acc: str          # accumulator fragment type (f16, f32, i32)
    ctype: str        # C's element type
    ktile: int        # WMMA k: 16, 8 for tf32

    @property
    def rounds(self) -> bool:
        """f16 C with f32 sums: sum into a temporary, then add to C and round once."""
        return self.acc != self.ctype


def _spec(op: Operation, tf32: bool, f16_accumulate: bool) -> Spec | None:
    """The Spec of a matmul this pass handles, else None."""
    if op.name not in ("linalg.matmul", "linalg.batch_matmul") or len(op.operands) != 3 or \
            len(op.results):
        return None
    a, b, c = (_static_identity(v.type) for v in op.operands)
    if a is None or b is None or c is None:
        return None
    ta, tb, tc = str(a.element_type), str(b.element_type), str(c.element_type)
    if ta != tb:
        return None
    if ta == "f16" and tc in ("f16", "f32"):
        acc, fragment, ktile = ("f16" if f16_accumulate and tc == "f16" else "f32"), "f16", TILE
    elif ta == "f32" and tc == "f32" and tf32:
        acc, fragment, ktile = "f32", "f32", 8  # f32 fragments are tf32: m16n16k8
    elif ta == "i8" and tc == "i32":
        acc, fragment, ktile = "i32", "si8", TILE
    else:
        return None
    if "indexing_maps" in op.attributes and \
            str(op.attributes["indexing_maps"]) != _DEFAULT_MAPS[op.name]:
        return None  # transposed/broadcast variants keep the loop path
    dims = matmul_dims(op.name, a.shape, b.shape, c.shape)
    if dims is None or dims[1] % TILE or dims[2] % TILE or dims[3] % ktile:
        return None
    batch, m, n, k = dims
    if ta == "i8" and not _nvgpu_wmma_tiles.fits(m, n, k):
        return None  # WMMA pointers are 32-byte aligned: int8 needs the blocked kernel
    return Spec(batch, m, n, k, ta, fragment, acc, tc, ktile)


def _per_warp_launch(s: Spec, batched: bool, a: str, b: str, out: str, out_type: str) -> str:
    """One warp per 16 x 16 tile of C, fragments straight from global memory."""
    lead = "[%b, " if batched else "["
    fa = f'!gpu.mma_matrix<{TILE}x{s.ktile}x{s.fragment}, "AOp">'
    fb = f'!gpu.mma_matrix<{s.ktile}x{TILE}x{s.fragment}, "BOp">'
    fc = _FRAG.format(t=s.acc, k="COp")
    zero = "0.0" if s.acc.startswith("f") else "0"
    if s.rounds:
        start = f"""%zero = arith.constant {zero} : {s.acc}
    %init = gpu.subgroup_mma_constant_matrix %zero : {fc}"""
    else:
        start = (f"%init = gpu.subgroup_mma_load_matrix {out}{lead}%row, %col] "
                 f"{{leadDimension = {s.n} : index}}\n        : {out_type} -> {fc}")
    return f"""  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %ck = arith.constant {s.ktile} : index
  %cK = arith.constant {s.k} : index
  %gx = arith.constant {s.n // TILE} : index
  %gy = arith.constant {s.m // TILE} : index
  %gz = arith.constant {s.batch} : index
  gpu.launch blocks(%bx, %by, %b) in (%sgx = %gx, %sgy = %gy, %sgz = %gz)
      threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {{
    %row = arith.muli %by, %c16 : index
    %col = arith.muli %bx, %c16 : index
    {start}
    %acc = scf.for %kk = %c0 to %cK step %ck iter_args(%sum = %init) -> ({fc}) {{
      %ta = gpu.subgroup_mma_load_matrix %A{lead}%row, %kk] {{leadDimension = {s.k} : index}}
          : {a} -> {fa}
      %tb = gpu.subgroup_mma_load_matrix %B{lead}%kk, %col] {{leadDimension = {s.n} : index}}
          : {b} -> {fb}
      %r = gpu.subgroup_mma_compute %ta, %tb, %sum : {fa}, {fb} -> {fc}
      scf.yield %r : {fc}
    }}
    gpu.subgroup_mma_store_matrix %acc, {out}{lead}%row, %col] {{leadDimension = {s.n} : index}}
        : {fc}, {out_type}
    gpu.terminator
  }}"""


def _helper(name: str, s: Spec, batched: bool) -> str:
    """A private function doing one matmul with tensor cores (inlined by the pipeline):
    the blocked shared-memory kernel when the sizes fit its 64 x 64 x 32 tiles, else one
    warp per output tile."""
    pre = f"{s.batch}x" if batched else ""
    a, b = f"memref<{pre}{s.m}x{s.k}x{s.operand}>", f"memref<{pre}{s.k}x{s.n}x{s.operand}>"
    c = f"memref<{pre}{s.m}x{s.n}x{s.ctype}>"
    # Sums go straight into C (its values are the accumulator's start) unless they are
    # rounded to C's type afterwards: then into a temporary T.
    t = f"memref<{pre}{s.m}x{s.n}x{s.acc}>" if s.rounds else c
    out = "%T" if s.rounds else "%C"
    dims = "(d0, d1, d2)" if batched else "(d0, d1)"
    iters = ", ".join(['"parallel"'] * (3 if batched else 2))
    if _nvgpu_wmma_tiles.fits(s.m, s.n, s.k):
        launch = _nvgpu_wmma_tiles.launch(s, batched, a, b, out, t, s.n)
    else:
        launch = _per_warp_launch(s, batched, a, b, out, t)
    alloc = f"  %T = memref.alloc() : {t}\n" if s.rounds else ""
    rounding = f"""
  linalg.generic {{indexing_maps = [affine_map<{dims} -> {dims}>, affine_map<{dims} -> {dims}>],
      iterator_types = [{iters}]}} ins(%T : {t}) outs(%C : {c}) {{
    ^bb0(%s0: f32, %o: {s.ctype}):
      %e = arith.extf %o : {s.ctype} to f32
      %s = arith.addf %e, %s0 : f32
      %r = arith.truncf %s : f32 to {s.ctype}
      linalg.yield %r : {s.ctype}
  }}""" if s.rounds else ""
    return f"""
func.func private @{name}(%A: {a}, %B: {b}, %C: {c}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
{alloc}{launch}{rounding}
  return
}}
"""


@register_pass
@dataclass(frozen=True)
class NvgpuTensorCoreMatmul(ModulePass):
    """Rewrites static f16/int8 (and tf32) matmuls on memrefs as tensor-core (WMMA) kernels."""

    name = "accel-nvgpu-tensor-core-matmul"
    #: f32 matmuls on tf32 tensor cores (mm_conv_precision_mode=tf32 rounded their operands).
    tf32: bool = False
    #: f16 matmuls with an f16 C sum in f16 (mm_conv_precision_mode=fp16), not f32.
    f16_accumulate: bool = False

    def apply(self, module: Operation) -> None:
        found = [(op, spec) for op in ops_named(module)
                 if (spec := _spec(op, self.tf32, self.f16_accumulate)) is not None]
        body = module.regions[0].blocks[0]
        made: set[str] = set()
        for op, spec in found:
            batched = op.name == "linalg.batch_matmul"
            name = (f"__accel_wmma_{spec.batch}x{spec.m}x{spec.n}x{spec.k}_{spec.operand}_"
                    f"{spec.acc}_{spec.ctype}" + ("_b" if batched else ""))
            call_helper(op, name, body, made,
                        lambda: _helper(name, spec, batched))  # noqa: B023
