// RUN: accel-opt %s --split-input-file -accel-assert-to-error-return | FileCheck %s

// A failed assert reports its message and returns poison instead of aborting.
// CHECK-LABEL: func.func @scalar_result
// CHECK:       cf.cond_br %{{.*}} weights([2000, 1]), ^[[OK:.*]], ^[[FAIL:[a-z0-9]*]]
// CHECK:       ^[[OK]]:
// CHECK-NEXT:    arith.divf
// CHECK:       ^[[FAIL]]:
// CHECK-NEXT:    %[[MSG:.*]] = llvm.mlir.addressof @__accel_assert_msg_0 : !llvm.ptr
// CHECK-NEXT:    call @__accel_assert_fail(%[[MSG]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    %[[P:.*]] = ub.poison : f32
// CHECK-NEXT:    return %[[P]] : f32
// CHECK-DAG:   llvm.mlir.global private constant @__accel_assert_msg_0("{{.*}}a is \22zero\22\00")
// CHECK-DAG:   func.func private @__accel_assert_fail(!llvm.ptr)
func.func @scalar_result(%a: f32) -> f32 {
  %z = arith.constant 0.0 : f32
  %ok = arith.cmpf one, %a, %z : f32
  cf.assert %ok, "a is \"zero\""
  %r = arith.divf %z, %a : f32
  return %r : f32
}

// -----

// Two asserts with one message share one string; memref results are poison too.
// CHECK-LABEL: func.func @memref_result
// CHECK-COUNT-2: llvm.mlir.addressof @__accel_assert_msg_0
// CHECK-NOT:   @__accel_assert_msg_1
// CHECK:       ub.poison : memref<4xf32>
func.func @memref_result(%a: memref<4xf32>, %b: i1) -> memref<4xf32> {
  cf.assert %b, "b"
  cf.assert %b, "b"
  return %a : memref<4xf32>
}

// -----

// Negative: no assert, nothing added (not even the declaration).
// CHECK-LABEL: func.func @no_assert
// CHECK-NOT:   __accel_assert_fail
func.func @no_assert(%a: f32) -> f32 {
  return %a : f32
}
