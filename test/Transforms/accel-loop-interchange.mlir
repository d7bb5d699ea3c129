// RUN: accel-opt %s --split-input-file -accel-loop-interchange | FileCheck %s

// A column reduction with its init and epilogue: both move into loops of their own and the
// reduction loop goes outside, so the inner loop reads %x along its rows.
// CHECK-LABEL: func.func @column_sum
// CHECK:       affine.for %[[J0:.*]] = 0 to 64 {
// CHECK-NEXT:    affine.store %{{.*}}, %arg0[%[[J0]]]
// CHECK-NEXT:  }
// CHECK-NEXT:  affine.for %[[I:.*]] = 0 to 128 {
// CHECK-NEXT:    affine.for %[[J:.*]] = 0 to 64 {
// CHECK-NEXT:      affine.load %arg1[%[[I]], %[[J]]]
// CHECK-NEXT:      affine.load %arg0[%[[J]]]
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      affine.store %{{.*}}, %arg0[%[[J]]]
// CHECK:       affine.for %[[J2:.*]] = 0 to 64 {
// CHECK-NEXT:    affine.load %arg0[%[[J2]]]
// CHECK-NEXT:    arith.divf
func.func @column_sum(%out: memref<64xf32>, %x: memref<128x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 128.0 : f32
  affine.for %j = 0 to 64 {
    affine.store %zero, %out[%j] : memref<64xf32>
    affine.for %i = 0 to 128 {
      %0 = affine.load %x[%i, %j] : memref<128x64xf32>
      %1 = affine.load %out[%j] : memref<64xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %out[%j] : memref<64xf32>
    }
    %3 = affine.load %out[%j] : memref<64xf32>
    %4 = arith.divf %3, %n : f32
    affine.store %4, %out[%j] : memref<64xf32>
  }
  return
}

// -----

// The pair inside an outer loop (a mean over S of [B, S, D]) is interchanged too.
// CHECK-LABEL: func.func @middle_dim
// CHECK:       affine.for %[[B:.*]] = 0 to 2 {
// CHECK:         affine.for %[[S:.*]] = 0 to 16 {
// CHECK-NEXT:      affine.for %[[D:.*]] = 0 to 32 {
// CHECK-NEXT:        affine.load %arg1[%[[B]], %[[S]], %[[D]]]
func.func @middle_dim(%out: memref<2x32xf32>, %x: memref<2x16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %b = 0 to 2 {
    affine.for %d = 0 to 32 {
      affine.store %zero, %out[%b, %d] : memref<2x32xf32>
      affine.for %s = 0 to 16 {
        %0 = affine.load %x[%b, %s, %d] : memref<2x16x32xf32>
        %1 = affine.load %out[%b, %d] : memref<2x32xf32>
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %out[%b, %d] : memref<2x32xf32>
      }
    }
  }
  return
}

// -----

// Negative: a row reduction already walks memory along its inner loop.
// CHECK-LABEL: func.func @row_sum
// CHECK:       affine.for %[[I:.*]] = 0 to 128 {
// CHECK:         affine.for %[[J:.*]] = 0 to 64 {
// CHECK-NEXT:      affine.load %arg1[%[[I]], %[[J]]]
func.func @row_sum(%out: memref<128xf32>, %x: memref<128x64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 128 {
    affine.store %zero, %out[%i] : memref<128xf32>
    affine.for %j = 0 to 64 {
      %0 = affine.load %x[%i, %j] : memref<128x64xf32>
      %1 = affine.load %out[%i] : memref<128xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %out[%i] : memref<128xf32>
    }
  }
  return
}

// -----

// Negative: a full reduction into one element is shared by every iteration of the outer
// loop; interchanging would reorder its additions.
// CHECK-LABEL: func.func @full_sum
// CHECK:       affine.for %[[J:.*]] = 0 to 64 {
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 128 {
// CHECK-NEXT:      affine.load %arg1[%[[I]], %[[J]]]
func.func @full_sum(%out: memref<1xf32>, %x: memref<128x64xf32>) {
  affine.for %j = 0 to 64 {
    affine.for %i = 0 to 128 {
      %0 = affine.load %x[%i, %j] : memref<128x64xf32>
      %1 = affine.load %out[0] : memref<1xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %out[0] : memref<1xf32>
    }
  }
  return
}

// -----

// Negative: the written buffer is read at another index (a prefix sum along j), so the
// iterations of the outer loop depend on each other.
// CHECK-LABEL: func.func @carried
// CHECK:       affine.for %[[J:.*]] = 1 to 64 {
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 128 {
func.func @carried(%out: memref<65xf32>, %x: memref<128x64xf32>) {
  affine.for %j = 1 to 64 {
    affine.for %i = 0 to 128 {
      %0 = affine.load %x[%i, %j] : memref<128x64xf32>
      %1 = affine.load %out[%j - 1] : memref<65xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %out[%j] : memref<65xf32>
    }
  }
  return
}

// -----

// Negative: a call in the body has unknown effects.
// CHECK-LABEL: func.func @opaque
// CHECK:       affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT:    func.call @g()
func.func private @g()
func.func @opaque(%out: memref<64xf32>, %x: memref<128x64xf32>) {
  affine.for %j = 0 to 64 {
    func.call @g() : () -> ()
    affine.for %i = 0 to 128 {
      %0 = affine.load %x[%i, %j] : memref<128x64xf32>
      %1 = affine.load %out[%j] : memref<64xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %out[%j] : memref<64xf32>
    }
  }
  return
}

// -----

// Negative: the accumulator is a view of the input's buffer.
// CHECK-LABEL: func.func @view
// CHECK:       affine.for %[[J:.*]] = 0 to 64 {
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 128 {
func.func @view(%x: memref<128x64xf32>) {
  %out = memref.subview %x[0, 0] [1, 64] [1, 1] : memref<128x64xf32> to memref<64xf32, strided<[1]>>
  affine.for %j = 0 to 64 {
    affine.for %i = 0 to 128 {
      %0 = affine.load %x[%i, %j] : memref<128x64xf32>
      %1 = affine.load %out[%j] : memref<64xf32, strided<[1]>>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %out[%j] : memref<64xf32, strided<[1]>>
    }
  }
  return
}
