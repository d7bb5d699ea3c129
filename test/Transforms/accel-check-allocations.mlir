// RUN: accel-opt %s --split-input-file -accel-check-allocations | FileCheck %s

// A dynamic allocation: its byte size (16 per row here) goes to the failure hook when the
// pointer is NULL (and the size not 0), and the function returns poison.
// CHECK-LABEL: func.func @dynamic
// CHECK:         %[[M:.*]] = memref.alloc(%arg0) : memref<?x4xf32>
// CHECK:         %[[BYTES:.*]] = arith.muli %c16, %arg0 : index
// CHECK:         %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[M]]
// CHECK:         %[[NZ:.*]] = arith.cmpi ne, %[[P]], %c0 : index
// CHECK:         %[[EMPTY:.*]] = arith.cmpi eq, %[[BYTES]], %c0{{.*}} : index
// CHECK:         %[[OK:.*]] = arith.ori %[[NZ]], %[[EMPTY]] : i1
// CHECK:         cf.cond_br %[[OK]] weights([2000, 1]), ^[[CONT:.*]], ^[[FAIL:[a-z0-9]*]]
// CHECK:       ^[[CONT]]:
// CHECK-NEXT:    return %[[M]]
// CHECK:       ^[[FAIL]]:
// CHECK-NEXT:    %[[N:.*]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK-NEXT:    call @__accel_alloc_fail(%[[N]]) : (i64) -> ()
// CHECK-NEXT:    %[[X:.*]] = ub.poison : memref<?x4xf32>
// CHECK-NEXT:    return %[[X]]
// CHECK:       func.func private @__accel_alloc_fail(i64)
func.func @dynamic(%n: index) -> memref<?x4xf32> {
  %m = memref.alloc(%n) : memref<?x4xf32>
  return %m : memref<?x4xf32>
}

// -----

// Static sizes are constants (complex<f32> is 8 bytes: 2 x 8 = 16).
// CHECK-LABEL: func.func @static
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<2xcomplex<f32>>
// CHECK:         %c16 = arith.constant 16 : index
// CHECK:         call @__accel_alloc_fail
func.func @static() {
  %m = memref.alloc() {alignment = 64 : i64} : memref<2xcomplex<f32>>
  memref.dealloc %m : memref<2xcomplex<f32>>
  return
}

// -----

// Negative: a stack allocation known to be small (<= 1 MiB) is not checked, and nothing is
// declared.
// CHECK-LABEL: func.func @small_stack
// CHECK-NOT:     cf.cond_br
// CHECK-NOT:     __accel_alloc_fail
func.func @small_stack() {
  %m = memref.alloca() : memref<4xf32>
  return
}

// -----

// A stack allocation of dynamic size is checked *before* it: over 1 MiB (or a size that
// alone is, in case the product wrapped) it reports its size and returns instead of
// running past the stack's guard page (SIGSEGV).
// CHECK-LABEL: func.func @dynamic_stack
// CHECK:         %[[BYTES:.*]] = arith.muli %c4, %arg0 : index
// CHECK:         %[[FITS:.*]] = arith.cmpi ule, %[[BYTES]], %c1048576 : index
// CHECK:         %[[SIZE:.*]] = arith.cmpi ule, %arg0, %c1048576 : index
// CHECK:         %[[OK:.*]] = arith.andi %[[FITS]], %[[SIZE]] : i1
// CHECK:         cf.cond_br %[[OK]] weights([2000, 1]), ^[[CONT:.*]], ^[[FAIL:[a-z0-9]*]]
// CHECK:       ^[[CONT]]:
// CHECK-NEXT:    memref.alloca(%arg0) : memref<?xf32>
// CHECK:       ^[[FAIL]]:
// CHECK-NEXT:    %[[N:.*]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK-NEXT:    call @__accel_alloc_fail(%[[N]]) : (i64) -> ()
func.func @dynamic_stack(%n: index) {
  %m = memref.alloca(%n) : memref<?xf32>
  return
}

// -----

// A static stack allocation over the limit (8 MiB here) always takes the failure path.
// CHECK-LABEL: func.func @big_stack
// CHECK:         %[[FITS:.*]] = arith.cmpi ule, %c8388608, %c1048576 : index
// CHECK:         cf.cond_br %[[FITS]]
// CHECK:         call @__accel_alloc_fail
func.func @big_stack() {
  %m = memref.alloca() : memref<2097152xf32>
  return
}
