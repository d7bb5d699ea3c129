// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-split-functions{min-ops=10 max-ops=12})' | FileCheck %s
// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-split-functions{min-ops=10 max-ops=12},lower-affine,convert-scf-to-cf,accel-check-allocations,accel-assert-to-error-return)' | FileCheck %s --check-prefix=ERR

// Three nests, at most two per part: two parts. %tmp is used only in the first part, so
// it (with its dealloc, moved up from the end) goes in; %out is used later and returned,
// so it stays and is an argument. The constant is cloned. The first part allocates, so
// it sets the status byte, which the caller checks after the call.
// CHECK-LABEL: func.func @three_nests
// CHECK-SAME:    (%[[A:.*]]: memref<8xf32>)
// CHECK:         %[[ST:.*]] = memref.alloca() : memref<i8>
// CHECK:         %[[OUT:.*]] = memref.alloc() : memref<8xf32>
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK:         memref.store %[[ZERO]], %[[ST]][]
// CHECK:         call @three_nests_part0(%[[A]], %[[OUT]], %[[ST]])
// CHECK:         %[[S:.*]] = memref.load %[[ST]][]
// CHECK:         %[[OK:.*]] = arith.cmpi ne, %[[S]], %[[ZERO]]
// CHECK:         cf.assert %[[OK]], "a split part of this function failed"
// CHECK:         call @three_nests_part1(%[[OUT]])
// CHECK-NOT:     affine.for
// CHECK-NOT:     memref.dealloc
// CHECK:         return %[[OUT]]
// CHECK:       func.func private @three_nests_part0(%[[PA:.*]]: memref<8xf32>, %[[POUT:.*]]: memref<8xf32>, %[[PST:.*]]: memref<i8>) attributes {llvm.no_inline}
// CHECK:         %[[TWO:.*]] = arith.constant 2.0
// CHECK:         %[[TMP:.*]] = memref.alloc() : memref<8xf32>
// CHECK:         affine.for
// CHECK:           arith.mulf %{{.*}}, %[[TWO]]
// CHECK:           affine.store %{{.*}}, %[[TMP]]
// CHECK:         affine.for
// CHECK:           affine.load %[[TMP]]
// CHECK:           affine.store %{{.*}}, %[[POUT]]
// CHECK:         memref.dealloc %[[TMP]]
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i8
// CHECK:         memref.store %[[ONE]], %[[PST]][]
// CHECK-NEXT:    return
// CHECK:       func.func private @three_nests_part1(%{{.*}}: memref<8xf32>) attributes {llvm.no_inline}
// CHECK-NOT:     memref.store {{.*}} : memref<i8>
// CHECK:         arith.mulf
// CHECK:         return
// With the error paths the later CPU passes add: a failed allocation in the part
// returns from it before the status store, and the caller's check then returns too.
// ERR-LABEL: func.func @three_nests
// ERR:         call @three_nests_part0(
// ERR-NEXT:    %[[S:.*]] = memref.load
// ERR-NEXT:    %[[OK:.*]] = arith.cmpi ne, %[[S]]
// ERR-NEXT:    cf.cond_br %[[OK]] {{.*}}, ^[[GO:.*]], ^[[FAIL:.*]]
// ERR:       ^[[GO]]:
// ERR-NEXT:    call @three_nests_part1(
// ERR:       ^[[FAIL]]:
// ERR:         call @__accel_assert_fail(
// ERR-NEXT:    ub.poison
// ERR-NEXT:    return
// ERR-LABEL: func.func private @three_nests_part0
// ERR:         memref.alloc()
// ERR:         cf.cond_br %{{.*}}, ^{{.*}}, ^[[NOMEM:.*]]
// ERR:         memref.store %{{.*}}, %arg2[] : memref<i8>
// ERR-NEXT:    return
// ERR:       ^[[NOMEM]]:
// ERR-NEXT:    arith.index_cast
// ERR-NEXT:    call @__accel_alloc_fail(
// ERR-NEXT:    return
func.func @three_nests(%a: memref<8xf32>) -> memref<8xf32> {
  %c2 = arith.constant 2.0 : f32
  %tmp = memref.alloc() : memref<8xf32>
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %c2 : f32
    affine.store %y, %tmp[%i] : memref<8xf32>
  }
  %out = memref.alloc() : memref<8xf32>
  affine.for %i = 0 to 8 {
    %x = affine.load %tmp[%i] : memref<8xf32>
    %y = arith.addf %x, %c2 : f32
    affine.store %y, %out[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %x = affine.load %out[%i] : memref<8xf32>
    %y = arith.mulf %x, %x : f32
    affine.store %y, %out[%i] : memref<8xf32>
  }
  memref.dealloc %tmp : memref<8xf32>
  return %out : memref<8xf32>
}

// -----

// A cf.assert ends a run: it stays in the caller, between the two parts' calls (a failed
// assert returns from the caller before the second part runs).
// CHECK-LABEL: func.func @assert_between
// CHECK:         call @assert_between_part0(
// CHECK-NEXT:    cf.assert %arg1, "boom"
// CHECK-NEXT:    call @assert_between_part1(
// CHECK:       func.func private @assert_between_part0
// CHECK:       func.func private @assert_between_part1
func.func @assert_between(%a: memref<8xf32>, %ok: i1) {
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  cf.assert %ok, "boom"
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %x : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// Below min-ops: left whole.
// CHECK-LABEL: func.func @small
// CHECK-NEXT:    affine.for
// CHECK-NOT:   func.func private
func.func @small(%a: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    affine.store %x, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// A nest with a cf.assert inside stays in the caller (its failure must return from it);
// the nest after it moves.
// CHECK-LABEL: func.func @assert_inside
// CHECK-NEXT:    affine.for
// CHECK:           cf.assert %arg1, "inside"
// CHECK:         call @assert_inside_part0(%arg0)
// CHECK:       func.func private @assert_inside_part0
// CHECK-NOT:     cf.assert
// CHECK:         arith.mulf
func.func @assert_inside(%a: memref<8xf32>, %ok: i1) {
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    cf.assert %ok, "inside"
    %y = arith.addf %x, %x : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %x : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// A buffer whose address leaves the memref world (a descriptor stored into a parallel
// loop's context, which a later call reads) lives to the end: its dealloc must not move
// up to the cast (BERT at opt_level 3 read freed memory in its attention's context).
// CHECK-LABEL: func.func @escaping
// CHECK:         %[[TMP:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NOT:     memref.dealloc
// CHECK:         builtin.unrealized_conversion_cast %[[TMP]]
// CHECK-NOT:     memref.dealloc
// CHECK:         call @escaping_part1(
// CHECK-NEXT:    memref.dealloc %[[TMP]]
// CHECK-NEXT:    return
// CHECK:       func.func private @escaping_part1(
// CHECK:         llvm.store
// CHECK-NEXT:    call @use_context(
func.func private @use_context(!llvm.ptr)
func.func @escaping(%a: memref<8xf32>) {
  %tmp = memref.alloc() : memref<8xf32>
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %x : f32
    affine.store %y, %tmp[%i] : memref<8xf32>
  }
  %one = llvm.mlir.constant(1 : i64) : i64
  %ctx = llvm.alloca %one x !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> : (i64) -> !llvm.ptr
  %d = builtin.unrealized_conversion_cast %tmp : memref<8xf32> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  llvm.store %d, %ctx : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>, !llvm.ptr
  call @use_context(%ctx) : (!llvm.ptr) -> ()
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %x : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  memref.dealloc %tmp : memref<8xf32>
  return
}

// -----

// A static view of a buffer that the part also uses directly: the part takes the buffer
// once and makes the view itself, so that it never gets two arguments for one buffer
// (fusion and the parallel loops, which run on parts after the pipeline's first split,
// take distinct arguments for distinct buffers).
// CHECK-LABEL: func.func @view_and_buffer
// CHECK:         %[[BUF:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK:         %[[FLAT:.*]] = memref.collapse_shape %[[BUF]]
// CHECK:         call @view_and_buffer_part0(%{{.*}}, %[[BUF]])
// CHECK:         return %[[FLAT]]
// CHECK:       func.func private @view_and_buffer_part0(%{{.*}}: memref<8xf32>, %[[PBUF:.*]]: memref<2x4xf32>)
// CHECK:         %[[PFLAT:.*]] = memref.collapse_shape %[[PBUF]]
// CHECK:         affine.store %{{.*}}, %[[PBUF]]
// CHECK:         affine.load %[[PFLAT]]
func.func @view_and_buffer(%a: memref<8xf32>) -> memref<8xf32> {
  %two = arith.constant 2.0 : f32
  %buf = memref.alloc() : memref<2x4xf32>
  %flat = memref.collapse_shape %buf [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 4 {
      %v = affine.load %a[%i * 4 + %j] : memref<8xf32>
      affine.store %v, %buf[%i, %j] : memref<2x4xf32>
    }
  }
  affine.for %i = 0 to 8 {
    %v = affine.load %flat[%i] : memref<8xf32>
    %w = arith.mulf %v, %two : f32
    affine.store %w, %a[%i] : memref<8xf32>
  }
  return %flat : memref<8xf32>
}

// -----

// Negative: a view at a dynamic offset cannot be made inside the part, and the run uses
// it next to its buffer: the run stays in the caller.
// CHECK-LABEL: func.func @dynamic_view_and_buffer
// CHECK-NOT:     call @
// CHECK:         affine.for
// CHECK:         affine.for
// CHECK:         return
// CHECK-NOT:   func.func private
func.func @dynamic_view_and_buffer(%a: memref<8xf32>, %k: index) -> memref<4xf32, strided<[1], offset: ?>> {
  %two = arith.constant 2.0 : f32
  %buf = memref.alloc() : memref<8xf32>
  %half = memref.subview %buf[%k] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: ?>>
  affine.for %i = 0 to 8 {
    %v = affine.load %a[%i] : memref<8xf32>
    affine.store %v, %buf[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 4 {
    %v = affine.load %half[%i] : memref<4xf32, strided<[1], offset: ?>>
    %w = arith.mulf %v, %two : f32
    affine.store %w, %a[%i] : memref<8xf32>
  }
  return %half : memref<4xf32, strided<[1], offset: ?>>
}
