// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-matmul-microkernel{vector-width=8 direct=false parallel=false min-flops=0 prepack-weights=true})' | FileCheck %s

// nn.Linear on a frozen parameter (an external global read through its transposed copy):
// the copy goes, and the GEMM reads B packed once into a private global PB[column panel]
// [K block][k][NR] (6 panels of 16 for N = 96, one K block of 64). The wrapper packs B
// when its address differs from the one kept in the second global (the first call).
// CHECK-LABEL: memref.global "private" @wl_packed_{{[0-9a-f]+}}_src : memref<1xi64> = dense<0>
// CHECK:       memref.global "private" @[[PK:wl_packed_[0-9a-f]+]] : memref<6x1x64x16xf32> = uninitialized {alignment = 64 : i64}
// CHECK:       func.func @linear
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[W:.*]] = memref.get_global @wl : memref<96x64xf32>
// CHECK:         %[[PB:.*]] = memref.get_global @[[PK]] : memref<6x1x64x16xf32>
// CHECK:         %[[SRC:.*]] = memref.get_global @[[PK]]_src : memref<1xi64>
// CHECK:         call @[[G:accel_gemm_32x96x64_nt_[0-9a-f]+_pb]]_frozen(%arg0, %[[W]], %arg1, %[[PB]], %[[SRC]])
// CHECK:       func.func private @[[G]](%{{.*}}: memref<32x64xf32>, %{{.*}}: memref<6x1x64x16xf32>, %{{.*}}: memref<32x96xf32>)
// CHECK-NOT:     memref.alloc() {alignment = 64 : i64} : memref<{{.*}}x16xf32>
// CHECK:         vector.load %arg1[%{{.*}}, %{{.*}}, %{{.*}}, %c8] : memref<6x1x64x16xf32>, vector<8xf32>
// CHECK:       func.func private @[[G]]_prepack(%{{.*}}: memref<96x64xf32>, %{{.*}}: memref<6x1x64x16xf32>)
// CHECK:       func.func private @[[G]]_frozen(
// CHECK:         memref.extract_aligned_pointer_as_index
// CHECK:         arith.cmpi ne
// CHECK:         scf.if
// CHECK-NEXT:      func.call @[[G]]_prepack(
// CHECK-NEXT:      memref.store
// CHECK:         call @[[G]](
memref.global @wl : memref<96x64xf32>
func.func @linear(%x: memref<32x64xf32>, %o: memref<32x96xf32>) {
  %w = memref.get_global @wl : memref<96x64xf32>
  %t = memref.alloc() : memref<64x96xf32>
  linalg.transpose ins(%w : memref<96x64xf32>) outs(%t : memref<64x96xf32>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<32x64xf32>, memref<64x96xf32>) outs(%o : memref<32x96xf32>)
  return
}

// -----

// Negative: B computed at run time (here a function argument of a public function, as an
// activation is) is packed per call as before.
// CHECK-LABEL: func.func @activation_b
// CHECK-NOT:     _packed_
// CHECK:         call @accel_gemm_32x96x64_nn_{{[0-9a-f]+}}(%arg0, %arg1, %arg2) :
func.func @activation_b(%x: memref<32x64xf32>, %y: memref<64x96xf32>, %o: memref<32x96xf32>) {
  linalg.matmul ins(%x, %y : memref<32x64xf32>, memref<64x96xf32>) outs(%o : memref<32x96xf32>)
  return
}

// -----

// Negative: a weight with an initial value is a constant of the module, not a parameter.
// CHECK-LABEL: func.func @constant_b
// CHECK-NOT:     _packed_
// CHECK:         call @accel_gemm_32x96x64_nn_{{[0-9a-f]+}}(%arg0, %{{.*}}, %arg1) :
memref.global "private" constant @cb : memref<64x96xf32> = dense<1.0>
func.func @constant_b(%x: memref<32x64xf32>, %o: memref<32x96xf32>) {
  %w = memref.get_global @cb : memref<64x96xf32>
  linalg.matmul ins(%x, %w : memref<32x64xf32>, memref<64x96xf32>) outs(%o : memref<32x96xf32>)
  return
}
