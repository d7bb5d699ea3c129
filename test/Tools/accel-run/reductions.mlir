// RUN: accel-run %s --entry reduce --input 2x3xf32=1,2,3,4,5,6 | FileCheck %s
// RUN: accel-run %s --entry min_i32 --input 2x2xi32=5,-7,3,-2 | FileCheck %s --check-prefix=MIN

// Row sums [1+2+3, 4+5+6]; column maxima of [[1,2,3],[4,5,6]]; the sum of all as rank 0.
// CHECK: 2xf32=[6.0, 15.0]
// CHECK-NEXT: 3xf32=[4.0, 5.0, 6.0]
// CHECK-NEXT: f32=[21.0]
// MIN: i32=[-7]

func.func @reduce(%a: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e2 = tensor.empty() : tensor<2xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %rows = linalg.reduce ins(%a : tensor<2x3xf32>) outs(%z2 : tensor<2xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  %e3 = tensor.empty() : tensor<3xf32>
  %m3 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %cols = linalg.reduce ins(%a : tensor<2x3xf32>) outs(%m3 : tensor<3xf32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %m = arith.maximumf %x, %acc : f32
      linalg.yield %m : f32
    }
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %all = linalg.reduce ins(%a : tensor<2x3xf32>) outs(%z0 : tensor<f32>) dimensions = [0, 1]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  return %rows, %cols, %all : tensor<2xf32>, tensor<3xf32>, tensor<f32>
}

func.func @min_i32(%a: tensor<2x2xi32>) -> tensor<i32> {
  %big = arith.constant 2147483647 : i32
  %e = tensor.empty() : tensor<i32>
  %f = linalg.fill ins(%big : i32) outs(%e : tensor<i32>) -> tensor<i32>
  %r = linalg.reduce ins(%a : tensor<2x2xi32>) outs(%f : tensor<i32>) dimensions = [0, 1]
    (%x: i32, %acc: i32) {
      %m = arith.minsi %x, %acc : i32
      linalg.yield %m : i32
    }
  return %r : tensor<i32>
}
