// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-matmul-microkernel{vector-width=8 kc=64 mc=48 nc=256 direct=false parallel=false})' | FileCheck %s
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-matmul-microkernel{vector-width=8 kc=64 mc=48 nc=256 direct=false parallel-min-flops=0})' | FileCheck %s --check-prefix=PAR
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-matmul-microkernel{vector-width=8 kc=64 mc=48 nc=256 direct=false parallel-min-flops=0 im2col-parallel-min=0})' | FileCheck %s --check-prefix=IM2COL

// Multi-threaded kernels (`parallel-min-flops`, default 2^20): @K puts the operands'
// descriptors into a stack context and runs @K_entry over the items (here the 6 NR-column
// panels of N = 96 > M = 64) with the runtime's `accel_parallel_for`; @K_entry loads them
// back and calls @K_body on items [lo, hi), the serial kernel over those columns.
// PAR-LABEL: func.func @matmul
// PAR:       call @[[K:accel_gemm_64x96x80_nn_[0-9a-f]+]](%arg0, %arg1, %arg2)
// PAR:       func.func private @accel_parallel_for((!llvm.ptr, index, index) -> (), !llvm.ptr, index)
// PAR:       func.func private @[[K]](
// PAR:         llvm.alloca %{{.*}} x !llvm.array<3 x struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>>
// PAR-COUNT-3: llvm.store
// PAR:         %[[F:.*]] = constant @[[K]]_entry : (!llvm.ptr, index, index) -> ()
// PAR:         call @accel_parallel_for(%[[F]], %{{.*}}, %c6)
// PAR:       func.func private @[[K]]_entry(%{{.*}}: !llvm.ptr, %[[LO:.*]]: index, %[[HI:.*]]: index)
// PAR-COUNT-3: llvm.load
// PAR:         call @[[K]]_body(%{{.*}}, %{{.*}}, %{{.*}}, %[[LO]], %[[HI]])
// PAR:       func.func private @[[K]]_body(%{{.*}}: memref<64x80xf32>, %{{.*}}: memref<80x96xf32>, %{{.*}}: memref<64x96xf32>, %{{.*}}: index, %{{.*}}: index)
// PAR:         vector.fma

// A static f32 matmul becomes a call to a private packed GEMM kernel: B and A packed into
// zero-padded panels, a 6x16 micro-kernel of vector<8xf32> FMAs (12 accumulators). M = 64
// past MC = 48 runs as two equal M blocks of 36 rows (6 panels of 6), not 48 + 16.
// CHECK-LABEL: func.func @matmul
// CHECK-NOT:   linalg.matmul
// CHECK:       call @[[K:accel_gemm_64x96x80_nn_[0-9a-f]+]](%arg0, %arg1, %arg2) : (memref<64x80xf32>, memref<80x96xf32>, memref<64x96xf32>) -> ()
// CHECK:       func.func private @[[K]](%{{.*}}: memref<64x80xf32>, %{{.*}}: memref<80x96xf32>, %{{.*}}: memref<64x96xf32>)
// CHECK-DAG:   memref.alloc() {alignment = 64 : i64} : memref<6x64x16xf32>
// CHECK-DAG:   memref.alloc() {alignment = 64 : i64} : memref<6x64x6xf32>
// Two M blocks share each packed B block: B keeps NC = 256 columns per block.
// CHECK:       scf.for %{{.*}} = %c0 to %c96 step %c256 {
// The C tile's lines are prefetched (for writing) before the k loop that accumulates it.
// CHECK:       memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}], write, locality<3>, data : memref<64x96xf32>
// The next row tile's A panel is prefetched (for reading) inside the k loop.
// CHECK:       scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK:         memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], read, locality<3>, data : memref<6x64x6xf32>
// CHECK:         vector.load
// CHECK:         vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK:         vector.fma %{{.*}} : vector<8xf32>
// CHECK-NOT:   memref.dealloc
func.func @matmul(%a: memref<64x80xf32>, %b: memref<80x96xf32>, %c: memref<64x96xf32>) {
  linalg.matmul ins(%a, %b : memref<64x80xf32>, memref<80x96xf32>) outs(%c : memref<64x96xf32>)
  return
}

// -----

// M within MC (40 <= 48): the one M block reads each packed B block once, so B is packed
// in blocks of MC columns rounded to NR (48, half of L2 like A's), not NC = 256.
// CHECK-LABEL: func.func @one_m_block
// CHECK:       func.func private @accel_gemm_40x300x70_nn_{{[0-9a-f]+}}(
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<3x64x16xf32>
// CHECK:         scf.for %{{.*}} = %c0 to %c300 step %c48 {
func.func @one_m_block(%a: memref<40x70xf32>, %b: memref<70x300xf32>, %c: memref<40x300xf32>) {
  linalg.matmul ins(%a, %b : memref<40x70xf32>, memref<70x300xf32>) outs(%c : memref<40x300xf32>)
  return
}

// -----

// Sizes that are not multiples of the tiles use the same kernel (zero-padded packing,
// edge tiles written back through a scratch tile).
// CHECK-LABEL: func.func @odd
// CHECK:       call @[[K:accel_gemm_67x73x71_nn_[0-9a-f]+]](
// CHECK:       func.func private @[[K]]
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<6x16xf32>
func.func @odd(%a: memref<67x71xf32>, %b: memref<71x73xf32>, %c: memref<67x73xf32>) {
  linalg.matmul ins(%a, %b : memref<67x71xf32>, memref<71x73xf32>) outs(%c : memref<67x73xf32>)
  return
}

// -----

// Two matmuls of one shape share one kernel.
// CHECK-LABEL: func.func @shared
// CHECK:       call @[[K:accel_gemm_64x64x64_nn_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK:       call @[[K]](%arg2, %arg1, %arg3)
// CHECK:       func.func private @[[K]]
// CHECK-NOT:   func.func private
func.func @shared(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>, %d: memref<64x64xf32>) {
  linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%c, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%d : memref<64x64xf32>)
  return
}

// -----

// A matmul with B transposed by its indexing_maps reads B as N x K ("nt" kernel).
// CHECK-LABEL: func.func @matmul_transpose_b
// CHECK:       call @[[K:accel_gemm_64x96x80_nt_[0-9a-f]+]](%arg0, %arg1, %arg2) : (memref<64x80xf32>, memref<96x80xf32>, memref<64x96xf32>)
// CHECK:       func.func private @[[K]]
func.func @matmul_transpose_b(%a: memref<64x80xf32>, %b: memref<96x80xf32>, %c: memref<64x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%a, %b : memref<64x80xf32>, memref<96x80xf32>) outs(%c : memref<64x96xf32>)
  return
}

// -----

// nn.Linear after bufferization: the weight's transposed copy is read in place instead
// (the kernel packs W^T straight from W); the copy and its buffer go.
// CHECK-LABEL: func.func @linear
// CHECK-NOT:   linalg.transpose
// CHECK-NOT:   memref.alloc() {{.*}} : memref<80x96xf32>
// CHECK:       %[[W:.*]] = memref.get_global @weight : memref<96x80xf32>
// CHECK:       call @[[K:accel_gemm_64x96x80_nt_[0-9a-f]+]](%arg0, %[[W]], %arg1)
// CHECK:       func.func private @[[K]]
memref.global "private" constant @weight : memref<96x80xf32> = dense<1.0>
func.func @linear(%x: memref<64x80xf32>, %y: memref<64x96xf32>) {
  %w = memref.get_global @weight : memref<96x80xf32>
  %t = memref.alloc() {alignment = 64 : i64} : memref<80x96xf32>
  linalg.transpose ins(%w : memref<96x80xf32>) outs(%t : memref<80x96xf32>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<64x80xf32>, memref<80x96xf32>) outs(%y : memref<64x96xf32>)
  return
}

// -----

// nn.Linear on a (batch, seq, features) input: the input's collapse to 2-D lies between
// the transpose and the matmul (a view writes nothing): still folded.
// CHECK-LABEL: func.func @linear_3d
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[X:.*]] = memref.collapse_shape %arg0
// CHECK:       call @{{accel_gemm_64x96x80_nt_[0-9a-f]+}}(%[[X]], %arg1, %arg2)
func.func @linear_3d(%x: memref<2x32x80xf32>, %w: memref<96x80xf32>, %y: memref<64x96xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<80x96xf32>
  linalg.transpose ins(%w : memref<96x80xf32>) outs(%t : memref<80x96xf32>) permutation = [1, 0]
  %x2 = memref.collapse_shape %x [[0, 1], [2]] : memref<2x32x80xf32> into memref<64x80xf32>
  linalg.matmul ins(%x2, %t : memref<64x80xf32>, memref<80x96xf32>) outs(%y : memref<64x96xf32>)
  return
}

// -----

// A transposed copy that something else also reads stays; the matmul reads the copy.
// CHECK-LABEL: func.func @linear_shared_copy
// CHECK:       linalg.transpose
// CHECK:       call @{{accel_gemm_64x96x80_nn_[0-9a-f]+}}(%arg0, %alloc, %arg2)
func.func @linear_shared_copy(%x: memref<64x80xf32>, %w: memref<96x80xf32>, %y: memref<64x96xf32>, %z: memref<80x96xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<80x96xf32>
  linalg.transpose ins(%w : memref<96x80xf32>) outs(%t : memref<80x96xf32>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<64x80xf32>, memref<80x96xf32>) outs(%y : memref<64x96xf32>)
  memref.copy %t, %z : memref<80x96xf32> to memref<80x96xf32>
  return
}

// -----

// batch_matmul: one kernel loops over the batch.
// CHECK-LABEL: func.func @batch_matmul
// CHECK:       call @[[K:accel_gemm_3x64x96x80_nn_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK:       func.func private @[[K]]
// CHECK:         scf.for %[[B:.*]] = %c0 to %c3 step %c1
// CHECK:           memref.load %{{.*}}[%[[B]], %{{.*}}, %{{.*}}] : memref<3x80x96xf32>
func.func @batch_matmul(%a: memref<3x64x80xf32>, %b: memref<3x80x96xf32>, %c: memref<3x64x96xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x64x80xf32>, memref<3x80x96xf32>) outs(%c : memref<3x64x96xf32>)
  return
}

// -----

// Not matched: f64 (the kernel is f32 only).
// CHECK-LABEL: func.func @not_f32
// CHECK:       linalg.matmul
// CHECK-NOT:   call
func.func @not_f32(%a: memref<64x80xf64>, %b: memref<80x96xf64>, %c: memref<64x96xf64>) {
  linalg.matmul ins(%a, %b : memref<64x80xf64>, memref<80x96xf64>) outs(%c : memref<64x96xf64>)
  return
}

// -----

// Not matched: dynamic shapes (tile counts and buffer sizes are static).
// CHECK-LABEL: func.func @dynamic
// CHECK:       linalg.matmul
// CHECK-NOT:   call
func.func @dynamic(%a: memref<?x80xf32>, %b: memref<80x96xf32>, %c: memref<?x96xf32>) {
  linalg.matmul ins(%a, %b : memref<?x80xf32>, memref<80x96xf32>) outs(%c : memref<?x96xf32>)
  return
}

// -----

// Not matched: a dimension below min-size (16), where padding to the tile wastes most work.
// CHECK-LABEL: func.func @thin
// CHECK:       linalg.matmul
// CHECK-NOT:   call
func.func @thin(%a: memref<4x512xf32>, %b: memref<512x512xf32>, %c: memref<4x512xf32>) {
  linalg.matmul ins(%a, %b : memref<4x512xf32>, memref<512x512xf32>) outs(%c : memref<4x512xf32>)
  return
}

// -----

// Not matched: below min-flops (M*N*K < 2^18), where packing does not pay off.
// CHECK-LABEL: func.func @tiny
// CHECK:       linalg.matmul
// CHECK-NOT:   call
func.func @tiny(%a: memref<32x32xf32>, %b: memref<32x32xf32>, %c: memref<32x32xf32>) {
  linalg.matmul ins(%a, %b : memref<32x32xf32>, memref<32x32xf32>) outs(%c : memref<32x32xf32>)
  return
}

// -----

// Not matched: linalg on tensors (the pass runs after bufferization).
// CHECK-LABEL: func.func @tensors
// CHECK:       linalg.matmul
// CHECK-NOT:   call
func.func @tensors(%a: tensor<64x80xf32>, %b: tensor<80x96xf32>, %c: tensor<64x96xf32>) -> tensor<64x96xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<64x80xf32>, tensor<80x96xf32>) outs(%c : tensor<64x96xf32>) -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}

// -----

// Not folded: the transpose's input is overwritten before the matmul, so the matmul must
// read the copy.
// CHECK-LABEL: func.func @linear_source_written
// CHECK:       linalg.transpose
// CHECK:       call @{{accel_gemm_64x96x80_nn_[0-9a-f]+}}(%arg0, %alloc, %arg2)
func.func @linear_source_written(%x: memref<64x80xf32>, %w: memref<96x80xf32>, %y: memref<64x96xf32>, %z: memref<96x80xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<80x96xf32>
  linalg.transpose ins(%w : memref<96x80xf32>) outs(%t : memref<80x96xf32>) permutation = [1, 0]
  memref.copy %z, %w : memref<96x80xf32> to memref<96x80xf32>
  linalg.matmul ins(%x, %t : memref<64x80xf32>, memref<80x96xf32>) outs(%y : memref<64x96xf32>)
  return
}

// -----

// linalg.conv_2d_nchw_fchw (input already padded): per image an im2col of X[n] into
// cols[C*KH*KW][OH*OW] (row c*9 + kh*3 + kw, column oh*OW + ow, reading
// X[n, c, oh*sh + kh*dh, ow*sw + kw*dw]), then the GEMM kernel on W viewed as F x C*KH*KW,
// cols, and out[n] viewed as F x OH*OW (a subview: strided with a dynamic offset).
// CHECK-LABEL: func.func @conv
// CHECK-NOT:   linalg.conv_2d_nchw_fchw
// CHECK:       call @[[C:accel_conv_2x16x35x35_32x3x3_[0-9a-f]+]](%arg0, %arg1, %arg2) : (memref<2x16x35x35xf32>, memref<32x16x3x3xf32>, memref<2x32x16x16xf32>) -> ()
// CHECK:       func.func private @[[K:accel_gemm_32x256x144_nn_[0-9a-f]+]](%{{.*}}: memref<32x144xf32>, %{{.*}}: memref<144x256xf32>, %{{.*}}: memref<32x256xf32, strided<[256, 1], offset: ?>>)
// CHECK:       func.func private @[[C]](%[[X:.*]]: memref<2x16x35x35xf32>, %[[W:.*]]: memref<32x16x3x3xf32>, %[[O:.*]]: memref<2x32x16x16xf32>)
// CHECK-DAG:     %[[COLS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<144x256xf32>
// CHECK-DAG:     %[[WM:.*]] = memref.collapse_shape %[[W]] {{\[}}[0], [1, 2, 3]] : memref<32x16x3x3xf32> into memref<32x144xf32>
// CHECK-DAG:     %[[O3:.*]] = memref.collapse_shape %[[O]] {{\[}}[0], [1], [2, 3]] : memref<2x32x16x16xf32> into memref<2x32x256xf32>
// CHECK:         scf.for %[[N:.*]] = %c0 to %c2 step %c1
// CHECK:           arith.muli %{{.*}}, %c2 : index
// CHECK:           %[[V:.*]] = memref.load %[[X]][%[[N]], %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x16x35x35xf32>
// CHECK:           memref.store %[[V]], %[[COLS]][%{{.*}}, %{{.*}}] : memref<144x256xf32>
// CHECK:         %[[ON:.*]] = memref.subview %[[O3]][%[[N]], 0, 0] [1, 32, 256] [1, 1, 1] : memref<2x32x256xf32> to memref<32x256xf32, strided<[256, 1], offset: ?>>
// CHECK:         call @[[K]](%[[WM]], %[[COLS]], %[[ON]])
// CHECK-NOT:     memref.dealloc
// Threaded im2col (`im2col-parallel-min`, default 2^18 copies per image; here 0): per image
// the conv stores X[n]'s descriptor into the context that already holds cols' and runs
// @C_im2col_entry over the 144 rows of cols (one per item) with accel_parallel_for, which
// the module declares once although the GEMM kernel calls it too.
// IM2COL-LABEL: func.func @conv
// IM2COL:       call @[[C:accel_conv_2x16x35x35_32x3x3_[0-9a-f]+]](%arg0, %arg1, %arg2)
// IM2COL:       func.func private @accel_parallel_for((!llvm.ptr, index, index) -> (), !llvm.ptr, index)
// IM2COL-NOT:   func.func private @accel_parallel_for
// IM2COL:       func.func private @[[K:accel_gemm_32x256x144_nn_[0-9a-f]+]](
// IM2COL:         call @accel_parallel_for
// IM2COL:       func.func private @[[C]](%[[X:.*]]: memref<2x16x35x35xf32>, %{{.*}}: memref<32x16x3x3xf32>, %{{.*}}: memref<2x32x16x16xf32>)
// IM2COL:         %[[COLS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<144x256xf32>
// IM2COL:         %[[CTX:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>, struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>)>
// IM2COL:         builtin.unrealized_conversion_cast %[[COLS]]
// IM2COL:         %[[F:.*]] = constant @[[C]]_im2col_entry : (!llvm.ptr, index, index) -> ()
// IM2COL:         scf.for %[[N:.*]] = %c0 to %c2 step %c1
// IM2COL:           memref.subview %[[X]][%[[N]], 0, 0, 0] [1, 16, 35, 35] [1, 1, 1, 1] : memref<2x16x35x35xf32> to memref<16x35x35xf32, strided<[1225, 35, 1], offset: ?>>
// IM2COL:           func.call @accel_parallel_for(%[[F]], %[[CTX]], %c144)
// IM2COL:           func.call @[[K]](%{{.*}}, %[[COLS]], %{{.*}})
// IM2COL:       func.func private @[[C]]_im2col_entry(%{{.*}}: !llvm.ptr, %[[LO:.*]]: index, %[[HI:.*]]: index)
// IM2COL-COUNT-2: llvm.load
// IM2COL:         call @[[C]]_im2col(%{{.*}}, %{{.*}}, %[[LO]], %[[HI]])
// IM2COL:       func.func private @[[C]]_im2col(%{{.*}}: memref<16x35x35xf32, strided<[1225, 35, 1], offset: ?>>, %{{.*}}: memref<144x256xf32>, %{{.*}}: index, %{{.*}}: index)
// IM2COL:         memref.store %{{.*}} : memref<144x256xf32>
// IM2COL-NOT:   func.func private @accel_parallel_for
func.func @conv(%x: memref<2x16x35x35xf32>, %w: memref<32x16x3x3xf32>, %o: memref<2x32x16x16xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : memref<2x16x35x35xf32>, memref<32x16x3x3xf32>) outs(%o : memref<2x32x16x16xf32>)
  return
}

// -----

// Not matched: a convolution whose GEMM (F x OH*OW x C*KH*KW) has a dim below min-size (F = 8).
// CHECK-LABEL: func.func @conv_small
// CHECK:       linalg.conv_2d_nchw_fchw
// CHECK-NOT:   call
func.func @conv_small(%x: memref<1x3x34x34xf32>, %w: memref<8x3x3x3xf32>, %o: memref<1x8x32x32xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x3x34x34xf32>, memref<8x3x3x3xf32>) outs(%o : memref<1x8x32x32xf32>)
  return
}

// -----

// BLAS's beta = 0 for packed kernels: the zero fill before the matmul goes ("_z") and the
// first K block (%pc == 0) stores its tiles where the others load, add and store.
// CHECK-LABEL: func.func @zero_start
// IM2COL-LABEL: func.func @zero_start
// CHECK-NOT:   linalg.fill
// CHECK:       call @[[K:accel_gemm_64x96x300_nn_[0-9a-f]+_z]](%arg0, %arg1, %{{.*}})
// CHECK:       func.func private @[[K]](
// CHECK:       scf.for %[[PC:.*]] = %c0 to %c300 step %c64
// CHECK:       %[[FIRST:.*]] = arith.cmpi eq, %[[PC]], %c0
// CHECK:       scf.if %[[FIRST]] {
// CHECK-NEXT:    vector.store
// CHECK:       } else {
// CHECK-NEXT:    vector.load
// CHECK-NEXT:    arith.addf
func.func @zero_start(%a: memref<64x300xf32>, %b: memref<300x96xf32>) -> memref<64x96xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() {alignment = 64 : i64} : memref<64x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<64x96xf32>)
  linalg.matmul ins(%a, %b : memref<64x300xf32>, memref<300x96xf32>) outs(%c : memref<64x96xf32>)
  return %c : memref<64x96xf32>
}
