// RUN: accel-opt %s --split-input-file | FileCheck %s
// RUN: accel-opt %s --split-input-file -o %t && FileCheck %s < %t

// Each chunk is parsed on its own; outputs are joined by the split marker.
// CHECK-LABEL: func.func @first
func.func @first() {
  return
}

// -----

// A second chunk may reuse symbol names of the first.
// CHECK: // -----
// CHECK-LABEL: func.func @second
func.func @second() {
  return
}

// -----

// CHECK: // -----
// CHECK-LABEL: func.func @first
func.func @first() {
  return
}
