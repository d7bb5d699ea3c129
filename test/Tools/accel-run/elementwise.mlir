// RUN: accel-run %s --entry main --input 4xf32=-1.5,0,1,3.25 | FileCheck %s

// relu, square, exp and x > 0 of [-1.5, 0, 1, 3.25]: squares are exact in f32; exp is
// checked to 6 significant digits (exp(-1.5) = 0.223130, exp(1) = 2.71828,
// exp(3.25) = 25.7903; numpy's f32 results differ from libm's by an ulp here).
// CHECK: 4xf32=[0.0, 0.0, 1.0, 3.25]
// CHECK-NEXT: 4xf32=[2.25, 0.0, 1.0, 10.5625]
// CHECK-NEXT: 4xf32=[{{0\.22313[0-9]*}}, 1.0, {{2\.71828[0-9]*}}, {{25\.7903[0-9]*}}]
// CHECK-NEXT: 4xi1=[false, false, true, true]

#map = affine_map<(i) -> (i)>
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %b = tensor.empty() : tensor<4xi1>
  %relu, %sq, %exp, %pos = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map],
                                           iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e, %e, %e, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
    ^bb0(%x: f32, %o1: f32, %o2: f32, %o3: f32, %o4: i1):
      %r = arith.maximumf %x, %zero : f32
      %s = arith.mulf %x, %x : f32
      %x2 = math.exp %x : f32
      %p = arith.cmpf ogt, %x, %zero : f32
      linalg.yield %r, %s, %x2, %p : f32, f32, f32, i1
  } -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>)
  return %relu, %sq, %exp, %pos : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>
}
