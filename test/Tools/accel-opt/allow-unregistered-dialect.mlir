// RUN: accel-opt %s --allow-unregistered-dialect | FileCheck %s
// RUN: not accel-opt %s 2>&1 | FileCheck %s --check-prefix=ERR

// Unregistered ops parse only with the flag.
// CHECK: "mystery.op"() : () -> ()
// ERR: allow-unregistered-dialect.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: operation being parsed with an unregistered dialect
"mystery.op"() : () -> ()
