// One compiled function, three input shapes (the empty one prints no values).
// RUN: accel-run %s --input 1x4xf32=1,2,3,4 | FileCheck %s --check-prefix=ROW
// RUN: accel-run %s --input 3x2xf32=0,1,2,3,4,5 | FileCheck %s --check-prefix=COL
// RUN: accel-run %s --input 0x3xf32= | FileCheck %s --check-prefix=EMPTY
// RUN: accel-run %s --input 2x2xf32=7 | FileCheck %s --check-prefix=SPLAT

// x + 1, and the number of rows as an index.
// ROW: 1x4xf32=[2.0, 3.0, 4.0, 5.0]
// ROW-NEXT: index=1
// COL: 3x2xf32=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
// COL-NEXT: index=3
// EMPTY: 0x3xf32=[]
// EMPTY-NEXT: index=0
// SPLAT: 2x2xf32=[8.0, 8.0, 8.0, 8.0]

#map = affine_map<(i, j) -> (i, j)>
func.func @main(%a: tensor<?x?xf32>) -> (tensor<?x?xf32>, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%x: f32, %o: f32):
      %s = arith.addf %x, %one : f32
      linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r, %m : tensor<?x?xf32>, index
}
