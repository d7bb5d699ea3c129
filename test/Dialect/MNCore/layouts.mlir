// RUN: accel-opt %s --split-input-file | FileCheck %s
// The seed layouts of MLSDK's documentation round-trip exactly, twice through accel-opt.
// RUN: accel-opt %s --split-input-file | accel-opt --split-input-file | FileCheck %s

// layout_spec.json (Gather input): a 151936 x 1536 embedding table replicated over L1B;
// rows padded to 75 x 8 x 16 x 4 x 4 = 153600; 384 long words per PE fit LM.
// CHECK-LABEL: func.func @gather_table
// CHECK: #mncore.layout<"((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])">
func.func @gather_table(%t: tensor<151936x1536xf16>) -> tensor<151936x1536xf16> {
  %0 = "mncore.annotate"(%t) {layout = #mncore.layout<"((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])">, memory = "lm"}
    : (tensor<151936x1536xf16>) -> tensor<151936x1536xf16>
  return %0 : tensor<151936x1536xf16>
}

// -----

// gemm_layout_spec.json, A: spans 24576 long words per PE, so it lives in DRAM.
// CHECK-LABEL: func.func @gemm_a
// CHECK: #mncore.layout<"((), (8:3072, 8_L1B:1, 2_Time:1, 2:1536, 16:1), (96:16, 4_W:1, 4_PE:1))">
func.func @gemm_a(%a: tensor<1x4096x1536xf16>) -> tensor<1x4096x1536xf16> {
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((), (8:3072, 8_L1B:1, 2_Time:1, 2:1536, 16:1), (96:16, 4_W:1, 4_PE:1))">, memory = "dram"}
    : (tensor<1x4096x1536xf16>) -> tensor<1x4096x1536xf16>
  return %0 : tensor<1x4096x1536xf16>
}

// -----

// gemm_layout_spec.json, BT (the transposed weight): 4608 long words per PE, in DRAM.
// CHECK-LABEL: func.func @gemm_bt
// CHECK: #mncore.layout<"((25_Time:1, 3:1536, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (96:16, 4_W:1, 4_PE:1); B@[L1B])">
func.func @gemm_bt(%b: tensor<151936x1536xf16>) -> tensor<151936x1536xf16> {
  %0 = "mncore.annotate"(%b) {layout = #mncore.layout<"((25_Time:1, 3:1536, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (96:16, 4_W:1, 4_PE:1); B@[L1B])">, memory = "dram"}
    : (tensor<151936x1536xf16>) -> tensor<151936x1536xf16>
  return %0 : tensor<151936x1536xf16>
}

// -----

// gemm_layout_spec.json, C: 50 time steps, 768 long words per PE, fits LM.
// CHECK-LABEL: func.func @gemm_c
// CHECK: #mncore.layout<"((), (8:96, 8_L1B:1, 2_Time:25, 2:48, 16:1), (25_Time:1, 3:16, 8_L2B:1, 16_MAB:1, 4_W:1, 4_PE:1))">
func.func @gemm_c(%c: tensor<1x4096x151936xf16>) -> tensor<1x4096x151936xf16> {
  %0 = "mncore.annotate"(%c) {layout = #mncore.layout<"((), (8:96, 8_L1B:1, 2_Time:25, 2:48, 16:1), (25_Time:1, 3:16, 8_L2B:1, 16_MAB:1, 4_W:1, 4_PE:1))">, memory = "lm"}
    : (tensor<1x4096x151936xf16>) -> tensor<1x4096x151936xf16>
  return %0 : tensor<1x4096x151936xf16>
}

// -----

// The table moves from the Gather layout to the GEMM's BT layout: a relayout in DRAM.
// CHECK-LABEL: func.func @gather_to_gemm
// CHECK: "mncore.relayout"
// CHECK-SAME: dst = #mncore.layout<"((25_Time:1, 3:1536, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (96:16, 4_W:1, 4_PE:1); B@[L1B])">
// CHECK-SAME: src = #mncore.layout<"((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])">
func.func @gather_to_gemm(%t: tensor<151936x1536xf16>) -> tensor<151936x1536xf16> {
  %0 = "mncore.annotate"(%t) {layout = #mncore.layout<"((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])">, memory = "lm"}
    : (tensor<151936x1536xf16>) -> tensor<151936x1536xf16>
  %1 = "mncore.relayout"(%0) {src = #mncore.layout<"((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])">, dst = #mncore.layout<"((25_Time:1, 3:1536, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (96:16, 4_W:1, 4_PE:1); B@[L1B])">, memory = "dram"}
    : (tensor<151936x1536xf16>) -> tensor<151936x1536xf16>
  return %1 : tensor<151936x1536xf16>
}
