// RUN: accel-opt %s --split-input-file -accel-pool-taps | FileCheck %s

// ResNet's stem pool (3x3, stride 2, over a -inf padded input): one all-parallel generic
// whose nine inputs are the window's taps; the -inf fill goes and the maxima start from
// the first tap (nsz: the sign of a zero tie is not kept, the value is).
// CHECK-DAG: #[[T0:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2, d3 * 2)>
// CHECK-DAG: #[[T5:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2 + 1, d3 * 2 + 2)>
// CHECK-DAG: #[[T8:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2 + 2, d3 * 2 + 2)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @stem
// CHECK-NOT:   linalg.fill
// CHECK-NOT:   linalg.pooling_nchw_max
// CHECK:       %[[E:.*]] = tensor.empty() : tensor<1x64x56x56xf32>
// CHECK:       %[[G:.*]] = linalg.generic {indexing_maps = [#[[T0]], {{.*}}, #[[T5]], {{.*}}, #[[T8]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME:    outs(%[[E]] : tensor<1x64x56x56xf32>)
// CHECK:       ^bb0(%[[A0:[^:]+]]: f32, %[[A1:[^:]+]]: f32, {{.*}}, %[[OUT:[^:]+]]: f32):
// CHECK-NEXT:    %[[M:.*]] = arith.maximumf %[[A0]], %[[A1]] fastmath<nsz> : f32
// CHECK-COUNT-7: arith.maximumf {{.*}} fastmath<nsz>
// CHECK-NEXT:    linalg.yield
// CHECK:       return %[[G]]
func.func @stem(%x: tensor<1x64x114x114xf32>) -> tensor<1x64x56x56xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x64x56x56xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x64x114x114xf32>, tensor<3x3xf32>) outs(%f : tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
  return %y : tensor<1x64x56x56xf32>
}

// -----

// Another init (not a fill of -inf) is kept and the maxima start from it; strides and
// dilations go into the taps' maps.
// CHECK-DAG: #[[T0:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2, d3 * 3)>
// CHECK-DAG: #[[T3:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2 + 2, d3 * 3 + 2)>
// CHECK-LABEL: func.func @keeps_init
// CHECK:       linalg.generic {indexing_maps = [#[[T0]], {{.*}}, {{.*}}, #[[T3]], {{.*}}]
// CHECK-SAME:    outs(%arg1 : tensor<1x8x6x4xf32>)
// CHECK:       ^bb0(%[[A0:[^:]+]]: f32, {{.*}}, %[[OUT:[^:]+]]: f32):
// CHECK-NEXT:    arith.maximumf %[[OUT]], %[[A0]] fastmath<nsz> : f32
// CHECK-COUNT-3: arith.maximumf
func.func @keeps_init(%x: tensor<1x8x13x12xf32>, %init: tensor<1x8x6x4xf32>) -> tensor<1x8x6x4xf32> {
  %w = tensor.empty() : tensor<2x2xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<2> : vector<2xi64>, strides = dense<[2, 3]> : vector<2xi64>} ins(%x, %w : tensor<1x8x13x12xf32>, tensor<2x2xf32>) outs(%init : tensor<1x8x6x4xf32>) -> tensor<1x8x6x4xf32>
  return %y : tensor<1x8x6x4xf32>
}

// -----

// Negative: at stride 1 a tap's map would be the loop itself (linalg would take the
// loop's extent from the larger input): the named op stays.
// CHECK-LABEL: func.func @stride_one
// CHECK:       linalg.pooling_nchw_max
// CHECK-NOT:   linalg.generic
func.func @stride_one(%x: tensor<1x8x9x9xf32>, %init: tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32> {
  %w = tensor.empty() : tensor<3x3xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x8x9x9xf32>, tensor<3x3xf32>) outs(%init : tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32>
  return %y : tensor<1x8x7x7xf32>
}

// -----

// Negative: a window of more than max-taps (25) taps, a global pool over a 7x7 map, stays.
// CHECK-LABEL: func.func @global_pool
// CHECK:       linalg.fill
// CHECK:       linalg.pooling_nchw_max
// CHECK-NOT:   linalg.generic
func.func @global_pool(%x: tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x512x1x1xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x512x1x1xf32>) -> tensor<1x512x1x1xf32>
  %w = tensor.empty() : tensor<7x7xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x512x7x7xf32>, tensor<7x7xf32>) outs(%f : tensor<1x512x1x1xf32>) -> tensor<1x512x1x1xf32>
  return %y : tensor<1x512x1x1xf32>
}

// -----

// Negative: dynamic shapes stay named ops.
// CHECK-LABEL: func.func @dynamic
// CHECK:       linalg.pooling_nchw_max
// CHECK-NOT:   linalg.generic
func.func @dynamic(%x: tensor<?x8x9x9xf32>, %init: tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32> {
  %w = tensor.empty() : tensor<3x3xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<?x8x9x9xf32>, tensor<3x3xf32>) outs(%init : tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
  return %y : tensor<?x8x4x4xf32>
}

// -----

// Negative: a fill of -inf with another use is kept, and so is the init (the maxima start
// from it).
// CHECK-LABEL: func.func @shared_fill
// CHECK:       %[[F:.*]] = linalg.fill
// CHECK:       linalg.generic
// CHECK-SAME:    outs(%[[F]] : tensor<1x8x4x4xf32>)
func.func @shared_fill(%x: tensor<1x8x9x9xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x8x9x9xf32>, tensor<3x3xf32>) outs(%f : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %y, %f : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// -----

// Negative: a window of dynamic width (3 x ?) stays a named op.
// CHECK-LABEL: func.func @dynamic_window
// CHECK:       linalg.pooling_nchw_max
// CHECK-NOT:   linalg.generic
func.func @dynamic_window(%x: tensor<1x8x9x9xf32>, %init: tensor<1x8x4x4xf32>, %n: index) -> tensor<1x8x4x4xf32> {
  %w = tensor.empty(%n) : tensor<3x?xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x8x9x9xf32>, tensor<3x?xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %y : tensor<1x8x4x4xf32>
}
