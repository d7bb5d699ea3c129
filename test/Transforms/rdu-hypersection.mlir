// RUN: accel-opt %s --split-input-file -rdu-hypersection | FileCheck %s

// Two layers (sections tagged with their repeated module instance, as rdu-sectioning does)
// with identical bodies: one hypersection holding the first layer's sections, and two
// instance sections with empty regions; sections are renumbered in execution order.
// CHECK-LABEL: func.func @two_layers
// CHECK: %[[A:.*]] = "rdu.section"(%arg0) ({
// CHECK-NEXT: }) {hypersection = @layers, index = 0 : i64{{.*}}sym_name = "s0_layers.0"
// CHECK: %[[B:.*]] = "rdu.section"(%[[A]]) ({
// CHECK-NEXT: }) {hypersection = @layers, index = 1 : i64{{.*}}sym_name = "s1_layers.1"
// CHECK: "rdu.section"(%[[B]])
// CHECK: sym_name = "s2_head"
// CHECK: "rdu.hypersection"()
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4xf32>):
// CHECK-NEXT: "rdu.section"(%[[X]])
// CHECK: math.exp
// CHECK: function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "layers"
func.func @two_layers(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    %e = math.exp %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 0 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64, sym_name = "s0_exp",
      rdu.instance = "layers.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rdu.section"(%0) ({
  ^bb0(%a: tensor<4xf32>):
    %e = math.exp %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 1 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64, sym_name = "s1_exp",
      rdu.instance = "layers.1"} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "rdu.section"(%1) ({
  ^bb0(%a: tensor<4xf32>):
    %n = arith.negf %a : tensor<4xf32>
    "rdu.yield"(%n) : (tensor<4xf32>) -> ()
  }) {index = 2 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64,
      sym_name = "s2_head"} : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Negative: the two layers differ (exp vs tanh), so they are not one hypersection; the
// sections stay as they were.
// CHECK-LABEL: func.func @different_layers
// CHECK-NOT: hypersection
// CHECK: math.exp
// CHECK: sym_name = "s0_exp"
// CHECK: math.tanh
// CHECK: sym_name = "s1_tanh"
func.func @different_layers(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    %e = math.exp %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 0 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64, sym_name = "s0_exp",
      rdu.instance = "layers.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rdu.section"(%0) ({
  ^bb0(%a: tensor<4xf32>):
    %e = math.tanh %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 1 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64, sym_name = "s1_tanh",
      rdu.instance = "layers.1"} : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Negative: sections without a repeated module instance are never folded, even when
// their bodies are identical.
// CHECK-LABEL: func.func @untagged
// CHECK-NOT: hypersection
// CHECK-COUNT-2: math.exp
func.func @untagged(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    %e = math.exp %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 0 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64,
      sym_name = "s0_exp"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rdu.section"(%0) ({
  ^bb0(%a: tensor<4xf32>):
    %e = math.exp %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 1 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64,
      sym_name = "s1_exp"} : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Two layers of two sections each (-o0: one operator per section): the hypersection's body
// keeps both sections (renumbered s0, s1: compiled once), each instance records its own
// operators per body section (rdu.inner_ops), and indices count the sections the chip
// runs: the first instance covers 0-1, the second 2-3, the head is 4.
// CHECK-LABEL: func.func @two_section_layers
// CHECK: "rdu.section"(%arg0)
// CHECK: hypersection = @layers, index = 0 : i64{{.*}}rdu.inner_ops = {{\[\["exp:a0"\], \["neg:b0"\]\]}}{{.*}}sym_name = "s0_layers.0"
// CHECK: hypersection = @layers, index = 2 : i64{{.*}}rdu.inner_ops = {{\[\["exp:a1"\], \["neg:b1"\]\]}}{{.*}}sym_name = "s2_layers.1"
// CHECK: index = 4 : i64{{.*}}sym_name = "s4_head"
// CHECK: "rdu.hypersection"()
// CHECK: sym_name = "s0_exp"
// CHECK: sym_name = "s1_neg"
// CHECK: sym_name = "layers"
func.func @two_section_layers(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    %e = math.exp %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 0 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64, sym_name = "s0_exp",
      rdu.ops = ["exp:a0"], rdu.instance = "layers.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rdu.section"(%0) ({
  ^bb0(%a: tensor<4xf32>):
    %e = arith.negf %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 1 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64, sym_name = "s1_neg",
      rdu.ops = ["neg:b0"], rdu.instance = "layers.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "rdu.section"(%1) ({
  ^bb0(%a: tensor<4xf32>):
    %e = math.exp %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 2 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64, sym_name = "s2_exp",
      rdu.ops = ["exp:a1"], rdu.instance = "layers.1"} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "rdu.section"(%2) ({
  ^bb0(%a: tensor<4xf32>):
    %e = arith.negf %a : tensor<4xf32>
    "rdu.yield"(%e) : (tensor<4xf32>) -> ()
  }) {index = 3 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64, sym_name = "s3_neg",
      rdu.ops = ["neg:b1"], rdu.instance = "layers.1"} : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "rdu.section"(%3) ({
  ^bb0(%a: tensor<4xf32>):
    %n = math.tanh %a : tensor<4xf32>
    "rdu.yield"(%n) : (tensor<4xf32>) -> ()
  }) {index = 4 : i64, pcus = 1 : i64, phase = "forward", pmus = 2 : i64,
      sym_name = "s4_head"} : (tensor<4xf32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}
