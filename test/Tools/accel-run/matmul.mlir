// RUN: accel-run %s --entry matmul --input 2x3xf32=1,2,3,4,5,6 --input 3x2xf32=7,8,9,10,11,12 | FileCheck %s --check-prefix=F32
// RUN: accel-run %s --entry matmul_i32 --input 2x3xi32=1,2,3,4,5,6 --input 3x2xi32=7,8,9,10,11,12 | FileCheck %s --check-prefix=I32
// RUN: accel-run %s --entry mlp --input 2x3xf32=1,2,3,4,5,6 --input 3x2xf32=7,8,9,10,11,12 --input 2xf32=-100,0.5 | FileCheck %s --check-prefix=MLP

// Expected values by hand: [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]]
//   = [[7+18+33, 8+20+36], [28+45+66, 32+50+72]] = [[58, 64], [139, 154]].
// F32: 2x2xf32=[58.0, 64.0, 139.0, 154.0]
// I32: 2x2xi32=[58, 64, 139, 154]
// relu(x @ w + [-100, 0.5]) = relu([[-42, 64.5], [39, 154.5]]).
// MLP: 2x2xf32=[0.0, 64.5, 39.0, 154.5]

func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %r = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x2xf32>)
                     outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

func.func @matmul_i32(%a: tensor<2x3xi32>, %b: tensor<3x2xi32>) -> tensor<2x2xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x2xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<2x2xi32>) -> tensor<2x2xi32>
  %r = linalg.matmul ins(%a, %b : tensor<2x3xi32>, tensor<3x2xi32>)
                     outs(%f : tensor<2x2xi32>) -> tensor<2x2xi32>
  return %r : tensor<2x2xi32>
}

func.func @mlp(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>, %b: tensor<2xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x2xf32>)
                      outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<2x2xf32>, tensor<2xf32>) outs(%e2 : tensor<2x2xf32>) {
    ^bb0(%a: f32, %bias: f32, %o: f32):
      %s = arith.addf %a, %bias : f32
      %m = arith.maximumf %s, %zero : f32
      linalg.yield %m : f32
  } -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}
