// RUN: accel-opt %s --split-input-file -mncore-plan-layouts | FileCheck %s --check-prefixes=CHECK,LPZ
// RUN: accel-opt %s --split-input-file '-mncore-plan-layouts=planner=bidi' | FileCheck %s --check-prefixes=CHECK,BIDI
// RUN: accel-opt %s --split-input-file '-mncore-plan-layouts=planner=legacy' | FileCheck %s --check-prefixes=CHECK,LEGACY
// The annotated IR verifies and folds back to the original program.
// RUN: accel-opt %s --split-input-file -mncore-plan-layouts -mncore-strip-layouts | FileCheck %s --check-prefix=STRIP

#id = affine_map<(d0, d1) -> (d0, d1)>
// A GEMM then a ReLU (elementwise): the ReLU takes the GEMM's layout, so no relayout there.
// B is a function input, laid out by the host: bidi and lpz give it the GEMM's `col` layout
// (no relayout); legacy lays every input out `row` and converts B before the GEMM.
// CHECK-LABEL: func.func @gemm_relu
// CHECK-DAG: %[[B:.*]] = "mncore.annotate"(%arg1) {layout = #mncore.layout<"{{.*}}">, memory = "lm"}
// CHECK-DAG: %[[A:.*]] = "mncore.annotate"(%arg0) {layout = #mncore.layout<"((4_L1B:1), (4_MAB:1, 4_PE:1, 2_W:1))">
// LPZ-NOT: mncore.relayout
// BIDI-NOT: mncore.relayout
// LEGACY: %[[BT:.*]] = "mncore.relayout"(%[[B]]) {dst = #mncore.layout<"((4_MAB:1, 4_PE:1, 2_W:1), (64:1))">, memory = "lm", src = #mncore.layout<"((4_L2B:1, 8_L1B:1), (8_MAB:1, 4_PE:1, 2_W:1))">}
// LEGACY: linalg.matmul ins(%[[A]], %[[BT]] :
// LPZ: linalg.matmul ins(%[[A]], %[[B]] :
// CHECK: %[[M:.*]] = "mncore.annotate"(%{{.*}}) {layout = #mncore.layout<"((4_L1B:1), (8_MAB:1, 4_PE:1, 2_W:1))">
// CHECK: linalg.generic {{.*}} ins(%[[M]] : tensor<4x64xf32>)
// CHECK-NOT: mncore.relayout
// STRIP-LABEL: func.func @gemm_relu
// STRIP-NOT: mncore.
// STRIP: linalg.matmul ins(%arg0, %arg1 :
func.func @gemm_relu(%a: tensor<4x32xf32>, %b: tensor<32x64xf32>) -> tensor<4x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x32xf32>, tensor<32x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %cst : f32
    linalg.yield %y : f32
  } -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>
// A GEMM then a reduction along the last axis, which wants `col`. lpz has the GEMM write
// `col` directly (no relayout); bidi keeps the GEMM's `row` output and converts it.
// CHECK-LABEL: func.func @gemm_reduce
// LPZ: %[[M:.*]] = "mncore.annotate"(%{{.*}}) {layout = #mncore.layout<"((2_PE:1, 2_W:1), (64:1))">
// LPZ-NOT: mncore.relayout
// LPZ: linalg.generic {{.*}} ins(%[[M]] : tensor<4x64xf32>)
// BIDI: %[[M:.*]] = "mncore.annotate"(%{{.*}}) {layout = #mncore.layout<"((4_L1B:1), (8_MAB:1, 4_PE:1, 2_W:1))">
// BIDI: %[[C:.*]] = "mncore.relayout"(%[[M]]) {dst = #mncore.layout<"((2_PE:1, 2_W:1), (64:1))">, memory = "lm", src = #mncore.layout<"((4_L1B:1), (8_MAB:1, 4_PE:1, 2_W:1))">}
// BIDI: linalg.generic {{.*}} ins(%[[C]] : tensor<4x64xf32>)
// LEGACY-COUNT-2: mncore.relayout
// CHECK: "mncore.annotate"(%{{.*}}) {layout = #mncore.layout<"((2_PE:1, 2_W:1), ())">
func.func @gemm_reduce(%a: tensor<4x32xf32>, %b: tensor<32x64xf32>) -> tensor<4x1xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x32xf32>, tensor<32x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %e1 = tensor.empty() : tensor<4x1xf32>
  %f1 = linalg.fill ins(%cst : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]} ins(%m : tensor<4x64xf32>) outs(%f1 : tensor<4x1xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  } -> tensor<4x1xf32>
  return %r : tensor<4x1xf32>
}

// -----

// nn.Linear's weight goes through a transpose: a transpose that swaps the last two axes
// turns `row` into `col` without moving data, so bidi/lpz need no relayout for the GEMM's B;
// legacy gives every output `row` and must convert the transposed weight.
// CHECK-LABEL: func.func @linear
// LPZ-NOT: mncore.relayout
// BIDI-NOT: mncore.relayout
// LEGACY: "mncore.relayout"({{.*}}) {dst = #mncore.layout<"((4_MAB:1, 4_PE:1, 2_W:1), (64:1))">
// CHECK: return
func.func @linear(%a: tensor<4x32xf32>, %w: tensor<64x32xf32>) -> tensor<4x64xf32> {
  %cst = arith.constant 0.0 : f32
  %t0 = tensor.empty() : tensor<32x64xf32>
  %t = linalg.transpose ins(%w : tensor<64x32xf32>) outs(%t0 : tensor<32x64xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %m = linalg.matmul ins(%a, %t : tensor<4x32xf32>, tensor<32x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %m : tensor<4x64xf32>
}

// -----

// Negative: a function without tensors has no layers; nothing is annotated.
// CHECK-LABEL: func.func @scalars
// CHECK-NOT: mncore.
// CHECK: return
func.func @scalars(%a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  return %0 : f32
}
