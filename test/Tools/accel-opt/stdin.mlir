// RUN: accel-opt - -canonicalize < %s | FileCheck %s
// RUN: accel-opt -canonicalize < %s | FileCheck %s

// Input from stdin when the file is `-` or absent.
// CHECK-LABEL: func.func @fold
// CHECK: arith.constant 3 : i32
func.func @fold() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  return %c : i32
}
