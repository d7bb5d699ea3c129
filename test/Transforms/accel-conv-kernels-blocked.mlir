// RUN: accel-opt %s --split-input-file -accel-conv-kernels="vector-width=8 parallel=false" | FileCheck %s
// RUN: accel-opt %s --split-input-file -accel-conv-kernels="vector-width=4" | FileCheck %s --check-prefix=NARROW

// With 4-lane vectors (half a block) no kernel is called: the generic's loops run.
// NARROW-LABEL: func.func @blocked
// NARROW:       linalg.generic
// NARROW-NOT:   call @accel_dconv

// accel-blocked-layout's convolution (NCHW8c input and output, the weight as it is) is a
// call of the direct kernel, which reads the input with blocked addressing and stores each
// 8-filter accumulator as 8 consecutive floats of the output: no transposes in the
// write-back. The zero fill before it goes (the kernel stores).
// CHECK-LABEL: func.func @blocked
// CHECK-NOT:   linalg.fill
// CHECK:       call @accel_dconv_1x16x12x12_16x3x3_{{.*}}(%arg0, %arg1, %{{.*}}) : (memref<1x2x12x12x8xf32>, memref<16x16x3x3xf32>, memref<1x2x10x10x8xf32>) -> ()
// CHECK:       func.func private @accel_dconv_1x16x12x12_16x3x3_{{.*}}_body(
// CHECK:       memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3, 4]] : memref<1x2x12x12x8xf32> into memref<1x2304xf32>
// CHECK-NOT:   memref<1x16x100xf32>
// CHECK:       vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x2x100x8xf32>, vector<8xf32>
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 * 1 + d7 * 1, d3 * 1 + d8 * 1, d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1 * 8 + d4, d5 * 8 + d6, d7, d8)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @blocked(%x: memref<1x2x12x12x8xf32>, %w: memref<16x16x3x3xf32>) -> memref<1x2x10x10x8xf32> {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x2x10x10x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x2x10x10x8xf32>)
  linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : memref<1x2x12x12x8xf32>, memref<16x16x3x3xf32>) outs(%o : memref<1x2x10x10x8xf32>) attrs = {accel.blocked_conv = array<i64: 1, 1, 1, 1, 1>} {
  ^bb0(%i: f32, %k: f32, %a: f32):
    %m = arith.mulf %i, %k : f32
    %s = arith.addf %a, %m : f32
    linalg.yield %s : f32
  }
  return %o : memref<1x2x10x10x8xf32>
}

// -----

// Negative: the attribute without the blocked convolution's maps (here the weight read
// transposed) proves nothing; the generic stays.
// CHECK-LABEL: func.func @wrong_map
// CHECK:       linalg.generic
// CHECK-NOT:   call @accel_dconv
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 * 1 + d7 * 1, d3 * 1 + d8 * 1, d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d5 * 8 + d6, d1 * 8 + d4, d7, d8)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @wrong_map(%x: memref<1x2x12x12x8xf32>, %w: memref<16x16x3x3xf32>, %o: memref<1x2x10x10x8xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : memref<1x2x12x12x8xf32>, memref<16x16x3x3xf32>) outs(%o : memref<1x2x10x10x8xf32>) attrs = {accel.blocked_conv = array<i64: 1, 1, 1, 1, 1>} {
  ^bb0(%i: f32, %k: f32, %a: f32):
    %m = arith.mulf %i, %k : f32
    %s = arith.addf %a, %m : f32
    linalg.yield %s : f32
  }
  return
}
