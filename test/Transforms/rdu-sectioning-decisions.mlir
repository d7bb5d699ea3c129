// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o0 decisions=%S/Inputs/rdu-decisions.json' | FileCheck %s
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o3 decisions=%S/Inputs/rdu-decisions.json' | FileCheck %s --check-prefix=O3
// RUN: not accel-opt %s --split-input-file -rdu-sectioning='level=o0 decisions=%S/Inputs/rdu-decisions-nomatch.json' 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not accel-opt %s --split-input-file -rdu-sectioning='level=o0 decisions=%S/Inputs/rdu-decisions-convex.json' 2>&1 | FileCheck %s --check-prefix=CONVEX

// rdu-sectioning's `decisions` option (--mac-human-decision): the file's "sections" entries
// are applied before the level's own cuts. Inputs/rdu-decisions.json puts gelu and the view
// after it in one section named "act".

#gelu = loc("torch.op:aten.gelu.default|gelu||=M":1:0)
#view = loc("torch.op:aten.view.default|view||=M":1:0)
#softmax = loc("torch.op:aten.softmax.int|softmax||=M":1:0)
#add = loc("torch.op:aten.add.Tensor|add||=M":1:0)

// o0: the decision's section, then one section per remaining operator.
// CHECK-LABEL: func.func @chain
// CHECK: rdu.label = "act", rdu.ops = ["gelu:gelu", "view:view"]{{.*}}sym_name = "s0_act"
// CHECK: sym_name = "s1_softmax"
// CHECK: sym_name = "s2_add"
// o3: the decision's section stays whole and apart; the rest is cut by resources.
// O3-LABEL: func.func @chain
// O3: rdu.ops = ["gelu:gelu", "view:view"]{{.*}}sym_name = "s0_act"
// O3: rdu.ops = ["softmax:softmax", "add:add"]{{.*}}sym_name = "s1_graph"
// An entry matching no operator of the module names the file and the entry.
// NOMATCH: error: {{.*}}rdu-decisions-nomatch.json: sections[0]: ops ['conv2d:*'] match no operator of the model (operators: gelu:gelu, view:view, softmax:softmax, add:add)
// Negative: gelu and add without the view and softmax between them are not convex (a path
// leaves the group and comes back): refused, naming the entry.
// CONVEX: error: {{.*}}rdu-decisions-convex.json: sections[0]: section 'ends' is not convex
func.func @chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.tanh %a : tensor<4xf32> loc(#gelu)
  %1 = math.absf %0 : tensor<4xf32> loc(#view)
  %2 = math.exp %1 : tensor<4xf32> loc(#softmax)
  %3 = arith.addf %2, %0 : tensor<4xf32> loc(#add)
  return %3 : tensor<4xf32>
}
