// RUN: accel-opt %s --split-input-file | FileCheck %s
// Round trip: the printed form parses and verifies again, unchanged.
// RUN: accel-opt %s --split-input-file | accel-opt --split-input-file | FileCheck %s
// RUN: accel-opt %s --split-input-file -cse -canonicalize | FileCheck %s --check-prefix=PURE

// An annotation gives a tensor a layout and the memory it lives in.
// CHECK-LABEL: func.func @annotate
// CHECK: %[[A:.*]] = "mncore.annotate"(%{{.*}}) {layout = #mncore.layout<"((4_PE:1), (2_W:1))">, memory = "lm"} : (tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK: return %[[A]]
func.func @annotate(%a: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1), (2_W:1))">, memory = "lm"}
    : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// A relayout converts between two layouts; its src is the operand's layout.
// CHECK-LABEL: func.func @relayout
// CHECK: %[[A:.*]] = "mncore.annotate"
// CHECK: "mncore.relayout"(%[[A]]) {dst = #mncore.layout<"((2_PE:1, 2:1), (2_W:1))">, memory = "dram", src = #mncore.layout<"((4_PE:1), (2_W:1))">}
func.func @relayout(%a: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1), (2_W:1))">, memory = "lm"}
    : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %1 = "mncore.relayout"(%0) {src = #mncore.layout<"((4_PE:1), (2_W:1))">,
    dst = #mncore.layout<"((2_PE:1, 2:1), (2_W:1))">, memory = "dram"}
    : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}

// -----

// A relayout of a value with no known layout (a function argument) takes src on trust.
// CHECK-LABEL: func.func @relayout_argument
// CHECK: "mncore.relayout"
func.func @relayout_argument(%a: tensor<16xf16>) -> tensor<16xf16> {
  %0 = "mncore.relayout"(%a) {src = #mncore.layout<"((4_Time:1, 4_W:1))">,
    dst = #mncore.layout<"((4_PE:1, 4_W:1))">, memory = "lm"} : (tensor<16xf16>) -> tensor<16xf16>
  return %0 : tensor<16xf16>
}

// -----

// Padding is allowed (10 rows on 4 x 3 = 12 positions), and so is broadcasting over levels
// the layout does not otherwise use.
// CHECK-LABEL: func.func @padding_and_broadcast
// CHECK: #mncore.layout<"((4_MAB:1, 3:1), (2_W:1); B@[L2B, L1B])">
func.func @padding_and_broadcast(%a: tensor<10x2xf32>) -> tensor<10x2xf32> {
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_MAB:1, 3:1), (2_W:1); B@[L2B, L1B])">,
    memory = "lm"} : (tensor<10x2xf32>) -> tensor<10x2xf32>
  return %0 : tensor<10x2xf32>
}

// -----

// A rank-0 tensor has the empty layout; i1 elements are stored as bytes (8 per long word).
// CHECK-LABEL: func.func @scalars
// CHECK: #mncore.layout<"()">
// CHECK: #mncore.layout<"((8_W:1))">
func.func @scalars(%a: tensor<f32>, %b: tensor<8xi1>) -> (tensor<f32>, tensor<8xi1>) {
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"()">, memory = "lm"}
    : (tensor<f32>) -> tensor<f32>
  %1 = "mncore.annotate"(%b) {layout = #mncore.layout<"((8_W:1))">, memory = "lm"}
    : (tensor<8xi1>) -> tensor<8xi1>
  return %0, %1 : tensor<f32>, tensor<8xi1>
}

// -----

// Layouts may also sit in other ops' attributes, e.g. on function arguments.
// CHECK-LABEL: func.func @argument_layout
// CHECK-SAME: mncore.layout = #mncore.layout<"((4_PE:1))">
func.func @argument_layout(%a: tensor<4xf32> {mncore.layout = #mncore.layout<"((4_PE:1))">})
    -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// Both ops are pure: CSE merges identical annotations, unused ones are dropped.
// PURE-LABEL: func.func @pure
// PURE-COUNT-1: "mncore.annotate"
// PURE-NOT: "mncore.annotate"
func.func @pure(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "mncore.annotate"(%a) {layout = #mncore.layout<"((2_PE:1, 2:1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  %3 = arith.addf %0, %1 : tensor<4xf32>
  return %3 : tensor<4xf32>
}
