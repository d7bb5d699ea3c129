// RUN: accel-opt %s --split-input-file -accel-nvgpu-copy-to-linalg | FileCheck %s

// A copy into a strided view (padding) becomes a linalg.copy, which becomes a kernel.
// CHECK-LABEL: func.func @pad
// CHECK:       %[[V:.*]] = memref.subview
// CHECK-NEXT:  linalg.copy {{.*}}ins(%arg0 : memref<2x2xf32>) outs(%[[V]] : memref<2x2xf32, strided<[4, 1], offset: 5>>)
// CHECK-NOT:   memref.copy
func.func @pad(%a: memref<2x2xf32>, %b: memref<4x4xf32>) {
  %v = memref.subview %b[1, 1] [2, 2] [1, 1] : memref<4x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 5>>
  memref.copy %a, %v : memref<2x2xf32> to memref<2x2xf32, strided<[4, 1], offset: 5>>
  return
}

// -----

// Negative: linalg.copy and other ops are left as they are.
// CHECK-LABEL: func.func @other
// CHECK:       linalg.copy
// CHECK-NEXT:  return
func.func @other(%a: memref<4xf32>, %b: memref<4xf32>) {
  linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  return
}
