// RUN: accel-opt %s --split-input-file -accel-emit-c-interface | FileCheck %s
// RUN: accel-opt %s --split-input-file '-accel-emit-c-interface{include-declarations=true}' \
// RUN:   | FileCheck %s --check-prefix=DECL

// Every function definition gets the attribute the C wrappers need.
// CHECK-LABEL: func.func @definition
// CHECK-SAME: attributes {llvm.emit_c_interface}
func.func @definition(%a: memref<4xf32>) {
  return
}

// -----

// Negative: a declaration has no body to wrap, so it is skipped by default.
// CHECK-LABEL: func.func private @declaration
// CHECK-NOT: llvm.emit_c_interface
// DECL-LABEL: func.func private @declaration
// DECL-SAME: attributes {llvm.emit_c_interface}
func.func private @declaration(%a: memref<4xf32>)
