"""`make demo`: compile and run on the host CPU, checked against numpy and PyTorch.

1. An MLIR matmul + bias + relu (linalg on tensors): `accel.compile_mlir` bufferizes it, lowers
   it to the LLVM dialect and JIT-compiles it with llvmlite; compared with numpy.
2. A LeNet-style PyTorch CNN (conv, batch norm, relu, max-pool, linear): `accel.compile`
   imports it with torch-mlir's FX importer and runs it through the same CPU path; compared
   with PyTorch eager.
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


def mlir_demo() -> bool:
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
    print("  PASS" if ok else "  FAIL")
    return ok


#: fp32 convolutions and matmuls summed in another order than PyTorch's kernels.
TORCH_RTOL, TORCH_ATOL = 1e-4, 1e-5


def torch_demo() -> bool:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 84), nn.ReLU(), nn.Linear(84, 10),
    ).eval()
    x = torch.randn(4, 1, 28, 28)

    start = time.perf_counter()
    compiled = accel.compile(model, (x,))
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    got = compiled(x)
    run_ms = (time.perf_counter() - start) * 1e3
    with torch.no_grad():
        want = model(x)
    err = float((got - want).abs().max())
    ok = got.shape == want.shape and torch.allclose(got, want, rtol=TORCH_RTOL, atol=TORCH_ATOL)
    print("accel demo: LeNet-style CNN from PyTorch, compiled for the host CPU")
    print(f"  compile    {compile_s:.2f} s, first call {run_ms:.2f} ms")
    print(f"  result     shape {tuple(got.shape)}, dtype {got.dtype}")
    print(f"  accel[0]   {np.array2string(got[0, :5].numpy(), precision=4)}")
    print(f"  torch[0]   {np.array2string(want[0, :5].numpy(), precision=4)}")
    print(f"  max |err|  {err:.3g} (rtol {TORCH_RTOL:g}, atol {TORCH_ATOL:g})")
    print("  PASS" if ok else "  FAIL")
    return ok


def main() -> int:
    ok = mlir_demo()
    print()
    ok = torch_demo() and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
