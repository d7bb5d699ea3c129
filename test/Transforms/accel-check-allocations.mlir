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

// Negative: stack allocations are not checked, and nothing is declared.
// CHECK-LABEL: func.func @stack
// CHECK-NOT:     cf.cond_br
// CHECK-NOT:     __accel_alloc_fail
func.func @stack() {
  %m = memref.alloca() : memref<4xf32>
  return
}
