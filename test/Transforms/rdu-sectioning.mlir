// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o0' | FileCheck %s --check-prefix=O0
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o1' | FileCheck %s --check-prefix=O1
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o1 rule-list=%S/Inputs/rdu-rules.yaml' | FileCheck %s --check-prefix=TREE
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o3' | FileCheck %s --check-prefix=O3
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o3 scaling=0.003,1,1' | FileCheck %s --check-prefix=TIGHT
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o0 legacy=1' | FileCheck %s --check-prefix=LEGACY
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o3 stages=3' | FileCheck %s --check-prefix=STAGES

// Each op's torch operator is in its location (accel.frontend.provenance): aten op, FX node,
// annotations, then the module stack path=Class.
#gelu = loc("torch.op:aten.gelu.default|gelu||=M":1:0)
#view = loc("torch.op:aten.view.default|view||=M":1:0)
#softmax = loc("torch.op:aten.softmax.int|softmax||=M":1:0)
#add = loc("torch.op:aten.add.Tensor|add||=M":1:0)

// A chain of four operators: o0 cuts one section per operator (SambaFlow: "each PyTorch
// operator is compiled independently", the view too), o1's default list (MHA only) has
// nothing to fuse, o3 keeps the whole graph in one section.
// O0-LABEL: func.func @chain
// O0: %[[S0:.*]] = "rdu.section"(%arg0)
// O0: rdu.ops = ["gelu:gelu"]{{.*}}sym_name = "s0_gelu"
// O0: %[[V:.*]] = "rdu.section"(%[[S0]])
// O0: rdu.ops = ["view:view"]{{.*}}sym_name = "s1_view"
// O0: %[[S1:.*]] = "rdu.section"(%[[V]])
// O0: sym_name = "s2_softmax"
// O0: "rdu.section"(%[[S1]], %arg0)
// O0: sym_name = "s3_add"
// O0-NOT: rdu.section
// O1-LABEL: func.func @chain
// O1-COUNT-4: "rdu.section"
// O1-NOT: "rdu.section"
// O3-LABEL: func.func @chain
// O3: "rdu.section"(%arg0)
// O3: rdu.ops = ["gelu:gelu", "view:view", "softmax:softmax", "add:add"]{{.*}}sym_name = "s0_graph"
// O3-NOT: "rdu.section"
// The legacy compiler (--mac-v2) lets the view ride along with gelu. Inside a section, a
// tensor passed from one stage to the next goes through a double-buffered PMU stage buffer.
// LEGACY-LABEL: func.func @chain
// LEGACY: %[[T:.*]] = math.tanh
// LEGACY-NEXT: %[[B:.*]] = "rdu.stage_buffer"(%[[T]]) {depth = 2 : i64}
// LEGACY-NEXT: math.absf %[[B]]
// LEGACY: rdu.ops = ["gelu:gelu", "view:view"]{{.*}}sym_name = "s0_gelu"
// LEGACY: sym_name = "s1_softmax"
// LEGACY: sym_name = "s2_add"
// LEGACY-NOT: sym_name = "s3
// o3 with stages=3 (--n-chips 3): the graph fits one section, but is cut into three
// pipeline stages, each a run of the operator order.
// STAGES-LABEL: func.func @chain
// STAGES-COUNT-3: "rdu.section"
// STAGES-NOT: "rdu.section"
// With 3 PCUs and 3 PMUs per section (0.003 x 1040) o3 closes a section when the next
// operator would need a fourth PMU (input, output and one stage buffer each take one).
// TIGHT-LABEL: func.func @chain
// TIGHT: rdu.ops = ["gelu:gelu", "view:view"]
// TIGHT: rdu.ops = ["softmax:softmax"]
// TIGHT: rdu.ops = ["add:add"]
// TIGHT-NOT: "rdu.section"
// TIGHT-LABEL: func.func @attention
func.func @chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.tanh %a : tensor<4xf32> loc(#gelu)
  %1 = math.absf %0 : tensor<4xf32> loc(#view)
  %2 = math.exp %1 : tensor<4xf32> loc(#softmax)
  %3 = arith.addf %2, %a : tensor<4xf32> loc(#add)
  return %3 : tensor<4xf32>
}

// -----

#mm1 = loc("torch.op:aten.matmul.default|matmul||=M":1:0)
#mul = loc("torch.op:aten.mul.Tensor|mul||=M":1:0)
#sm = loc("torch.op:aten._softmax.default|softmax||=M":1:0)
#mm2 = loc("torch.op:aten.bmm.default|bmm||=M":1:0)
#neg = loc("torch.op:aten.neg.default|neg||=M":1:0)

// matmul -> mul -> softmax -> matmul is MHA in the default rule list: one section at o1;
// the neg after it is not in the pattern and gets its own section.
// O1-LABEL: func.func @attention
// O1: "rdu.section"(%arg0)
// O1: rdu.label = "MHA", rdu.ops = ["matmul:matmul", "mul:mul", "softmax:softmax", "matmul:bmm"]{{.*}}sym_name = "s0_MHA"
// O1: sym_name = "s1_neg"
// O0-LABEL: func.func @attention
// O0-COUNT-5: "rdu.section"
// LEGACY-LABEL: func.func @attention
// STAGES-LABEL: func.func @attention
// O3-LABEL: func.func @attention
// O3: sym_name = "s0_graph"
func.func @attention(%q: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %q, %q : tensor<4xf32> loc(#mm1)
  %1 = arith.mulf %0, %0 : tensor<4xf32> loc(#mul)
  %2 = math.exp %1 : tensor<4xf32> loc(#sm)
  %3 = arith.mulf %2, %q : tensor<4xf32> loc(#mm2)
  %4 = arith.negf %3 : tensor<4xf32> loc(#neg)
  return %4 : tensor<4xf32>
}

// -----

#sm = loc("torch.op:aten._softmax.default|softmax||=M":1:0)
#mm2 = loc("torch.op:aten.bmm.default|bmm||=M":1:0)

// Negative: softmax -> matmul without the leading matmul is not MHA: two sections.
// O1-LABEL: func.func @not_attention
// O1-NOT: "MHA"
// O1: sym_name = "s0_softmax"
// O1: sym_name = "s1_matmul"
func.func @not_attention(%q: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.exp %q : tensor<4xf32> loc(#sm)
  %1 = arith.mulf %0, %q : tensor<4xf32> loc(#mm2)
  return %1 : tensor<4xf32>
}

// -----

#ln = loc("torch.op:aten.layer_norm.default|layer_norm||=M|ln=torch.nn.modules.normalization.LayerNorm":1:0)
#fc = loc("torch.op:aten.linear.default|linear||=M|fc=torch.nn.modules.linear.Linear":1:0)
#act = loc("torch.op:aten.gelu.default|gelu||=M":1:0)
#fc2 = loc("torch.op:aten.linear.default|linear_1||=M|fc2=torch.nn.modules.linear.Linear":1:0)

// A tree rule (Inputs/rdu-rules.yaml: layer_norm feeding two consumers, a linear and a
// gelu) matches a branching subgraph; the second linear is outside the tree.
// TREE-LABEL: func.func @branch
// TREE: rdu.label = "Branch", rdu.ops = ["layer_norm:ln", "linear:fc", "gelu:gelu"]
// TREE: sym_name = "s1_linear"
func.func @branch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.sqrt %x : tensor<4xf32> loc(#ln)
  %1 = arith.mulf %0, %0 : tensor<4xf32> loc(#fc)
  %2 = math.tanh %0 : tensor<4xf32> loc(#act)
  %3 = arith.addf %1, %2 : tensor<4xf32> loc(#fc2)
  return %3 : tensor<4xf32>
}

// -----

// Negative: stages=3 cannot split a single operator (nothing to cut): one section.
// STAGES-LABEL: func.func @one_operator
// STAGES-COUNT-1: "rdu.section"
// STAGES-NOT: "rdu.section"
func.func @one_operator(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.tanh %x : tensor<4xf32> loc(#gelu_one)
  %1 = math.absf %0 : tensor<4xf32> loc(#gelu_one)
  return %1 : tensor<4xf32>
}
#gelu_one = loc("torch.op:aten.gelu.default|gelu||=M":1:0)

// -----

// Negative: without provenance in the locations (plain MLIR input) every op is its own
// operator; constants are cloned into the section that uses them, not cut out.
// STAGES-LABEL: func.func @no_provenance
// O0-LABEL: func.func @no_provenance
// O0: "rdu.section"(%arg0)
// O0-NEXT: ^bb0(%[[X:.*]]: tensor<4xf32>):
// O0-NEXT: %[[C:.*]] = arith.constant
// O0-NEXT: arith.addf %[[X]], %[[C]]
// O0: sym_name = "s0_addf"
func.func @no_provenance(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  %0 = arith.addf %x, %c : tensor<4xf32>
  return %0 : tensor<4xf32>
}
