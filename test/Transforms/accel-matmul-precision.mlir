// RUN: accel-opt %s --split-input-file -accel-matmul-precision="mode=mixed_fp16_fp32" | FileCheck %s --check-prefix=MIXED
// RUN: accel-opt %s --split-input-file -accel-matmul-precision="mode=tf32" | FileCheck %s --check-prefix=TF32
// RUN: accel-opt %s --split-input-file -accel-matmul-precision="mode=fp16" | FileCheck %s --check-prefix=FP16
// RUN: accel-opt %s --split-input-file -accel-matmul-precision="mode=fp32" | FileCheck %s --check-prefix=FP32

// An f32 matmul with a dynamic M: mixed_fp16_fp32 rounds both operands to f16 (sized by
// tensor.dim) and keeps the f32 accumulator, so the result needs no cast back.
// MIXED-LABEL: func.func @mm
// MIXED:       %[[D:.*]] = tensor.dim %arg0
// MIXED:       %[[E:.*]] = tensor.empty(%[[D]]) : tensor<?x8xf16>
// MIXED:       %[[A:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<?x8xf32>) outs(%[[E]] : tensor<?x8xf16>)
// MIXED:         arith.truncf {{.*}} : f32 to f16
// MIXED:       %[[B:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<8x5xf32>)
// MIXED:       %[[R:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<?x8xf16>, tensor<8x5xf16>) outs(%arg2 : tensor<?x5xf32>) -> tensor<?x5xf32>
// MIXED:       return %[[R]]
// TF32 rounds the f32 operands to 10 mantissa bits (to nearest, ties away; Inf/NaN kept)
// and leaves the matmul f32.
// TF32-LABEL: func.func @mm
// TF32:       linalg.generic {{.*}} ins(%arg0 : tensor<?x8xf32>)
// TF32:         arith.bitcast {{.*}} : f32 to i32
// TF32:         arith.addi {{.*}}, %c4096_i32
// TF32:         arith.andi {{.*}}, %c-8192_i32
// TF32:         arith.select
// TF32:       linalg.matmul ins({{.*}} : tensor<?x8xf32>, tensor<8x5xf32>) outs(%arg2 : tensor<?x5xf32>)
// FP16 also sums in f16: the accumulator goes to f16 and the result back to f32.
// FP16-LABEL: func.func @mm
// FP16:       %[[C:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<?x5xf32>) outs({{.*}} : tensor<?x5xf16>)
// FP16:       %[[R:.*]] = linalg.matmul ins({{.*}} : tensor<?x8xf16>, tensor<8x5xf16>) outs(%[[C]] : tensor<?x5xf16>)
// FP16:       %[[O:.*]] = linalg.generic {{.*}} ins(%[[R]] : tensor<?x5xf16>) outs({{.*}} : tensor<?x5xf32>)
// FP16:         arith.extf
// FP16:       return %[[O]]
// Negative: fp32 on an f32 matmul changes nothing.
// FP32-LABEL: func.func @mm
// FP32-NOT:   linalg.generic
// FP32:       linalg.matmul ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<8x5xf32>)
func.func @mm(%a: tensor<?x8xf32>, %b: tensor<8x5xf32>, %c: tensor<?x5xf32>) -> tensor<?x5xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x5xf32>) outs(%c : tensor<?x5xf32>) -> tensor<?x5xf32>
  return %m : tensor<?x5xf32>
}

// -----

// A strided convolution keeps its attributes; a transposed matmul keeps its indexing maps.
// MIXED-LABEL: func.func @conv
// MIXED:       linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins({{.*}} : tensor<1x3x8x8xf16>, tensor<2x3x3x3xf16>) outs(%arg2 : tensor<1x2x3x3xf32>)
// MIXED:       linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins({{.*}} : tensor<4x8xf16>, tensor<5x8xf16>)
func.func @conv(%i: tensor<1x3x8x8xf32>, %w: tensor<2x3x3x3xf32>, %o: tensor<1x2x3x3xf32>,
                %a: tensor<4x8xf32>, %b: tensor<5x8xf32>, %c: tensor<4x5xf32>) -> (tensor<1x2x3x3xf32>, tensor<4x5xf32>) {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%i, %w : tensor<1x3x8x8xf32>, tensor<2x3x3x3xf32>) outs(%o : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<4x8xf32>, tensor<5x8xf32>) outs(%c : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %r, %m : tensor<1x2x3x3xf32>, tensor<4x5xf32>
}

// -----

// Negative: elementwise ops (not matmul/conv) are untouched by every mode.
// MIXED-LABEL: func.func @add
// MIXED-NOT:   arith.truncf
// MIXED:       arith.addf {{.*}} : f32
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
