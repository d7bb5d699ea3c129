// RUN: accel-opt %s --split-input-file -accel-nvgpu-tensor-core-matmul -inline | FileCheck %s
// RUN: accel-opt %s --split-input-file -accel-nvgpu-tensor-core-matmul="tf32=true f16-accumulate=true" -inline | FileCheck %s --check-prefix=MODE

// An f16 matmul into f16: one warp per 16x16 tile of WMMA with f32 sums in a temporary,
// then one loop adds them to the output and rounds to f16 once (torch's numerics).
// With f16-accumulate (mm_conv_precision_mode=fp16) the sums are f16, straight into C.
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
// MODE-LABEL:  func.func @mm
// MODE-NOT:    memref.alloc
// MODE:        gpu.subgroup_mma_load_matrix %arg2{{.*}} -> !gpu.mma_matrix<16x16xf16, "COp">
// MODE:        gpu.subgroup_mma_compute {{.*}} -> !gpu.mma_matrix<16x16xf16, "COp">
// MODE:        gpu.subgroup_mma_store_matrix {{.*}}, %arg2
// MODE-NOT:    linalg.generic
func.func @mm(%A: memref<64x32xf16>, %B: memref<32x48xf16>, %C: memref<64x48xf16>) {
  linalg.matmul ins(%A, %B : memref<64x32xf16>, memref<32x48xf16>) outs(%C : memref<64x48xf16>)
  return
}

// -----

// A batched matmul into f32: the batch is grid z; C's values start the f32 sums and the
// sums go back into C (no temporary, no rounding loop).
// CHECK-LABEL: func.func @bmm
// CHECK-NOT:   memref.alloc
// CHECK:       gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c2
// CHECK:         gpu.subgroup_mma_load_matrix %arg2[{{.*}}] {{.*}} -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK:         gpu.subgroup_mma_load_matrix %arg0[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:         gpu.subgroup_mma_store_matrix {{.*}}, %arg2
// CHECK-NOT:   linalg.generic
// CHECK:       return
func.func @bmm(%A: memref<2x16x32xf16>, %B: memref<2x32x16xf16>, %C: memref<2x16x16xf32>) {
  linalg.batch_matmul ins(%A, %B : memref<2x16x32xf16>, memref<2x32x16xf16>) outs(%C : memref<2x16x16xf32>)
  return
}

// -----

// int8 operands into int32 (mixed_int8_int32), 64 x 64 x 32: the blocked kernel (4 warps,
// 64 x 64 tile, A and B slices in shared memory between barriers), s8 fragments from rows
// where each 16-byte chunk is spread over 32 bytes (WMMA pointers are 32-byte aligned);
// 2 x 2 fragments of i32 sums per warp start from C.
// CHECK-LABEL: func.func @i8
// CHECK:       gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c128
// CHECK-SAME:    workgroup({{.*}} : memref<64x96xi8, #gpu.address_space<workgroup>>, {{.*}} : memref<32x160xi8, #gpu.address_space<workgroup>>)
// CHECK-COUNT-4: gpu.subgroup_mma_load_matrix %arg2{{.*}} -> !gpu.mma_matrix<16x16xi32, "COp">
// CHECK:         gpu.barrier
// CHECK:         gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 96 : index} : memref<64x96xi8, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xsi8, "AOp">
// CHECK-COUNT-4: gpu.subgroup_mma_compute
// CHECK:         gpu.barrier
// CHECK-COUNT-4: gpu.subgroup_mma_store_matrix {{.*}}, %arg2
func.func @i8(%A: memref<64x32xi8>, %B: memref<32x64xi8>, %C: memref<64x64xi32>) {
  linalg.matmul ins(%A, %B : memref<64x32xi8>, memref<32x64xi8>) outs(%C : memref<64x64xi32>)
  return
}

// -----

// f32 (mode tf32 only): m16n16k8 tf32 fragments, K = 24 a multiple of 8.
// CHECK-LABEL: func.func @tf32
// CHECK-NOT:   gpu.launch
// CHECK:       linalg.matmul
// MODE-LABEL:  func.func @tf32
// MODE:        %[[K:.*]] = arith.constant 8 : index
// MODE:        scf.for {{.*}} step %[[K]]
// MODE:          gpu.subgroup_mma_load_matrix %arg0{{.*}} -> !gpu.mma_matrix<16x8xf32, "AOp">
// MODE:          gpu.subgroup_mma_load_matrix %arg1{{.*}} -> !gpu.mma_matrix<8x16xf32, "BOp">
// MODE-NOT:    linalg.matmul
func.func @tf32(%A: memref<16x24xf32>, %B: memref<24x32xf32>, %C: memref<16x32xf32>) {
  linalg.matmul ins(%A, %B : memref<16x24xf32>, memref<24x32xf32>) outs(%C : memref<16x32xf32>)
  return
}

// -----

// Negative: M = 8 is not a multiple of 16; bf16 has no WMMA type in this MLIR; int8 too
// small for the blocked kernel (its per-warp k-steps would be misaligned).
// CHECK-LABEL: func.func @odd
// MODE-LABEL:  func.func @odd
// CHECK-NOT:   gpu.launch
// CHECK:       linalg.matmul
// CHECK-LABEL: func.func @i8small
// CHECK-NOT:   gpu.launch
// CHECK:       linalg.matmul
// CHECK-LABEL: func.func @bf16
// CHECK-NOT:   gpu.launch
// CHECK:       linalg.matmul
func.func @odd(%A: memref<8x32xf16>, %B: memref<32x48xf16>, %C: memref<8x48xf16>) {
  linalg.matmul ins(%A, %B : memref<8x32xf16>, memref<32x48xf16>) outs(%C : memref<8x48xf16>)
  return
}
func.func @i8small(%A: memref<32x16xi8>, %B: memref<16x32xi8>, %C: memref<32x32xi32>) {
  linalg.matmul ins(%A, %B : memref<32x16xi8>, memref<16x32xi8>) outs(%C : memref<32x32xi32>)
  return
}
func.func @bf16(%A: memref<16x16xbf16>, %B: memref<16x16xbf16>, %C: memref<16x16xf32>) {
  linalg.matmul ins(%A, %B : memref<16x16xbf16>, memref<16x16xbf16>) outs(%C : memref<16x16xf32>)
  return
}
