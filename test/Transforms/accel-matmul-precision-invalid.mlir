// RUN: accel-opt %s --split-input-file --verify-diagnostics -accel-matmul-precision="mode=int32"
// RUN: not accel-opt %s -accel-matmul-precision="mode=fp8" 2>&1 | FileCheck %s --check-prefix=MODE

// MODE: bad value 'fp8' for option 'mode'

// An integer mode on a float matmul means nothing: refused, naming the op.
func.func @float(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{mm_conv_precision_mode=int32 is for integer matmuls and convolutions; linalg.matmul computes in f32}}
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x5xf32>) outs(%c : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %m : tensor<4x5xf32>
}

// -----

// On memrefs (after bufferization) the casts cannot be added: refused.
func.func @buffers(%a: memref<4x8xi32>, %b: memref<8x5xi32>, %c: memref<4x5xi32>) {
  // expected-error @+1 {{accel-matmul-precision runs on tensors, before bufferization}}
  linalg.matmul ins(%a, %b : memref<4x8xi32>, memref<8x5xi32>) outs(%c : memref<4x5xi32>)
  return
}
