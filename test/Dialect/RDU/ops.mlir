// RUN: accel-opt %s --split-input-file | FileCheck %s
// Round trip: the printed form parses and verifies again, unchanged.
// RUN: accel-opt %s --split-input-file | accel-opt --split-input-file | FileCheck %s

// A section: operands become block arguments, the yield leaves as results.
// CHECK-LABEL: func.func @section
// CHECK: %[[S:.*]] = "rdu.section"(%{{.*}}) ({
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4xf32>):
// CHECK: "rdu.yield"(%{{.*}}) : (tensor<4xf32>) -> ()
// CHECK: }) {index = 0 : i64, pcus = 12 : i64, phase = "forward", pmus = 8 : i64, sym_name = "s0"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: return %[[S]]
func.func @section(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    %1 = arith.addf %x, %x : tensor<4xf32>
    "rdu.yield"(%1) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 12 : i64, pmus = 8 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Sections run in index order and exchange tensors through DRAM (SSA values between them);
// one section may take several tensors and return several.
// CHECK-LABEL: func.func @chain
// CHECK: %[[A:.*]]:2 = "rdu.section"
// CHECK: phase = "forward"
// CHECK: "rdu.section"(%[[A]]#0, %[[A]]#1)
// CHECK: phase = "backward"
// CHECK: phase = "optimizer"
func.func @chain(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0:2 = "rdu.section"(%a, %b) ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    "rdu.yield"(%y, %x) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {sym_name = "fwd", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %1 = "rdu.section"(%0#0, %0#1) ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %s = arith.subf %x, %y : tensor<4xf32>
    "rdu.yield"(%s) : (tensor<4xf32>) -> ()
  }) {sym_name = "bwd", index = 1 : i64, phase = "backward", pcus = 2 : i64, pmus = 2 : i64}
    : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "rdu.section"(%1) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "opt", index = 2 : i64, phase = "optimizer", pcus = 0 : i64, pmus = 0 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// A stage buffer streams a tensor between pipeline stages through a PMU (double buffered).
// CHECK-LABEL: func.func @stage_buffer
// CHECK: "rdu.stage_buffer"(%{{.*}}) {depth = 2 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
func.func @stage_buffer(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<8x8xf32>):
    %1 = arith.mulf %x, %x : tensor<8x8xf32>
    %2 = "rdu.stage_buffer"(%1) {depth = 2 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %3 = arith.addf %2, %x : tensor<8x8xf32>
    "rdu.yield"(%3) : (tensor<8x8xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 4 : i64, pmus = 6 : i64}
    : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// A hypersection holds one body compiled once; its instances carry an empty region.
// CHECK: "rdu.hypersection"() ({
// CHECK: }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "layer"}
// CHECK-LABEL: func.func @instances
// CHECK: %[[L0:.*]] = "rdu.section"(%{{.*}}) ({
// CHECK-NEXT: }) {hypersection = @layer, index = 0 : i64
// CHECK: "rdu.section"(%[[L0]]) ({
// CHECK-NEXT: }) {hypersection = @layer, index = 1 : i64
"rdu.hypersection"() ({
^bb0(%x: tensor<4xf32>):
  %1 = arith.addf %x, %x : tensor<4xf32>
  "rdu.yield"(%1) : (tensor<4xf32>) -> ()
}) {sym_name = "layer", function_type = (tensor<4xf32>) -> tensor<4xf32>} : () -> ()
func.func @instances(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%a) ({}) {sym_name = "l0", index = 0 : i64, phase = "forward",
    pcus = 8 : i64, pmus = 8 : i64, hypersection = @layer} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rdu.section"(%0) ({}) {sym_name = "l1", index = 1 : i64, phase = "forward",
    pcus = 8 : i64, pmus = 8 : i64, hypersection = @layer} : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// The target and SambaFlow-style resource scaling live on the module; a backward section
// may use 640 x 0.8 = 512 PCUs of an SN10.
// CHECK: module attributes {rdu.arch = #rdu.arch<"sn10">, rdu.resource_scaling = [1.000000e+00, 8.000000e-01, 8.000000e-01]}
// CHECK-LABEL: func.func @target
// CHECK: pcus = 512 : i64
module attributes {rdu.arch = #rdu.arch<"sn10">, rdu.resource_scaling = [1.0, 0.8, 0.8]} {
  func.func @target(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "rdu.section"(%a) ({
    ^bb0(%x: tensor<4xf32>):
      "rdu.yield"(%x) : (tensor<4xf32>) -> ()
    }) {sym_name = "s0", index = 0 : i64, phase = "backward", pcus = 512 : i64,
        pmus = 512 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Four scaling factors: forward, backward, gradient normalization, optimizer (the 4th
// applies to optimizer sections); every target of the table parses.
// CHECK-LABEL: func.func @four_factors
// CHECK: phase = "optimizer"
module attributes {rdu.arch = #rdu.arch<"sn40l">, rdu.resource_scaling = [1.0, 1.0, 0.1, 0.5]} {
  func.func @four_factors(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "rdu.section"(%a) ({
    ^bb0(%x: tensor<4xf32>):
      "rdu.yield"(%x) : (tensor<4xf32>) -> ()
    }) {sym_name = "s0", index = 0 : i64, phase = "optimizer", pcus = 520 : i64,
        pmus = 520 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Section indices are unique per block, not per module: each function has its own order.
// CHECK-LABEL: func.func @first
// CHECK-LABEL: func.func @second
module attributes {rdu.arch = #rdu.arch<"sn30">} {
  func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "rdu.section"(%a) ({
    ^bb0(%x: tensor<4xf32>):
      "rdu.yield"(%x) : (tensor<4xf32>) -> ()
    }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1280 : i64,
        pmus = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "rdu.section"(%a) ({
    ^bb0(%x: tensor<4xf32>):
      "rdu.yield"(%x) : (tensor<4xf32>) -> ()
    }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
      : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
