// RUN: accel-opt %s --split-input-file -accel-nvgpu-conv-to-matmul | FileCheck %s
// RUN: accel-opt %s --split-input-file -accel-nvgpu-conv-to-matmul="tf32=true" | FileCheck %s --check-prefix=TF32

// An f16 convolution (F = 32, OH*OW = 16, C*KH*KW = 16 * 3 * 3 = 144) with stride 2 and
// dilation 1: im2col reads x[n, c, oh*2 + kh, ow*2 + kw], the weights become a broadcast
// F x CKK left operand, and the f32 sums keep the NCHW output through expand_shape.
// CHECK:       #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3)>
// CHECK-LABEL: func.func @conv
// CHECK:       %[[COL:.*]] = linalg.generic {indexing_maps = [#[[WIN]], #{{.*}}]{{.*}} ins(%arg0 : tensor<2x16x9x9xf16>) outs({{.*}} : tensor<2x16x3x3x4x4xf16>)
// CHECK:       %[[C:.*]] = tensor.collapse_shape %[[COL]] {{\[}}[0], [1, 2, 3], [4, 5]] : tensor<2x16x3x3x4x4xf16> into tensor<2x144x16xf16>
// CHECK:       %[[W:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<32x16x3x3xf16> into tensor<32x144xf16>
// CHECK:       %[[WB:.*]] = linalg.broadcast ins(%[[W]] : tensor<32x144xf16>) outs({{.*}} : tensor<2x32x144xf16>) dimensions = [0]
// CHECK:       %[[I:.*]] = tensor.collapse_shape %arg2 {{\[}}[0], [1], [2, 3]]
// CHECK:       %[[R:.*]] = linalg.batch_matmul ins(%[[WB]], %[[C]] : tensor<2x32x144xf16>, tensor<2x144x16xf16>) outs(%[[I]] : tensor<2x32x16xf32>)
// CHECK:       %[[O:.*]] = tensor.expand_shape %[[R]] {{\[}}[0], [1], [2, 3]] output_shape [2, 32, 4, 4]
// CHECK:       return %[[O]]
// CHECK-NOT:   linalg.conv_2d_nchw_fchw
func.func @conv(%x: tensor<2x16x9x9xf16>, %w: tensor<32x16x3x3xf16>, %o: tensor<2x32x4x4xf32>) -> tensor<2x32x4x4xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<2x16x9x9xf16>, tensor<32x16x3x3xf16>) outs(%o : tensor<2x32x4x4xf32>) -> tensor<2x32x4x4xf32>
  return %r : tensor<2x32x4x4xf32>
}

// -----

// f32 convolutions only with tf32 (whose WMMA k is 8: C*KH*KW = 8 * 1 * 1); dilation 2
// shows in the window map.
// CHECK-LABEL: func.func @f32
// CHECK:       linalg.conv_2d_nchw_fchw
// TF32:        #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 + d2 * 2, d5 + d3 * 2)>
// TF32-LABEL:  func.func @f32
// TF32:        linalg.generic {indexing_maps = [#[[WIN]]
// TF32:        linalg.batch_matmul
// TF32-NOT:    linalg.conv_2d_nchw_fchw
func.func @f32(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %o: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) outs(%o : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %r : tensor<1x16x4x4xf32>
}

// -----

// Negative: F = 8 is no multiple of 16; the convolution stays for the loop path.
// CHECK-LABEL: func.func @narrow
// TF32-LABEL:  func.func @narrow
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       linalg.conv_2d_nchw_fchw
func.func @narrow(%x: tensor<1x16x6x6xf16>, %w: tensor<8x16x3x3xf16>, %o: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x16x6x6xf16>, tensor<8x16x3x3xf16>) outs(%o : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %r : tensor<1x8x4x4xf32>
}
