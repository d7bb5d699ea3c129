"""`make demo`: JIT-compile an MLIR matmul + bias + relu for the host CPU and check it.

The function is linalg on tensors; `accel.compile_mlir` bufferizes it, lowers it to the LLVM
dialect, and JIT-compiles it with llvmlite. The result is compared with numpy.
"""

from __future__ import annotations

import sys
import time

import accel
import numpy as np

M, K, N = 64, 128, 32

MLP = f"""
#bias = affine_map<(i, j) -> (j)>
#id = affine_map<(i, j) -> (i, j)>
func.func @mlp(%x: tensor<{M}x{K}xf32>, %w: tensor<{K}x{N}xf32>, %b: tensor<{N}xf32>)
    -> tensor<{M}x{N}xf32> {{
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<{M}x{N}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32>)
                      outs(%acc : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %out = tensor.empty() : tensor<{M}x{N}xf32>
  %r = linalg.generic {{indexing_maps = [#id, #bias, #id],
                        iterator_types = ["parallel", "parallel"]}}
      ins(%mm, %b : tensor<{M}x{N}xf32>, tensor<{N}xf32>) outs(%out : tensor<{M}x{N}xf32>) {{
    ^bb0(%v: f32, %bias: f32, %o: f32):
      %s = arith.addf %v, %bias : f32
      %relu = arith.maximumf %s, %zero : f32
      linalg.yield %relu : f32
  }} -> tensor<{M}x{N}xf32>
  return %r : tensor<{M}x{N}xf32>
}}
"""

#: float32 sums of 128 products (|sum| ~ 10) in another order than numpy: ~1e-5 apart.
TOLERANCE = 1e-3


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((K, N)).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)

    start = time.perf_counter()
    compiled = accel.compile_mlir(MLP)
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    out = compiled.invoke("mlp", x, w, b)
    run_ms = (time.perf_counter() - start) * 1e3

    want = np.maximum(x @ w + b, 0)
    err = float(np.max(np.abs(out - want)))
    ok = out.shape == want.shape and err <= TOLERANCE
    print("accel demo: matmul + bias + relu, JIT-compiled for the host CPU")
    print(f"  function   {compiled.functions['mlp']}")
    print(f"  compile    {compile_s:.2f} s, first call {run_ms:.2f} ms")
    print(f"  result     shape {out.shape}, dtype {out.dtype}")
    print(f"  out[0,:4]  {np.array2string(out[0, :4], precision=4)}")
    print(f"  numpy      {np.array2string(want[0, :4], precision=4)}")
    print(f"  max |err|  {err:.3g} (tolerance {TOLERANCE:g})")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
