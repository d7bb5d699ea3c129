// RUN: accel-opt %s --split-input-file -accel-fold-matmul-upcasts | FileCheck %s

// An f16 matmul decomposed for the CPU as f32 (both operands extf-copied): the matmul reads
// the f16 tensors and keeps its f32 sums (its body extends them: the same f32 arithmetic);
// the copies, now unused, are gone.
// CHECK-LABEL: func.func @upcast
// CHECK-NOT:   arith.extf
// CHECK:       %[[R:.*]] = linalg.matmul ins(%arg0, %arg1 : tensor<16x32xf16>, tensor<32x8xf16>) outs(%arg2 : tensor<16x8xf32>)
// CHECK:       return %[[R]]
func.func @upcast(%a: tensor<16x32xf16>, %b: tensor<32x8xf16>, %c: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %ea = tensor.empty() : tensor<16x32xf32>
  %a32 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x32xf16>) outs(%ea : tensor<16x32xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<16x32xf32>
  %eb = tensor.empty() : tensor<32x8xf32>
  %b32 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<32x8xf16>) outs(%eb : tensor<32x8xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<32x8xf32>
  %r = linalg.matmul ins(%a32, %b32 : tensor<16x32xf32>, tensor<32x8xf32>) outs(%c : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

// Negative: one operand upcast and the other already f32 (a mixed f16 x f32 op would keep
// an f32 copy anyway), and an upcast that also scales: both matmuls keep their f32 operands.
// CHECK-LABEL: func.func @mixed
// CHECK:       linalg.matmul ins(%{{.*}}, %arg1 : tensor<16x32xf32>, tensor<32x8xf32>)
// CHECK-LABEL: func.func @scaled
// CHECK:       arith.mulf
// CHECK:       linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<32x8xf32>)
func.func @mixed(%a: tensor<16x32xf16>, %b: tensor<32x8xf32>, %c: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %ea = tensor.empty() : tensor<16x32xf32>
  %a32 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x32xf16>) outs(%ea : tensor<16x32xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<16x32xf32>
  %r = linalg.matmul ins(%a32, %b : tensor<16x32xf32>, tensor<32x8xf32>) outs(%c : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}
func.func @scaled(%a: tensor<16x32xf16>, %b: tensor<32x8xf16>, %c: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %cst = arith.constant 0.5 : f32
  %ea = tensor.empty() : tensor<16x32xf32>
  %a32 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x32xf16>) outs(%ea : tensor<16x32xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    %z = arith.mulf %y, %cst : f32
    linalg.yield %z : f32
  } -> tensor<16x32xf32>
  %eb = tensor.empty() : tensor<32x8xf32>
  %b32 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<32x8xf16>) outs(%eb : tensor<32x8xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<32x8xf32>
  %r = linalg.matmul ins(%a32, %b32 : tensor<16x32xf32>, tensor<32x8xf32>) outs(%c : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}
