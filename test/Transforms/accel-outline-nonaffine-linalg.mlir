// RUN: accel-opt %s --split-input-file -accel-outline-nonaffine-linalg | FileCheck %s

// A linalg op in an scf.for whose operand size comes from the loop variable (as in
// torch.linalg.det) moves into a private function; values its body captures become
// arguments too, but constants are cloned into it (an index constant must stay one there:
// `memref.dim` with an index argument lowers to an alloca in the loop).
// CHECK-LABEL: func.func @in_scf_loop
// CHECK:         scf.for
// CHECK:           %[[V:.*]] = memref.subview
// CHECK:           func.call @in_scf_loop_linalg0(%[[V]], %{{.*}}, %arg2) : (memref<?x4xf32, strided<[4, 1], offset: ?>>, memref<?x4xf32, strided<[4, 1], offset: ?>>, f32) -> ()
// CHECK-NOT:     linalg.generic
// CHECK:       func.func private @in_scf_loop_linalg0(%[[A:.*]]: memref<?x4xf32, strided<[4, 1], offset: ?>>, %[[B:.*]]: memref<?x4xf32, strided<[4, 1], offset: ?>>, %[[K:.*]]: f32)
// CHECK:         %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:         linalg.generic {{.*}} ins(%[[A]] : {{.*}}) outs(%[[B]] : {{.*}})
// CHECK:           %[[S:.*]] = arith.addf %{{.*}}, %[[K]] : f32
// CHECK:           arith.mulf %[[S]], %[[TWO]] : f32
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @in_scf_loop(%m: memref<4x4xf32>, %o: memref<4x4xf32>, %k: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c3 step %c1 {
    %n = arith.subi %c3, %i : index
    %v = memref.subview %m[%i, 0] [%n, 4] [1, 1] : memref<4x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
    %w = memref.subview %o[%i, 0] [%n, 4] [1, 1] : memref<4x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%v : memref<?x4xf32, strided<[4, 1], offset: ?>>)
        outs(%w : memref<?x4xf32, strided<[4, 1], offset: ?>>) {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %k : f32
      %t = arith.mulf %s, %two : f32
      linalg.yield %t : f32
    }
  }
  return
}

// -----

// Negative: static sizes in a loop, and dynamic ones at the function's top level, are
// valid affine bounds where they are.
// CHECK-LABEL: func.func @stays
// CHECK:         scf.for
// CHECK:           linalg.fill
// CHECK:         linalg.fill
// CHECK-NOT:     func.call
func.func @stays(%m: memref<4x4xf32>, %d: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c3 step %c1 {
    %v = memref.subview %m[%i, 0] [1, 4] [1, 1] : memref<4x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    linalg.fill ins(%z : f32) outs(%v : memref<1x4xf32, strided<[4, 1], offset: ?>>)
  }
  linalg.fill ins(%z : f32) outs(%d : memref<?xf32>)
  return
}
