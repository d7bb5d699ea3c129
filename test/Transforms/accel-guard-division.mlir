// RUN: accel-opt %s --split-input-file -accel-guard-division | FileCheck %s

// A runtime divisor: zero and INT_MIN / -1 select a divisor of 1, a zero is recorded in
// the function's flag, and the return asserts that none was seen.
// CHECK-LABEL: func.func @signed
// CHECK:         %[[FLAG:.*]] = memref.alloca() : memref<i1>
// CHECK:         memref.store %false, %[[FLAG]][] : memref<i1>
// CHECK:         %[[Z:.*]] = arith.cmpi eq, %arg1, %c0_i32 : i32
// CHECK:         %[[MIN:.*]] = arith.cmpi eq, %arg0, %c-2147483648_i32 : i32
// CHECK:         %[[M1:.*]] = arith.cmpi eq, %arg1, %c-1_i32 : i32
// CHECK:         %[[O:.*]] = arith.andi %[[MIN]], %[[M1]] : i1
// CHECK:         %[[BAD:.*]] = arith.ori %[[Z]], %[[O]] : i1
// CHECK:         %[[SAFE:.*]] = arith.select %[[BAD]], %c1_i32, %arg1 : i32
// CHECK:         %[[OLD:.*]] = memref.load %[[FLAG]][] : memref<i1>
// CHECK:         %[[NEW:.*]] = arith.ori %[[OLD]], %[[Z]] : i1
// CHECK:         memref.store %[[NEW]], %[[FLAG]][] : memref<i1>
// CHECK:         arith.divsi %arg0, %[[SAFE]] : i32
// CHECK:         %[[SEEN:.*]] = memref.load %[[FLAG]][] : memref<i1>
// CHECK:         %[[OK:.*]] = arith.xori %[[SEEN]], %true : i1
// CHECK:         cf.assert %[[OK]], "integer division by zero"
// CHECK-NEXT:    return
func.func @signed(%a: i32, %b: i32) -> i32 {
  %q = arith.divsi %a, %b : i32
  return %q : i32
}

// -----

// Unsigned ops only check for zero; every return of the function is checked.
// CHECK-LABEL: func.func @unsigned
// CHECK-NOT:     arith.andi
// CHECK:         arith.select
// CHECK:         arith.remui %arg0, %{{.*}} : index
// CHECK:         cf.assert %{{.*}}, "integer division by zero"
// CHECK-NEXT:    return
// CHECK:         cf.assert %{{.*}}, "integer division by zero"
// CHECK-NEXT:    return
func.func @unsigned(%a: index, %b: index, %c: i1) -> index {
  %r = arith.remui %a, %b : index
  cf.cond_br %c, ^x, ^y
^x:
  return %r : index
^y:
  return %a : index
}

// -----

// Negative: a constant divisor other than 0 and -1 needs no guard (index arithmetic);
// -1 only guards INT_MIN / -1, which cannot fail: no flag, no assert.
// CHECK-LABEL: func.func @constants
// CHECK:         arith.floordivsi %arg0, %c7_i64 : i64
// CHECK-NOT:     memref.alloca
// CHECK:         %[[S:.*]] = arith.select %{{.*}}, %c1_i64{{.*}}, %c-1_i64 : i64
// CHECK:         arith.remsi %arg0, %[[S]] : i64
// CHECK-NOT:     cf.assert
func.func @constants(%a: i64) -> (i64, i64) {
  %c7 = arith.constant 7 : i64
  %cm1 = arith.constant -1 : i64
  %q = arith.floordivsi %a, %c7 : i64
  %r = arith.remsi %a, %cm1 : i64
  return %q, %r : i64, i64
}

// -----

// Vectors: the zero test is reduced with an `or` before it goes into the flag.
// CHECK-LABEL: func.func @vector
// CHECK:         %[[Z:.*]] = arith.cmpi eq, %arg1, %cst : vector<4xi16>
// CHECK:         arith.select %{{.*}}, %{{.*}}, %arg1 : vector<4xi1>, vector<4xi16>
// CHECK:         vector.reduction <or>, %[[Z]] : vector<4xi1> into i1
// CHECK:         arith.ceildivsi
// CHECK:         cf.assert
func.func @vector(%a: vector<4xi16>, %b: vector<4xi16>) -> vector<4xi16> {
  %q = arith.ceildivsi %a, %b : vector<4xi16>
  return %q : vector<4xi16>
}

// -----

// Negative: float division is untouched.
// CHECK-LABEL: func.func @float
// CHECK-NOT:     memref.alloca
// CHECK-NOT:     cf.assert
func.func @float(%a: f32, %b: f32) -> f32 {
  %q = arith.divf %a, %b : f32
  return %q : f32
}
