// RUN: accel-opt %s --split-input-file -accel-nvgpu-tensor-core-matmul -inline | FileCheck %s

// An f16 matmul with 16-multiple sizes: one warp per 16x16 tile of WMMA with f32 sums in a
// temporary, then one loop adds them to the output and rounds to f16 once.
// CHECK-LABEL: func.func @mm
// CHECK:       %[[T:.*]] = memref.alloc() : memref<64x48xf32>
// CHECK:       gpu.launch blocks({{.*}}) in ({{.*}} = %c3{{.*}}, {{.*}} = %c4{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c32
// CHECK:         gpu.subgroup_mma_constant_matrix {{.*}} : !gpu.mma_matrix<16x16xf32, "COp">
// CHECK:         scf.for
// CHECK:           gpu.subgroup_mma_load_matrix %arg0{{.*}}leadDimension = 32 : index
// CHECK:           gpu.subgroup_mma_load_matrix %arg1{{.*}}leadDimension = 48 : index
// CHECK:           gpu.subgroup_mma_compute
// CHECK:         gpu.subgroup_mma_store_matrix {{.*}}, %[[T]]
// CHECK:       linalg.generic {{.*}} ins(%[[T]] : memref<64x48xf32>) outs(%arg2 : memref<64x48xf16>)
// CHECK:         arith.extf
// CHECK:         arith.addf
// CHECK:         arith.truncf
// CHECK-NOT:   linalg.matmul
func.func @mm(%A: memref<64x32xf16>, %B: memref<32x48xf16>, %C: memref<64x48xf16>) {
  linalg.matmul ins(%A, %B : memref<64x32xf16>, memref<32x48xf16>) outs(%C : memref<64x48xf16>)
  return
}

// -----

// A batched matmul into f32: the batch is grid z, no rounding.
// CHECK-LABEL: func.func @bmm
// CHECK:       gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c2
// CHECK:         gpu.subgroup_mma_load_matrix %arg0[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:       linalg.generic
// CHECK-NOT:     arith.truncf
// CHECK:       return
func.func @bmm(%A: memref<2x16x32xf16>, %B: memref<2x32x16xf16>, %C: memref<2x16x16xf32>) {
  linalg.batch_matmul ins(%A, %B : memref<2x16x32xf16>, memref<2x32x16xf16>) outs(%C : memref<2x16x16xf32>)
  return
}

// -----

// Negative: M = 8 is not a multiple of 16, and f32 inputs have no f16 tensor-core form here.
// CHECK-LABEL: func.func @odd
// CHECK-NOT:   gpu.launch
// CHECK:       linalg.matmul
// CHECK-LABEL: func.func @f32
// CHECK-NOT:   gpu.launch
// CHECK:       linalg.matmul
func.func @odd(%A: memref<8x32xf16>, %B: memref<32x48xf16>, %C: memref<8x48xf16>) {
  linalg.matmul ins(%A, %B : memref<8x32xf16>, memref<32x48xf16>) outs(%C : memref<8x48xf16>)
  return
}
func.func @f32(%A: memref<16x16xf32>, %B: memref<16x16xf32>, %C: memref<16x16xf32>) {
  linalg.matmul ins(%A, %B : memref<16x16xf32>, memref<16x16xf32>) outs(%C : memref<16x16xf32>)
  return
}
