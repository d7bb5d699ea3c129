// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-conv-kernels{vector-width=8 min-flops=0 parallel=false})' | FileCheck %s
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-conv-kernels{vector-width=16 min-flops=0 parallel-min-flops=0})' | FileCheck %s --check-prefix=PAR
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-conv-kernels{vector-width=8 min-flops=0 max-taps=8})' | FileCheck %s --check-prefix=TAPS

// A 3x3 conv (input already padded): a direct kernel (serial: parallel=false). @K runs the
// (image, filter block, position tile) items of @K_body; the first item of each (image,
// block) packs the block's weights into a panel Wp[C][KH*KW][FB] (AVX2: FB = 2 x 8 lanes,
// zero past F); each item keeps FV x PT = 2 x 6 vector accumulators over the C loop (the 9
// taps unrolled: 2 weight loads, 6 broadcast inputs, 12 FMAs per tap) and adds them to O
// through a stack tile. The body also takes a shared panel (empty: %P) and whether to
// read it (false), for kernels whose filter blocks are large (see @shared_panel).
// CHECK-LABEL: func.func @conv3x3
// CHECK-NOT:   linalg.conv_2d_nchw_fchw
// CHECK:       call @[[K:accel_dconv_1x32x18x18_32x3x3_[0-9a-f]+]](%arg0, %arg1, %arg2) : (memref<1x32x18x18xf32>, memref<32x32x3x3xf32>, memref<1x32x16x16xf32>) -> ()
// CHECK:       func.func private @[[K]](%[[X:.*]]: memref<1x32x18x18xf32>, %[[W:.*]]: memref<32x32x3x3xf32>, %[[O:.*]]: memref<1x32x16x16xf32>)
// CHECK-NOT:     accel_parallel_for
// CHECK:         call @[[K]]_body(%[[X]], %[[W]], %[[O]], %{{.*}}, %false, %c0, %c4)
// CHECK:       func.func private @[[K]]_body(
// CHECK:         memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : memref<1x32x18x18xf32> into memref<1x10368xf32>
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<6x16xf32>
// CHECK:         %[[WP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32x9x16xf32>
// CHECK:         %[[WF:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : memref<32x32x3x3xf32> into memref<32x288xf32>
// The panel is packed in 8 x 8 blocks: 8 row loads, 24 shuffles, 8 column stores.
// CHECK:         scf.if
// CHECK-COUNT-8:   vector.load %[[WF]][{{.*}}] : memref<32x288xf32>, vector<8xf32>
// CHECK-COUNT-24:  vector.shuffle
// CHECK-COUNT-8:   vector.store %{{.*}} : memref<288x16xf32>, vector<8xf32>
// The item's panel: the one it packed (the shared one's view when %shared).
// CHECK:         memref.cast %{{.*}} : memref<288x16xf32> to memref<288x16xf32, strided<[16, 1], offset: ?>>
// CHECK:         scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.load %{{.*}} : memref<288x16xf32, strided<[16, 1], offset: ?>>, vector<8xf32>
// CHECK:           vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-COUNT-2:   vector.fma
// Write-back of a tile followed by another of its item: per filter vector an 8 x 8 transpose
// of the 6 accumulators (and 2 zero vectors), 8 floats added into each filter's output row;
// else the tile goes through the 6 x 16 scratch tile element by element.
// CHECK:         scf.if
// CHECK-COUNT-24:  vector.shuffle
// CHECK:           vector.load %{{.*}} : memref<1x32x256xf32>, vector<8xf32>
// CHECK:           arith.addf %{{.*}} : vector<8xf32>
// CHECK:           vector.store %{{.*}} : memref<1x32x256xf32>, vector<8xf32>
// CHECK:         } else {
// CHECK-COUNT-12: vector.store %{{.*}} : memref<6x16xf32>, vector<8xf32>
// CHECK:         arith.addf
// CHECK:         memref.store %{{.*}} : memref<1x32x256xf32>
// CHECK-NOT:     memref.dealloc
// Threads (parallel-min-flops=0): the three descriptors into a stack context, the items run
// by accel_parallel_for through @K_entry. AVX-512: FB = 2 x 16 lanes, 2 x 13 accumulators
// (20 tiles of 13 compute 260 of the 256 positions, 19 of 14 would compute 266), in 4
// items of 5 tiles: 2.4M MACs make one item per 2^19 (a small conv wakes few threads).
// PAR-LABEL: func.func @conv3x3
// PAR:       func.func private @accel_parallel_for(
// PAR:       func.func private @[[K:accel_dconv_1x32x18x18_32x3x3_[0-9a-f]+]](
// PAR:         llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>, {{.*}}, struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>)>
// PAR-NOT:     accel_num_threads
// PAR:         %[[F:.*]] = constant @[[K]]_entry : (!llvm.ptr, index, index) -> ()
// PAR:         call @accel_parallel_for(%[[F]], %{{.*}}, %c4)
// PAR:       func.func private @[[K]]_entry(%{{.*}}: !llvm.ptr, %[[LO:.*]]: index, %[[HI:.*]]: index)
// PAR:         call @[[K]]_body(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LO]], %[[HI]])
// PAR:       func.func private @[[K]]_body(
// PAR:         memref.alloca() {alignment = 64 : i64} : memref<13x32xf32>
// PAR:         memref.alloc() {alignment = 64 : i64} : memref<32x9x32xf32>
// PAR:         vector.fma %{{.*}} : vector<16xf32>
// Negative (max-taps=8): 9 taps are more than a direct kernel may unroll: the conv stays
// (im2col + GEMM later), no kernel is made.
// TAPS-LABEL: func.func @conv3x3
// TAPS:       linalg.conv_2d_nchw_fchw
// TAPS-NOT:   accel_dconv
func.func @conv3x3(%x: memref<1x32x18x18xf32>, %w: memref<32x32x3x3xf32>, %o: memref<1x32x16x16xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x32x18x18xf32>, memref<32x32x3x3xf32>) outs(%o : memref<1x32x16x16xf32>)
  return
}

// -----

// Few filters (F = 5 < 8 lanes), stride 3, 16 output positions: one vector of filters (the
// packing pads it with zeros), PT = 12 positions (two tiles of 12 compute less than two of
// 14); the last tile starts at 16 - 12 = 4 and skips the positions the first one wrote.
// Convs below 16 filters were scalar loops.
// CHECK-LABEL: func.func @few_filters
// CHECK:       call @[[K:accel_dconv_1x8x13x13_5x3x3_[0-9a-f]+]](
// CHECK:       func.func private @[[K]]_body(
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<12x8xf32>
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<8x9x8xf32>
// CHECK:         arith.minsi %c8, %{{.*}} : index
// CHECK:         memref.store %cst{{.*}} : memref<72x8xf32>
// CHECK:         arith.minsi %{{.*}}, %c4 : index
func.func @few_filters(%x: memref<1x8x13x13xf32>, %w: memref<5x8x3x3xf32>, %o: memref<1x5x4x4xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<3> : vector<2xi64>}
    ins(%x, %w : memref<1x8x13x13xf32>, memref<5x8x3x3xf32>) outs(%o : memref<1x5x4x4xf32>)
  return
}

// -----

// 1x1, stride 1, unpadded: per image the GEMM kernel on W (F x C) and the input itself
// (X[n] viewed as C x H*W, a subview): no im2col buffer.
// CHECK-LABEL: func.func @pointwise
// CHECK:       call @[[C:accel_pwconv_2x32x8x8_64x1x1_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK:       func.func private @[[G:accel_gemm_64x64x32_nn_[0-9a-f_]+]](%{{.*}}: memref<64x32xf32>, %{{.*}}: memref<32x64xf32, strided<[64, 1], offset: ?>>, %{{.*}}: memref<64x64xf32, strided<[64, 1], offset: ?>>)
// CHECK:       func.func private @[[C]](
// CHECK-NOT:     memref.alloc
// CHECK:         memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : memref<64x32x1x1xf32> into memref<64x32xf32>
// CHECK:         scf.for %[[N:.*]] = %c0 to %c2 step %c1
// CHECK:           %[[XN:.*]] = memref.subview %{{.*}}[%[[N]], 0, 0] [1, 32, 64] [1, 1, 1] : memref<2x32x64xf32> to memref<32x64xf32, strided<[64, 1], offset: ?>>
// CHECK:           %[[ON:.*]] = memref.subview %{{.*}}[%[[N]], 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
// CHECK:           call @[[G]](%{{.*}}, %[[XN]], %[[ON]])
// One tap is within max-taps=8: the pointwise GEMM as above.
// TAPS-LABEL: func.func @pointwise
// TAPS:       call @accel_pwconv_2x32x8x8_64x1x1_
func.func @pointwise(%x: memref<2x32x8x8xf32>, %w: memref<64x32x1x1xf32>, %o: memref<2x64x8x8xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<2x32x8x8xf32>, memref<64x32x1x1xf32>) outs(%o : memref<2x64x8x8xf32>)
  return
}

// -----

// Not matched: grouped convs (accel-matmul-microkernel's im2col takes them), f16, dynamic
// shapes and linalg on tensors.
// CHECK-LABEL: func.func @not_matched
// CHECK:       linalg.conv_2d_ngchw_gfchw
// CHECK:       linalg.conv_2d_nchw_fchw {{.*}} memref<1x16x10x10xf16>
// CHECK:       linalg.conv_2d_nchw_fchw {{.*}} memref<?x16x10x10xf32>
// CHECK:       linalg.conv_2d_nchw_fchw {{.*}} tensor<1x16x10x10xf32>
// CHECK-NOT:   call
func.func @not_matched(%x: memref<1x2x16x10x10xf32>, %w: memref<2x16x16x3x3xf32>, %o: memref<1x2x16x8x8xf32>,
                       %xh: memref<1x16x10x10xf16>, %wh: memref<16x16x3x3xf16>, %oh: memref<1x16x8x8xf16>,
                       %xd: memref<?x16x10x10xf32>, %wd: memref<16x16x3x3xf32>, %od: memref<?x16x8x8xf32>,
                       %xt: tensor<1x16x10x10xf32>, %wt: tensor<16x16x3x3xf32>, %ot: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x2x16x10x10xf32>, memref<2x16x16x3x3xf32>) outs(%o : memref<1x2x16x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%xh, %wh : memref<1x16x10x10xf16>, memref<16x16x3x3xf16>) outs(%oh : memref<1x16x8x8xf16>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%xd, %wd : memref<?x16x10x10xf32>, memref<16x16x3x3xf32>) outs(%od : memref<?x16x8x8xf32>)
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%xt, %wt : tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) outs(%ot : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %r : tensor<1x16x8x8xf32>
}

// -----

// Depthwise (torch-mlir collapses the C x 1 x 3 x 3 weight): the call takes the weight
// under the collapse_shape (a view passed to a call keeps affine fusion off the function).
// Per (image, channel) item: the 9 weights broadcast once, then per output row VL-wide
// blocks of O += taps (one unaligned load each at stride 1), the last block of the row
// (10 = 8 + 2) with masked loads and a masked store.
// CHECK-LABEL: func.func @depthwise
// CHECK:       call @[[K:accel_dwconv_1x16x12x12_16x3x3_[0-9a-f]+]](%arg0, %arg1, %arg2) : (memref<1x16x12x12xf32>, memref<16x1x3x3xf32>, memref<1x16x10x10xf32>) -> ()
// CHECK:       func.func private @[[K]]_body(
// CHECK-COUNT-9: vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK:         scf.for %{{.*}} = %c0 to %c8 step %c8
// CHECK-COUNT-9:   vector.fma
// CHECK:           vector.store
// CHECK:         arith.constant dense<[true, true, false, false, false, false, false, false]> : vector<8xi1>
// CHECK:         vector.maskedload
// CHECK:         vector.maskedstore
func.func @depthwise(%x: memref<1x16x12x12xf32>, %w: memref<16x1x3x3xf32>, %o: memref<1x16x10x10xf32>) {
  %wc = memref.collapse_shape %w [[0, 1], [2], [3]] : memref<16x1x3x3xf32> into memref<16x3x3xf32>
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %wc : memref<1x16x12x12xf32>, memref<16x3x3xf32>) outs(%o : memref<1x16x10x10xf32>)
  return
}

// -----

// Depthwise, stride 2: per tap two loads (at the block's start and 7 further) and one
// shuffle of the even elements of the first and the odd ones of the second.
// CHECK-LABEL: func.func @depthwise_stride2
// CHECK:       call @[[K:accel_dwconv_2x8x33x33_8x3x3_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK:       func.func private @[[K]]_body(
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 9, 11, 13, 15] : vector<8xf32>, vector<8xf32>
// CHECK:         vector.fma
func.func @depthwise_stride2(%x: memref<2x8x33x33xf32>, %w: memref<8x3x3xf32>, %o: memref<2x8x16x16xf32>) {
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : memref<2x8x33x33xf32>, memref<8x3x3xf32>) outs(%o : memref<2x8x16x16xf32>)
  return
}

// -----

// Not matched: a depthwise conv with a width stride of 3 (stays loops).
// CHECK-LABEL: func.func @depthwise_stride3
// CHECK:       linalg.depthwise_conv_2d_nchw_chw
// CHECK-NOT:   call
func.func @depthwise_stride3(%x: memref<1x8x32x32xf32>, %w: memref<8x3x3xf32>, %o: memref<1x8x10x10xf32>) {
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<3> : vector<2xi64>}
    ins(%x, %w : memref<1x8x32x32xf32>, memref<8x3x3xf32>) outs(%o : memref<1x8x10x10xf32>)
  return
}

// -----

// The output is a fresh buffer whose only initialisation is a zero fill right before the
// conv: the fill goes and the kernel stores its tiles (no load of the output); the
// kernel's name differs from an accumulating one's.
// CHECK-LABEL: func.func @fresh_output
// CHECK-NOT:   linalg.fill
// CHECK:       call @[[K:accel_dconv_1x16x10x10_16x3x3_[0-9a-f]+]](%arg0, %arg1, %[[O:.*]]) :
// CHECK:       return %[[O]]
// CHECK:       func.func private @[[K]]_body(
// CHECK:         vector.fma
// CHECK:         scf.if
// CHECK-NOT:       vector.load %{{.*}} : memref<1x16x64xf32>, vector<8xf32>
// CHECK:           vector.store %{{.*}} : memref<1x16x64xf32>, vector<8xf32>
// CHECK:         } else {
// CHECK-NOT:       arith.addf
// CHECK:           memref.store %{{.*}} : memref<1x16x64xf32>
func.func @fresh_output(%x: memref<1x16x10x10xf32>, %w: memref<16x16x3x3xf32>) -> memref<1x16x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x16x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x16x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x16x10x10xf32>, memref<16x16x3x3xf32>) outs(%o : memref<1x16x8x8xf32>)
  return %o : memref<1x16x8x8xf32>
}

// -----

// Negative: a fill of 1.0 (a bias-like start) is the conv's initial value: it stays and the
// kernel adds into the output.
// CHECK-LABEL: func.func @nonzero_fill
// CHECK:       linalg.fill
// CHECK:       call @accel_dconv_1x16x10x10_16x3x3_
// CHECK:       func.func private @accel_dconv_1x16x10x10_16x3x3_{{.*}}_body(
// CHECK:         vector.load %{{.*}} : memref<1x16x64xf32>, vector<8xf32>
// CHECK:         arith.addf %{{.*}} : vector<8xf32>
func.func @nonzero_fill(%x: memref<1x16x10x10xf32>, %w: memref<16x16x3x3xf32>) -> memref<1x16x8x8xf32> {
  %one = arith.constant 1.0 : f32
  %o = memref.alloc() : memref<1x16x8x8xf32>
  linalg.fill ins(%one : f32) outs(%o : memref<1x16x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x16x10x10xf32>, memref<16x16x3x3xf32>) outs(%o : memref<1x16x8x8xf32>)
  return %o : memref<1x16x8x8xf32>
}

// -----

// 1x1 stride 2 (ResNet's downsample shortcut) above the GEMM thresholds: X's strided
// positions are gathered into a C x OH*OW buffer, then the GEMM kernel runs on it (no
// direct kernel). Below the thresholds (the 1x1 stride-2 case of the pytest) it stays a
// direct kernel.
// CHECK-LABEL: func.func @strided_pointwise
// CHECK:       call @[[C:accel_pwconv_1x64x16x16_128x1x1_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK:       func.func private @[[G:accel_gemm_128x64x64_nn_[0-9a-f_]+]](
// CHECK:       func.func private @[[C]](
// CHECK:         %[[XS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK:         memref.cast %[[XS]] : memref<64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
// CHECK:         arith.muli %{{.*}}, %c2 : index
// CHECK:         memref.load %{{.*}} : memref<1x64x16x16xf32>
// CHECK:         memref.store %{{.*}} : memref<64x8x8xf32>
// CHECK:         call @[[G]](
// CHECK-NOT:   accel_dconv
func.func @strided_pointwise(%x: memref<1x64x16x16xf32>, %w: memref<128x64x1x1xf32>, %o: memref<1x128x8x8xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : memref<1x64x16x16xf32>, memref<128x64x1x1xf32>) outs(%o : memref<1x128x8x8xf32>)
  return
}

// -----

// A large filter block (64 filters x 512 channels x 9 taps = 295K floats, AVX-512 FB 64):
// with threads the caller passes a shared panel for all 8 blocks, and the kernel reads
// accel_num_threads: above 8 blocks, @K_pack packs them all in parallel (8 runs of 576 rows
// per block: 64 items) and @K_sentry's items read their block from it; else @K_entry's
// items pack per thread. Serial (CHECK) and below the floor (@conv3x3) there is no panel.
// CHECK-LABEL: func.func @shared_panel
// CHECK:       call @{{accel_dconv_[0-9a-z_]+}}(%arg0, %arg1, %arg2) :
// CHECK-NOT:   accel_num_threads
// PAR-LABEL: func.func @shared_panel
// PAR:       %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x4608x64xf32>
// PAR:       call @[[K:accel_dconv_1x512x9x9_512x3x3_[0-9a-f]+]](%arg0, %arg1, %arg2, %[[P]]) :
// PAR:       llvm.mlir.global external @accel_num_threads() {addr_space = 0 : i32} : i32
// PAR:       func.func private @[[K]](%{{.*}}: memref<1x512x9x9xf32>, %{{.*}}: memref<512x512x3x3xf32>, %{{.*}}: memref<1x512x7x7xf32>, %{{.*}}: memref<8x4608x64xf32>)
// PAR:         llvm.mlir.addressof @accel_num_threads
// PAR:         scf.if %{{.*}} {
// PAR:           constant @[[K]]_pack_entry
// PAR:           call @accel_parallel_for(%{{.*}}, %{{.*}}, %c64)
// PAR:           constant @[[K]]_sentry
// PAR:         } else {
// PAR:           constant @[[K]]_entry
// PAR:       func.func private @[[K]]_pack(
// PAR:         memref.subview %{{.*}} : memref<?x4608x64xf32> to memref<4608x64xf32, strided<[64, 1], offset: ?>>
// PAR:         vector.load %{{.*}} : memref<512x4608xf32>, vector<8xf32>
// TAPS-LABEL: func.func @shared_panel
// TAPS:       linalg.conv_2d_nchw_fchw
func.func @shared_panel(%x: memref<1x512x9x9xf32>, %w: memref<512x512x3x3xf32>, %o: memref<1x512x7x7xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x512x9x9xf32>, memref<512x512x3x3xf32>) outs(%o : memref<1x512x7x7xf32>)
  return
}

// -----

// A 1x1 conv into a fresh, zero-filled output (ResNet-50's bottlenecks): the fill goes
// and the GEMM starts from zero ("_z": its first K block stores C, BLAS's beta = 0).
// CHECK-LABEL: func.func @pointwise_fresh_output
// CHECK-NOT:   linalg.fill
// CHECK:       call @accel_pwconv_1x64x8x8_64x1x1_
// CHECK:       func.func private @[[G:accel_gemm_64x64x64_nn_[0-9a-f]+_z]](
// CHECK:       call @[[G]](
// A bias-like fill of 1.0 stays and the GEMM adds into it (no "_z").
// CHECK-LABEL: func.func @pointwise_bias_fill
// CHECK:       linalg.fill
// CHECK:       func.func private @{{accel_gemm_64x64x64_nn_[0-9a-f]+}}(
func.func @pointwise_fresh_output(%x: memref<1x64x8x8xf32>, %w: memref<64x64x1x1xf32>) -> memref<1x64x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x64x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x64x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x64x8x8xf32>, memref<64x64x1x1xf32>) outs(%o : memref<1x64x8x8xf32>)
  return %o : memref<1x64x8x8xf32>
}

// -----

func.func @pointwise_bias_fill(%x: memref<1x64x8x8xf32>, %w: memref<64x64x1x1xf32>) -> memref<1x64x8x8xf32> {
  %one = arith.constant 1.0 : f32
  %o = memref.alloc() : memref<1x64x8x8xf32>
  linalg.fill ins(%one : f32) outs(%o : memref<1x64x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x64x8x8xf32>, memref<64x64x1x1xf32>) outs(%o : memref<1x64x8x8xf32>)
  return %o : memref<1x64x8x8xf32>
}
