// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-conv-kernels{vector-width=8 min-flops=0 parallel=false fuse-epilogue=true})' | FileCheck %s
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-conv-kernels{vector-width=16 min-flops=0 parallel-min-flops=0 fuse-epilogue=true})' | FileCheck %s --check-prefix=PAR
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-conv-kernels{vector-width=8 min-flops=0 parallel=false})' | FileCheck %s --check-prefix=OFF

// BatchNorm + ReLU after a bias-free 3x3 conv (as after bufferization: one generic per
// step, each into a fresh buffer; the per-channel 1/sqrt(var + eps) computed between):
// the kernel stands where the last generic stood and writes relu(conv * S + T) as it
// stores O; S and T (the leading per-channel steps folded: a = rs, b = -mean * rs) come
// from @accel_chan_affine_<h>, called right before it. The chain's generics and buffers
// go, and the conv's output replaces the chain's result (fuse-epilogue is off by default:
// OFF keeps them).
// CHECK-LABEL: func.func @bn_relu
// CHECK-NOT:   linalg.conv_2d_nchw_fchw
// CHECK:       linalg.generic
// CHECK-SAME:    ins(%arg3 : memref<32xf32>)
// CHECK-NOT:   linalg.generic
// CHECK:       %[[S:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32xf32>
// CHECK:       %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32xf32>
// CHECK:       call @[[A:accel_chan_affine_[0-9a-f]+]](%arg2, %{{.*}}, %[[S]], %[[T]])
// CHECK-NEXT:  call @[[K:accel_dconv_1x32x18x18_32x3x3_[0-9a-f]+]](%arg0, %arg1, %[[O:.*]], %[[S]], %[[T]]) : (memref<1x32x18x18xf32>, memref<32x32x3x3xf32>, memref<1x32x16x16xf32>, memref<32xf32>, memref<32xf32>) -> ()
// CHECK-NEXT:  memref.copy %[[O]], %arg4
// CHECK:       func.func private @[[A]](%{{.*}}: memref<32x1x1xf32>, %{{.*}}: memref<32x1x1xf32>, %{{.*}}: memref<32xf32>, %{{.*}}: memref<32xf32>)
// CHECK:         scf.for
// CHECK:           arith.subf %{{.*}}, %{{.*}} : f32
// CHECK:           arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:           arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:           memref.store
// CHECK:           memref.store
// CHECK:       func.func private @[[K]]_body(
// CHECK-SAME:    %[[E0:[a-z0-9]+]]: memref<32xf32>, %[[E1:[a-z0-9]+]]: memref<32xf32>)
// The write-back through registers: 8 positions of one filter at a time.
// CHECK:         memref.load %[[E0]][%{{.*}}] : memref<32xf32>
// CHECK-NEXT:    vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-NEXT:    arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:    memref.load %[[E1]]
// CHECK-NEXT:    vector.broadcast
// CHECK-NEXT:    arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:    arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    vector.broadcast
// CHECK-NEXT:    arith.cmpf ugt, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:    arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK-NEXT:    vector.store
// The scalar write-back (the last tile of an item) applies it too.
// CHECK:         memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<6x16xf32>
// CHECK-NEXT:    memref.load %[[E0]]
// CHECK-NEXT:    arith.mulf %{{.*}}, %{{.*}} : f32
// PAR-LABEL:   func.func @bn_relu
// PAR:         call @[[K:accel_dconv_[0-9a-z_]+]](%arg0, %arg1, %{{.*}}, %{{.*}}, %{{.*}})
// PAR:         func.func private @[[K]](
// PAR:           llvm.alloca %{{.*}} x !llvm.struct<({{.*}})> : (i64) -> !llvm.ptr
// PAR:         func.func private @[[K]]_entry(
// PAR:           call @[[K]]_body(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// OFF-LABEL:   func.func @bn_relu
// OFF-NOT:     linalg.fill
// OFF:         call @accel_dconv_{{.*}}(%arg0, %arg1, %{{[a-z0-9_]+}}) :
// OFF-COUNT-4: linalg.generic
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
#v = affine_map<(d0) -> (d0)>
func.func @bn_relu(%x: memref<1x32x18x18xf32>, %w: memref<32x32x3x3xf32>,
                   %mean: memref<32x1x1xf32>, %var: memref<32xf32>,
                   %out: memref<1x32x16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x32x16x16xf32>
  %rs = memref.alloc() : memref<32xf32>
  %a = memref.alloc() : memref<1x32x16x16xf32>
  %b = memref.alloc() : memref<1x32x16x16xf32>
  %r = memref.alloc() : memref<1x32x16x16xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x32x16x16xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x32x18x18xf32>, memref<32x32x3x3xf32>) outs(%o : memref<1x32x16x16xf32>)
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%var : memref<32xf32>) outs(%rs : memref<32xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %s = math.rsqrt %in : f32
    linalg.yield %s : f32
  }
  %rs3 = memref.expand_shape %rs [[0, 1, 2]] output_shape [32, 1, 1] : memref<32xf32> into memref<32x1x1xf32>
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o, %mean : memref<1x32x16x16xf32>, memref<32x1x1xf32>) outs(%a : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %m: f32, %unused: f32):
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  }
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a, %rs3 : memref<1x32x16x16xf32>, memref<32x1x1xf32>) outs(%b : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %s: f32, %unused: f32):
    %p = arith.mulf %in, %s : f32
    linalg.yield %p : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : memref<1x32x16x16xf32>) outs(%r : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %c = arith.cmpf ugt, %in, %zero : f32
    %m = arith.select %c, %in, %zero : f32
    linalg.yield %m : f32
  }
  memref.copy %r, %out : memref<1x32x16x16xf32> to memref<1x32x16x16xf32>
  return
}

// -----

// A residual add (an input of the output's shape, identity map): the kernel reads it at
// the element it writes, through a view N x F x OH*OW like its own output's.
// CHECK-LABEL: func.func @residual
// CHECK:       call @[[K:accel_dconv_[0-9a-z_]+]](%arg0, %arg1, %{{.*}}, %arg2) :
// CHECK-NOT:   linalg.generic
// CHECK:       func.func private @[[K]]_body({{.*}}, %[[R:[a-z0-9]+]]: memref<1x32x16x16xf32>)
// CHECK:         %[[EF:.*]] = memref.collapse_shape %[[R]] {{\[}}[0], [1], [2, 3]] : memref<1x32x16x16xf32> into memref<1x32x256xf32>
// CHECK:         vector.load %[[EF]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<1x32x256xf32>, vector<8xf32>
// CHECK-NEXT:    arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @residual(%x: memref<1x32x18x18xf32>, %w: memref<32x32x3x3xf32>,
                    %skip: memref<1x32x16x16xf32>, %out: memref<1x32x16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x32x16x16xf32>
  %r = memref.alloc() : memref<1x32x16x16xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x32x16x16xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x32x18x18xf32>, memref<32x32x3x3xf32>) outs(%o : memref<1x32x16x16xf32>)
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o, %skip : memref<1x32x16x16xf32>, memref<1x32x16x16xf32>) outs(%r : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %s: f32, %unused: f32):
    %a = arith.addf %in, %s : f32
    linalg.yield %a : f32
  }
  memref.copy %r, %out : memref<1x32x16x16xf32> to memref<1x32x16x16xf32>
  return
}

// -----

// A 1x1 conv (a GEMM on the input): the GEMM's last K block applies the chain to the rows
// (output channels) it writes; the wrapper passes the per-channel operand as it is.
// CHECK-LABEL: func.func @pointwise
// CHECK:       call @[[PW:accel_pwconv_[0-9a-z_]+]](%arg0, %arg1, %{{.*}}, %arg2) :
// CHECK-NOT:   linalg.generic
// CHECK:       func.func private @[[G:accel_gemm_128x256x128_nn_[0-9a-f]+_z_e[0-9a-f]+]](%{{.*}}, %{{.*}}, %{{.*}}, %[[E:.*]]: memref<128xf32>)
// CHECK:         memref.load %[[E]][%{{.*}}] : memref<128xf32>
// CHECK:         arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:       func.func private @[[PW]](
// CHECK:         func.call @[[G]](%{{.*}}, %{{.*}}, %{{.*}}, %arg3)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @pointwise(%x: memref<1x128x16x16xf32>, %w: memref<128x128x1x1xf32>,
                     %bias: memref<128xf32>, %out: memref<1x128x16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x128x16x16xf32>
  %r = memref.alloc() : memref<1x128x16x16xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x128x16x16xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x128x16x16xf32>, memref<128x128x1x1xf32>) outs(%o : memref<1x128x16x16xf32>)
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o, %bias : memref<1x128x16x16xf32>, memref<128xf32>) outs(%r : memref<1x128x16x16xf32>) {
  ^bb0(%in: f32, %b: f32, %unused: f32):
    %a = arith.addf %in, %b : f32
    %c0 = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %c0 : f32
    linalg.yield %m : f32
  }
  memref.copy %r, %out : memref<1x128x16x16xf32> to memref<1x128x16x16xf32>
  return
}

// -----

// Negative: the conv's output is read by two ops (the chain value would be needed whole):
// the kernel stores O and both generics stay.
// CHECK-LABEL: func.func @two_users
// CHECK:       call @accel_dconv_{{[0-9a-z_]+}}(%arg0, %arg1, %{{[a-z0-9_]+}}) :
// CHECK-COUNT-2: linalg.generic
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @two_users(%x: memref<1x32x18x18xf32>, %w: memref<32x32x3x3xf32>,
                     %out: memref<1x32x16x16xf32>, %out2: memref<1x32x16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x32x16x16xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x32x16x16xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x32x18x18xf32>, memref<32x32x3x3xf32>) outs(%o : memref<1x32x16x16xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : memref<1x32x16x16xf32>) outs(%out : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : memref<1x32x16x16xf32>) outs(%out2 : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %n = math.absf %in : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// Negative: an op the write-back does not know (math.exp) keeps its generic.
// CHECK-LABEL: func.func @unknown_op
// CHECK:       call @accel_dconv_{{[0-9a-z_]+}}(%arg0, %arg1, %{{[a-z0-9_]+}}) :
// CHECK:       linalg.generic
// CHECK:         math.exp
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @unknown_op(%x: memref<1x32x18x18xf32>, %w: memref<32x32x3x3xf32>,
                      %out: memref<1x32x16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x32x16x16xf32>
  %r = memref.alloc() : memref<1x32x16x16xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x32x16x16xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x32x18x18xf32>, memref<32x32x3x3xf32>) outs(%o : memref<1x32x16x16xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : memref<1x32x16x16xf32>) outs(%r : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  memref.copy %r, %out : memref<1x32x16x16xf32> to memref<1x32x16x16xf32>
  return
}

// -----

// Negative: the conv's input is written between the conv and the generic, so the kernel
// cannot move there: the chain stays.
// CHECK-LABEL: func.func @input_written_between
// CHECK:       call @accel_dconv_{{[0-9a-z_]+}}(%{{[a-z0-9_]+}}, %arg0, %{{[a-z0-9_]+}}) :
// CHECK-NEXT:  linalg.fill
// CHECK-NEXT:  linalg.generic
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @input_written_between(%w: memref<32x32x3x3xf32>, %out: memref<1x32x16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %x = memref.alloc() : memref<1x32x18x18xf32>
  %o = memref.alloc() : memref<1x32x16x16xf32>
  %r = memref.alloc() : memref<1x32x16x16xf32>
  linalg.fill ins(%one : f32) outs(%x : memref<1x32x18x18xf32>)
  linalg.fill ins(%zero : f32) outs(%o : memref<1x32x16x16xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x32x18x18xf32>, memref<32x32x3x3xf32>) outs(%o : memref<1x32x16x16xf32>)
  linalg.fill ins(%zero : f32) outs(%x : memref<1x32x18x18xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : memref<1x32x16x16xf32>) outs(%r : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  memref.copy %r, %out : memref<1x32x16x16xf32> to memref<1x32x16x16xf32>
  return
}

// -----

// Negative: a bias fill (not zero) keeps the accumulating kernel, which takes no chain.
// CHECK-LABEL: func.func @bias_fill
// CHECK:       linalg.fill
// CHECK:       call @accel_dconv_{{[0-9a-z_]+}}(%arg0, %arg1, %{{[a-z0-9_]+}}) :
// CHECK-NEXT:  linalg.generic
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @bias_fill(%x: memref<1x32x18x18xf32>, %w: memref<32x32x3x3xf32>,
                     %out: memref<1x32x16x16xf32>) {
  %bias = arith.constant 0.5 : f32
  %o = memref.alloc() : memref<1x32x16x16xf32>
  %r = memref.alloc() : memref<1x32x16x16xf32>
  linalg.fill ins(%bias : f32) outs(%o : memref<1x32x16x16xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : memref<1x32x18x18xf32>, memref<32x32x3x3xf32>) outs(%o : memref<1x32x16x16xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : memref<1x32x16x16xf32>) outs(%r : memref<1x32x16x16xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  memref.copy %r, %out : memref<1x32x16x16xf32> to memref<1x32x16x16xf32>
  return
}
