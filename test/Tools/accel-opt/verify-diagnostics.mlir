// RUN: accel-opt %s --split-input-file --verify-diagnostics \
// RUN:   --load-pass-plugin=%S/Inputs/tag_funcs.py -reject-addf -cse

// A parse error is matched by line, like mlir-opt.
// expected-error@+1 {{custom op 'foo' is unknown}}
%0 = foo

// -----

// A verifier error on the same line as the expectation.
func.func @bad_return(%a: i32) -> f32 {
  return %a : i32 // expected-error {{type of return operand 0 ('i32') doesn't match function result type ('f32')}}
}

// -----

// @below / @above and regex expectations.
func.func @undeclared() -> i32 {
  // expected-error-re@below {{use of undeclared SSA value {{(name)?}}}}
  return %x : i32
}

// -----

// A located error from a Python pass is an expected diagnostic too.
func.func @plugin_failure(%a: f32) -> f32 {
  // expected-error@+1 {{arith.addf is not allowed here}}
  %0 = arith.addf %a, %a : f32
  return %0 : f32
}
