// RUN: not accel-opt %s -accel-check-allocations 2>&1 | FileCheck %s

// An allocation still inside a loop cannot return from the function: run after
// convert-scf-to-cf.
// CHECK: error: memref.alloc nested in 'scf.for' cannot return from the function
func.func @nested(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %m = memref.alloc() : memref<4xf32>
    memref.dealloc %m : memref<4xf32>
  }
  return
}
