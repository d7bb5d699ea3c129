// RUN: accel-opt %s --split-input-file --verify-diagnostics

// An unknown phase is rejected with the valid choices.
func.func @bad_phase(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op phase must be one of forward, backward, allreduce, grad_norm, optimizer; got 'inference'}}
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "inference", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The execution index cannot be negative.
func.func @negative_index(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op index must be non-negative, got -1}}
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = -1 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A section cannot occupy a negative number of PCUs.
func.func @negative_pcus(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op PCU count must be non-negative, got -3}}
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = -3 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Nor a negative number of PMUs.
func.func @negative_pmus(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op PMU count must be non-negative, got -1}}
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = -1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// IRDL: every declared attribute is required.
func.func @missing_attribute(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op attribute "pmus" is expected but not provided}}
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// IRDL: sections exchange tensors, not scalars.
func.func @scalar_operand(%a: f32) {
  // expected-error@+1 {{expected base type 'builtin.tensor' but got 'builtin.f32'}}
  "rdu.section"(%a) ({
  ^bb0(%x: f32):
    "rdu.yield"() : () -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (f32) -> ()
  return
}

// -----

// The body's block arguments are the operands, type for type.
func.func @argument_mismatch(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op body arguments (tensor<8xf32>) do not match the section operands (tensor<4xf32>)}}
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<8xf32>):
    "rdu.yield"(%x) : (tensor<8xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The yield must match the results.
func.func @yield_mismatch(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op yields () but its results are (tensor<4xf32>)}}
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"() : () -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A body ends with rdu.yield, not another terminator.
func.func @wrong_terminator(%a: tensor<4xf32>) {
  // expected-error@+1 {{'rdu.section' op body must end with 'rdu.yield', found 'llvm.unreachable'}}
  "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "llvm.unreachable"() : () -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> ()
  return
}

// -----

// A section that names no hypersection needs its body.
func.func @missing_body(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op body must have exactly one block, found 0}}
  %0 = "rdu.section"(%a) ({}) {sym_name = "s0", index = 0 : i64, phase = "forward",
    pcus = 1 : i64, pmus = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An instance carries no copy of the hypersection's body.
"rdu.hypersection"() ({
^bb0(%x: tensor<4xf32>):
  "rdu.yield"(%x) : (tensor<4xf32>) -> ()
}) {sym_name = "layer", function_type = (tensor<4xf32>) -> tensor<4xf32>} : () -> ()
func.func @instance_with_body(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op instance of hypersection @layer must have an empty region (the body is the hypersection's)}}
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64,
      hypersection = @layer} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The hypersection reference is a symbol, not a string.
func.func @string_reference(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op 'hypersection' must be a flat symbol reference (@name), got "layer"}}
  %0 = "rdu.section"(%a) ({}) {sym_name = "s0", index = 0 : i64, phase = "forward",
    pcus = 1 : i64, pmus = 1 : i64, hypersection = "layer"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The reference must resolve to a hypersection of the enclosing module.
func.func @unresolved(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op hypersection @missing does not name an 'rdu.hypersection' in the enclosing module}}
  %0 = "rdu.section"(%a) ({}) {sym_name = "s0", index = 0 : i64, phase = "forward",
    pcus = 1 : i64, pmus = 1 : i64, hypersection = @missing} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An instance's operands and results match the hypersection's signature.
"rdu.hypersection"() ({
^bb0(%x: tensor<8xf32>):
  "rdu.yield"(%x) : (tensor<8xf32>) -> ()
}) {sym_name = "layer", function_type = (tensor<8xf32>) -> tensor<8xf32>} : () -> ()
func.func @signature_mismatch(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.section' op signature (tensor<4xf32>) -> tensor<4xf32> does not match hypersection @layer (tensor<8xf32>) -> tensor<8xf32>}}
  %0 = "rdu.section"(%a) ({}) {sym_name = "s0", index = 0 : i64, phase = "forward",
    pcus = 1 : i64, pmus = 1 : i64, hypersection = @layer} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Two sibling sections cannot run at the same index.
func.func @duplicate_index(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{'rdu.section' op index 0 is already used by section "s0" in the same block}}
  %1 = "rdu.section"(%0) ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "s1", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A section cannot use more PCUs than the target has.
module attributes {rdu.arch = #rdu.arch<"sn10">} {
  func.func @too_many_pcus(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{'rdu.section' op needs 641 PCUs but sn10 offers 640}}
    %0 = "rdu.section"(%a) ({
    ^bb0(%x: tensor<4xf32>):
      "rdu.yield"(%x) : (tensor<4xf32>) -> ()
    }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 641 : i64,
        pmus = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Scaling shrinks what a phase may use: 1040 x 0.5 = 520 PMUs for an optimizer section.
module attributes {rdu.arch = #rdu.arch<"sn40l">, rdu.resource_scaling = [1.0, 0.8, 0.5]} {
  func.func @scaled_pmus(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{'rdu.section' op needs 521 PMUs but sn40l offers 520 (1040 x 0.5 optimizer scaling)}}
    %0 = "rdu.section"(%a) ({
    ^bb0(%x: tensor<4xf32>):
      "rdu.yield"(%x) : (tensor<4xf32>) -> ()
    }) {sym_name = "s0", index = 0 : i64, phase = "optimizer", pcus = 1 : i64,
        pmus = 521 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// The target must be one of the architecture table's.
// expected-error@+1 {{'builtin.module' op unknown RDU architecture 'sn99' (known: sn10, sn20, sn30, sn40l)}}
module attributes {rdu.arch = #rdu.arch<"sn99">} {
}

// -----

// The target is an #rdu.arch attribute, not a bare string.
// expected-error@+1 {{'builtin.module' op 'rdu.arch' must be an #rdu.arch<"..."> attribute, got "sn10"}}
module attributes {rdu.arch = "sn10"} {
}

// -----

// IRDL: #rdu.arch holds a string.
// expected-error@+1 {{expected base attribute 'builtin.string' but got 'builtin.integer'}}
module attributes {rdu.arch = #rdu.arch<10>} {
}

// -----

// Scaling factors are floats.
// expected-error@+1 {{'builtin.module' op 'rdu.resource_scaling' must be an array of floats, got [1, 1, 1]}}
module attributes {rdu.resource_scaling = [1, 1, 1]} {
}

// -----

// SambaFlow takes 3 or 4 scaling factors.
// expected-error@+1 {{'builtin.module' op 'rdu.resource_scaling' needs 3 or 4 scaling factors, got 2}}
module attributes {rdu.resource_scaling = [1.0, 0.5]} {
}

// -----

// A factor scales resources down, never to zero or up.
// expected-error@+1 {{'builtin.module' op 'rdu.resource_scaling' scaling factors must lie in (0, 1], got 1.5}}
module attributes {rdu.resource_scaling = [1.0, 1.5, 1.0]} {
}

// -----

// A hypersection's signature is a function type.
// expected-error@+1 {{'rdu.hypersection' op function_type must be a function type, got i32}}
"rdu.hypersection"() ({
^bb0(%x: tensor<4xf32>):
  "rdu.yield"(%x) : (tensor<4xf32>) -> ()
}) {sym_name = "layer", function_type = i32} : () -> ()

// -----

// A hypersection's body matches its function_type.
// expected-error@+1 {{'rdu.hypersection' op body arguments (tensor<8xf32>) do not match the function_type inputs (tensor<4xf32>)}}
"rdu.hypersection"() ({
^bb0(%x: tensor<8xf32>):
  "rdu.yield"(%x) : (tensor<8xf32>) -> ()
}) {sym_name = "layer", function_type = (tensor<4xf32>) -> tensor<4xf32>} : () -> ()

// -----

// A hypersection is a module-level symbol, not something nested in a function.
func.func @nested_hypersection() {
  // expected-error@+1 {{'rdu.hypersection' op must be directly inside a 'builtin.module', found 'func.func'}}
  "rdu.hypersection"() ({
  ^bb0(%x: tensor<4xf32>):
    "rdu.yield"(%x) : (tensor<4xf32>) -> ()
  }) {sym_name = "layer", function_type = (tensor<4xf32>) -> tensor<4xf32>} : () -> ()
  return
}

// -----

// A stage buffer holds at least one slot.
func.func @zero_depth(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    // expected-error@+1 {{'rdu.stage_buffer' op depth must be at least 1, got 0}}
    %1 = "rdu.stage_buffer"(%x) {depth = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    "rdu.yield"(%1) : (tensor<4xf32>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Stage buffers exist only between pipeline stages of a section.
func.func @buffer_outside_section(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'rdu.stage_buffer' op must be inside an 'rdu.section' or 'rdu.hypersection' body, found 'func.func'}}
  %0 = "rdu.stage_buffer"(%a) {depth = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// IRDL: a stage buffer's result has its operand's type.
func.func @buffer_type_change(%a: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "rdu.section"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    // expected-error@+1 {{expected 'tensor<4xf32>' but got 'tensor<4xf16>'}}
    %1 = "rdu.stage_buffer"(%x) {depth = 2 : i64} : (tensor<4xf32>) -> tensor<4xf16>
    "rdu.yield"(%1) : (tensor<4xf16>) -> ()
  }) {sym_name = "s0", index = 0 : i64, phase = "forward", pcus = 1 : i64, pmus = 1 : i64}
    : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// rdu.yield terminates section bodies only.
func.func @stray_yield() {
  "scf.execute_region"() ({
    // expected-error@+1 {{'rdu.yield' op must terminate an 'rdu.section' or 'rdu.hypersection' body, found 'scf.execute_region'}}
    "rdu.yield"() : () -> ()
  }) : () -> ()
  return
}
