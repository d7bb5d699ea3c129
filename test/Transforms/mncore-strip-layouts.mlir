// RUN: accel-opt %s --split-input-file -mncore-strip-layouts | FileCheck %s

// An annotation and a relayout chain fold into the original value.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>)
// CHECK-NOT: mncore.
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[A]]
// CHECK: return %[[S]]
func.func @chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "mncore.relayout"(%0) {src = #mncore.layout<"((4_PE:1))">,
    dst = #mncore.layout<"((2_PE:1, 2:1))">, memory = "dram"} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = arith.addf %1, %0 : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Layout ops nested in other regions (here an rdu.section body) are stripped as well.
// CHECK-LABEL: func.func @nested
// CHECK: ^bb0(%[[X:.*]]: tensor<4xf32>):
// CHECK-NEXT: "rdu.yield"(%[[X]])
func.func @nested(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    %1 = "mncore.annotate"(%x) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
      : (tensor<4xf32>) -> tensor<4xf32>
    "rdu.yield"(%1) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Negative: layout attributes outside the two ops are inert and stay.
// CHECK-LABEL: func.func @argument
// CHECK-SAME: mncore.layout = #mncore.layout<"((4_PE:1))">
func.func @argument(%a: tensor<4xf32> {mncore.layout = #mncore.layout<"((4_PE:1))">})
    -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
