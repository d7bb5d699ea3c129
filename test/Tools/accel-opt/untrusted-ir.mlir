// Malformed integer lists of linalg ops: a located error each, never a crash (issue 14).
// RUN: accel-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// Without --verify-diagnostics: one line per broken chunk, exit 1, nothing else.
// RUN: not accel-opt %s --split-input-file 2>&1 >/dev/null | grep -v '^ ' | FileCheck %s --check-prefix=CLEAN
// CLEAN-COUNT-12: untrusted-ir.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'linalg.{{.*}}
// CLEAN-NOT: {{.}}

// An empty element in a permutation used to kill the process (SIGSEGV).
func.func @transpose_0(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected an integer, found ','}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [0, , 1]
  return %t : tensor<3x2xf32>
}

// -----

// A name where an integer belongs in a permutation used to kill the process (SIGSEGV).
func.func @transpose_1(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected an integer, found 'x'}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [x, 0]
  return %t : tensor<3x2xf32>
}

// -----

// Only a comma in a permutation used to kill the process (SIGSEGV).
func.func @transpose_2(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected an integer, found ','}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [, ]
  return %t : tensor<3x2xf32>
}

// -----

// An integer beyond int64 in a permutation used to kill the process (SIGSEGV).
func.func @transpose_3(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: 99999999999999999999 is out of range for i64}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [99999999999999999999, 0]
  return %t : tensor<3x2xf32>
}

// -----

// A missing comma in a permutation used to kill the process (SIGSEGV).
func.func @transpose_4(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected ',' or ']', found '0'}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1 0]
  return %t : tensor<3x2xf32>
}

// -----

// A trailing comma in a permutation used to kill the process (SIGSEGV).
func.func @transpose_5(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected an integer, found ']'}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0,]
  return %t : tensor<3x2xf32>
}

// -----

// A missing '[' in a permutation used to kill the process (SIGSEGV).
func.func @transpose_6(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected '[', found '1'}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = 1, 0]
  return %t : tensor<3x2xf32>
}

// -----

// Digit grouping in a permutation used to kill the process (SIGSEGV).
func.func @transpose_7(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected an integer, found '1_0'}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1_0, 0]
  return %t : tensor<3x2xf32>
}

// -----

// Arabic-Indic digits in a permutation used to kill the process (SIGSEGV).
func.func @transpose_8(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected an integer, found '١'}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [١, 0]
  return %t : tensor<3x2xf32>
}

// -----

// A float in a permutation used to kill the process (SIGSEGV).
func.func @transpose_9(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  // expected-error @+1 {{'linalg.transpose' permutation: expected an integer, found '1.0'}}
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1.0, 0]
  return %t : tensor<3x2xf32>
}

// -----

// linalg.broadcast's dimensions have the same weakness.
func.func @broadcast(%a: tensor<3xf32>, %o: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'linalg.broadcast' dimensions: expected an integer, found ']'}}
  %r = linalg.broadcast ins(%a : tensor<3xf32>) outs(%o : tensor<2x3xf32>) dimensions = [0,]
  return %r : tensor<2x3xf32>
}

// -----

// ...and linalg.reduce's, after its payload.
func.func @reduce(%a: tensor<2x3xf32>, %o: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'linalg.reduce' dimensions: expected an integer, found 'x'}}
  %r = linalg.reduce { arith.addf } ins(%a : tensor<2x3xf32>) outs(%o : tensor<2xf32>) dimensions = [x]
  return %r : tensor<2xf32>
}

// -----

// Well-formed lists (hex, comments between elements) still parse; a list in a comment or
// a string is not checked.
// CHECK-LABEL: func.func @fine
// CHECK: linalg.transpose {{.*}} permutation = [1, 0]
// linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [x]
func.func @fine(%a: tensor<2x3xf32>) -> tensor<3x2xf32> attributes {note = "linalg.transpose ins() outs() permutation = [,]"} {
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [0x1, // one
    0]
  return %t : tensor<3x2xf32>
}
