// RUN: accel-opt %s --split-input-file -accel-nvgpu-flash-attention | FileCheck %s
// RUN: accel-opt %s --split-input-file -accel-nvgpu-flash-attention="tensor-cores=false" | FileCheck %s --check-prefix=FMA

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


// -----

// SDPA on f16 inputs (upcast to f32 by the CPU decomposition), 64 queries and keys, d = 16:
// the tensor-core kernel. Q, K^T and V are rounded to f16 once; 4 warps of 16 rows, WMMA
// for S = Q K^T and O += P V, the softmax per lane on S in shared memory. With
// tensor-cores=false the scalar kernel takes it instead.
// CHECK-LABEL: func.func @sdpa_f16
// CHECK:       arith.truncf {{.*}} : f32 to f16
// CHECK:       gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c128
// CHECK:         gpu.subgroup_mma_load_matrix %{{.*}} {leadDimension = 16 : index} : memref<1x64x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK:         gpu.subgroup_mma_compute
// CHECK:         gpu.subgroup_mma_store_matrix
// CHECK:         gpu.barrier
// CHECK:         math.exp
// CHECK:         gpu.subgroup_mma_compute
// CHECK-NOT:   linalg.batch_matmul
// FMA-LABEL:   func.func @sdpa_f16
// FMA-NOT:     gpu.subgroup_mma_compute
// FMA:         gpu.barrier
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
  func.func @sdpa_f16(%arg0: tensor<1x1x64x16xf16>, %arg1: tensor<1x1x64x16xf16>, %arg2: tensor<1x1x64x16xf16>) -> tensor<1x1x64x16xf16> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %true = arith.constant true
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<1x1x64x64xf32>
    %cst_2 = arith.constant 0xFFF0000000000000 : f64
    %cst_3 = arith.constant 5.000000e-01 : f32
    %0 = tensor.empty() : tensor<1x1x64x16xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<1x1x64x16xf16>) outs(%0 : tensor<1x1x64x16xf32>) {
    ^bb0(%in: f16, %out: f32):
      %33 = arith.extf %in : f16 to f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x16xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : tensor<1x1x64x16xf16>) outs(%0 : tensor<1x1x64x16xf32>) {
    ^bb0(%in: f16, %out: f32):
      %33 = arith.extf %in : f16 to f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x16xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg2 : tensor<1x1x64x16xf16>) outs(%0 : tensor<1x1x64x16xf32>) {
    ^bb0(%in: f16, %out: f32):
      %33 = arith.extf %in : f16 to f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x16xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1 : tensor<1x1x64x16xf32>) outs(%0 : tensor<1x1x64x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %33 = arith.mulf %in, %cst_3 : f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x16xf32>
    %5 = tensor.empty() : tensor<1x1x16x64xf32>
    %transposed = linalg.transpose ins(%2 : tensor<1x1x64x16xf32>) outs(%5 : tensor<1x1x16x64xf32>) permutation = [0, 1, 3, 2] 
    %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed : tensor<1x1x16x64xf32>) outs(%5 : tensor<1x1x16x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %33 = arith.mulf %in, %cst_3 : f32
      linalg.yield %33 : f32
    } -> tensor<1x1x16x64xf32>
    %collapsed = tensor.collapse_shape %4 [[0], [1, 2], [3]] : tensor<1x1x64x16xf32> into tensor<1x64x16xf32>
    %collapsed_4 = tensor.collapse_shape %6 [[0], [1, 2], [3]] : tensor<1x1x16x64xf32> into tensor<1x16x64xf32>
    %7 = tensor.empty() : tensor<1x64x64xf32>
    %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<1x64x64xf32>) -> tensor<1x64x64xf32>
    %9 = linalg.batch_matmul ins(%collapsed, %collapsed_4 : tensor<1x64x16xf32>, tensor<1x16x64xf32>) outs(%8 : tensor<1x64x64xf32>) -> tensor<1x64x64xf32>
    %expanded = tensor.expand_shape %9 [[0], [1, 2], [3]] output_shape [1, 1, 64, 64] : tensor<1x64x64xf32> into tensor<1x1x64x64xf32>
    %10 = tensor.empty() : tensor<1x1x64xi64>
    %11 = linalg.fill ins(%c0_i64 : i64) outs(%10 : tensor<1x1x64xi64>) -> tensor<1x1x64xi64>
    %12 = tensor.empty() : tensor<1x1x64xf32>
    %13 = linalg.fill ins(%cst_0 : f32) outs(%12 : tensor<1x1x64xf32>) -> tensor<1x1x64xf32>
    %14:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%expanded : tensor<1x1x64x64xf32>) outs(%13, %11 : tensor<1x1x64xf32>, tensor<1x1x64xi64>) {
    ^bb0(%in: f32, %out: f32, %out_9: i64):
      %33 = linalg.index 3 : index
      %34 = arith.index_cast %33 : index to i64
      %35 = arith.maximumf %in, %out : f32
      %36 = arith.cmpf ogt, %in, %out : f32
      %37 = arith.select %36, %34, %out_9 : i64
      linalg.yield %35, %37 : f32, i64
    } -> (tensor<1x1x64xf32>, tensor<1x1x64xi64>)
    %expanded_5 = tensor.expand_shape %14#0 [[0], [1], [2, 3]] output_shape [1, 1, 64, 1] : tensor<1x1x64xf32> into tensor<1x1x64x1xf32>
    %15 = tensor.empty() : tensor<1x1x64x64xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded, %expanded_5 : tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>) outs(%15 : tensor<1x1x64x64xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %33 = arith.subf %in, %in_9 : f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x64xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%16 : tensor<1x1x64x64xf32>) outs(%15 : tensor<1x1x64x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %33 = math.exp %in : f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x64xf32>
    %18 = tensor.empty() : tensor<1x1x64x1xf32>
    %19 = linalg.fill ins(%cst : f32) outs(%18 : tensor<1x1x64x1xf32>) -> tensor<1x1x64x1xf32>
    %20 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%17 : tensor<1x1x64x64xf32>) outs(%19 : tensor<1x1x64x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %33 = arith.addf %in, %out : f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x1xf32>
    %21 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%17, %20 : tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>) outs(%15 : tensor<1x1x64x64xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %33 = arith.divf %in, %in_9 : f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x64xf32>
    %22 = tensor.empty() : tensor<1x1x64x64xi1>
    %23 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded : tensor<1x1x64x64xf32>) outs(%22 : tensor<1x1x64x64xi1>) {
    ^bb0(%in: f32, %out: i1):
      %33 = arith.extf %in : f32 to f64
      %34 = arith.cmpf oeq, %33, %cst_2 : f64
      linalg.yield %34 : i1
    } -> tensor<1x1x64x64xi1>
    %24 = tensor.empty() : tensor<1x1x64x1xi1>
    %25 = linalg.fill ins(%true : i1) outs(%24 : tensor<1x1x64x1xi1>) -> tensor<1x1x64x1xi1>
    %26 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%23 : tensor<1x1x64x64xi1>) outs(%25 : tensor<1x1x64x1xi1>) {
    ^bb0(%in: i1, %out: i1):
      %33 = arith.andi %in, %out : i1
      linalg.yield %33 : i1
    } -> tensor<1x1x64x1xi1>
    %27 = linalg.generic {indexing_maps = [#map2, #map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%26, %cst_1, %21 : tensor<1x1x64x1xi1>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>) outs(%15 : tensor<1x1x64x64xf32>) {
    ^bb0(%in: i1, %in_9: f32, %in_10: f32, %out: f32):
      %33 = arith.select %in, %in_9, %in_10 : f32
      linalg.yield %33 : f32
    } -> tensor<1x1x64x64xf32>
    %collapsed_6 = tensor.collapse_shape %27 [[0], [1, 2], [3]] : tensor<1x1x64x64xf32> into tensor<1x64x64xf32>
    %collapsed_7 = tensor.collapse_shape %3 [[0], [1, 2], [3]] : tensor<1x1x64x16xf32> into tensor<1x64x16xf32>
    %28 = tensor.empty() : tensor<1x64x16xf32>
    %29 = linalg.fill ins(%cst : f32) outs(%28 : tensor<1x64x16xf32>) -> tensor<1x64x16xf32>
    %30 = linalg.batch_matmul ins(%collapsed_6, %collapsed_7 : tensor<1x64x64xf32>, tensor<1x64x16xf32>) outs(%29 : tensor<1x64x16xf32>) -> tensor<1x64x16xf32>
    %expanded_8 = tensor.expand_shape %30 [[0], [1, 2], [3]] output_shape [1, 1, 64, 16] : tensor<1x64x16xf32> into tensor<1x1x64x16xf32>
    %31 = tensor.empty() : tensor<1x1x64x16xf16>
    %32 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_8 : tensor<1x1x64x16xf32>) outs(%31 : tensor<1x1x64x16xf16>) {
    ^bb0(%in: f32, %out: f16):
      %33 = arith.truncf %in : f32 to f16
      linalg.yield %33 : f16
    } -> tensor<1x1x64x16xf16>
    return %32 : tensor<1x1x64x16xf16>
  }
}

