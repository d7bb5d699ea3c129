// RUN: accel-opt %s --split-input-file -accel-outline-contractions | FileCheck %s
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-outline-contractions,func.func(linalg-fuse-elementwise-ops),inline)' | FileCheck %s --check-prefix=FUSED
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(linalg-fuse-elementwise-ops))' | FileCheck %s --check-prefix=UNPROTECTED

// A scaled weight (an elementwise generic) feeding a matmul: outlined, the matmul is a
// call the elementwise fusion cannot see into, and after `inline` it is a named
// linalg.matmul again; without the outlining the fusion folds the scaling into it and
// leaves a linalg.generic the kernel passes do not match.
// CHECK-LABEL: func.func private @__accel_contraction_0
// CHECK:       linalg.matmul ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x6xf32>) outs(%arg2 : tensor<4x6xf32>)
// CHECK-LABEL: func.func @linear
// CHECK:       arith.mulf
// CHECK:       %[[R:.*]] = call @__accel_contraction_0(%arg0, %{{.*}}, %arg2)
// CHECK:       return %[[R]]
// FUSED-LABEL: func.func @linear
// FUSED:       linalg.matmul
// FUSED-NOT:   call
// UNPROTECTED-LABEL: func.func @linear
// UNPROTECTED-NOT:   linalg.matmul
// UNPROTECTED:       linalg.generic
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %c: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %wt = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x6xf32>) outs(%e : tensor<8x6xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %two : f32
    linalg.yield %s : f32
  } -> tensor<8x6xf32>
  %r = linalg.matmul ins(%x, %wt : tensor<4x8xf32>, tensor<8x6xf32>) outs(%c : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// Negative: elementwise ops stay where they are.
// CHECK-LABEL: func.func @add
// CHECK-NOT:   call
// CHECK:       arith.addf
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
