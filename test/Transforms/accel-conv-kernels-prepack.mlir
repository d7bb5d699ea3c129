// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-conv-kernels{vector-width=8 min-flops=0 parallel=false prepack-weights=true})' | FileCheck %s
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-conv-kernels{vector-width=8 min-flops=0 parallel-min-flops=0 prepack-weights=true})' | FileCheck %s --check-prefix=PAR

// A 1x1 conv on an external global (a frozen parameter): the GEMM reads A packed once into
// a private global PA[row tile][K block][k][MR] (22 tiles of 6 rows for F = 128, one K
// block of 64), repacked by @..._prepack only when the weight's address differs from the
// one kept in the second global (0 at load: the first call packs).
// CHECK-LABEL: memref.global "private" @w0_packed_{{[0-9a-f]+}}_src : memref<1xi64> = dense<0>
// CHECK:       memref.global "private" @[[PK:w0_packed_[0-9a-f]+]] : memref<22x1x64x6xf32> = uninitialized {alignment = 64 : i64}
// CHECK:       func.func @frozen
// CHECK:         %[[W:.*]] = memref.get_global @w0 : memref<128x64x1x1xf32>
// CHECK:         %[[PA:.*]] = memref.get_global @[[PK]] : memref<22x1x64x6xf32>
// CHECK:         %[[SRC:.*]] = memref.get_global @[[PK]]_src : memref<1xi64>
// CHECK:         call @[[PW:accel_pwconv_[0-9a-z_]+]](%arg0, %[[W]], %arg1, %[[PA]], %[[SRC]])
// CHECK:       func.func private @[[G:accel_gemm_128x64x64_nn_[0-9a-f]+_pa]](%{{.*}}: memref<22x1x64x6xf32>,
// CHECK-NOT:     memref.alloc() {alignment = 64 : i64} : memref<{{.*}}x6xf32>
// CHECK:         memref.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}, %c5] : memref<22x1x64x6xf32>
// CHECK:       func.func private @[[G]]_prepack(%{{.*}}: memref<128x64xf32>, %{{.*}}: memref<22x1x64x6xf32>)
// CHECK:       func.func private @[[PW]](
// CHECK:         memref.extract_aligned_pointer_as_index
// CHECK:         arith.cmpi ne
// CHECK:         scf.if
// CHECK-NEXT:      func.call @[[G]]_prepack(
// CHECK-NEXT:      memref.store
// CHECK:         func.call @[[G]](
memref.global @w0 : memref<128x64x1x1xf32>
func.func @frozen(%x: memref<1x64x8x8xf32>, %o: memref<1x128x8x8xf32>) {
  %w = memref.get_global @w0 : memref<128x64x1x1xf32>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : memref<1x64x8x8xf32>, memref<128x64x1x1xf32>) outs(%o : memref<1x128x8x8xf32>)
  return
}

// -----

// A repeated layer's part (accel-split-functions) takes its weight as an argument: the part
// gains the packed copy and its source address as two more arguments, and each call
// passes the globals of the weight it passes.
// CHECK-LABEL: func.func @two_layers
// CHECK:         %[[P1:.*]] = memref.get_global @[[K1:w1_packed_[0-9a-f]+]] :
// CHECK:         %[[S1:.*]] = memref.get_global @[[K1]]_src
// CHECK:         call @part(%{{.*}}, %{{.*}}, %{{.*}}, %[[P1]], %[[S1]])
// CHECK:         %[[P2:.*]] = memref.get_global @[[K2:w2_packed_[0-9a-f]+]] :
// CHECK:         %[[S2:.*]] = memref.get_global @[[K2]]_src
// CHECK:         call @part(%{{.*}}, %{{.*}}, %{{.*}}, %[[P2]], %[[S2]])
// CHECK:       func.func private @part(%{{.*}}: memref<1x64x8x8xf32>, %[[PW:.*]]: memref<128x64x1x1xf32>, %{{.*}}: memref<1x128x8x8xf32>, %[[PP:.*]]: memref<22x1x64x6xf32>, %[[PS:.*]]: memref<1xi64>)
// CHECK:         call @accel_pwconv_{{.*}}(%{{.*}}, %[[PW]], %{{.*}}, %[[PP]], %[[PS]])
memref.global @w1 : memref<128x64x1x1xf32>
memref.global @w2 : memref<128x64x1x1xf32>
func.func @two_layers(%x: memref<1x64x8x8xf32>, %o: memref<1x128x8x8xf32>, %p: memref<1x128x8x8xf32>) {
  %w1 = memref.get_global @w1 : memref<128x64x1x1xf32>
  call @part(%x, %w1, %o) : (memref<1x64x8x8xf32>, memref<128x64x1x1xf32>, memref<1x128x8x8xf32>) -> ()
  %w2 = memref.get_global @w2 : memref<128x64x1x1xf32>
  call @part(%x, %w2, %p) : (memref<1x64x8x8xf32>, memref<128x64x1x1xf32>, memref<1x128x8x8xf32>) -> ()
  return
}
func.func private @part(%x: memref<1x64x8x8xf32>, %w: memref<128x64x1x1xf32>, %o: memref<1x128x8x8xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : memref<1x64x8x8xf32>, memref<128x64x1x1xf32>) outs(%o : memref<1x128x8x8xf32>)
  return
}

// -----

// Negative: a weight with an initial value is a constant of the module, not a parameter
// bound at load time: the GEMM packs it per call as before (three operands).
// CHECK-LABEL: func.func @constant_weight
// CHECK-NOT:     _packed_
// CHECK:         call @accel_pwconv_{{.*}}(%arg0, %{{.*}}, %arg1) :
memref.global "private" constant @c0 : memref<128x64x1x1xf32> = dense<1.0>
func.func @constant_weight(%x: memref<1x64x8x8xf32>, %o: memref<1x128x8x8xf32>) {
  %w = memref.get_global @c0 : memref<128x64x1x1xf32>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : memref<1x64x8x8xf32>, memref<128x64x1x1xf32>) outs(%o : memref<1x128x8x8xf32>)
  return
}

// -----

// Negative: a public function's weight argument may be anything its caller passes.
// CHECK-LABEL: func.func @weight_argument
// CHECK-NOT:     _packed_
// CHECK:         call @accel_pwconv_{{.*}}(%arg0, %arg1, %arg2) :
func.func @weight_argument(%x: memref<1x64x8x8xf32>, %w: memref<128x64x1x1xf32>, %o: memref<1x128x8x8xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : memref<1x64x8x8xf32>, memref<128x64x1x1xf32>) outs(%o : memref<1x128x8x8xf32>)
  return
}

// -----

// Negative: a private function one of whose calls passes a computed weight (a buffer, not
// an external global) keeps its signature and packs per call.
// CHECK-LABEL: func.func @computed_weight
// CHECK-NOT:     _packed_
// CHECK:       func.func private @part2(%{{.*}}: memref<1x64x8x8xf32>, %{{.*}}: memref<128x64x1x1xf32>, %{{.*}}: memref<1x128x8x8xf32>) {
memref.global @w3 : memref<128x64x1x1xf32>
func.func @computed_weight(%x: memref<1x64x8x8xf32>, %o: memref<1x128x8x8xf32>) {
  %w3 = memref.get_global @w3 : memref<128x64x1x1xf32>
  call @part2(%x, %w3, %o) : (memref<1x64x8x8xf32>, memref<128x64x1x1xf32>, memref<1x128x8x8xf32>) -> ()
  %buf = memref.alloc() : memref<128x64x1x1xf32>
  call @part2(%x, %buf, %o) : (memref<1x64x8x8xf32>, memref<128x64x1x1xf32>, memref<1x128x8x8xf32>) -> ()
  memref.dealloc %buf : memref<128x64x1x1xf32>
  return
}
func.func private @part2(%x: memref<1x64x8x8xf32>, %w: memref<128x64x1x1xf32>, %o: memref<1x128x8x8xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : memref<1x64x8x8xf32>, memref<128x64x1x1xf32>) outs(%o : memref<1x128x8x8xf32>)
  return
}

// -----

// A 3x3 conv on a frozen parameter: the direct kernel's panel of all filter blocks
// (P[block][C*KH*KW][FB], as the shared panel) lives in the private global, @K_pack fills
// it when the weight's address changes, and every item reads its block from there (the
// body's "from the panel" flag is true: no per-call packing).
// CHECK-LABEL: func.func @frozen3x3
// CHECK:         %[[P:.*]] = memref.get_global @[[PK:w4_packed_[0-9a-f]+]] : memref<2x288x16xf32>
// CHECK:         %[[S:.*]] = memref.get_global @[[PK]]_src : memref<1xi64>
// CHECK:         call @[[K:accel_dconv_1x32x18x18_32x3x3_[0-9a-f]+]](%arg0, %{{.*}}, %arg1, %[[P]], %[[S]])
// CHECK:       func.func private @[[K]](%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}: memref<2x288x16xf32>, %{{.*}}: memref<1xi64>)
// CHECK:         arith.cmpi ne
// CHECK:         scf.if
// CHECK-NEXT:      func.call @[[K]]_pack(%arg1, %{{.*}}, %c0, %c2)
// CHECK:         call @[[K]]_body(%arg0, %arg1, %arg2, %{{.*}}, %true, %c0, %c4)
// CHECK:       func.func private @[[K]]_pack(
// Threaded: the first call packs serially, then the items run on threads through the
// entry that reads the panel (no per-thread packing entry, no thread-count check).
// PAR-LABEL:   func.func @frozen3x3
// PAR:         func.func private @[[K:accel_dconv_1x32x18x18_32x3x3_[0-9a-f]+]](
// PAR:           func.call @[[K]]_pack(
// PAR-NOT:       accel_num_threads
// PAR:           constant @[[K]]_sentry
// PAR:           call @accel_parallel_for(
// PAR-NOT:     func.func private @[[K]]_entry(
// PAR:         func.func private @[[K]]_sentry(
// PAR:           %true = arith.constant true
memref.global @w4 : memref<32x32x3x3xf32>
func.func @frozen3x3(%x: memref<1x32x18x18xf32>, %o: memref<1x32x16x16xf32>) {
  %w = memref.get_global @w4 : memref<32x32x3x3xf32>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : memref<1x32x18x18xf32>, memref<32x32x3x3xf32>) outs(%o : memref<1x32x16x16xf32>)
  return
}
