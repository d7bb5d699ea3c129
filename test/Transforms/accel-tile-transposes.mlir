// RUN: accel-opt %s --split-input-file -accel-tile-transposes | FileCheck %s

// A transposing copy walks 8 x 8 blocks: block loops outside, the original pair inside.
// CHECK-DAG:   #[[LB:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG:   #[[UB:.*]] = affine_map<(d0) -> (d0 + 8)>
// CHECK-LABEL: func.func @transpose
// CHECK:       affine.for %[[II:.*]] = 0 to 64 step 8 {
// CHECK-NEXT:    affine.for %[[JJ:.*]] = 0 to 128 step 8 {
// CHECK-NEXT:      affine.for %[[I:.*]] = #[[LB]](%[[II]]) to #[[UB]](%[[II]]) {
// CHECK-NEXT:        affine.for %[[J:.*]] = #[[LB]](%[[JJ]]) to #[[UB]](%[[JJ]]) {
// CHECK-NEXT:          affine.load %arg0[%[[J]], %[[I]]]
// CHECK-NEXT:          arith.addf
// CHECK-NEXT:          affine.store %{{.*}}, %arg1[%[[I]], %[[J]]]
func.func @transpose(%x: memref<128x64xf32>, %y: memref<64x128xf32>) {
  %one = arith.constant 1.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      %0 = affine.load %x[%j, %i] : memref<128x64xf32>
      %1 = arith.addf %0, %one : f32
      affine.store %1, %y[%i, %j] : memref<64x128xf32>
    }
  }
  return
}

// -----

// Sizes that are not multiples of the block get min upper bounds.
// CHECK-DAG:   #[[UB1:.*]] = affine_map<(d0) -> (d0 + 8, 20)>
// CHECK-DAG:   #[[UB2:.*]] = affine_map<(d0) -> (d0 + 8, 30)>
// CHECK-LABEL: func.func @ragged
// CHECK:       affine.for %[[II:.*]] = 0 to 20 step 8 {
// CHECK-NEXT:    affine.for %[[JJ:.*]] = 0 to 30 step 8 {
// CHECK-NEXT:      affine.for %{{.*}} = #{{.*}}(%[[II]]) to min #[[UB1]](%[[II]]) {
// CHECK-NEXT:        affine.for %{{.*}} = #{{.*}}(%[[JJ]]) to min #[[UB2]](%[[JJ]]) {
func.func @ragged(%x: memref<30x20xf32>, %y: memref<20x30xf32>) {
  affine.for %i = 0 to 20 {
    affine.for %j = 0 to 30 {
      %0 = affine.load %x[%j, %i] : memref<30x20xf32>
      affine.store %0, %y[%i, %j] : memref<20x30xf32>
    }
  }
  return
}

// -----

// Negative: both accesses are unit-stride along the inner loop (a plain copy).
// CHECK-LABEL: func.func @copy
// CHECK:       affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 128 {
func.func @copy(%x: memref<64x128xf32>, %y: memref<64x128xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      %0 = affine.load %x[%i, %j] : memref<64x128xf32>
      affine.store %0, %y[%i, %j] : memref<64x128xf32>
    }
  }
  return
}

// -----

// Negative: fewer than two blocks along a loop.
// CHECK-LABEL: func.func @small
// CHECK:       affine.for %{{.*}} = 0 to 12 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 128 {
func.func @small(%x: memref<128x12xf32>, %y: memref<12x128xf32>) {
  affine.for %i = 0 to 12 {
    affine.for %j = 0 to 128 {
      %0 = affine.load %x[%j, %i] : memref<128x12xf32>
      affine.store %0, %y[%i, %j] : memref<12x128xf32>
    }
  }
  return
}

// -----

// Negative: an in-place transpose reads what other iterations write.
// CHECK-LABEL: func.func @in_place
// CHECK:       affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 64 {
func.func @in_place(%x: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %0 = affine.load %x[%j, %i] : memref<64x64xf32>
      affine.store %0, %x[%i, %j] : memref<64x64xf32>
    }
  }
  return
}

// -----

// Negative: the nest is not perfect (a store between the loops).
// CHECK-LABEL: func.func @imperfect
// CHECK:       affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT:    affine.store
func.func @imperfect(%x: memref<128x64xf32>, %y: memref<64x128xf32>, %z: memref<64xf32>) {
  %one = arith.constant 1.0 : f32
  affine.for %i = 0 to 64 {
    affine.store %one, %z[%i] : memref<64xf32>
    affine.for %j = 0 to 128 {
      %0 = affine.load %x[%j, %i] : memref<128x64xf32>
      affine.store %0, %y[%i, %j] : memref<64x128xf32>
    }
  }
  return
}

// -----

// Negative: the row operand m[i] has P's variable last but does not move along L: nothing
// strides (the flash-attention tile's exp(s - m)).
// CHECK-LABEL: func.func @row_broadcast
// CHECK:       affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 64 {
func.func @row_broadcast(%s: memref<64x64xf32>, %m: memref<64xf32>, %p: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %0 = affine.load %s[%i, %j] : memref<64x64xf32>
      %1 = affine.load %m[%i] : memref<64xf32>
      %2 = arith.subf %0, %1 : f32
      affine.store %2, %p[%i, %j] : memref<64x64xf32>
    }
  }
  return
}
