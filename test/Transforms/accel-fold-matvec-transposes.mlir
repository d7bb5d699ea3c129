// RUN: accel-opt %s --split-input-file -accel-fold-matvec-transposes | FileCheck %s

// nn.Linear at batch 1: the weight's transpose becomes the matmul's B map (N x K read
// in place); the transpose and its empty tensor are gone.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear_row
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[R:.*]] = linalg.matmul indexing_maps = [#[[A]], #[[B]], #[[C]]] ins(%arg0, %arg1 : tensor<1x64xf32>, tensor<1000x64xf32>)
// CHECK:       return %[[R]]
func.func @linear_row(%x: tensor<1x64xf32>, %w: tensor<1000x64xf32>) -> tensor<1x1000xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x1000xf32>
  %t = linalg.transpose ins(%w : tensor<1000x64xf32>) outs(%e : tensor<64x1000xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<1x1000xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<1x1000xf32>) -> tensor<1x1000xf32>
  %r = linalg.matmul ins(%x, %t : tensor<1x64xf32>, tensor<64x1000xf32>) outs(%f : tensor<1x1000xf32>) -> tensor<1x1000xf32>
  return %r : tensor<1x1000xf32>
}

// -----

// Fifteen rows still fold (GEMV_MAX_ROWS).
// CHECK-LABEL: func.func @fifteen_rows
// CHECK-NOT:   linalg.transpose
// CHECK:       linalg.matmul indexing_maps
func.func @fifteen_rows(%x: tensor<15x64xf32>, %w: tensor<256x64xf32>, %c: tensor<15x256xf32>) -> tensor<15x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %t = linalg.transpose ins(%w : tensor<256x64xf32>) outs(%e : tensor<64x256xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%x, %t : tensor<15x64xf32>, tensor<64x256xf32>) outs(%c : tensor<15x256xf32>) -> tensor<15x256xf32>
  return %r : tensor<15x256xf32>
}

// -----

// Negative: sixteen rows are the GEMM kernels' (which fold the copy themselves).
// CHECK-LABEL: func.func @sixteen_rows
// CHECK:       linalg.transpose
// CHECK:       linalg.matmul ins
func.func @sixteen_rows(%x: tensor<16x64xf32>, %w: tensor<256x64xf32>, %c: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %t = linalg.transpose ins(%w : tensor<256x64xf32>) outs(%e : tensor<64x256xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%x, %t : tensor<16x64xf32>, tensor<64x256xf32>) outs(%c : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %r : tensor<16x256xf32>
}

// -----

// Negative: the transposed copy has another user, so it stays (and so does the matmul).
// CHECK-LABEL: func.func @shared_copy
// CHECK:       %[[T:.*]] = linalg.transpose
// CHECK:       linalg.matmul ins(%arg0, %[[T]]
// CHECK:       return {{.*}}, %[[T]]
func.func @shared_copy(%x: tensor<1x64xf32>, %w: tensor<256x64xf32>, %c: tensor<1x256xf32>) -> (tensor<1x256xf32>, tensor<64x256xf32>) {
  %e = tensor.empty() : tensor<64x256xf32>
  %t = linalg.transpose ins(%w : tensor<256x64xf32>) outs(%e : tensor<64x256xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%x, %t : tensor<1x64xf32>, tensor<64x256xf32>) outs(%c : tensor<1x256xf32>) -> (tensor<1x256xf32>)
  return %r, %t : tensor<1x256xf32>, tensor<64x256xf32>
}

// -----

// Negative: B is not a transpose (GPT-2's Conv1D weight is already K x N).
// CHECK-LABEL: func.func @plain_weight
// CHECK:       linalg.matmul ins(%arg0, %arg1
func.func @plain_weight(%x: tensor<1x64xf32>, %w: tensor<64x256xf32>, %c: tensor<1x256xf32>) -> tensor<1x256xf32> {
  %r = linalg.matmul ins(%x, %w : tensor<1x64xf32>, tensor<64x256xf32>) outs(%c : tensor<1x256xf32>) -> tensor<1x256xf32>
  return %r : tensor<1x256xf32>
}

// -----

// Negative: f16 operands (the matrix-vector kernels are f32).
// CHECK-LABEL: func.func @half
// CHECK:       linalg.transpose
func.func @half(%x: tensor<1x64xf16>, %w: tensor<256x64xf16>, %c: tensor<1x256xf16>) -> tensor<1x256xf16> {
  %e = tensor.empty() : tensor<64x256xf16>
  %t = linalg.transpose ins(%w : tensor<256x64xf16>) outs(%e : tensor<64x256xf16>) permutation = [1, 0]
  %r = linalg.matmul ins(%x, %t : tensor<1x64xf16>, tensor<64x256xf16>) outs(%c : tensor<1x256xf16>) -> tensor<1x256xf16>
  return %r : tensor<1x256xf16>
}

// -----

// Negative: a weight within L1 (a tiny ViT's 10 x 64 head) stays a transposed copy: no
// matrix-vector kernel takes it, and loops fuse as before.
// CHECK-LABEL: func.func @small_weight
// CHECK:       linalg.transpose
// CHECK:       linalg.matmul ins
func.func @small_weight(%x: tensor<2x64xf32>, %w: tensor<10x64xf32>, %c: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %e = tensor.empty() : tensor<64x10xf32>
  %t = linalg.transpose ins(%w : tensor<10x64xf32>) outs(%e : tensor<64x10xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%x, %t : tensor<2x64xf32>, tensor<64x10xf32>) outs(%c : tensor<2x10xf32>) -> tensor<2x10xf32>
  return %r : tensor<2x10xf32>
}

// -----

// Negative: a reduction over 4x longer than the output is wide (a weight-gradient shape)
// gets no matrix-vector kernel, so its transpose stays too.
// CHECK-LABEL: func.func @long_reduction
// CHECK:       linalg.transpose
// CHECK:       linalg.matmul ins
func.func @long_reduction(%x: tensor<1x2048xf32>, %w: tensor<100x2048xf32>, %c: tensor<1x100xf32>) -> tensor<1x100xf32> {
  %e = tensor.empty() : tensor<2048x100xf32>
  %t = linalg.transpose ins(%w : tensor<100x2048xf32>) outs(%e : tensor<2048x100xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%x, %t : tensor<1x2048xf32>, tensor<2048x100xf32>) outs(%c : tensor<1x100xf32>) -> tensor<1x100xf32>
  return %r : tensor<1x100xf32>
}
