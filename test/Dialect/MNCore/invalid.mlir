// RUN: accel-opt %s --split-input-file --verify-diagnostics

// A malformed layout names the column and what was expected there.
func.func @syntax(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'mncore.annotate' op malformed layout "((4_PE 1))": column 8: expected ':' and a stride after '4_PE', found '1'}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE 1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Factor levels come from a fixed set.
func.func @unknown_level(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{column 5: expected a level name after '_' (Time, L2B, L1B, MAB, PE, W), found 'L3B'}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_L3B:1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The memory a tensor lives in is LM or DRAM.
func.func @unknown_memory(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'mncore.annotate' op memory must be one of lm, dram; got 'sram'}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "sram"}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A layout places a statically shaped tensor.
func.func @dynamic_shape(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{'mncore.annotate' op needs a statically shaped tensor, got tensor<?xf32>}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Elements need a bit width to be placed in long words.
func.func @no_width(%a: tensor<4xindex>) -> tensor<4xindex> {
  // expected-error@+1 {{'mncore.annotate' op has no element width for index}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<4xindex>) -> tensor<4xindex>
  return %0 : tensor<4xindex>
}

// -----

// Elements wider than a long word do not fit one.
func.func @too_wide(%a: tensor<4xi128>) -> tensor<4xi128> {
  // expected-error@+1 {{'mncore.annotate' op layout does not fit tensor<4xi128>: 128-bit elements do not pack into 64-bit long words}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<4xi128>) -> tensor<4xi128>
  return %0 : tensor<4xi128>
}

// -----

// One group per dimension.
func.func @rank(%a: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error@+1 {{layout has 1 dimension groups but the tensor has rank 2}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// A group must cover its dimension (padding is fine, truncation is not).
func.func @coverage(%a: tensor<5xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{dimension 0 has size 5 but its group covers only 4 positions}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// A MAB has 4 PEs.
func.func @hierarchy(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{PE spans 8 positions but MN-Core 2 has 4}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((8_PE:1))">, memory = "lm"}
    : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A 64-bit long word holds 2 f32 lanes, not 4.
func.func @lanes(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{W spans 4 lanes but a 64-bit long word holds 2 32-bit elements}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_W:1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Replicas over L1B would land on slots other elements use.
func.func @broadcast_conflict(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{L1B is broadcast (B@[L1B]) and also used by a factor, so replicas overwrite other elements}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((8_L1B:1); B@[L1B])">, memory = "lm"}
    : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Strides that overlap put two elements on one slot.
func.func @collision(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{two elements share a slot: the address factors (4:1, 4:2) map different indices to the same coordinate}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4:1), (4:2))">, memory = "lm"}
    : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// The seed GEMM A layout spans 24576 long words per PE: it cannot be LM-resident.
func.func @lm_capacity(%a: tensor<1x4096x1536xf16>) -> tensor<1x4096x1536xf16> {
  // expected-error@+1 {{addresses span 24576 long words per PE but 'lm' holds 2048}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((), (8:3072, 8_L1B:1, 2_Time:1, 2:1536, 16:1), (96:16, 4_W:1, 4_PE:1))">, memory = "lm"}
    : (tensor<1x4096x1536xf16>) -> tensor<1x4096x1536xf16>
  return %0 : tensor<1x4096x1536xf16>
}

// -----

// A relayout's src is the layout its operand already has.
func.func @src_mismatch(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{'mncore.relayout' op src layout ((4_MAB:1)) differs from the layout of its operand, ((4_PE:1))}}
  %1 = "mncore.relayout"(%0) {src = #mncore.layout<"((4_MAB:1))">,
    dst = #mncore.layout<"((2_PE:1, 2:1))">, memory = "lm"} : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Both of a relayout's layouts are checked: here dst does not fit the tensor.
func.func @relayout_dst(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'mncore.relayout' op dst layout does not fit tensor<4xf32>: dimension 0 has size 4 but its group covers only 2 positions}}
  %0 = "mncore.relayout"(%a) {src = #mncore.layout<"((4_PE:1))">,
    dst = #mncore.layout<"((2_PE:1))">, memory = "lm"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ... and a malformed src is reported like any other layout.
func.func @relayout_src_syntax(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'mncore.relayout' op malformed src layout "((4_PE:1)": column 10: expected ',', ';' or ')' after a dimension group, found end of layout}}
  %0 = "mncore.relayout"(%a) {src = #mncore.layout<"((4_PE:1)">,
    dst = #mncore.layout<"((4_PE:1))">, memory = "lm"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Layouts outside mncore ops are checked too.
// expected-error@+1 {{'func.func' op malformed layout "((4_PE:1) x" in attribute 'arg_attrs': column 11: expected ',', ';' or ')' after a dimension group, found 'x'}}
func.func @argument_layout(%a: tensor<4xf32> {mncore.layout = #mncore.layout<"((4_PE:1) x">})
    -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// IRDL: the layout is an #mncore.layout, not a bare string.
func.func @bare_string(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{expected base attribute 'mncore.layout' but got 'builtin.string'}}
  %0 = "mncore.annotate"(%a) {layout = "((4_PE:1))", memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// IRDL: annotations are identities, so the result type is the operand type.
func.func @type_change(%a: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error@+1 {{expected 'tensor<4xf32>' but got 'tensor<4xf16>'}}
  %0 = "mncore.annotate"(%a) {layout = #mncore.layout<"((4_PE:1))">, memory = "lm"}
    : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
