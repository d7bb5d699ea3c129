// RUN: accel-opt %s --split-input-file --verify-diagnostics -accel-assert-to-error-return

// An assert inside a loop body cannot return from the function: run after convert-scf-to-cf.
func.func @nested_in_loop(%n: index, %b: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{cf.assert nested in 'scf.for' cannot return from the function; run this pass after convert-scf-to-cf}}
    cf.assert %b, "in a loop"
  }
  return
}
