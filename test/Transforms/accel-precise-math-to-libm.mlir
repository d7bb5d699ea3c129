// RUN: accel-opt %s --split-input-file -accel-precise-math-to-libm | FileCheck %s

// expm1 and log1p become calls of libm's accurate functions (f64 names, f32 with `f`),
// declared once each.
// CHECK-DAG: func.func private @expm1(f64) -> f64
// CHECK-DAG: func.func private @log1pf(f32) -> f32
// CHECK-LABEL: func.func @scalars
// CHECK: %[[A:.*]] = call @expm1(%arg0) : (f64) -> f64
// CHECK: %[[B:.*]] = call @expm1(%[[A]]) : (f64) -> f64
// CHECK: %[[C:.*]] = call @log1pf(%arg1) : (f32) -> f32
// CHECK-NOT: math.
// CHECK: return %[[B]], %[[C]]
func.func @scalars(%x: f64, %y: f32) -> (f64, f32) {
  %0 = math.expm1 %x : f64
  %1 = math.expm1 %0 fastmath<fast> : f64
  %2 = math.log1p %y : f32
  return %1, %2 : f64, f32
}

// -----

// Negative: vector operands stay for the LLVM lowering, and so does an op whose libm name
// is taken by a symbol of another type.
// CHECK-LABEL: func.func private @expm1(f32) -> f32
// CHECK-LABEL: func.func @kept
// CHECK: math.expm1 %arg0 : vector<4xf64>
// CHECK: math.expm1 %arg1 : f64
// CHECK-NOT: call
func.func private @expm1(f32) -> f32
func.func @kept(%v: vector<4xf64>, %x: f64) -> (vector<4xf64>, f64) {
  %0 = math.expm1 %v : vector<4xf64>
  %1 = math.expm1 %x : f64
  return %0, %1 : vector<4xf64>, f64
}
