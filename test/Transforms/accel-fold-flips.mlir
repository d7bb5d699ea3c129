// RUN: accel-opt %s --split-input-file -accel-fold-flips | FileCheck %s

// torch-mlir's flip of a conv weight's window, then the transpose of the input gradient's
// filter: one generic reading the weight through a mirrored, permuted affine map; the
// zero fill, the gather and the transpose are gone.
// CHECK: #[[MAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2 + 2, -d3 + 2)>
// CHECK-LABEL: func.func @flip_transpose
// CHECK-NOT:   linalg.fill
// CHECK-NOT:   tensor.extract
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[R:.*]] = linalg.generic {indexing_maps = [#[[MAP]], #{{.*}}]{{.*}} ins(%arg0 : tensor<4x2x3x3xf32>) outs(%{{.*}} : tensor<2x4x3x3xf32>)
// CHECK-NEXT:  ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    linalg.yield %[[IN]] : f32
// CHECK:       return %[[R]]
func.func @flip_transpose(%w: tensor<4x2x3x3xf32>) -> tensor<2x4x3x3xf32> {
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2x3x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2x3x3xf32>) -> tensor<4x2x3x3xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w : tensor<4x2x3x3xf32>) outs(%z : tensor<4x2x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %a = arith.subi %c2, %i2 : index
    %b = arith.subi %c2, %i3 : index
    %v = tensor.extract %w[%i0, %i1, %a, %b] : tensor<4x2x3x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x2x3x3xf32>
  %e2 = tensor.empty() : tensor<2x4x3x3xf32>
  %t = linalg.transpose ins(%f : tensor<4x2x3x3xf32>) outs(%e2 : tensor<2x4x3x3xf32>) permutation = [1, 0, 2, 3]
  return %t : tensor<2x4x3x3xf32>
}

// -----

// A flip with other users than a transpose (here: returned, and added to itself) becomes
// the mirrored copy alone.
// CHECK: #[[MAP:.*]] = affine_map<(d0, d1) -> (-d0 + 7, d1)>
// CHECK-LABEL: func.func @flip_rows
// CHECK-NOT:   tensor.extract
// CHECK:       linalg.generic {indexing_maps = [#[[MAP]], #{{.*}}]{{.*}} ins(%arg0 : tensor<8x5xf32>)
func.func @flip_rows(%x: tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  %c7 = arith.constant 7 : index
  %e = tensor.empty() : tensor<8x5xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x5xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %a = arith.subi %c7, %i0 : index
    %v = tensor.extract %x[%a, %i1] : tensor<8x5xf32>
    linalg.yield %v : f32
  } -> tensor<8x5xf32>
  %s = arith.addf %f, %f : tensor<8x5xf32>
  return %f, %s : tensor<8x5xf32>, tensor<8x5xf32>
}

// -----

// Negative: 9 - d0 for d0 in [0, 8) reads rows 2..9 of an 8-row tensor (out of bounds: a
// gather, not a flip), and an index computed from data: both gathers stay.
// CHECK-LABEL: func.func @out_of_bounds
// CHECK:       tensor.extract
// CHECK-LABEL: func.func @data_index
// CHECK:       tensor.extract
func.func @out_of_bounds(%x: tensor<8x5xf32>) -> tensor<8x5xf32> {
  %c9 = arith.constant 9 : index
  %e = tensor.empty() : tensor<8x5xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x5xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %a = arith.subi %c9, %i0 : index
    %v = tensor.extract %x[%a, %i1] : tensor<8x5xf32>
    linalg.yield %v : f32
  } -> tensor<8x5xf32>
  return %f : tensor<8x5xf32>
}
func.func @data_index(%x: tensor<8x5xf32>, %idx: tensor<8xindex>) -> tensor<8x5xf32> {
  %e = tensor.empty() : tensor<8x5xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%idx : tensor<8xindex>) outs(%e : tensor<8x5xf32>) {
  ^bb0(%r: index, %out: f32):
    %i1 = linalg.index 1 : index
    %v = tensor.extract %x[%r, %i1] : tensor<8x5xf32>
    linalg.yield %v : f32
  } -> tensor<8x5xf32>
  return %f : tensor<8x5xf32>
}
