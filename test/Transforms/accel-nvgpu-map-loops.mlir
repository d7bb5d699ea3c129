// RUN: accel-opt %s --split-input-file -accel-nvgpu-map-loops="threads=64" | FileCheck %s

// A 2-d nest is flattened: blocks x 64 threads, a guard, the innermost index fastest.
// CHECK-LABEL: func.func @rows
// CHECK:       scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[NB:.*]]) step
// CHECK:         scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK:           %[[L:.*]] = arith.addi
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[L]], %{{.*}}
// CHECK:           scf.if %[[IN]] {
// CHECK:             %[[I:.*]] = arith.divui %[[L]], %{{.*}}
// CHECK:             %[[J:.*]] = arith.remui %[[L]], %{{.*}}
// CHECK:             memref.load %arg0[%[[I]], %[[J]]]
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:       } {mapping = [#gpu.loop_dim_map<processor = block_x
func.func @rows(%a: memref<4x100xf32>, %b: memref<4x100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c100) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<4x100xf32>
    memref.store %v, %b[%i, %j] : memref<4x100xf32>
    scf.reduce
  }
  return
}

// -----

// Bounds and steps other than 0 and 1: 31 iterations, i = 3 + 2 * linear index.
// CHECK-LABEL: func.func @strided
// CHECK:       %[[L:.*]] = arith.addi
// CHECK:       %[[N:.*]] = arith.constant 31 : index
// CHECK:       arith.cmpi ult, %[[L]], %[[N]]
// CHECK:       scf.if
// CHECK:         %[[S:.*]] = arith.muli %[[L]], %{{.*}}
// CHECK:         %[[I:.*]] = arith.addi %[[S]], %{{.*}}
// CHECK:         memref.store %{{.*}}, %arg0[%[[I]]]
func.func @strided(%a: memref<64xf32>) {
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c3) to (%c64) step (%c2) {
    memref.store %f, %a[%i] : memref<64xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: a loop with a dynamic bound is left alone (the host keeps it; nvgpu reports it).
// CHECK-LABEL: func.func @dynamic
// CHECK:       scf.parallel (%{{.*}}) = (%{{.*}}) to (%arg1) step
// CHECK-NOT:   mapping
func.func @dynamic(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %f, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
