"""`accel-nvgpu-register-tile-matmul`: f32 matmuls -> one 4x4 output tile per thread.

Why: the loop path gives each GPU thread one output element, so every multiply-add loads
one element of A and one of B from memory (two loads per FMA). With a 4x4 tile of sums in
registers a thread loads 4 + 4 elements per 16 FMAs (four times less traffic), which is
what made the proven fp32 path reach 0.78x cuBLAS (../shared/gpu/README.md).
`linalg.matmul` / `linalg.batch_matmul` of f32 on static identity-layout memrefs with M and
N multiples of 4 become a call of a private function (inlined by the pipeline):

    scf.parallel (%b, %i, %j) = (0, 0, 0) to (B, M/4, N/4) {      // one thread each
      %c00..%c33 = C[b, 4i + r, 4j + c]                            // linalg: C += A @ B
      %s:16 = scf.for %k = 0 to K iter_args(%c00..%c33) {
        %a0..%a3 = A[b, 4i + r, k];  %b0..%b3 = B[b, k, 4j + c]
        yield %cRC + %aR * %bC ...  }
      C[b, 4i + r, 4j + c] = %sRC }

`accel-nvgpu-map-loops` then flattens the parallel loop with the column tile fastest, so
neighbouring threads read neighbouring columns of B. Other matmuls are left alone.

Matmuls whose M, N, K fit a block tile (`_nvgpu_sgemm`: 128 x 128 tiles of 8 x 8 per
thread, or 64 x 64 of 4 x 4) instead become one `gpu.launch` that stages A and B slices in
shared memory (option `shared-memory`, on by default): each element then comes from DRAM
once per block rather than once per thread row.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import Operation
from accel.passes import _nvgpu_sgemm
from accel.passes.base import ModulePass, ops_named, register_pass

#: Rows and columns of the output tile a thread keeps in registers.
TILE = 4


def _matmul_shape(op: Operation) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of an f32 matmul this pass rewrites, else None."""
    from accel.passes.nvgpu_tensor_core_matmul import (
        _DEFAULT_MAPS,
        _static_identity,
        matmul_dims,
    )

    if op.name not in _DEFAULT_MAPS or len(op.operands) != 3 or len(op.results):
        return None
    if str(op.attributes["indexing_maps"]) != _DEFAULT_MAPS[op.name]:
        return None
    types = [_static_identity(v.type) for v in op.operands]
    if any(t is None or str(t.element_type) != "f32" for t in types):
        return None
    dims = matmul_dims(op.name, *(t.shape for t in types))  # type: ignore[union-attr]
    if dims is None or dims[1] % TILE or dims[2] % TILE:
        return None
    batch, m, n, k = dims
    return batch, m, n, k


def _helper(name: str, batch: int, m: int, n: int, k: int, batched: bool) -> str:
    pre = f"{batch}x" if batched else ""
    ta, tb, tc = (f"memref<{pre}{m}x{k}xf32>", f"memref<{pre}{k}x{n}xf32>",
                  f"memref<{pre}{m}x{n}xf32>")
    at = "%bb, " if batched else ""
    rc = [(r, c) for r in range(TILE) for c in range(TILE)]
    lines = [f"func.func private @{name}(%A: {ta}, %B: {tb}, %C: {tc}) {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             f"  %cB = arith.constant {batch} : index",
             f"  %cM = arith.constant {m // TILE} : index",
             f"  %cN = arith.constant {n // TILE} : index", f"  %cK = arith.constant {k} : index"]
    lines += [f"  %o{t} = arith.constant {t} : index" for t in range(1, TILE)]
    lines += ["  scf.parallel (%bb, %ti, %tj) = (%c0, %c0, %c0) to (%cB, %cM, %cN) "
              "step (%c1, %c1, %c1) {",
              f"    %c{TILE} = arith.constant {TILE} : index",
              f"    %r0 = arith.muli %ti, %c{TILE} : index",
              f"    %q0 = arith.muli %tj, %c{TILE} : index"]
    for t in range(1, TILE):
        lines += [f"    %r{t} = arith.addi %r0, %o{t} : index",
                  f"    %q{t} = arith.addi %q0, %o{t} : index"]
    for r, c in rc:
        lines.append(f"    %i{r}{c} = memref.load %C[{at}%r{r}, %q{c}] : {tc}")
    inits = ", ".join(f"%s{r}{c} = %i{r}{c}" for r, c in rc)
    types = ", ".join(["f32"] * len(rc))
    lines.append(f"    %res:{len(rc)} = scf.for %kk = %c0 to %cK step %c1 iter_args({inits})"
                 f" -> ({types}) {{")
    for t in range(TILE):
        lines += [f"      %a{t} = memref.load %A[{at}%r{t}, %kk] : {ta}",
                  f"      %b{t} = memref.load %B[{at}%kk, %q{t}] : {tb}"]
    for r, c in rc:
        lines += [f"      %p{r}{c} = arith.mulf %a{r}, %b{c} : f32",
                  f"      %n{r}{c} = arith.addf %s{r}{c}, %p{r}{c} : f32"]
    lines.append("      scf.yield " + ", ".join(f"%n{r}{c}" for r, c in rc) + f" : {types}")
    lines.append("    }")
    for idx, (r, c) in enumerate(rc):
        lines.append(f"    memref.store %res#{idx}, %C[{at}%r{r}, %q{c}] : {tc}")
    lines += ["    scf.reduce", "  }", "  return", "}"]
    return "\n".join(lines)


@register_pass
@dataclass(frozen=True)
class NvgpuRegisterTileMatmul(ModulePass):
    """Rewrites static f32 matmuls on memrefs as loops with a 4x4 register tile per thread."""

    name = "accel-nvgpu-register-tile-matmul"
    #: Matmuls whose sizes fit a block tile (`_nvgpu_sgemm.CONFIGS`: 128 x 128 x 8 or
    #: 64 x 64 x 16) stage A and B slices in shared memory, 256 threads a block.
    shared_memory: bool = True

    def apply(self, module: Operation) -> None:

        found: list[tuple[Operation, tuple[int, int, int, int]]] = [
            (op, shape) for op in ops_named(module) if (shape := _matmul_shape(op)) is not None]
        body = module.regions[0].blocks[0]
        made: set[str] = set()
        from accel.passes.nvgpu_tensor_core_matmul import call_helper

        for op, (batch, m, n, k) in found:
            batched = op.name == "linalg.batch_matmul"
            cfg = _nvgpu_sgemm.config_for(m, n, k) if self.shared_memory else None
            suffix = f"{batch}x{m}x{n}x{k}" + ("_b" if batched else "")
            if cfg is not None:
                name = f"__accel_sgemm_{cfg.bm}x{cfg.bn}x{cfg.bk}_{suffix}"
                call_helper(op, name, body, made, lambda: _nvgpu_sgemm.render(  # noqa: B023
                    name, cfg, batch, m, n, k, batched))  # noqa: B023
                continue
            name = f"__accel_rt_matmul_{suffix}"
            call_helper(op, name, body, made,
                        lambda: _helper(name, batch, m, n, k, batched))  # noqa: B023
