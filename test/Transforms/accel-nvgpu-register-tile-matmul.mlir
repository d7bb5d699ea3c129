// RUN: accel-opt %s --split-input-file -accel-nvgpu-register-tile-matmul -inline | FileCheck %s
// RUN: accel-opt %s --split-input-file -accel-nvgpu-register-tile-matmul="shared-memory=false" -inline | FileCheck %s --check-prefix=NOSHARED

// An f32 matmul with M, N multiples of 4: one parallel iteration (thread) per 4x4 tile,
// whose 16 sums start from C, are carried through the k loop and stored back.
// CHECK-LABEL: func.func @mm
// CHECK:       %[[C2:.*]] = arith.constant 2 : index
// CHECK:       %[[C3:.*]] = arith.constant 3 : index
// CHECK:       scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%[[C2]], %[[C3]])
// CHECK-COUNT-16: memref.load %arg2
// CHECK:         %{{.*}}:16 = scf.for
// CHECK-COUNT-4:   memref.load %arg0
// CHECK-COUNT-16:  arith.mulf
// CHECK:           scf.yield
// CHECK-COUNT-16: memref.store {{.*}}, %arg2
// CHECK-NOT:   linalg.matmul
func.func @mm(%A: memref<8x5xf32>, %B: memref<5x12xf32>, %C: memref<8x12xf32>) {
  linalg.matmul ins(%A, %B : memref<8x5xf32>, memref<5x12xf32>) outs(%C : memref<8x12xf32>)
  return
}

// -----

// A batched matmul: the batch is the first parallel dimension (the unit tile dimensions
// of a 4x4 output fold away).
// CHECK-LABEL: func.func @bmm
// CHECK:       scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%c3)
// CHECK:         memref.load %arg2[%[[B]],
func.func @bmm(%A: memref<3x4x8xf32>, %B: memref<3x8x4xf32>, %C: memref<3x4x4xf32>) {
  linalg.batch_matmul ins(%A, %B : memref<3x4x8xf32>, memref<3x8x4xf32>) outs(%C : memref<3x4x4xf32>)
  return
}

// -----

// Negative: N = 6 is not a multiple of 4; f16 is the tensor-core pass's.
// CHECK-LABEL: func.func @odd
// CHECK-NOT:   scf.parallel
// CHECK:       linalg.matmul
// CHECK-LABEL: func.func @half
// CHECK-NOT:   scf.parallel
// CHECK:       linalg.matmul
func.func @odd(%A: memref<8x5xf32>, %B: memref<5x6xf32>, %C: memref<8x6xf32>) {
  linalg.matmul ins(%A, %B : memref<8x5xf32>, memref<5x6xf32>) outs(%C : memref<8x6xf32>)
  return
}
func.func @half(%A: memref<16x16xf16>, %B: memref<16x16xf16>, %C: memref<16x16xf16>) {
  linalg.matmul ins(%A, %B : memref<16x16xf16>, memref<16x16xf16>) outs(%C : memref<16x16xf16>)
  return
}

// -----

// 64 x 64 x 32 fits a 64 x 64 x 16 block tile: one launch of 256 threads per tile, A (transposed,
// rows padded to 68) and B slices in shared memory between two barriers, 4 x 4 sums per
// thread from C. With shared-memory=false it keeps the 4 x 4 register tiles.
// CHECK-LABEL: func.func @shared
// CHECK:       gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK-SAME:    workgroup({{.*}} : memref<16x68xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<16x64xf32, #gpu.address_space<workgroup>>)
// CHECK:         %{{.*}}:16 = scf.for
// CHECK:           gpu.barrier
// CHECK:           %{{.*}}:16 = scf.for
// CHECK-COUNT-16:    arith.mulf
// CHECK:           gpu.barrier
// CHECK-NOT:   linalg.matmul
// NOSHARED-LABEL: func.func @shared
// NOSHARED-NOT:   gpu.launch
// NOSHARED:       scf.parallel
func.func @shared(%A: memref<64x32xf32>, %B: memref<32x64xf32>, %C: memref<64x64xf32>) {
  linalg.matmul ins(%A, %B : memref<64x32xf32>, memref<32x64xf32>) outs(%C : memref<64x64xf32>)
  return
}
