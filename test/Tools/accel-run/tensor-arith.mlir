// arith and math ops on whole tensors (no linalg): the cpu pipeline turns them into
// linalg.generic ops (convert-elementwise-to-linalg) before bufferization, so accel-run,
// accel-compile and compile_mlir run them (they used to fail with "op was not bufferized").
// RUN: accel-run %s --entry main --input 4xf32=1,2,-3,4 --input 4xf32=0.5,0.5,0.5,0.5 \
// RUN:   | FileCheck %s
// RUN: accel-run %s --entry dynamic --input 3xf32=1,2,3 | FileCheck %s --check-prefix=DYN
// RUN: accel-run %s --entry scalar --input f32=2 --input i32=7 | FileCheck %s --check-prefix=SCALAR
// RUN: rm -rf %t && accel-compile %s --output-folder %t --entry main -o1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=COMPILE

// (a + b) * a, exp(a - b) (to 6 digits), a > b, select(a > b, a, b):
// CHECK: 4xf32=[1.5, 5.0, 7.5, 18.0]
// CHECK-NEXT: 4xf32=[{{1\.64872[0-9]*}}, {{4\.48168[0-9]*}}, {{0\.030197[0-9]*}}, {{33\.1154[0-9]*}}]
// CHECK-NEXT: 4xi1=[true, true, false, true]
// CHECK-NEXT: 4xf32=[1.0, 2.0, 0.5, 4.0]
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>) {
  %sum = arith.addf %a, %b : tensor<4xf32>
  %prod = arith.mulf %sum, %a : tensor<4xf32>
  %diff = arith.subf %a, %b : tensor<4xf32>
  %exp = math.exp %diff : tensor<4xf32>
  %gt = arith.cmpf ogt, %a, %b : tensor<4xf32>
  %max = arith.select %gt, %a, %b : tensor<4xi1>, tensor<4xf32>
  return %prod, %exp, %gt, %max : tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>
}

// A dynamic size: x * x + x.
// DYN: 3xf32=[2.0, 6.0, 12.0]
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %sq = arith.mulf %x, %x : tensor<?xf32>
  %r = arith.addf %sq, %x : tensor<?xf32>
  return %r : tensor<?xf32>
}

// 0-d tensors, float and integer: 2 * 2 = 4, 7 / 2 = 3.
// SCALAR: f32=[4.0]
// SCALAR-NEXT: i32=[3]
func.func @scalar(%x: tensor<f32>, %n: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %sq = arith.mulf %x, %x : tensor<f32>
  %two = arith.constant dense<2> : tensor<i32>
  %half = arith.divsi %n, %two : tensor<i32>
  return %sq, %half : tensor<f32>, tensor<i32>
}

// COMPILE: accel-compile: wrote {{.*}} (entry @main)
