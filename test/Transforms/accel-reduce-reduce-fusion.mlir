// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-reduce-reduce-fusion{block-size=2 query-block-size=2})' | FileCheck %s
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-reduce-reduce-fusion{block-size=2 query-block-size=2 parallel-min-macs=0})' | FileCheck %s --check-prefix=PAR

// Inputs are what accel.import_torch emits for the PyTorch expression in each comment.

// softmax(q @ k^T * 0.5) @ v on 3-D (batch x S x D) tensors: the chain becomes a loop over
// the batch, query tiles and key tiles with the running max/sum/accumulator carried.
// With a parallel threshold it meets, the batch items run across threads: the operands'
// buffers go through a context to accel_parallel_for, whose entry calls the body function
// (the loop nest over items [lo, hi), each tile stored into the output buffer).
// PAR-LABEL: func.func @naive_3d
// PAR:       bufferization.to_buffer %arg0 read_only
// PAR:       %[[OB:.*]] = memref.alloc() {{.*}} : memref<2x4x2xf32>
// PAR:       llvm.alloca
// PAR:       %[[F:.*]] = constant @accel_attention_0_entry
// PAR:       call @accel_parallel_for(%[[F]], %{{.*}}, %{{.*}})
// PAR:       bufferization.to_tensor %[[OB]] restrict writable
// PAR:     func.func private @accel_attention_0_entry(%{{.*}}: !llvm.ptr, %{{.*}}: index, %{{.*}}: index)
// PAR:       call @accel_attention_0_body(
// PAR:     func.func private @accel_attention_0_body(
// PAR:       scf.for %[[B:.*]] = %arg{{.*}} to %arg{{.*}} step %c1
// PAR:         arith.mulf
// PAR:         bufferization.materialize_in_destination %{{.*}} in restrict writable
// PAR:     func.func private @accel_parallel_for
// CHECK-LABEL: func.func @naive_3d
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       scf.for %[[B:.*]] = %c0 to %c2 step %c1
// CHECK:         scf.for %[[I:.*]] = %c0 to %c4 step %c2
// CHECK:           tensor.extract_slice %arg0[%[[B]], %[[I]], 0] [1, 2, 2]
// CHECK:           %{{.*}}:3 = scf.for %[[J:.*]] = %c0 to %c4 step %c2 iter_args({{.*}}) -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>)
// CHECK:             tensor.extract_slice %{{.*}}[%[[B]], 0, %[[J]]] [1, 2, 2]
// CHECK:             arith.mulf %{{.*}}, %cst
// CHECK:             arith.maximumf
// CHECK:             math.exp
// CHECK:           arith.divf
// CHECK:           tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[I]], 0] [1, 2, 2]
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       return
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @naive_3d(%arg0: tensor<2x4x2xf32>, %arg1: tensor<2x4x2xf32>, %arg2: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 5.000000e-01 : f32
    %0 = tensor.empty() : tensor<2x2x4xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<2x4x2xf32>) outs(%0 : tensor<2x2x4xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x4x4xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%2 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3 : tensor<2x4x4xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = arith.mulf %in, %cst_1 : f32
      linalg.yield %19 : f32
    } -> tensor<2x4x4xf32>
    %5 = tensor.empty() : tensor<2x4xi64>
    %6 = linalg.fill ins(%c0_i64 : i64) outs(%5 : tensor<2x4xi64>) -> tensor<2x4xi64>
    %7 = tensor.empty() : tensor<2x4xf32>
    %8 = linalg.fill ins(%cst_0 : f32) outs(%7 : tensor<2x4xf32>) -> tensor<2x4xf32>
    %9:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%4 : tensor<2x4x4xf32>) outs(%8, %6 : tensor<2x4xf32>, tensor<2x4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_2: i64):
      %19 = linalg.index 2 : index
      %20 = arith.index_cast %19 : index to i64
      %21 = arith.maximumf %in, %out : f32
      %22 = arith.cmpf ogt, %in, %out : f32
      %23 = arith.select %22, %20, %out_2 : i64
      linalg.yield %21, %23 : f32, i64
    } -> (tensor<2x4xf32>, tensor<2x4xi64>)
    %expanded = tensor.expand_shape %9#0 [[0], [1, 2]] output_shape [2, 4, 1] : tensor<2x4xf32> into tensor<2x4x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4, %expanded : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %19 = arith.subf %in, %in_2 : f32
      linalg.yield %19 : f32
    } -> tensor<2x4x4xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10 : tensor<2x4x4xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = math.exp %in : f32
      linalg.yield %19 : f32
    } -> tensor<2x4x4xf32>
    %12 = tensor.empty() : tensor<2x4x1xf32>
    %13 = linalg.fill ins(%cst : f32) outs(%12 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%11 : tensor<2x4x4xf32>) outs(%13 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = arith.addf %in, %out : f32
      linalg.yield %19 : f32
    } -> tensor<2x4x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %14 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %19 = arith.divf %in, %in_2 : f32
      linalg.yield %19 : f32
    } -> tensor<2x4x4xf32>
    %16 = tensor.empty() : tensor<2x4x2xf32>
    %17 = linalg.fill ins(%cst : f32) outs(%16 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %18 = linalg.batch_matmul ins(%15, %arg2 : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%17 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    return %18 : tensor<2x4x2xf32>
  }
}

// -----

// Multi-head (1 x 2 heads) with an additive S x S mask: the mask is sliced per tile at
// (query tile, key tile); the head index is recovered from the flattened batch index.
// CHECK-LABEL: func.func @mask_4d
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       scf.for %[[B:.*]] = %c0 to %c2 step %c1
// CHECK:         arith.remui
// CHECK:         scf.for %[[I:.*]] = %c0 to %c4 step %c2
// CHECK:           scf.for %[[J:.*]] = %c0 to %c4 step %c2
// CHECK:             arith.divf
// CHECK:             tensor.extract_slice %arg3[%[[I]], %[[J]]] [2, 2] [1, 1] : tensor<4x4xf32> to tensor<2x2xf32>
// CHECK:             arith.addf
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       return
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
  func.func @mask_4d(%arg0: tensor<1x2x4x2xf32>, %arg1: tensor<1x2x4x2xf32>, %arg2: tensor<1x2x4x2xf32>, %arg3: tensor<4x4xf32>) -> tensor<1x2x4x2xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 2.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x2x2x4xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<1x2x4x2xf32>) outs(%0 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2] 
    %collapsed = tensor.collapse_shape %arg0 [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %collapsed_2 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
    %1 = tensor.empty() : tensor<2x4x4xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %3 = linalg.batch_matmul ins(%collapsed, %collapsed_2 : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%2 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %expanded = tensor.expand_shape %3 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
    %4 = tensor.empty() : tensor<1x2x4x4xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded : tensor<1x2x4x4xf32>) outs(%4 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %21 = arith.divf %in, %cst_1 : f32
      linalg.yield %21 : f32
    } -> tensor<1x2x4x4xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%5, %arg3 : tensor<1x2x4x4xf32>, tensor<4x4xf32>) outs(%4 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %21 = arith.addf %in, %in_7 : f32
      linalg.yield %21 : f32
    } -> tensor<1x2x4x4xf32>
    %7 = tensor.empty() : tensor<1x2x4xi64>
    %8 = linalg.fill ins(%c0_i64 : i64) outs(%7 : tensor<1x2x4xi64>) -> tensor<1x2x4xi64>
    %9 = tensor.empty() : tensor<1x2x4xf32>
    %10 = linalg.fill ins(%cst_0 : f32) outs(%9 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %11:2 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%6 : tensor<1x2x4x4xf32>) outs(%10, %8 : tensor<1x2x4xf32>, tensor<1x2x4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_7: i64):
      %21 = linalg.index 3 : index
      %22 = arith.index_cast %21 : index to i64
      %23 = arith.maximumf %in, %out : f32
      %24 = arith.cmpf ogt, %in, %out : f32
      %25 = arith.select %24, %22, %out_7 : i64
      linalg.yield %23, %25 : f32, i64
    } -> (tensor<1x2x4xf32>, tensor<1x2x4xi64>)
    %expanded_3 = tensor.expand_shape %11#0 [[0], [1], [2, 3]] output_shape [1, 2, 4, 1] : tensor<1x2x4xf32> into tensor<1x2x4x1xf32>
    %12 = linalg.generic {indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%6, %expanded_3 : tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) outs(%4 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %21 = arith.subf %in, %in_7 : f32
      linalg.yield %21 : f32
    } -> tensor<1x2x4x4xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%12 : tensor<1x2x4x4xf32>) outs(%4 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %21 = math.exp %in : f32
      linalg.yield %21 : f32
    } -> tensor<1x2x4x4xf32>
    %14 = tensor.empty() : tensor<1x2x4x1xf32>
    %15 = linalg.fill ins(%cst : f32) outs(%14 : tensor<1x2x4x1xf32>) -> tensor<1x2x4x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%13 : tensor<1x2x4x4xf32>) outs(%15 : tensor<1x2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %21 = arith.addf %in, %out : f32
      linalg.yield %21 : f32
    } -> tensor<1x2x4x1xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%13, %16 : tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) outs(%4 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %21 = arith.divf %in, %in_7 : f32
      linalg.yield %21 : f32
    } -> tensor<1x2x4x4xf32>
    %collapsed_4 = tensor.collapse_shape %17 [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
    %collapsed_5 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %18 = tensor.empty() : tensor<2x4x2xf32>
    %19 = linalg.fill ins(%cst : f32) outs(%18 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %20 = linalg.batch_matmul ins(%collapsed_4, %collapsed_5 : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%19 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %expanded_6 = tensor.expand_shape %20 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
    return %expanded_6 : tensor<1x2x4x2xf32>
  }
}

// -----

// F.scaled_dot_product_attention(is_causal=True): the causal mask tensor is sliced per
// tile, and SDPA's guard (rows that are all -inf give 0) becomes a select on the final max.
// CHECK-LABEL: func.func @sdpa_causal
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       scf.for
// CHECK:           arith.divf
// CHECK-NEXT:      arith.cmpf oeq
// CHECK-NEXT:      arith.select
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       return
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1) -> ()>
#map6 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map8 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
  func.func @sdpa_causal(%arg0: tensor<1x2x4x2xf32>, %arg1: tensor<1x2x4x2xf32>, %arg2: tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32> {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %true = arith.constant true
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<1x2x4x4xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_3 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_4 = arith.constant dense<true> : tensor<4x4xi1>
    %cst_5 = arith.constant 0xFFF0000000000000 : f64
    %cst_6 = arith.constant 0.8408964152537145 : f64
    %0 = tensor.empty() : tensor<1x2x4x2xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<1x2x4x2xf32>) outs(%0 : tensor<1x2x4x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.truncf %cst_6 : f64 to f32
      %39 = arith.mulf %in, %38 : f32
      linalg.yield %39 : f32
    } -> tensor<1x2x4x2xf32>
    %2 = tensor.empty() : tensor<4xi64>
    %3 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel"]} outs(%2 : tensor<4xi64>) {
    ^bb0(%out: i64):
      %38 = linalg.index 0 : index
      %39 = arith.index_cast %38 : index to i64
      linalg.yield %39 : i64
    } -> tensor<4xi64>
    %expanded = tensor.expand_shape %3 [[0, 1]] output_shape [1, 4] : tensor<4xi64> into tensor<1x4xi64>
    %expanded_7 = tensor.expand_shape %3 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
    %4 = tensor.empty() : tensor<4x4xi64>
    %5 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel"]} ins(%expanded, %expanded_7 : tensor<1x4xi64>, tensor<4x1xi64>) outs(%4 : tensor<4x4xi64>) {
    ^bb0(%in: i64, %in_14: i64, %out: i64):
      %38 = arith.subi %in, %in_14 : i64
      linalg.yield %38 : i64
    } -> tensor<4x4xi64>
    %6 = tensor.empty() : tensor<4x4xi1>
    %7 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<4x4xi64>) outs(%6 : tensor<4x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %38 = arith.cmpi sle, %in, %c0_i64 : i64
      linalg.yield %38 : i1
    } -> tensor<4x4xi1>
    %8 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%7, %cst_4 : tensor<4x4xi1>, tensor<4x4xi1>) outs(%6 : tensor<4x4xi1>) {
    ^bb0(%in: i1, %in_14: i1, %out: i1):
      %38 = arith.andi %in, %in_14 : i1
      linalg.yield %38 : i1
    } -> tensor<4x4xi1>
    %9 = tensor.empty() : tensor<4x4xf32>
    %10 = linalg.generic {indexing_maps = [#map4, #map5, #map5, #map4], iterator_types = ["parallel", "parallel"]} ins(%8, %cst_2, %cst_3 : tensor<4x4xi1>, tensor<f32>, tensor<f32>) outs(%9 : tensor<4x4xf32>) {
    ^bb0(%in: i1, %in_14: f32, %in_15: f32, %out: f32):
      %38 = arith.select %in, %in_14, %in_15 : f32
      linalg.yield %38 : f32
    } -> tensor<4x4xf32>
    %11 = tensor.empty() : tensor<1x2x2x4xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<1x2x4x2xf32>) outs(%11 : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2] 
    %12 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed : tensor<1x2x2x4xf32>) outs(%11 : tensor<1x2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.truncf %cst_6 : f64 to f32
      %39 = arith.mulf %in, %38 : f32
      linalg.yield %39 : f32
    } -> tensor<1x2x2x4xf32>
    %collapsed = tensor.collapse_shape %1 [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %collapsed_8 = tensor.collapse_shape %12 [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
    %13 = tensor.empty() : tensor<2x4x4xf32>
    %14 = linalg.fill ins(%cst : f32) outs(%13 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %15 = linalg.batch_matmul ins(%collapsed, %collapsed_8 : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%14 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %expanded_9 = tensor.expand_shape %15 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
    %16 = tensor.empty() : tensor<1x2x4x4xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map6, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_9, %10 : tensor<1x2x4x4xf32>, tensor<4x4xf32>) outs(%16 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %38 = arith.addf %in, %in_14 : f32
      linalg.yield %38 : f32
    } -> tensor<1x2x4x4xf32>
    %18 = tensor.empty() : tensor<1x2x4xi64>
    %19 = linalg.fill ins(%c0_i64 : i64) outs(%18 : tensor<1x2x4xi64>) -> tensor<1x2x4xi64>
    %20 = tensor.empty() : tensor<1x2x4xf32>
    %21 = linalg.fill ins(%cst_0 : f32) outs(%20 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %22:2 = linalg.generic {indexing_maps = [#map, #map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%17 : tensor<1x2x4x4xf32>) outs(%21, %19 : tensor<1x2x4xf32>, tensor<1x2x4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_14: i64):
      %38 = linalg.index 3 : index
      %39 = arith.index_cast %38 : index to i64
      %40 = arith.maximumf %in, %out : f32
      %41 = arith.cmpf ogt, %in, %out : f32
      %42 = arith.select %41, %39, %out_14 : i64
      linalg.yield %40, %42 : f32, i64
    } -> (tensor<1x2x4xf32>, tensor<1x2x4xi64>)
    %expanded_10 = tensor.expand_shape %22#0 [[0], [1], [2, 3]] output_shape [1, 2, 4, 1] : tensor<1x2x4xf32> into tensor<1x2x4x1xf32>
    %23 = linalg.generic {indexing_maps = [#map, #map8, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%17, %expanded_10 : tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) outs(%16 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %38 = arith.subf %in, %in_14 : f32
      linalg.yield %38 : f32
    } -> tensor<1x2x4x4xf32>
    %24 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%23 : tensor<1x2x4x4xf32>) outs(%16 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = math.exp %in : f32
      linalg.yield %38 : f32
    } -> tensor<1x2x4x4xf32>
    %25 = tensor.empty() : tensor<1x2x4x1xf32>
    %26 = linalg.fill ins(%cst : f32) outs(%25 : tensor<1x2x4x1xf32>) -> tensor<1x2x4x1xf32>
    %27 = linalg.generic {indexing_maps = [#map, #map8], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%24 : tensor<1x2x4x4xf32>) outs(%26 : tensor<1x2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.addf %in, %out : f32
      linalg.yield %38 : f32
    } -> tensor<1x2x4x1xf32>
    %28 = linalg.generic {indexing_maps = [#map, #map8, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%24, %27 : tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) outs(%16 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %38 = arith.divf %in, %in_14 : f32
      linalg.yield %38 : f32
    } -> tensor<1x2x4x4xf32>
    %29 = tensor.empty() : tensor<1x2x4x4xi1>
    %30 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%17 : tensor<1x2x4x4xf32>) outs(%29 : tensor<1x2x4x4xi1>) {
    ^bb0(%in: f32, %out: i1):
      %38 = arith.extf %in : f32 to f64
      %39 = arith.cmpf oeq, %38, %cst_5 : f64
      linalg.yield %39 : i1
    } -> tensor<1x2x4x4xi1>
    %31 = tensor.empty() : tensor<1x2x4x1xi1>
    %32 = linalg.fill ins(%true : i1) outs(%31 : tensor<1x2x4x1xi1>) -> tensor<1x2x4x1xi1>
    %33 = linalg.generic {indexing_maps = [#map, #map8], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%30 : tensor<1x2x4x4xi1>) outs(%32 : tensor<1x2x4x1xi1>) {
    ^bb0(%in: i1, %out: i1):
      %38 = arith.andi %in, %out : i1
      linalg.yield %38 : i1
    } -> tensor<1x2x4x1xi1>
    %34 = linalg.generic {indexing_maps = [#map8, #map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%33, %cst_1, %28 : tensor<1x2x4x1xi1>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%16 : tensor<1x2x4x4xf32>) {
    ^bb0(%in: i1, %in_14: f32, %in_15: f32, %out: f32):
      %38 = arith.select %in, %in_14, %in_15 : f32
      linalg.yield %38 : f32
    } -> tensor<1x2x4x4xf32>
    %collapsed_11 = tensor.collapse_shape %34 [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
    %collapsed_12 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %35 = tensor.empty() : tensor<2x4x2xf32>
    %36 = linalg.fill ins(%cst : f32) outs(%35 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %37 = linalg.batch_matmul ins(%collapsed_11, %collapsed_12 : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%36 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %expanded_13 = tensor.expand_shape %37 [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
    return %expanded_13 : tensor<1x2x4x2xf32>
  }
}

// -----

// S = 5 with blocks of 2: two full blocks in the loops, the last row and key as peeled
// static 1-wide tiles (offset 4), so every tile has a static shape.
// CHECK-LABEL: func.func @rows_not_multiple
// CHECK:       scf.for %{{.*}} = %c0 to %c4 step %c2
// CHECK:         %{{.*}}:3 = scf.for %{{.*}} = %c0 to %c4 step %c2 {{.*}} -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>)
// CHECK:         tensor.extract_slice %{{.*}}[%{{.*}}, 0, 4] [1, 2, 1]
// CHECK:       tensor.extract_slice %arg0[%{{.*}}, 4, 0] [1, 1, 2]
// CHECK:       %{{.*}}:3 = scf.for %{{.*}} -> (tensor<1xf32>, tensor<1xf32>, tensor<1x2xf32>)
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       return
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @rows_not_multiple(%arg0: tensor<2x5x2xf32>, %arg1: tensor<2x5x2xf32>, %arg2: tensor<2x5x2xf32>) -> tensor<2x5x2xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<2x2x5xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<2x5x2xf32>) outs(%0 : tensor<2x2x5xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x5x5xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<2x5x2xf32>, tensor<2x2x5xf32>) outs(%2 : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
    %4 = tensor.empty() : tensor<2x5xi64>
    %5 = linalg.fill ins(%c0_i64 : i64) outs(%4 : tensor<2x5xi64>) -> tensor<2x5xi64>
    %6 = tensor.empty() : tensor<2x5xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<2x5xf32>) -> tensor<2x5xf32>
    %8:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%3 : tensor<2x5x5xf32>) outs(%7, %5 : tensor<2x5xf32>, tensor<2x5xi64>) {
    ^bb0(%in: f32, %out: f32, %out_1: i64):
      %18 = linalg.index 2 : index
      %19 = arith.index_cast %18 : index to i64
      %20 = arith.maximumf %in, %out : f32
      %21 = arith.cmpf ogt, %in, %out : f32
      %22 = arith.select %21, %19, %out_1 : i64
      linalg.yield %20, %22 : f32, i64
    } -> (tensor<2x5xf32>, tensor<2x5xi64>)
    %expanded = tensor.expand_shape %8#0 [[0], [1, 2]] output_shape [2, 5, 1] : tensor<2x5xf32> into tensor<2x5x1xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %expanded : tensor<2x5x5xf32>, tensor<2x5x1xf32>) outs(%1 : tensor<2x5x5xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %18 = arith.subf %in, %in_1 : f32
      linalg.yield %18 : f32
    } -> tensor<2x5x5xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<2x5x5xf32>) outs(%1 : tensor<2x5x5xf32>) {
    ^bb0(%in: f32, %out: f32):
      %18 = math.exp %in : f32
      linalg.yield %18 : f32
    } -> tensor<2x5x5xf32>
    %11 = tensor.empty() : tensor<2x5x1xf32>
    %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<2x5x1xf32>) -> tensor<2x5x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%10 : tensor<2x5x5xf32>) outs(%12 : tensor<2x5x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %18 = arith.addf %in, %out : f32
      linalg.yield %18 : f32
    } -> tensor<2x5x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10, %13 : tensor<2x5x5xf32>, tensor<2x5x1xf32>) outs(%1 : tensor<2x5x5xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %18 = arith.divf %in, %in_1 : f32
      linalg.yield %18 : f32
    } -> tensor<2x5x5xf32>
    %15 = tensor.empty() : tensor<2x5x2xf32>
    %16 = linalg.fill ins(%cst : f32) outs(%15 : tensor<2x5x2xf32>) -> tensor<2x5x2xf32>
    %17 = linalg.batch_matmul ins(%14, %arg2 : tensor<2x5x5xf32>, tensor<2x5x2xf32>) outs(%16 : tensor<2x5x2xf32>) -> tensor<2x5x2xf32>
    return %17 : tensor<2x5x2xf32>
  }
}

// -----

// Unbatched attention (linalg.matmul): no batch loop, 2-D slices.
// CHECK-LABEL: func.func @matmul_2d
// CHECK-NOT:   linalg.matmul
// CHECK:       scf.for %{{.*}} = %c0 to %c4 step %c2
// CHECK:         tensor.extract_slice %arg0[%{{.*}}, 0] [2, 2] [1, 1] : tensor<4x2xf32> to tensor<2x2xf32>
// CHECK-NOT:   linalg.matmul
// CHECK:       return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
module {
  func.func @matmul_2d(%arg0: tensor<4x2xf32>, %arg1: tensor<4x2xf32>, %arg2: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<2x4xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<4x2xf32>) outs(%0 : tensor<2x4xf32>) permutation = [1, 0] 
    %1 = tensor.empty() : tensor<4x4xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = linalg.matmul ins(%arg0, %transposed : tensor<4x2xf32>, tensor<2x4xf32>) outs(%2 : tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = tensor.empty() : tensor<4xi64>
    %5 = linalg.fill ins(%c0_i64 : i64) outs(%4 : tensor<4xi64>) -> tensor<4xi64>
    %6 = tensor.empty() : tensor<4xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<4xf32>) -> tensor<4xf32>
    %8:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%3 : tensor<4x4xf32>) outs(%7, %5 : tensor<4xf32>, tensor<4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_1: i64):
      %18 = linalg.index 1 : index
      %19 = arith.index_cast %18 : index to i64
      %20 = arith.maximumf %in, %out : f32
      %21 = arith.cmpf ogt, %in, %out : f32
      %22 = arith.select %21, %19, %out_1 : i64
      linalg.yield %20, %22 : f32, i64
    } -> (tensor<4xf32>, tensor<4xi64>)
    %expanded = tensor.expand_shape %8#0 [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%3, %expanded : tensor<4x4xf32>, tensor<4x1xf32>) outs(%1 : tensor<4x4xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %18 = arith.subf %in, %in_1 : f32
      linalg.yield %18 : f32
    } -> tensor<4x4xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<4x4xf32>) outs(%1 : tensor<4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %18 = math.exp %in : f32
      linalg.yield %18 : f32
    } -> tensor<4x4xf32>
    %11 = tensor.empty() : tensor<4x1xf32>
    %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<4x1xf32>) -> tensor<4x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%10 : tensor<4x4xf32>) outs(%12 : tensor<4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %18 = arith.addf %in, %out : f32
      linalg.yield %18 : f32
    } -> tensor<4x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%10, %13 : tensor<4x4xf32>, tensor<4x1xf32>) outs(%1 : tensor<4x4xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %18 = arith.divf %in, %in_1 : f32
      linalg.yield %18 : f32
    } -> tensor<4x4xf32>
    %15 = tensor.empty() : tensor<4x2xf32>
    %16 = linalg.fill ins(%cst : f32) outs(%15 : tensor<4x2xf32>) -> tensor<4x2xf32>
    %17 = linalg.matmul ins(%14, %arg2 : tensor<4x4xf32>, tensor<4x2xf32>) outs(%16 : tensor<4x2xf32>) -> tensor<4x2xf32>
    return %17 : tensor<4x2xf32>
  }
}

// -----

// Negative: the softmax probabilities are also returned, so the S x S tensor must exist
// anyway; fusing would duplicate the work. Left untouched.
// CHECK-LABEL: func.func @probs_also_returned
// CHECK:       linalg.batch_matmul
// CHECK:       linalg.batch_matmul
// CHECK-NOT:   scf.for
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @probs_also_returned(%arg0: tensor<2x4x2xf32>, %arg1: tensor<2x4x2xf32>, %arg2: tensor<2x4x2xf32>) -> (tensor<2x4x2xf32>, tensor<2x4x4xf32>) {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<2x2x4xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<2x4x2xf32>) outs(%0 : tensor<2x2x4xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x4x4xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%2 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %4 = tensor.empty() : tensor<2x4xi64>
    %5 = linalg.fill ins(%c0_i64 : i64) outs(%4 : tensor<2x4xi64>) -> tensor<2x4xi64>
    %6 = tensor.empty() : tensor<2x4xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<2x4xf32>) -> tensor<2x4xf32>
    %8:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%3 : tensor<2x4x4xf32>) outs(%7, %5 : tensor<2x4xf32>, tensor<2x4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_1: i64):
      %18 = linalg.index 2 : index
      %19 = arith.index_cast %18 : index to i64
      %20 = arith.maximumf %in, %out : f32
      %21 = arith.cmpf ogt, %in, %out : f32
      %22 = arith.select %21, %19, %out_1 : i64
      linalg.yield %20, %22 : f32, i64
    } -> (tensor<2x4xf32>, tensor<2x4xi64>)
    %expanded = tensor.expand_shape %8#0 [[0], [1, 2]] output_shape [2, 4, 1] : tensor<2x4xf32> into tensor<2x4x1xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %expanded : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %18 = arith.subf %in, %in_1 : f32
      linalg.yield %18 : f32
    } -> tensor<2x4x4xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<2x4x4xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %18 = math.exp %in : f32
      linalg.yield %18 : f32
    } -> tensor<2x4x4xf32>
    %11 = tensor.empty() : tensor<2x4x1xf32>
    %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%10 : tensor<2x4x4xf32>) outs(%12 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %18 = arith.addf %in, %out : f32
      linalg.yield %18 : f32
    } -> tensor<2x4x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10, %13 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %18 = arith.divf %in, %in_1 : f32
      linalg.yield %18 : f32
    } -> tensor<2x4x4xf32>
    %15 = tensor.empty() : tensor<2x4x2xf32>
    %16 = linalg.fill ins(%cst : f32) outs(%15 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %17 = linalg.batch_matmul ins(%14, %arg2 : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%16 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    return %17, %14 : tensor<2x4x2xf32>, tensor<2x4x4xf32>
  }
}

// -----

// Negative: exp(q @ k^T) @ v has no max/sum normalisation (not a softmax); left untouched.
// CHECK-LABEL: func.func @not_normalised
// CHECK:       linalg.batch_matmul
// CHECK:       linalg.batch_matmul
// CHECK-NOT:   scf.for
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @not_normalised(%arg0: tensor<2x4x2xf32>, %arg1: tensor<2x4x2xf32>, %arg2: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x2x4xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<2x4x2xf32>) outs(%0 : tensor<2x2x4xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x4x4xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%2 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3 : tensor<2x4x4xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = math.exp %in : f32
      linalg.yield %8 : f32
    } -> tensor<2x4x4xf32>
    %5 = tensor.empty() : tensor<2x4x2xf32>
    %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %7 = linalg.batch_matmul ins(%4, %arg2 : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%6 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    return %7 : tensor<2x4x2xf32>
  }
}

// -----

// Negative: softmax over the query axis (dim=-2) does not reduce along the second
// matmul's contraction; left untouched.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK:       linalg.batch_matmul
// CHECK:       linalg.batch_matmul
// CHECK-NOT:   scf.for
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
module {
  func.func @softmax_over_queries(%arg0: tensor<2x4x2xf32>, %arg1: tensor<2x4x2xf32>, %arg2: tensor<2x4x2xf32>) -> tensor<2x4x2xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<2x2x4xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<2x4x2xf32>) outs(%0 : tensor<2x2x4xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x4x4xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%2 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %4 = tensor.empty() : tensor<2x4xi64>
    %5 = linalg.fill ins(%c0_i64 : i64) outs(%4 : tensor<2x4xi64>) -> tensor<2x4xi64>
    %6 = tensor.empty() : tensor<2x4xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<2x4xf32>) -> tensor<2x4xf32>
    %8:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction", "parallel"]} ins(%3 : tensor<2x4x4xf32>) outs(%7, %5 : tensor<2x4xf32>, tensor<2x4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_1: i64):
      %18 = linalg.index 1 : index
      %19 = arith.index_cast %18 : index to i64
      %20 = arith.maximumf %in, %out : f32
      %21 = arith.cmpf ogt, %in, %out : f32
      %22 = arith.select %21, %19, %out_1 : i64
      linalg.yield %20, %22 : f32, i64
    } -> (tensor<2x4xf32>, tensor<2x4xi64>)
    %expanded = tensor.expand_shape %8#0 [[0, 1], [2]] output_shape [2, 1, 4] : tensor<2x4xf32> into tensor<2x1x4xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %expanded : tensor<2x4x4xf32>, tensor<2x1x4xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %18 = arith.subf %in, %in_1 : f32
      linalg.yield %18 : f32
    } -> tensor<2x4x4xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<2x4x4xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %18 = math.exp %in : f32
      linalg.yield %18 : f32
    } -> tensor<2x4x4xf32>
    %11 = tensor.empty() : tensor<2x1x4xf32>
    %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction", "parallel"]} ins(%10 : tensor<2x4x4xf32>) outs(%12 : tensor<2x1x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %18 = arith.addf %in, %out : f32
      linalg.yield %18 : f32
    } -> tensor<2x1x4xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10, %13 : tensor<2x4x4xf32>, tensor<2x1x4xf32>) outs(%1 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %18 = arith.divf %in, %in_1 : f32
      linalg.yield %18 : f32
    } -> tensor<2x4x4xf32>
    %15 = tensor.empty() : tensor<2x4x2xf32>
    %16 = linalg.fill ins(%cst : f32) outs(%15 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %17 = linalg.batch_matmul ins(%14, %arg2 : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%16 : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    return %17 : tensor<2x4x2xf32>
  }
}
