// RUN: accel-opt %s --split-input-file -accel-split-argmax | FileCheck %s

#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// torch-mlir's argmax over the last dim becomes a max and a first-index-of-max reduction.
// CHECK-LABEL: func.func @argmax
// CHECK:       %[[MAX:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:         arith.maximumf
// CHECK:       %[[N:.*]] = arith.constant 8 : i64
// CHECK:       %[[IDX:.*]] = linalg.generic {{.*}} ins(%arg0, %[[MAX]] : tensor<4x8xf32>, tensor<4xf32>)
// CHECK:         linalg.index 1
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf uno
// CHECK:         arith.select %{{.*}}, %{{.*}}, %[[N]] : i64
// CHECK:         arith.minsi
// CHECK:       return %[[IDX]]
func.func @argmax(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%e0 : tensor<4xi64>) -> tensor<4xi64>
  %e1 = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%m0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ki, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#1 : tensor<4xi64>
}

// -----

#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// argmin: minimumf, olt and a +inf init; both results used (torch.min(x, dim)).
// CHECK-LABEL: func.func @argmin_both
// CHECK:       %[[MIN:.*]] = linalg.generic
// CHECK:         arith.minimumf
// CHECK:       %[[IDX:.*]] = linalg.generic
// CHECK:         arith.minsi
// CHECK:       return %[[MIN]], %[[IDX]]
func.func @argmin_both(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xi64>) {
  %c0 = arith.constant 0 : i64
  %inf = arith.constant 0x7F800000 : f32
  %e0 = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%e0 : tensor<4xi64>) -> tensor<4xi64>
  %e1 = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%inf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%m0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %mn = arith.minimumf %in, %out : f32
    %lt = arith.cmpf olt, %in, %out : f32
    %sel = arith.select %lt, %ki, %idx : i64
    linalg.yield %mn, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xi64>
}

// -----

#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Negative: `oge` keeps the last of equal maxima; the split would return the first.
// CHECK-LABEL: func.func @last_occurrence
// CHECK:       %{{.*}}:2 = linalg.generic
// CHECK-NOT:   arith.minsi
func.func @last_occurrence(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%e0 : tensor<4xi64>) -> tensor<4xi64>
  %e1 = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%m0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %mx = arith.maximumf %in, %out : f32
    %ge = arith.cmpf oge, %in, %out : f32
    %sel = arith.select %ge, %ki, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#1 : tensor<4xi64>
}

// -----

#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Negative: a running max that starts from a computed tensor, not -inf.
// CHECK-LABEL: func.func @seeded
// CHECK:       %{{.*}}:2 = linalg.generic
// CHECK-NOT:   arith.minsi
func.func @seeded(%x: tensor<4x8xf32>, %seed: tensor<4xf32>) -> tensor<4xi64> {
  %c0 = arith.constant 0 : i64
  %e0 = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%e0 : tensor<4xi64>) -> tensor<4xi64>
  %r:2 = linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%seed, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ki, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#1 : tensor<4xi64>
}

// -----

#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Only the max is used (torch's amax, softmax): no index reduction is left.
// CHECK-LABEL: func.func @max_only
// CHECK:       %[[MAX:.*]] = linalg.generic
// CHECK:         arith.maximumf
// CHECK-NOT:   linalg.generic
// CHECK-NOT:   linalg.fill ins(%{{.*}} : i64)
// CHECK:       return %[[MAX]]
func.func @max_only(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%e0 : tensor<4xi64>) -> tensor<4xi64>
  %e1 = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%m0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ki, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0 : tensor<4xf32>
}
