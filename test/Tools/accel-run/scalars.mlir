// Scalar arguments and results of every kind, and rank-0 tensors.
// RUN: accel-run %s --entry main --input f32=2.5 --input i64=-3 --input index=7 --input i1=true | FileCheck %s
// RUN: accel-run %s --entry rank0 --input f32=1.5 | FileCheck %s --check-prefix=RANK0
// RUN: accel-run - --entry rank0 --input f32=[-4] < %s | FileCheck %s --check-prefix=STDIN

// 2.5 * 2, -3 + 1, 7 * 3, not true, and 2.5 wrapped in a rank-0 tensor.
// CHECK: f32=5.0
// CHECK-NEXT: i64=-2
// CHECK-NEXT: index=21
// CHECK-NEXT: i1=false
// CHECK-NEXT: f32=[2.5]
// RANK0: f32=[3.0]
// STDIN: f32=[-8.0]

func.func @main(%a: f32, %b: i64, %c: index, %d: i1) -> (f32, i64, index, i1, tensor<f32>) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1 : i64
  %three = arith.constant 3 : index
  %true = arith.constant true
  %x = arith.mulf %a, %two : f32
  %y = arith.addi %b, %one : i64
  %z = arith.muli %c, %three : index
  %w = arith.xori %d, %true : i1
  %t = tensor.from_elements %a : tensor<f32>
  return %x, %y, %z, %w, %t : f32, i64, index, i1, tensor<f32>
}

func.func @rank0(%a: tensor<f32>) -> tensor<f32> {
  %e = tensor.empty() : tensor<f32>
  %r = linalg.add ins(%a, %a : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
