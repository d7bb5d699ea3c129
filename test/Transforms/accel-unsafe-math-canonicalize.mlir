// RUN: accel-opt %s --split-input-file -accel-unsafe-math-canonicalize | FileCheck %s
// RUN: accel-opt %s --split-input-file -accel-unsafe-math-canonicalize='rsqrt=false reciprocal=false merge-exp=false reassociate-reductions=false' | FileCheck %s --check-prefix=OFF

// Division by a square root becomes multiplication by the reciprocal root.
// CHECK-LABEL: func.func @div_by_sqrt
// CHECK:       %[[R:.*]] = math.rsqrt %arg1 : f32
// CHECK-NEXT:  %[[Q:.*]] = arith.mulf %arg0, %[[R]] : f32
// CHECK-NEXT:  return %[[Q]]
// OFF-LABEL:   func.func @div_by_sqrt
// OFF:         math.sqrt
// OFF-NEXT:    arith.divf
func.func @div_by_sqrt(%x: f32, %y: f32) -> f32 {
  %s = math.sqrt %y : f32
  %q = arith.divf %x, %s : f32
  return %q : f32
}

// -----

// One rsqrt serves every division by the same root; the divf's fastmath flags are kept.
// CHECK-LABEL: func.func @two_divs_by_sqrt
// CHECK:       %[[R:.*]] = math.rsqrt %arg2 : vector<4xf32>
// CHECK-DAG:   arith.mulf %arg0, %[[R]] fastmath<nnan> : vector<4xf32>
// CHECK-DAG:   arith.mulf %arg1, %[[R]] : vector<4xf32>
// CHECK-NOT:   math.sqrt
func.func @two_divs_by_sqrt(%a: vector<4xf32>, %b: vector<4xf32>, %y: vector<4xf32>) -> (vector<4xf32>, vector<4xf32>) {
  %s = math.sqrt %y : vector<4xf32>
  %p = arith.divf %a, %s fastmath<nnan> : vector<4xf32>
  %q = arith.divf %b, %s : vector<4xf32>
  return %p, %q : vector<4xf32>, vector<4xf32>
}

// -----

// Negative: the sqrt is also returned, so replacing the divide would compute both roots.
// CHECK-LABEL: func.func @sqrt_with_other_use
// CHECK:       math.sqrt
// CHECK-NEXT:  arith.divf
// CHECK-NOT:   math.rsqrt
func.func @sqrt_with_other_use(%x: f32, %y: f32) -> (f32, f32) {
  %s = math.sqrt %y : f32
  %q = arith.divf %x, %s : f32
  return %q, %s : f32, f32
}

// -----

// Negative: the sqrt is the dividend, not the divisor.
// CHECK-LABEL: func.func @sqrt_as_dividend
// CHECK:       math.sqrt
// CHECK-NEXT:  arith.divf
// CHECK-NOT:   math.rsqrt
func.func @sqrt_as_dividend(%x: f32, %y: f32) -> f32 {
  %s = math.sqrt %y : f32
  %q = arith.divf %s, %x : f32
  return %q : f32
}

// -----

// Division by a scalar constant inside a linalg.generic body (as torch-mlir emits x / 3.0)
// becomes multiplication by its reciprocal, defined next to the constant.
// CHECK-LABEL: func.func @div_by_constant_in_generic
// CHECK:       %[[C:.*]] = arith.constant 0.333333343 : f32
// CHECK:       linalg.generic
// CHECK:         arith.mulf %{{.*}}, %[[C]] : f32
// CHECK-NOT:   arith.divf
// OFF-LABEL:   func.func @div_by_constant_in_generic
// OFF:         arith.divf
#map = affine_map<(d0) -> (d0)>
func.func @div_by_constant_in_generic(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = arith.constant 3.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %c : f32
    linalg.yield %q : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Division by a splat constant tensor, and by a power of two in f64 (exact either way).
// CHECK-LABEL: func.func @div_by_splat_and_power_of_two
// CHECK-DAG:   %[[S:.*]] = arith.constant dense<2.500000e-01> : tensor<4xf32>
// CHECK-DAG:   %[[H:.*]] = arith.constant 1.250000e-01 : f64
// CHECK-DAG:   arith.mulf %arg0, %[[S]] : tensor<4xf32>
// CHECK-DAG:   arith.mulf %arg1, %[[H]] : f64
// CHECK-NOT:   arith.divf
func.func @div_by_splat_and_power_of_two(%x: tensor<4xf32>, %y: f64) -> (tensor<4xf32>, f64) {
  %c = arith.constant dense<4.0> : tensor<4xf32>
  %d = arith.constant 8.0 : f64
  %q = arith.divf %x, %c : tensor<4xf32>
  %r = arith.divf %y, %d : f64
  return %q, %r : tensor<4xf32>, f64
}

// -----

// A constant that also has another use stays; only the division changes.
// CHECK-LABEL: func.func @constant_kept_for_other_use
// CHECK-DAG:   %[[C:.*]] = arith.constant 5.000000e+00 : f16
// CHECK-DAG:   %[[R:.*]] = arith.constant 1.999510e-01 : f16
// CHECK-DAG:   arith.mulf %arg0, %[[R]] : f16
// CHECK-DAG:   arith.addf %arg0, %[[C]] : f16
func.func @constant_kept_for_other_use(%x: f16) -> (f16, f16) {
  %c = arith.constant 5.0 : f16
  %q = arith.divf %x, %c : f16
  %a = arith.addf %x, %c : f16
  return %q, %a : f16, f16
}

// -----

// In loop/memref IR: the divide in the loop body uses the reciprocal made outside it, and
// the root made outside the loop is taken once as rsqrt.
// CHECK-LABEL: func.func @in_scf_loop
// CHECK-DAG:   %[[C:.*]] = arith.constant 1.000000e-01 : f32
// CHECK-DAG:   %[[R:.*]] = math.rsqrt %arg1 : f32
// CHECK:       scf.for
// CHECK:         %[[M:.*]] = arith.mulf %{{.*}}, %[[C]] : f32
// CHECK:         arith.mulf %[[M]], %[[R]] : f32
// CHECK-NOT:   arith.divf
func.func @in_scf_loop(%x: memref<?xf32>, %y: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ten = arith.constant 10.0 : f32
  %s = math.sqrt %y : f32
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %q = arith.divf %v, %ten : f32
    %r = arith.divf %q, %s : f32
    memref.store %r, %x[%i] : memref<?xf32>
  }
  return
}

// -----

// Negative: the divisor is not a constant.
// CHECK-LABEL: func.func @div_by_argument
// CHECK:       arith.divf %arg0, %arg1
func.func @div_by_argument(%x: f32, %y: f32) -> f32 {
  %q = arith.divf %x, %y : f32
  return %q : f32
}

// -----

// Negative: 1/0 is infinite, and x/0 must stay inf/nan exactly as written.
// CHECK-LABEL: func.func @div_by_zero
// CHECK:       arith.divf
// CHECK-NOT:   arith.mulf
func.func @div_by_zero(%x: f32) -> f32 {
  %c = arith.constant 0.0 : f32
  %q = arith.divf %x, %c : f32
  return %q : f32
}

// -----

// Negative: the reciprocal of a huge constant is subnormal in f32 (and of a tiny one
// infinite): multiplying by it would lose precision or overflow.
// CHECK-LABEL: func.func @div_by_extreme_constants
// CHECK-COUNT-2: arith.divf
// CHECK-NOT:   arith.mulf
func.func @div_by_extreme_constants(%x: f32) -> (f32, f32) {
  %big = arith.constant 3.0e+38 : f32
  %tiny = arith.constant 1.0e-39 : f32
  %q = arith.divf %x, %big : f32
  %r = arith.divf %x, %tiny : f32
  return %q, %r : f32, f32
}

// -----

// Negative: a non-splat constant and an integer division are left alone.
// CHECK-LABEL: func.func @non_splat_and_integer
// CHECK:       arith.divf
// CHECK:       arith.divsi
// CHECK-NOT:   arith.mulf
func.func @non_splat_and_integer(%x: tensor<2xf32>, %i: i32) -> (tensor<2xf32>, i32) {
  %c = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %k = arith.constant 4 : i32
  %q = arith.divf %x, %c : tensor<2xf32>
  %r = arith.divsi %i, %k : i32
  return %q, %r : tensor<2xf32>, i32
}

// -----

// A product of exponentials becomes the exponential of a sum, chains included.
// CHECK-LABEL: func.func @exp_product
// CHECK:       %[[AB:.*]] = arith.addf %arg0, %arg1 : f32
// CHECK:       %[[ABC:.*]] = arith.addf %[[AB]], %arg2 : f32
// CHECK-NEXT:  %[[E:.*]] = math.exp %[[ABC]] : f32
// CHECK-NEXT:  return %[[E]]
// OFF-LABEL:   func.func @exp_product
// OFF-COUNT-3: math.exp
func.func @exp_product(%a: f32, %b: f32, %c: f32) -> f32 {
  %ea = math.exp %a : f32
  %eb = math.exp %b : f32
  %ec = math.exp %c : f32
  %p = arith.mulf %ea, %eb : f32
  %q = arith.mulf %p, %ec : f32
  return %q : f32
}

// -----

// The square of one exponential: exp(a) * exp(a) -> exp(a + a) (a + a is exact).
// CHECK-LABEL: func.func @exp_squared
// CHECK:       %[[S:.*]] = arith.addf %arg0, %arg0 : f64
// CHECK-NEXT:  %[[E:.*]] = math.exp %[[S]] : f64
// CHECK-NEXT:  return %[[E]]
func.func @exp_squared(%a: f64) -> f64 {
  %ea = math.exp %a : f64
  %p = arith.mulf %ea, %ea : f64
  return %p : f64
}

// -----

// Negative: exp(a) is also returned, so merging would not remove it.
// CHECK-LABEL: func.func @exp_with_other_use
// CHECK-COUNT-2: math.exp
// CHECK:       arith.mulf
// CHECK-NOT:   arith.addf
func.func @exp_with_other_use(%a: f32, %b: f32) -> (f32, f32) {
  %ea = math.exp %a : f32
  %eb = math.exp %b : f32
  %p = arith.mulf %ea, %eb : f32
  return %p, %ea : f32, f32
}

// -----

// Negative: exp times something else, and an integer product, are not exp products.
// CHECK-LABEL: func.func @exp_times_other
// CHECK:       math.exp
// CHECK:       arith.mulf
// CHECK:       arith.muli
// CHECK-NOT:   arith.addf
func.func @exp_times_other(%a: f32, %b: f32, %i: i32) -> (f32, i32) {
  %ea = math.exp %a : f32
  %p = arith.mulf %ea, %b : f32
  %q = arith.muli %i, %i : i32
  return %p, %q : f32, i32
}

// -----

// The accumulation of a linalg.generic reduction may be reassociated (sum over d1).
// CHECK-LABEL: func.func @generic_sum
// CHECK:       arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// OFF-LABEL:   func.func @generic_sum
// OFF-NOT:     reassoc
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @generic_sum(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A matmul-like product-sum on memrefs: only the accumulating addf is flagged (not the
// mulf feeding it), and existing flags are kept.
// CHECK-LABEL: func.func @generic_dot_memref
// CHECK:       %[[M:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:  arith.addf %[[M]], %{{.*}} fastmath<reassoc,nnan,contract> : f32
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0) -> ()>
func.func @generic_dot_memref(%a: memref<16xf32>, %b: memref<16xf32>, %acc: memref<f32>) {
  linalg.generic {indexing_maps = [#map, #map, #map1], iterator_types = ["reduction"]}
      ins(%a, %b : memref<16xf32>, memref<16xf32>) outs(%acc : memref<f32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %m, %out fastmath<nnan> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A product accumulated in an scf.for iter_arg is a reduction too.
// CHECK-LABEL: func.func @scf_product
// CHECK:       scf.for
// CHECK:         arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
func.func @scf_product(%x: memref<?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%p = %one) -> (f32) {
    %v = memref.load %x[%i] : memref<?xf32>
    %q = arith.mulf %p, %v : f32
    scf.yield %q : f32
  }
  return %r : f32
}

// -----

// So is a sum accumulated in an affine.for iter_arg.
// CHECK-LABEL: func.func @affine_sum
// CHECK:       affine.for
// CHECK:         arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f64
func.func @affine_sum(%x: memref<64xf64>) -> f64 {
  %zero = arith.constant 0.0 : f64
  %r = affine.for %i = 0 to 64 iter_args(%acc = %zero) -> (f64) {
    %v = affine.load %x[%i] : memref<64xf64>
    %s = arith.addf %acc, %v : f64
    affine.yield %s : f64
  }
  return %r : f64
}

// -----

// Negative: an addf in a parallel generic, an addf in a reduction that does not use the
// accumulator, and an integer reduction are not floating-point accumulations.
// CHECK-LABEL: func.func @not_accumulations
// CHECK-NOT:   reassoc
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0) -> ()>
func.func @not_accumulations(%x: tensor<8xf32>, %i: tensor<8xi32>, %f: tensor<f32>, %j: tensor<i32>) -> (tensor<8xf32>, tensor<f32>, tensor<i32>) {
  %p = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %last = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction"]}
      ins(%x : tensor<8xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %isum = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction"]}
      ins(%i : tensor<8xi32>) outs(%j : tensor<i32>) {
  ^bb0(%in: i32, %out: i32):
    %s = arith.addi %in, %out : i32
    linalg.yield %s : i32
  } -> tensor<i32>
  return %p, %last, %isum : tensor<8xf32>, tensor<f32>, tensor<i32>
}
