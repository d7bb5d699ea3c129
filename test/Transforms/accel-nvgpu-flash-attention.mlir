// RUN: accel-opt %s --split-input-file -accel-nvgpu-flash-attention | FileCheck %s

// softmax(q @ k^T / 8) @ v, f32 (2 x 16 x 8): the chain becomes one gpu.launch, one query
// row per thread (16 rows: one block of 32 threads per batch item), K^T and V tiles in
// shared memory between two barriers, the scale applied to each score, the online
// softmax's max and sum in loop-carried values; no 2 x 16 x 16 score tensor is left.
// CHECK-LABEL: func.func @naive
// CHECK:       %[[Q:.*]] = bufferization.to_buffer %arg0 read_only
// CHECK:       %[[O:.*]] = memref.alloc() : memref<2x16x8xf32>
// CHECK:       gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c2{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c32
// CHECK-SAME:    workgroup({{.*}} : memref<8x32xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<32x8xf32, #gpu.address_space<workgroup>>)
// CHECK:         gpu.barrier
// CHECK:         arith.divf %{{.*}}, %{{.*}} : f32
// CHECK:         math.exp
// CHECK:         gpu.barrier
// CHECK:       %[[R:.*]] = bufferization.to_tensor %[[O]] restrict writable
// CHECK:       return %[[R]]
// CHECK-NOT:   linalg.batch_matmul
// CHECK-NOT:   tensor<2x16x16xf32>
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @naive(%arg0: tensor<2x16x8xf32>, %arg1: tensor<2x16x8xf32>, %arg2: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 8.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x8x16xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<2x16x8xf32>) outs(%0 : tensor<2x8x16xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x16x16xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<2x16x8xf32>, tensor<2x8x16xf32>) outs(%2 : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3 : tensor<2x16x16xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = arith.divf %in, %cst_1 : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %5 = tensor.empty() : tensor<2x16xi64>
    %6 = linalg.fill ins(%c0_i64 : i64) outs(%5 : tensor<2x16xi64>) -> tensor<2x16xi64>
    %7 = tensor.empty() : tensor<2x16xf32>
    %8 = linalg.fill ins(%cst_0 : f32) outs(%7 : tensor<2x16xf32>) -> tensor<2x16xf32>
    %9:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%4 : tensor<2x16x16xf32>) outs(%8, %6 : tensor<2x16xf32>, tensor<2x16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_2: i64):
      %19 = linalg.index 2 : index
      %20 = arith.index_cast %19 : index to i64
      %21 = arith.maximumf %in, %out : f32
      %22 = arith.cmpf ogt, %in, %out : f32
      %23 = arith.select %22, %20, %out_2 : i64
      linalg.yield %21, %23 : f32, i64
    } -> (tensor<2x16xf32>, tensor<2x16xi64>)
    %expanded = tensor.expand_shape %9#0 [[0], [1, 2]] output_shape [2, 16, 1] : tensor<2x16xf32> into tensor<2x16x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4, %expanded : tensor<2x16x16xf32>, tensor<2x16x1xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %19 = arith.subf %in, %in_2 : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10 : tensor<2x16x16xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = math.exp %in : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %12 = tensor.empty() : tensor<2x16x1xf32>
    %13 = linalg.fill ins(%cst : f32) outs(%12 : tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%11 : tensor<2x16x16xf32>) outs(%13 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = arith.addf %in, %out : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %14 : tensor<2x16x16xf32>, tensor<2x16x1xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %19 = arith.divf %in, %in_2 : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %16 = tensor.empty() : tensor<2x16x8xf32>
    %17 = linalg.fill ins(%cst : f32) outs(%16 : tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
    %18 = linalg.batch_matmul ins(%15, %arg2 : tensor<2x16x16xf32>, tensor<2x16x8xf32>) outs(%17 : tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
    return %18 : tensor<2x16x8xf32>
  }
}


// -----

// An additive mask (a tensor operand of a score op) is an extra kernel argument, read per
// score at [batch, row, key].
// CHECK-LABEL: func.func @masked
// CHECK:       %[[X:.*]] = bufferization.to_buffer %arg3 read_only
// CHECK:       gpu.launch
// CHECK:         %[[M:.*]] = memref.load %[[X]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x16x16xf32>
// CHECK:         arith.addf %{{.*}}, %[[M]] : f32
// CHECK-NOT:   linalg.batch_matmul
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @masked(%arg0: tensor<2x16x8xf32>, %arg1: tensor<2x16x8xf32>, %arg2: tensor<2x16x8xf32>, %mask: tensor<2x16x16xf32>) -> tensor<2x16x8xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 8.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x8x16xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<2x16x8xf32>) outs(%0 : tensor<2x8x16xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x16x16xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<2x16x8xf32>, tensor<2x8x16xf32>) outs(%2 : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %mask : tensor<2x16x16xf32>, tensor<2x16x16xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %m: f32, %out: f32):
      %19 = arith.addf %in, %m : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %5 = tensor.empty() : tensor<2x16xi64>
    %6 = linalg.fill ins(%c0_i64 : i64) outs(%5 : tensor<2x16xi64>) -> tensor<2x16xi64>
    %7 = tensor.empty() : tensor<2x16xf32>
    %8 = linalg.fill ins(%cst_0 : f32) outs(%7 : tensor<2x16xf32>) -> tensor<2x16xf32>
    %9:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%4 : tensor<2x16x16xf32>) outs(%8, %6 : tensor<2x16xf32>, tensor<2x16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_2: i64):
      %19 = linalg.index 2 : index
      %20 = arith.index_cast %19 : index to i64
      %21 = arith.maximumf %in, %out : f32
      %22 = arith.cmpf ogt, %in, %out : f32
      %23 = arith.select %22, %20, %out_2 : i64
      linalg.yield %21, %23 : f32, i64
    } -> (tensor<2x16xf32>, tensor<2x16xi64>)
    %expanded = tensor.expand_shape %9#0 [[0], [1, 2]] output_shape [2, 16, 1] : tensor<2x16xf32> into tensor<2x16x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4, %expanded : tensor<2x16x16xf32>, tensor<2x16x1xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %19 = arith.subf %in, %in_2 : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10 : tensor<2x16x16xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = math.exp %in : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %12 = tensor.empty() : tensor<2x16x1xf32>
    %13 = linalg.fill ins(%cst : f32) outs(%12 : tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%11 : tensor<2x16x16xf32>) outs(%13 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = arith.addf %in, %out : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %14 : tensor<2x16x16xf32>, tensor<2x16x1xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %19 = arith.divf %in, %in_2 : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %16 = tensor.empty() : tensor<2x16x8xf32>
    %17 = linalg.fill ins(%cst : f32) outs(%16 : tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
    %18 = linalg.batch_matmul ins(%15, %arg2 : tensor<2x16x16xf32>, tensor<2x16x8xf32>) outs(%17 : tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
    return %18 : tensor<2x16x8xf32>
  }
}


// -----

// Negative: a score op the kernel does not re-state (tanh) keeps the op-by-op path.
// CHECK-LABEL: func.func @softcap
// CHECK-NOT:   gpu.launch
// CHECK:       linalg.batch_matmul
// CHECK:       math.tanh
// CHECK:       linalg.batch_matmul
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @softcap(%arg0: tensor<2x16x8xf32>, %arg1: tensor<2x16x8xf32>, %arg2: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 8.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x8x16xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<2x16x8xf32>) outs(%0 : tensor<2x8x16xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x16x16xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<2x16x8xf32>, tensor<2x8x16xf32>) outs(%2 : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3 : tensor<2x16x16xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = math.tanh %in : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %5 = tensor.empty() : tensor<2x16xi64>
    %6 = linalg.fill ins(%c0_i64 : i64) outs(%5 : tensor<2x16xi64>) -> tensor<2x16xi64>
    %7 = tensor.empty() : tensor<2x16xf32>
    %8 = linalg.fill ins(%cst_0 : f32) outs(%7 : tensor<2x16xf32>) -> tensor<2x16xf32>
    %9:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%4 : tensor<2x16x16xf32>) outs(%8, %6 : tensor<2x16xf32>, tensor<2x16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_2: i64):
      %19 = linalg.index 2 : index
      %20 = arith.index_cast %19 : index to i64
      %21 = arith.maximumf %in, %out : f32
      %22 = arith.cmpf ogt, %in, %out : f32
      %23 = arith.select %22, %20, %out_2 : i64
      linalg.yield %21, %23 : f32, i64
    } -> (tensor<2x16xf32>, tensor<2x16xi64>)
    %expanded = tensor.expand_shape %9#0 [[0], [1, 2]] output_shape [2, 16, 1] : tensor<2x16xf32> into tensor<2x16x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4, %expanded : tensor<2x16x16xf32>, tensor<2x16x1xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %19 = arith.subf %in, %in_2 : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10 : tensor<2x16x16xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = math.exp %in : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %12 = tensor.empty() : tensor<2x16x1xf32>
    %13 = linalg.fill ins(%cst : f32) outs(%12 : tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%11 : tensor<2x16x16xf32>) outs(%13 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = arith.addf %in, %out : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %14 : tensor<2x16x16xf32>, tensor<2x16x1xf32>) outs(%1 : tensor<2x16x16xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %19 = arith.divf %in, %in_2 : f32
      linalg.yield %19 : f32
    } -> tensor<2x16x16xf32>
    %16 = tensor.empty() : tensor<2x16x8xf32>
    %17 = linalg.fill ins(%cst : f32) outs(%16 : tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
    %18 = linalg.batch_matmul ins(%15, %arg2 : tensor<2x16x16xf32>, tensor<2x16x8xf32>) outs(%17 : tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
    return %18 : tensor<2x16x8xf32>
  }
}

