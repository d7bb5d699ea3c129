// RUN: accel-opt %s --split-input-file -accel-blocked-layout | FileCheck %s
// RUN: accel-opt %s --split-input-file -accel-blocked-layout='pointwise=true' | FileCheck %s --check-prefix=PW

// Two 3x3 convolutions with a per-channel shift and a ReLU between them: the input is
// blocked once (expand_shape + transpose into N x C/8 x H x W x 8), both convs are
// blocked generics, the shift, ReLU and the second conv's pad run on blocked tensors, and
// the result is unblocked once at the end: no reorder between the convs. The shift is
// read in place, channel cb * 8 + ci (as a packed copy it was a transposing nest that
// kept fusion from making BatchNorm, ReLU and the pad copy one pass).
// CHECK:       #[[PARAM:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1 * 8 + d4, 0, 0)>
// CHECK-LABEL: func.func @two_convs
// CHECK:       tensor.expand_shape %arg0 {{.*}} into tensor<1x2x8x10x10xf32>
// CHECK:       linalg.transpose ins(%{{.*}} : tensor<1x2x8x10x10xf32>) outs(%{{.*}} : tensor<1x2x10x10x8xf32>) permutation = [0, 1, 3, 4, 2]
// CHECK:       tensor.pad %{{.*}} low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0]
// CHECK:       } : tensor<1x2x10x10x8xf32> to tensor<1x2x12x12x8xf32>
// CHECK:       linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<1x2x12x12x8xf32>, tensor<16x16x3x3xf32>) outs(%{{.*}} : tensor<1x2x10x10x8xf32>) attrs = {accel.blocked_conv = array<i64: 1, 1, 1, 1, 1>}
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[M:.*]] = tensor.expand_shape %arg3 {{.*}} into tensor<16x1x1xf32>
// CHECK:       linalg.generic {indexing_maps = [#{{.*}}, #[[PARAM]], #{{.*}}]{{.*}} ins(%{{.*}}, %[[M]] : tensor<1x2x10x10x8xf32>, tensor<16x1x1xf32>)
// CHECK:       arith.subf
// CHECK:       arith.maximumf
// CHECK:       tensor.pad %{{.*}} low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0]
// CHECK:       } : tensor<1x2x10x10x8xf32> to tensor<1x2x12x12x8xf32>
// CHECK:       linalg.generic {{.*}} ins(%{{.*}}, %arg2 : tensor<1x2x12x12x8xf32>, tensor<16x16x3x3xf32>) {{.*}}accel.blocked_conv = array<i64: 1, 1, 1, 1, 1>
// CHECK:       linalg.transpose ins(%{{.*}} : tensor<1x2x10x10x8xf32>) outs(%{{.*}} : tensor<1x2x8x10x10xf32>) permutation = [0, 1, 4, 2, 3]
// CHECK:       %[[U:.*]] = tensor.collapse_shape {{.*}} into tensor<1x16x10x10xf32>
// CHECK-NOT:   linalg.copy
// CHECK:       return %[[U]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @two_convs(%x: tensor<1x16x10x10xf32>, %w1: tensor<16x16x3x3xf32>,
                     %w2: tensor<16x16x3x3xf32>, %m: tensor<16xf32>) -> tensor<1x16x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %p1 = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x16x10x10xf32> to tensor<1x16x12x12xf32>
  %e = tensor.empty() : tensor<1x16x10x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p1, %w1 : tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %me = tensor.expand_shape %m [[0, 1, 2]] output_shape [16, 1, 1] : tensor<16xf32> into tensor<16x1x1xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c1, %me : tensor<1x16x10x10xf32>, tensor<16x1x1xf32>) outs(%e : tensor<1x16x10x10xf32>) {
  ^bb0(%in: f32, %k: f32, %out: f32):
    %r = arith.subf %in, %k : f32
    linalg.yield %r : f32
  } -> tensor<1x16x10x10xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x16x10x10xf32>) outs(%e : tensor<1x16x10x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x10x10xf32>
  %p2 = tensor.pad %relu low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x16x10x10xf32> to tensor<1x16x12x12xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p2, %w2 : tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  return %c2 : tensor<1x16x10x10xf32>
}

// -----

// A stride and a dilation are the blocked generic's attribute and its input map.
// CHECK:       #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 * 2 + d7 * 2, d3 * 2 + d8 * 2, d6)>
// CHECK-LABEL: func.func @strided_dilated
// CHECK:       linalg.generic {indexing_maps = [#[[X]], #{{.*}}, #{{.*}}]{{.*}} ins(%{{.*}}, %arg1 : tensor<1x2x29x29x8xf32>, tensor<16x16x3x3xf32>) outs(%{{.*}} : tensor<1x2x13x13x8xf32>) attrs = {accel.blocked_conv = array<i64: 2, 2, 2, 2, 1>}
// CHECK-NOT:   linalg.conv_2d_nchw_fchw
func.func @strided_dilated(%x: tensor<1x16x29x29xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x13x13xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x13x13xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x13x13xf32>) -> tensor<1x16x13x13xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x16x29x29xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x13x13xf32>) -> tensor<1x16x13x13xf32>
  return %c : tensor<1x16x13x13xf32>
}

// -----

// 12 input channels are no whole number of blocks (the stem's 3): the input stays NCHW,
// only the output is blocked (an 8-loop generic, the attribute's last value 0).
// CHECK-LABEL: func.func @nchw_input
// CHECK-NOT:   linalg.conv_2d_nchw_fchw
// CHECK:       linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<1x12x12x12xf32>, tensor<16x12x3x3xf32>) outs(%{{.*}} : tensor<1x2x10x10x8xf32>) attrs = {accel.blocked_conv = array<i64: 1, 1, 1, 1, 0>}
func.func @nchw_input(%x: tensor<1x12x12x12xf32>, %w: tensor<16x12x3x3xf32>) -> tensor<1x16x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x10x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x12x12x12xf32>, tensor<16x12x3x3xf32>) outs(%f : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  return %c : tensor<1x16x10x10xf32>
}

// -----

// Negative: 12 filters are no whole number of blocks; the conv stays as it is, and so does
// a max pool with no blocked conv around it.
// CHECK-LABEL: func.func @partial_block
// CHECK:       linalg.conv_2d_nchw_fchw
// CHECK-NOT:   linalg.transpose
func.func @partial_block(%x: tensor<1x16x12x12xf32>, %w: tensor<12x16x3x3xf32>) -> tensor<1x12x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x12x10x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x12x10x10xf32>) -> tensor<1x12x10x10xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x16x12x12xf32>, tensor<12x16x3x3xf32>) outs(%f : tensor<1x12x10x10xf32>) -> tensor<1x12x10x10xf32>
  return %c : tensor<1x12x10x10xf32>
}

// -----

// CHECK-LABEL: func.func @lone_pool
// CHECK:       linalg.pooling_nchw_max
func.func @lone_pool(%x: tensor<1x16x12x12xf32>) -> tensor<1x16x6x6xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x16x6x6xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %k = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %k : tensor<1x16x12x12xf32>, tensor<2x2xf32>) outs(%f : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  return %p : tensor<1x16x6x6xf32>
}

// -----

// A conv, a max pool, a conv (a stem, then a stage): the pool runs on blocked tensors,
// one all-parallel generic whose inputs are the window's taps (the channels innermost),
// so nothing is reordered between the convs.
// CHECK-DAG:   #[[T0:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2 * 2, d3 * 2, d4)>
// CHECK-DAG:   #[[T3:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2 * 2 + 1, d3 * 2 + 1, d4)>
// CHECK-LABEL: func.func @conv_pool_conv
// CHECK:       accel.blocked_conv = array<i64: 1, 1, 1, 1, 0>
// CHECK-NOT:   linalg.transpose
// CHECK:       linalg.generic {indexing_maps = [#[[T0]], #{{.*}}, #{{.*}}, #[[T3]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[P:.*]], %[[P]], %[[P]], %[[P]] : tensor<1x2x32x32x8xf32>, {{.*}}) outs(%{{.*}} : tensor<1x2x16x16x8xf32>)
// CHECK-NEXT:  ^bb0(%[[X0:.*]]: f32, %[[X1:.*]]: f32, %[[X2:.*]]: f32, %[[X3:.*]]: f32, %[[A:.*]]: f32):
// CHECK-NEXT:    %[[M0:.*]] = arith.maximumf %[[A]], %[[X0]] fastmath<nsz> : f32
// CHECK-NEXT:    %[[M1:.*]] = arith.maximumf %[[M0]], %[[X1]] fastmath<nsz> : f32
// CHECK-NEXT:    %[[M2:.*]] = arith.maximumf %[[M1]], %[[X2]] fastmath<nsz> : f32
// CHECK-NEXT:    %[[M3:.*]] = arith.maximumf %[[M2]], %[[X3]] fastmath<nsz> : f32
// CHECK-NEXT:    linalg.yield %[[M3]] : f32
// CHECK-NOT:   linalg.transpose
// CHECK:       accel.blocked_conv = array<i64: 1, 1, 1, 1, 1>
// CHECK:       linalg.transpose
// CHECK-NOT:   linalg.pooling_nchw_max
func.func @conv_pool_conv(%x: tensor<1x3x34x34xf32>, %w1: tensor<16x3x3x3xf32>, %w2: tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x16x32x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w1 : tensor<1x3x34x34xf32>, tensor<16x3x3x3xf32>) outs(%f : tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  %pe = tensor.empty() : tensor<1x16x16x16xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %k = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%c, %k : tensor<1x16x32x32xf32>, tensor<2x2xf32>) outs(%pf : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %e2 = tensor.empty() : tensor<1x32x14x14xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x32x14x14xf32>) -> tensor<1x32x14x14xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w2 : tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32>) outs(%f2 : tensor<1x32x14x14xf32>) -> tensor<1x32x14x14xf32>
  return %c2 : tensor<1x32x14x14xf32>
}

// -----

// Negative: a max pool at stride 1 stays NCHW (a tap's map would be the loop itself, and
// linalg would take the loop's extent from the larger input); the convs around it are
// blocked, with a reorder on each side of the pool.
// CHECK-LABEL: func.func @stride_one_pool
// CHECK:       accel.blocked_conv
// CHECK:       linalg.pooling_nchw_max
// CHECK:       accel.blocked_conv
func.func @stride_one_pool(%x: tensor<1x16x22x22xf32>, %w1: tensor<16x16x3x3xf32>, %w2: tensor<16x16x3x3xf32>) -> tensor<1x16x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x16x20x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w1 : tensor<1x16x22x22xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32>
  %pe = tensor.empty() : tensor<1x16x18x18xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x16x18x18xf32>) -> tensor<1x16x18x18xf32>
  %k = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%c, %k : tensor<1x16x20x20xf32>, tensor<3x3xf32>) outs(%pf : tensor<1x16x18x18xf32>) -> tensor<1x16x18x18xf32>
  %e2 = tensor.empty() : tensor<1x16x16x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w2 : tensor<1x16x18x18xf32>, tensor<16x16x3x3xf32>) outs(%f2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  return %c2 : tensor<1x16x16x16xf32>
}

// -----

// 1x1 convolutions stay NCHW (their GEMM kernel) unless `pointwise`, which blocks them too.
// CHECK-LABEL: func.func @pointwise
// CHECK:       linalg.conv_2d_nchw_fchw
// PW-LABEL:    func.func @pointwise
// PW-NOT:      linalg.conv_2d_nchw_fchw
// PW:          accel.blocked_conv = array<i64: 1, 1, 1, 1, 1>
func.func @pointwise(%x: tensor<1x64x16x16xf32>, %w: tensor<32x64x1x1xf32>) -> tensor<1x32x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x64x16x16xf32>, tensor<32x64x1x1xf32>) outs(%f : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  return %c : tensor<1x32x16x16xf32>
}
