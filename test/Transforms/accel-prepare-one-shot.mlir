// RUN: accel-opt %s --split-input-file -accel-prepare-one-shot | FileCheck %s

// Each user of a shared to_buffer gets its own, right before it: the read of %t by the
// second copy happens after the generic, where One-Shot must see it.
// CHECK-LABEL: func.func @one_to_buffer_per_user
// CHECK:       %[[B0:.*]] = bufferization.to_buffer %{{.*}} : tensor<4xf32>
// CHECK-NEXT:  memref.copy %[[B0]], %arg1
// CHECK:       linalg.fill
// CHECK-NEXT:  %[[B1:.*]] = bufferization.to_buffer %{{.*}} : tensor<4xf32>
// CHECK-NEXT:  memref.copy %[[B1]], %arg2
func.func @one_to_buffer_per_user(%t: tensor<4xf32>, %x: memref<4xf32>, %y: memref<4xf32>) -> tensor<4xf32> {
  %b = bufferization.to_buffer %t : tensor<4xf32> to memref<4xf32>
  memref.copy %b, %x : memref<4xf32> to memref<4xf32>
  %c = arith.constant 1.0 : f32
  %u = linalg.fill ins(%c : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  memref.copy %b, %y : memref<4xf32> to memref<4xf32>
  return %u : tensor<4xf32>
}

// -----

// A single user gets the to_buffer moved right before it: the fill of the init (made from
// the same tensor.empty as %t) must not be allowed to overwrite %t before the copy reads it.
// CHECK-LABEL: func.func @single_user_moves_down
// CHECK:       linalg.fill
// CHECK:       linalg.fill
// CHECK-NEXT:  %[[B:.*]] = bufferization.to_buffer
// CHECK-NEXT:  memref.copy %[[B]], %arg0
func.func @single_user_moves_down(%x: memref<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %t = linalg.fill ins(%one : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %b = bufferization.to_buffer %t : tensor<4xf32> to memref<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  memref.copy %b, %x : memref<4xf32> to memref<4xf32>
  return %init : tensor<4xf32>
}

// -----

// Negative: a to_buffer nobody uses is left alone.
// CHECK-LABEL: func.func @unused
// CHECK:       bufferization.to_buffer
func.func @unused(%t: tensor<4xf32>) {
  %b = bufferization.to_buffer %t : tensor<4xf32> to memref<4xf32>
  return
}

// -----

// A tensor view of a fresh allocation is restrict.
// CHECK-LABEL: func.func @fresh_alloc
// CHECK:       bufferization.to_tensor %{{.*}} restrict
func.func @fresh_alloc() -> tensor<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  %t = bufferization.to_tensor %a : memref<4xf32> to tensor<4xf32>
  return %t : tensor<4xf32>
}

// -----

// Negative: an argument buffer may alias anything, so its view stays unrestricted.
// CHECK-LABEL: func.func @argument_buffer
// CHECK-NOT:   restrict
func.func @argument_buffer(%a: memref<4xf32>) -> tensor<4xf32> {
  %t = bufferization.to_tensor %a : memref<4xf32> to tensor<4xf32>
  return %t : tensor<4xf32>
}

// -----

// Negative: two tensor views of one allocation cannot both be restrict.
// CHECK-LABEL: func.func @two_views
// CHECK-NOT:   restrict
func.func @two_views() -> (tensor<4xf32>, tensor<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %t = bufferization.to_tensor %a : memref<4xf32> to tensor<4xf32>
  %u = bufferization.to_tensor %a : memref<4xf32> to tensor<4xf32>
  return %t, %u : tensor<4xf32>, tensor<4xf32>
}

// -----

// Each user of a shared tensor.empty gets its own, so their results get their own buffers.
// CHECK-LABEL: func.func @one_empty_per_user
// CHECK:       %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:  linalg.fill ins(%{{.*}} : f32) outs(%[[E0]]
// CHECK-NEXT:  %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:  linalg.fill ins(%{{.*}} : f32) outs(%[[E1]]
func.func @one_empty_per_user(%a: f32, %b: f32) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %x = linalg.fill ins(%a : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %y = linalg.fill ins(%b : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %x, %y : tensor<4xf32>, tensor<4xf32>
}

// -----

// A fill shared by two matmuls becomes one fill each: no copy, no buffer reuse.
// CHECK-LABEL: func.func @one_fill_per_user
// CHECK:       %[[F0:.*]] = linalg.fill
// CHECK-NEXT:  linalg.matmul {{.*}} outs(%[[F0]]
// CHECK:       %[[F1:.*]] = linalg.fill
// CHECK-NEXT:  linalg.matmul {{.*}} outs(%[[F1]]
func.func @one_fill_per_user(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %x = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%b, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %x, %y : tensor<4x4xf32>, tensor<4x4xf32>
}
