// A failing runtime check is one diagnostic line and exit code 1, never a signal:
// integer division by zero (SIGFPE before), INT_MIN / -1 wraps as in eager PyTorch, a
// result too big for the machine (SIGSEGV before), a float literal beyond its type's range
// (a numpy warning with a line of accel-run's source before).
// RUN: accel-run %s --input 4xi32=7,-2147483648,-7,5 --input 4xi32=2,-1,2,-1 | FileCheck %s --check-prefix=WRAP
// RUN: not accel-run %s --input 4xi32=7,1,1,1 --input 4xi32=2,0,1,1 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not accel-run %s --entry rem --input i64=5 --input i64=0 2>&1 | FileCheck %s --check-prefix=REM
// RUN: not accel-run %s --entry big --input f32=1 2>&1 | FileCheck %s --check-prefix=OOM
// RUN: not accel-run %s --entry bf --input 2xbf16=1e39,1 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: not accel-run %s --entry bf --input 2xbf16=3.4e38,1 2>&1 | FileCheck %s --check-prefix=BF16ROUND
// RUN: accel-run %s --entry bf --input 2xbf16=-inf,3.38e38 2>&1 | FileCheck %s --check-prefix=BF16OK

// WRAP: 4xi32=[3, -2147483648, -3, -5]
// ZERO: {{.*}}runtime-errors.mlir: error: @main: integer division by zero
// ZERO-NOT: Traceback
// REM: {{.*}}runtime-errors.mlir: error: @rem: integer division by zero
// OOM: {{.*}}runtime-errors.mlir: error: @big: out of memory: could not allocate 1125899906842624 bytes (1024.0 TiB)
// BF16: accel-run: error: --input '2xbf16=1e39,1': 1e39 is out of range for bf16 (largest finite value: 3.3895314e+38)
// BF16-NOT: Warning
// BF16ROUND: accel-run: error: --input '2xbf16=3.4e38,1': 3.4e38 is out of range for bf16
// BF16OK: 2xbf16=[-inf, 3.38e+38]

func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %e = tensor.empty() : tensor<4xi32>
  %r = linalg.div ins(%a, %b : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}

func.func @rem(%a: i64, %b: i64) -> i64 {
  %r = arith.remsi %a, %b : i64
  return %r : i64
}

func.func @big(%x: f32) -> tensor<16777216x16777216xf32> {
  %e = tensor.empty() : tensor<16777216x16777216xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<16777216x16777216xf32>) -> tensor<16777216x16777216xf32>
  return %f : tensor<16777216x16777216xf32>
}

func.func @bf(%a: tensor<2xbf16>) -> tensor<2xbf16> {
  return %a : tensor<2xbf16>
}
