// RUN: not accel-opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s

// An expectation that nothing produces is reported at the comment.
func.func @missing() {
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 1]]:6: error: expected error "never produced" was not produced
  // expected-error@+1 {{never produced}}
  return
}

// -----

// An unexpected diagnostic is reported at its own location.
func.func @unexpected(%a: i32) -> f32 {
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 1]]:3: error: unexpected error: type of return operand 0
  return %a : i32
}

// -----

// The wrong severity does not match.
func.func @severity(%a: i32) -> f32 {
  // CHECK: error: expected warning "type of return operand" was not produced
  // expected-warning@+1 {{type of return operand}}
  return %a : i32
}

// -----

// A broken regex in an expectation is the test file's error, located at the comment (it
// used to be an "internal error" from Python's re module).
func.func @bad_regex(%a: i32) -> f32 {
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:6: error: invalid regular expression in expected-error: missing ), unterminated subpattern
  // CHECK-NOT: internal error
  // expected-error-re@+1 {{type of {{(return}} operand}}
  return %a : i32
}
