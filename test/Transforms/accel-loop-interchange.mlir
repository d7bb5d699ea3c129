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

// -----

// A depthwise convolution's band: the output's last index (ow) sinks below the short
// window loops, so the innermost loop walks the output and input rows.
// CHECK-LABEL: func.func @depthwise_window
// CHECK:       affine.for %[[C:.*]] = 0 to 8 {
// CHECK-NEXT:    affine.for %[[KH:.*]] = 0 to 3 {
// CHECK-NEXT:      affine.for %[[KW:.*]] = 0 to 3 {
// CHECK-NEXT:        affine.for %[[OW:.*]] = 0 to 30 {
// CHECK-NEXT:          affine.load %arg0[%[[C]], %[[KH]], %[[OW]] + %[[KW]]]
// CHECK-NEXT:          affine.load %arg1[%[[C]], %[[KH]], %[[KW]]]
// CHECK-NEXT:          affine.load %arg2[%[[C]], %[[OW]]]
func.func @depthwise_window(%x: memref<8x3x32xf32>, %w: memref<8x3x3xf32>, %out: memref<8x30xf32>) {
  affine.for %ow = 0 to 30 {
    affine.for %c = 0 to 8 {
      affine.for %kh = 0 to 3 {
        affine.for %kw = 0 to 3 {
          %0 = affine.load %x[%c, %kh, %ow + %kw] : memref<8x3x32xf32>
          %1 = affine.load %w[%c, %kh, %kw] : memref<8x3x3xf32>
          %2 = affine.load %out[%c, %ow] : memref<8x30xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %out[%c, %ow] : memref<8x30xf32>
        }
      }
    }
  }
  return
}

// -----

// Negative: the innermost loop is long (a row reduction), nothing sinks below it.
// CHECK-LABEL: func.func @long_inner
// CHECK:       affine.for %{{.*}} = 0 to 30 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 64 {
func.func @long_inner(%x: memref<30x64xf32>, %out: memref<30xf32>) {
  affine.for %o = 0 to 30 {
    affine.for %k = 0 to 64 {
      %0 = affine.load %x[%o, %k] : memref<30x64xf32>
      %1 = affine.load %out[%o] : memref<30xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %out[%o] : memref<30xf32>
    }
  }
  return
}

// -----

// Negative: the output's last index is the window loop's, not a loop that could sink.
// CHECK-LABEL: func.func @no_target
// CHECK:       affine.for %{{.*}} = 0 to 30 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 3 {
func.func @no_target(%x: memref<30x3xf32>, %out: memref<30x3xf32>) {
  affine.for %o = 0 to 30 {
    affine.for %k = 0 to 3 {
      %0 = affine.load %x[%o, %k] : memref<30x3xf32>
      affine.store %0, %out[%o, %k] : memref<30x3xf32>
    }
  }
  return
}

// -----

// Negative: the written buffer is read at a neighbouring element (a dependence along ow).
// CHECK-LABEL: func.func @carried_window
// CHECK:       affine.for %{{.*}} = 1 to 30 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 3 {
func.func @carried_window(%x: memref<40xf32>, %out: memref<30xf32>) {
  affine.for %ow = 1 to 30 {
    affine.for %kw = 0 to 3 {
      %0 = affine.load %x[%ow + %kw] : memref<40xf32>
      %1 = affine.load %out[%ow - 1] : memref<30xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %out[%ow] : memref<30xf32>
    }
  }
  return
}

// -----

// An average pool as fusion leaves it: init and epilogue around the window, the sum in a
// private 1x1 buffer. The init and epilogue get loops of their own, the private buffer a
// slot per ow (last dim), and ow sinks below the window.
// CHECK-LABEL: func.func @avg_window
// CHECK:       %[[ACC:.*]] = memref.alloca() : memref<1x30xf32>
// CHECK:       affine.for %[[O0:.*]] = 0 to 30 {
// CHECK-NEXT:    affine.store %{{.*}}, %[[ACC]][0, %[[O0]]]
// CHECK-NEXT:  }
// CHECK-NEXT:  affine.for %[[KW:.*]] = 0 to 3 {
// CHECK-NEXT:    affine.for %[[OW:.*]] = 0 to 30 {
// CHECK-NEXT:      affine.load %arg0[%[[OW]] + %[[KW]]]
// CHECK-NEXT:      affine.load %[[ACC]][0, %[[OW]]]
// CHECK:       affine.for %[[O2:.*]] = 0 to 30 {
// CHECK-NEXT:    affine.load %[[ACC]][0, %[[O2]]]
// CHECK-NEXT:    arith.mulf
// CHECK-NEXT:    affine.store %{{.*}}, %arg1[%[[O2]]]
func.func @avg_window(%x: memref<32xf32>, %out: memref<30xf32>) {
  %zero = arith.constant 0.0 : f32
  %third = arith.constant 0.333333343 : f32
  %acc = memref.alloca() : memref<1xf32>
  affine.for %ow = 0 to 30 {
    affine.store %zero, %acc[0] : memref<1xf32>
    affine.for %kw = 0 to 3 {
      %0 = affine.load %x[%ow + %kw] : memref<32xf32>
      %1 = affine.load %acc[0] : memref<1xf32>
      %2 = arith.addf %1, %0 : f32
      affine.store %2, %acc[0] : memref<1xf32>
    }
    %3 = affine.load %acc[0] : memref<1xf32>
    %4 = arith.mulf %3, %third : f32
    affine.store %4, %out[%ow] : memref<30xf32>
  }
  return
}
