// RUN: not accel-opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s
// RUN: not accel-opt %s --split-input-file --verify-diagnostics=only-expected 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ONLY
// RUN: not accel-opt %s --split-input-file --verify-diagnostics=bogus 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADVALUE

// Upstream's order: broken expectations when the file is read, unexpected diagnostics and
// near misses as they happen, expectations nothing produced at the end.
// CHECK: verify-diagnostics-mismatch.mlir:30:6: error: invalid regex: {{.*}}
// CHECK-NEXT: {{ +}}// {{e}}xpected-error-re@+1
// CHECK-NEXT: {{^ +}}^~~~~~~~
// CHECK: verify-diagnostics-mismatch.mlir:31:3: error: unexpected error: type of return operand 0
// CHECK: verify-diagnostics-mismatch.mlir:38:3: error: unexpected error: type of return operand 0
// CHECK: verify-diagnostics-mismatch.mlir:45:6: error: 'error' diagnostic emitted when expecting a 'warning'
// CHECK-NEXT: {{ +}}// {{e}}xpected-warning@+1
// CHECK-NEXT: {{^ +}}^{{$}}
// CHECK: verify-diagnostics-mismatch.mlir:45:6: error: {{e}}xpected warning "type of return operand" was not produced
// CHECK: verify-diagnostics-mismatch.mlir:53:6: error: {{e}}xpected error "never produced" was not produced
// CHECK-NEXT: {{ +}}// {{e}}xpected-error@+1 {{[{][{]}}never produced{{[}][}]}}
// CHECK-NEXT: {{^ +}}^~~~~~~~~~~~~~{{$}}
// CHECK-NOT: error

// ONLY-NOT: unexpected error
// ONLY-NOT: diagnostic emitted when expecting
// ONLY: error: {{e}}xpected error "never produced" was not produced
// BADVALUE: accel-opt: for the --verify-diagnostics option: Cannot find option named 'bogus'!

// A broken regex in an expectation is the test file's error, located at the comment.
func.func @bad_regex(%a: i32) -> f32 {
  // expected-error-re@+1 {{type of {{(return}} operand}}
  return %a : i32
}

// -----

// An unexpected diagnostic is reported at its own location.
func.func @unexpected(%a: i32) -> f32 {
  return %a : i32
}

// -----

// The wrong severity does not match: a near miss, and the expectation is not produced.
func.func @severity(%a: i32) -> f32 {
  // expected-warning@+1 {{type of return operand}}
  return %a : i32
}

// -----

// An expectation that nothing produces is reported at the comment.
func.func @missing() {
  // expected-error@+1 {{never produced}}
  return
}
