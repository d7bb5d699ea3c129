// RUN: accel-opt %s --split-input-file -accel-promote-accumulators | FileCheck %s

// BatchNorm backward's per-channel sum over (n, h, w): the element is read once before the
// nest, carried through the three loops, and written once after it; the side store of the
// centred value stays where it was.
// CHECK-LABEL: func.func @channel_sum
// CHECK:       affine.for %[[C:.*]] = 0 to 8 {
// CHECK-NEXT:    affine.store %{{.*}}, %arg0[%[[C]]]
// CHECK-NEXT:    %[[MEAN:.*]] = affine.load %arg1[%[[C]]]
// CHECK-NEXT:    %[[INIT:.*]] = affine.load %arg0[%[[C]]]
// CHECK-NEXT:    %[[SUM:.*]] = affine.for %{{.*}} = 0 to 4 iter_args(%[[A:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT:      %[[SH:.*]] = affine.for %{{.*}} = 0 to 6 iter_args(%[[B:.*]] = %[[A]]) -> (f32) {
// CHECK-NEXT:        %[[SW:.*]] = affine.for %{{.*}} = 0 to 6 iter_args(%[[D:.*]] = %[[B]]) -> (f32) {
// CHECK:               affine.store %{{.*}}, %arg3
// CHECK:               %[[NEW:.*]] = arith.addf %{{.*}}, %[[D]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          affine.yield %[[NEW]] : f32
// CHECK:             affine.yield %[[SW]] : f32
// CHECK:           affine.yield %[[SH]] : f32
// CHECK:         affine.store %[[SUM]], %arg0[%[[C]]]
// CHECK-NOT:   affine.load %arg0
func.func @channel_sum(%acc: memref<8xf32>, %mean: memref<8xf32>, %x: memref<4x8x6x6xf32>,
                       %xc: memref<4x8x6x6xf32>, %g: memref<4x8x6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %c = 0 to 8 {
    affine.store %zero, %acc[%c] : memref<8xf32>
    %m = affine.load %mean[%c] : memref<8xf32>
    affine.for %n = 0 to 4 {
      affine.for %h = 0 to 6 {
        affine.for %w = 0 to 6 {
          %1 = affine.load %x[%n, %c, %h, %w] : memref<4x8x6x6xf32>
          %2 = arith.subf %1, %m : f32
          affine.store %2, %xc[%n, %c, %h, %w] : memref<4x8x6x6xf32>
          %3 = affine.load %g[%n, %c, %h, %w] : memref<4x8x6x6xf32>
          %4 = arith.mulf %3, %2 : f32
          %5 = affine.load %acc[%c] : memref<8xf32>
          %6 = arith.addf %4, %5 fastmath<reassoc,contract> : f32
          affine.store %6, %acc[%c] : memref<8xf32>
        }
      }
    }
  }
  return
}

// -----

// Two sums in one loop (a mean and a mean of squares, in f64 as torch's BatchNorm
// statistics): one iter_arg each, in the order of their loads.
// CHECK-LABEL: func.func @two_sums
// CHECK:       %[[S0:.*]] = affine.load %alloc[0]
// CHECK-NEXT:  %[[Q0:.*]] = affine.load %alloc_0[0]
// CHECK-NEXT:  %[[R:.*]]:2 = affine.for %{{.*}} = 0 to 16 iter_args(%[[S:.*]] = %[[S0]], %[[Q:.*]] = %[[Q0]]) -> (f64, f64) {
// CHECK:         affine.yield %{{.*}}, %{{.*}} : f64, f64
// CHECK:       affine.store %[[R]]#0, %alloc[0]
// CHECK-NEXT:  affine.store %[[R]]#1, %alloc_0[0]
func.func @two_sums(%x: memref<16xf64>) -> (memref<1xf64>, memref<1xf64>) {
  %zero = arith.constant 0.0 : f64
  %sum = memref.alloc() : memref<1xf64>
  %sq = memref.alloc() : memref<1xf64>
  affine.store %zero, %sum[0] : memref<1xf64>
  affine.store %zero, %sq[0] : memref<1xf64>
  affine.for %i = 0 to 16 {
    %v = affine.load %x[%i] : memref<16xf64>
    %s = affine.load %sum[0] : memref<1xf64>
    %q = affine.load %sq[0] : memref<1xf64>
    %s1 = arith.addf %s, %v : f64
    %v2 = arith.mulf %v, %v : f64
    %q1 = arith.addf %q, %v2 : f64
    affine.store %s1, %sum[0] : memref<1xf64>
    affine.store %q1, %sq[0] : memref<1xf64>
  }
  return %sum, %sq : memref<1xf64>, memref<1xf64>
}

// -----

// Negative: the element changes with the loop (a prefix sum reads the previous one), so
// nothing is loop-invariant.
// CHECK-LABEL: func.func @prefix_sum
// CHECK-NOT:   iter_args
func.func @prefix_sum(%x: memref<16xf32>, %y: memref<17xf32>) {
  affine.for %i = 0 to 16 {
    %a = affine.load %y[%i] : memref<17xf32>
    %b = affine.load %x[%i] : memref<16xf32>
    %c = arith.addf %a, %b : f32
    affine.store %c, %y[%i + 1] : memref<17xf32>
  }
  return
}

// -----

// Negative: another view of the sum's buffer is read in the loop, so the loop must see
// each update in memory.
// CHECK-LABEL: func.func @aliased_view
// CHECK-NOT:   iter_args
func.func @aliased_view(%x: memref<16xf32>, %out: memref<16xf32>) {
  %acc = memref.alloc() : memref<4xf32>
  %view = memref.subview %acc[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  affine.for %i = 0 to 16 {
    %a = affine.load %acc[0] : memref<4xf32>
    %b = affine.load %x[%i] : memref<16xf32>
    %c = arith.addf %a, %b : f32
    affine.store %c, %acc[0] : memref<4xf32>
    %d = affine.load %view[0] : memref<2xf32, strided<[1]>>
    affine.store %d, %out[%i] : memref<16xf32>
  }
  return
}

// -----

// Negative: stored before it is read in each iteration (the value read is this
// iteration's, not a carried one), and a loop that never runs.
// CHECK-LABEL: func.func @store_first
// CHECK-NOT:   iter_args
func.func @store_first(%x: memref<16xf32>, %acc: memref<1xf32>, %out: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %b = affine.load %x[%i] : memref<16xf32>
    affine.store %b, %acc[0] : memref<1xf32>
    %a = affine.load %acc[0] : memref<1xf32>
    affine.store %a, %out[%i] : memref<16xf32>
  }
  affine.for %i = 0 to 0 {
    %a = affine.load %acc[0] : memref<1xf32>
    %b = arith.addf %a, %a : f32
    affine.store %b, %acc[0] : memref<1xf32>
  }
  return
}

// -----

// Negative: a call in the loop takes the buffer (it may read or write the element).
// CHECK-LABEL: func.func @escapes_to_call
// CHECK-NOT:   iter_args
func.func private @peek(memref<1xf32>)
func.func @escapes_to_call(%x: memref<16xf32>, %acc: memref<1xf32>) {
  affine.for %i = 0 to 16 {
    %a = affine.load %acc[0] : memref<1xf32>
    %b = affine.load %x[%i] : memref<16xf32>
    %c = arith.addf %a, %b : f32
    affine.store %c, %acc[0] : memref<1xf32>
    func.call @peek(%acc) : (memref<1xf32>) -> ()
  }
  return
}
