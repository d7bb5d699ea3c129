// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-matmul-microkernel{vector-width=8 parallel=false})' | FileCheck %s

// Unpacked kernels, additive epilogues and the vectorised packing of a transposed B.

// A small matmul whose operands fit the cache calls an unpacked ("_d") kernel: no packing
// buffers, B's rows read in place, MR x NR accumulators loaded from and stored to C.
// CHECK-LABEL: func.func @direct
// CHECK:       call @[[K:accel_gemm_64x64x64_nn_[0-9a-f]+_d]](%arg0, %arg1, %arg2)
// CHECK:       func.func private @[[K]](
// CHECK-NOT:   memref.alloc
// CHECK:       vector.load %arg2
// CHECK:       scf.for
// CHECK:       vector.fma
// CHECK:       vector.store
func.func @direct(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %C: memref<64x64xf32>) {
  linalg.matmul ins(%A, %B : memref<64x64xf32>, memref<64x64xf32>) outs(%C : memref<64x64xf32>)
  return
}

// -----

// Static remainders are straight-line code: 28 = 4 x 6 + 4 rows, 20 = 16 + 4 columns (a
// masked load and store of 4 lanes); below min-flops (2^18) but above direct-min-flops.
// CHECK-LABEL: func.func @direct_edges
// CHECK:       call @[[K:accel_gemm_28x20x64_nn_[0-9a-f]+_d]](
// CHECK:       func.func private @[[K]](
// CHECK:       vector.constant_mask [4] : vector<8xi1>
// CHECK:       vector.maskedload %arg1
// CHECK:       vector.maskedstore %arg2
func.func @direct_edges(%A: memref<28x64xf32>, %B: memref<64x20xf32>, %C: memref<28x20xf32>) {
  linalg.matmul ins(%A, %B : memref<28x64xf32>, memref<64x20xf32>) outs(%C : memref<28x20xf32>)
  return
}

// -----

// B rows 1024 floats (4 KiB) apart share L1 sets: each K x NR panel is copied to a stack
// buffer first ("_dc"), which the FMAs then read.
// CHECK-LABEL: func.func @direct_copy_b
// CHECK:       call @[[K:accel_gemm_64x64x64_nn_[0-9a-f]+_dc]](
// CHECK:       func.func private @[[K]](
// CHECK:       %[[BP:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK:       vector.store %{{.*}}, %[[BP]]
// CHECK:       vector.load %[[BP]]
func.func @direct_copy_b(%A: memref<64x64xf32>, %Bfull: memref<64x1024xf32>,
                         %C: memref<64x64xf32>) {
  %B = memref.subview %Bfull[0, 0] [64, 64] [1, 1]
      : memref<64x1024xf32> to memref<64x64xf32, strided<[1024, 1]>>
  linalg.matmul ins(%A, %B : memref<64x64xf32>, memref<64x64xf32, strided<[1024, 1]>>)
                outs(%C : memref<64x64xf32>)
  return
}

// -----

// Negative: a small matmul with a transposed B (read across rows) gets no unpacked kernel
// and, below min-flops, stays a linalg op.
// CHECK-LABEL: func.func @small_transposed_b
// CHECK:       linalg.matmul
// CHECK-NOT:   call @accel_gemm
func.func @small_transposed_b(%A: memref<32x32xf32>, %B: memref<32x32xf32>,
                              %C: memref<32x32xf32>) {
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%A, %B : memref<32x32xf32>, memref<32x32xf32>) outs(%C : memref<32x32xf32>)
  return
}

// -----

// nn.Linear's bias: the zero fill becomes a broadcast copy of the bias into C, the GEMM
// accumulates onto it, and the `C + bias` pass and its buffer go (D's uses read C).
// CHECK-LABEL: func.func @bias_epilogue
// CHECK:       %[[C:.*]] = memref.alloc() {alignment = 64 : i64} : memref<96x64xf32>
// CHECK-NEXT:  linalg.generic {{.*}} ins(%arg2 : memref<64xf32>) outs(%[[C]] : memref<96x64xf32>)
// CHECK-NEXT:  ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    linalg.yield %[[IN]] : f32
// CHECK:       call @accel_gemm_96x64x48_nn_{{.*}}(%arg0, %arg1, %[[C]])
// CHECK-NOT:   memref.alloc
// CHECK-NOT:   arith.addf
// CHECK:       return %[[C]]
func.func @bias_epilogue(%A: memref<96x48xf32>, %B: memref<48x64xf32>, %bias: memref<64xf32>)
    -> memref<96x64xf32> {
  %zero = arith.constant 0.0 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<96x64xf32>
  linalg.fill ins(%zero : f32) outs(%C : memref<96x64xf32>)
  linalg.matmul ins(%A, %B : memref<96x48xf32>, memref<48x64xf32>) outs(%C : memref<96x64xf32>)
  %D = memref.alloc() {alignment = 64 : i64} : memref<96x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%C, %bias : memref<96x64xf32>, memref<64xf32>) outs(%D : memref<96x64xf32>) {
  ^bb0(%c: f32, %b: f32, %out: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  return %D : memref<96x64xf32>
}

// -----

// Negative: C is read again after the epilogue, so it must keep the plain product (the
// kernel still starts from zero instead of the fill: "_z").
// CHECK-LABEL: func.func @epilogue_c_reused
// CHECK-NOT:   linalg.fill
// CHECK:       call @accel_gemm_{{.*}}_d_z(
// CHECK:       arith.addf
func.func @epilogue_c_reused(%A: memref<96x48xf32>, %B: memref<48x64xf32>, %bias: memref<64xf32>)
    -> (memref<96x64xf32>, memref<96x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<96x64xf32>
  linalg.fill ins(%zero : f32) outs(%C : memref<96x64xf32>)
  linalg.matmul ins(%A, %B : memref<96x48xf32>, memref<48x64xf32>) outs(%C : memref<96x64xf32>)
  %D = memref.alloc() {alignment = 64 : i64} : memref<96x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%C, %bias : memref<96x64xf32>, memref<64xf32>) outs(%D : memref<96x64xf32>) {
  ^bb0(%c: f32, %b: f32, %out: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  return %C, %D : memref<96x64xf32>, memref<96x64xf32>
}

// -----

// Negative: a multiplicative epilogue (C * x) cannot start the accumulation from x, and x
// is a tensor, no constant scale: the kernel only starts from zero.
// CHECK-LABEL: func.func @epilogue_not_additive
// CHECK-NOT:   linalg.fill
// CHECK:       call @accel_gemm_{{.*}}_d_z(
// CHECK:       arith.mulf
func.func @epilogue_not_additive(%A: memref<96x48xf32>, %B: memref<48x64xf32>,
                                 %s: memref<64xf32>) -> memref<96x64xf32> {
  %zero = arith.constant 0.0 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<96x64xf32>
  linalg.fill ins(%zero : f32) outs(%C : memref<96x64xf32>)
  linalg.matmul ins(%A, %B : memref<96x48xf32>, memref<48x64xf32>) outs(%C : memref<96x64xf32>)
  %D = memref.alloc() {alignment = 64 : i64} : memref<96x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%C, %s : memref<96x64xf32>, memref<64xf32>) outs(%D : memref<96x64xf32>) {
  ^bb0(%c: f32, %b: f32, %out: f32):
    %p = arith.mulf %c, %b : f32
    linalg.yield %p : f32
  }
  return %D : memref<96x64xf32>
}

// -----

// A transposed B (nn.Linear's N x K weight) is packed 8 x 8 blocks at a time: row loads,
// a shuffle transpose, vector stores into the panel.
// CHECK-LABEL: func.func @linear_packing
// CHECK:       call @[[K:accel_gemm_64x64x96_nt_[0-9a-f]+]](
// CHECK:       func.func private @[[K]](
// CHECK:       vector.load %arg1{{.*}} vector<8xf32>
// CHECK:       vector.shuffle {{.*}} [0, 8, 1, 9, 4, 12, 5, 13]
// CHECK:       vector.shuffle {{.*}} [4, 5, 6, 7, 12, 13, 14, 15]
// CHECK:       vector.store {{.*}} vector<8xf32>
func.func @linear_packing(%A: memref<64x96xf32>, %W: memref<64x96xf32>, %C: memref<64x64xf32>) {
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%A, %W : memref<64x96xf32>, memref<64x96xf32>) outs(%C : memref<64x64xf32>)
  return
}

// -----

// A tiny output over a long reduction with B as N x K (a conv weight gradient) is dot
// products along K: vector FMAs, one horizontal reduction per output.
// CHECK-LABEL: func.func @dot
// CHECK:       call @[[K:accel_gemm_8x9x1000_nt_[0-9a-f]+_dot]](%arg0, %arg1, %arg2)
// CHECK:       func.func private @[[K]](
// CHECK:       scf.for
// CHECK:       vector.fma
// CHECK:       vector.reduction <add>
func.func @dot(%A: memref<8x1000xf32>, %B: memref<9x1000xf32>, %C: memref<8x9xf32>) {
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%A, %B : memref<8x1000xf32>, memref<9x1000xf32>) outs(%C : memref<8x9xf32>)
  return
}

// -----

// BLAS's beta = 0 and alpha: the zero fill goes (accumulators start at zero, C is never
// loaded) and the constant scale after the product is one multiply of the accumulators
// before their store ("_zm" + the constant's bits; D's uses read C).
// CHECK-LABEL: func.func @zero_start_scale
// CHECK-NOT:   linalg.fill
// CHECK:       %[[C:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK-NEXT:  call @[[K:accel_gemm_64x64x64_nn_[0-9a-f]+_d_zm3e000000]](%arg0, %arg1, %[[C]])
// CHECK-NOT:   linalg.generic
// CHECK:       return %[[C]]
// CHECK:       func.func private @[[K]](
// CHECK:       %[[ALPHA:.*]] = arith.constant dense<1.250000e-01> : vector<8xf32>
// CHECK-NOT:   vector.load %arg2
// CHECK:       vector.fma
// CHECK:       arith.mulf %{{.*}}, %[[ALPHA]] : vector<8xf32>
// CHECK:       vector.store
func.func @zero_start_scale(%A: memref<64x64xf32>, %B: memref<64x64xf32>) -> memref<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s = arith.constant 0.125 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%C : memref<64x64xf32>)
  linalg.matmul ins(%A, %B : memref<64x64xf32>, memref<64x64xf32>) outs(%C : memref<64x64xf32>)
  %D = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%C : memref<64x64xf32>) outs(%D : memref<64x64xf32>) {
  ^bb0(%c: f32, %out: f32):
    %p = arith.mulf %s, %c : f32
    linalg.yield %p : f32
  }
  return %D : memref<64x64xf32>
}

// -----

// A division by a constant stays a division (x / 3 is not x * (1/3) in f32): "_zd".
// CHECK-LABEL: func.func @zero_start_divide
// CHECK:       call @[[K:accel_gemm_64x64x64_nn_[0-9a-f]+_d_zd40400000]](
// CHECK:       func.func private @[[K]](
// CHECK:       arith.divf %{{.*}}, %{{.*}} : vector<8xf32>
func.func @zero_start_divide(%A: memref<64x64xf32>, %B: memref<64x64xf32>) -> memref<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s = arith.constant 3.0 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%C : memref<64x64xf32>)
  linalg.matmul ins(%A, %B : memref<64x64xf32>, memref<64x64xf32>) outs(%C : memref<64x64xf32>)
  %D = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%C : memref<64x64xf32>) outs(%D : memref<64x64xf32>) {
  ^bb0(%c: f32, %out: f32):
    %p = arith.divf %c, %s : f32
    linalg.yield %p : f32
  }
  return %D : memref<64x64xf32>
}

// -----

// Negative: something that writes memory (another buffer's generic) lies between the fill
// and the matmul: the fill stays and the kernel accumulates onto C as before.
// CHECK-LABEL: func.func @zero_fill_not_last
// CHECK:       linalg.fill
// CHECK:       linalg.generic
// CHECK:       call @accel_gemm_64x64x64_nn_{{[0-9a-f]+}}_d(
func.func @zero_fill_not_last(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %X: memref<64xf32>)
    -> memref<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%C : memref<64x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%X : memref<64xf32>) {
  ^bb0(%out: f32):
    %p = arith.addf %out, %out : f32
    linalg.yield %p : f32
  }
  linalg.matmul ins(%A, %B : memref<64x64xf32>, memref<64x64xf32>) outs(%C : memref<64x64xf32>)
  return %C : memref<64x64xf32>
}

// -----

// Attention's score tile: zero start, scale, and each row's maximum (a reduction of C
// into a -inf fill) computed from the accumulators: per row a running vector maximum
// across column panels, then 8 rows at a time reduced by shuffles ("_zm...r": the
// generic, its -inf fill go; the maxima's buffer is the kernel's 4th operand).
// CHECK-LABEL: func.func @score_row_max
// CHECK-DAG:   %[[C:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK-DAG:   %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
// CHECK:       call @[[K:accel_gemm_64x64x64_nn_[0-9a-f]+_d_zm3e000000r]](%arg0, %arg1, %[[C]], %[[M]])
// CHECK-NOT:   linalg.
// CHECK:       return %[[C]], %[[M]]
// CHECK:       func.func private @[[K]](%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}: memref<64xf32>)
// CHECK:       memref.alloca() {alignment = 64 : i64} : memref<64x8xf32>
// CHECK:       arith.maximumf {{.*}} : vector<8xf32>
// CHECK:       vector.shuffle
// CHECK:       vector.store %{{.*}}, %arg3
func.func @score_row_max(%A: memref<64x64xf32>, %B: memref<64x64xf32>)
    -> (memref<64x64xf32>, memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = arith.constant 0.125 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%C : memref<64x64xf32>)
  linalg.matmul ins(%A, %B : memref<64x64xf32>, memref<64x64xf32>) outs(%C : memref<64x64xf32>)
  %D = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%C : memref<64x64xf32>) outs(%D : memref<64x64xf32>) {
  ^bb0(%c: f32, %out: f32):
    %p = arith.mulf %c, %s : f32
    linalg.yield %p : f32
  }
  %M = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  linalg.fill ins(%ninf : f32) outs(%M : memref<64xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%D : memref<64x64xf32>) outs(%M : memref<64xf32>) {
  ^bb0(%c: f32, %out: f32):
    %p = arith.maximumf %c, %out : f32
    linalg.yield %p : f32
  }
  return %D, %M : memref<64x64xf32>, memref<64xf32>
}

// -----

// Negative: the maxima start from 0.0, not -inf (a ReLU'd maximum): the reduction stays a
// generic after the kernel (which still starts from zero).
// CHECK-LABEL: func.func @row_max_not_from_neg_inf
// CHECK:       call @accel_gemm_64x64x64_nn_{{[0-9a-f]+}}_d_z(
// CHECK:       linalg.fill
// CHECK:       linalg.generic
// CHECK:       arith.maximumf
func.func @row_max_not_from_neg_inf(%A: memref<64x64xf32>, %B: memref<64x64xf32>)
    -> (memref<64x64xf32>, memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%C : memref<64x64xf32>)
  linalg.matmul ins(%A, %B : memref<64x64xf32>, memref<64x64xf32>) outs(%C : memref<64x64xf32>)
  %M = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%M : memref<64xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%C : memref<64x64xf32>) outs(%M : memref<64xf32>) {
  ^bb0(%c: f32, %out: f32):
    %p = arith.maximumf %c, %out : f32
    linalg.yield %p : f32
  }
  return %C, %M : memref<64x64xf32>, memref<64xf32>
}

// -----

// One row times a K x N matrix (a decode step's GPT-2 Conv1D): the matrix-vector kernel
// streams B's rows, 4 at a time (vector width 8), into a part of C held across them; the
// last N % 8 columns go masked in a pass of their own.
// CHECK-LABEL: func.func @gemv_nn
// CHECK:       call @[[K:accel_gemv_1x100x300_nn_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK:       func.func private @[[K]](
// CHECK:       func.func private @[[K]]_body(
// CHECK:       vector.constant_mask [4] : vector<8xi1>
// CHECK:       scf.for %{{.*}} = %c0 to %c300 step %c4
// CHECK-COUNT-4: vector.broadcast
// CHECK:       scf.for
// CHECK-COUNT-4: vector.load %arg1
// CHECK:       vector.fma
// CHECK:       vector.store
// CHECK:       scf.if
// CHECK:       vector.maskedload %arg1
// CHECK:       vector.maskedstore %arg2
func.func @gemv_nn(%A: memref<1x300xf32>, %B: memref<300x100xf32>, %C: memref<1x100xf32>) {
  linalg.matmul ins(%A, %B : memref<1x300xf32>, memref<300x100xf32>) outs(%C : memref<1x100xf32>)
  return
}

// -----

// Two rows times nn.Linear's N x K weight (too wide an output for the dot kernel): M x 4
// vector dot products along K, one horizontal reduction per output.
// CHECK-LABEL: func.func @gemv_nt
// CHECK:       call @[[K:accel_gemv_2x300x100_nt_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK:       func.func private @[[K]]_body(
// CHECK:       scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK:       vector.maskedload %arg1
// CHECK:       vector.reduction <add>
func.func @gemv_nt(%A: memref<2x100xf32>, %B: memref<300x100xf32>, %C: memref<2x300xf32>) {
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%A, %B : memref<2x100xf32>, memref<300x100xf32>) outs(%C : memref<2x300xf32>)
  return
}

// -----

// Eight rows (a decode step at batch 8) in two groups of four (vector width 8): each group
// streams B once with its own broadcasts.
// CHECK-LABEL: func.func @gemv_eight_rows
// CHECK:       call @[[K:accel_gemv_8x100x300_nn_[0-9a-f]+]](
// CHECK:       func.func private @[[K]]_body(
// CHECK:       scf.for %{{.*}} = %c0 to %c300 step %c2
// CHECK:         memref.load %arg0[%c0,
// CHECK:         memref.load %arg0[%c3,
// CHECK-NOT:     memref.load %arg0[%c4,
// CHECK:       scf.for %{{.*}} = %c0 to %c300 step %c2
// CHECK:         memref.load %arg0[%c4,
// CHECK:         memref.load %arg0[%c7,
func.func @gemv_eight_rows(%A: memref<8x300xf32>, %B: memref<300x100xf32>, %C: memref<8x100xf32>) {
  linalg.matmul ins(%A, %B : memref<8x300xf32>, memref<300x100xf32>) outs(%C : memref<8x100xf32>)
  return
}

// -----

// Negative: sixteen rows are no matrix-vector product (the GEMM kernels' min-size: here
// an unpacked GEMM kernel).
// CHECK-LABEL: func.func @sixteen_rows
// CHECK-NOT:   accel_gemv
// CHECK:       call @accel_gemm_16x20x30_nn_
func.func @sixteen_rows(%A: memref<16x30xf32>, %B: memref<30x20xf32>, %C: memref<16x20xf32>) {
  linalg.matmul ins(%A, %B : memref<16x30xf32>, memref<30x20xf32>) outs(%C : memref<16x20xf32>)
  return
}
