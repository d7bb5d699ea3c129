// RUN: not accel-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: not accel-opt < %s - --split-input-file 2>&1 | FileCheck %s --check-prefix=STDIN

// Parse errors carry the real file name and the line in the whole file (not the chunk).
// CHECK: parse-errors.mlir:[[# @LINE + 3]]:8: error: custom op 'foo' is unknown
// STDIN: <stdin>:[[# @LINE + 2]]:8: error: custom op 'foo' is unknown
func.func @f() {
  %0 = foo
}

// -----

// Verifier errors too, with their notes.
// CHECK: parse-errors.mlir:[[# @LINE + 2]]:3: error: 'func.return' op has 1 operands, but enclosing function (@g) returns 0
func.func @g(%a: i32) {
  return %a : i32
}

// -----

// A valid chunk after broken ones is still processed and printed.
// CHECK-NOT: Traceback
// CHECK: func.func @ok
func.func @ok() {
  return
}
