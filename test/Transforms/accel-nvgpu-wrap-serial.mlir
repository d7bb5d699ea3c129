// RUN: accel-opt %s --split-input-file -accel-nvgpu-wrap-serial | FileCheck %s

// A full reduction (no parallel loop) and a scalar store become one one-iteration loop.
// CHECK-LABEL: func.func @sum
// CHECK:       scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    scf.for
// CHECK:         scf.reduce
// CHECK:       return
func.func @sum(%a: memref<64xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  memref.store %z, %s[] : memref<f32>
  scf.for %k = %c0 to %c64 step %c1 {
    %v = memref.load %a[%k] : memref<64xf32>
    %acc = memref.load %s[] : memref<f32>
    %r = arith.addf %v, %acc : f32
    memref.store %r, %s[] : memref<f32>
  }
  return
}

// -----

// Negative: a value computed serially and used by the host side stays where it is.
// CHECK-LABEL: func.func @escapes
// CHECK-NOT:   scf.parallel
// CHECK:       memref.load
// CHECK:       memref.alloc(%{{.*}})
func.func @escapes(%n: memref<index>) -> memref<?xf32> {
  %k = memref.load %n[] : memref<index>
  %a = memref.alloc(%k) : memref<?xf32>
  return %a : memref<?xf32>
}
