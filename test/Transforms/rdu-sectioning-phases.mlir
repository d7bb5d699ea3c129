// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o0 phase=backward' | FileCheck %s --check-prefix=BWD
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o3 phase=optimizer norm-result=0' | FileCheck %s --check-prefix=NORM
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o3 phase=optimizer' | FileCheck %s --check-prefix=NONORM
// RUN: accel-opt %s --split-input-file -rdu-sectioning='level=o3 phase=optimizer norm-result=0 scaling=1,1,0.002,1' | FileCheck %s --check-prefix=TIGHTNORM

// Compiled training cuts each phase graph with its phase (accel.training.compile): every
// section carries it and is sized by that phase's scaling factor.

#mul = loc("torch.op:aten.mul.Tensor|mul||=M":1:0)
#sqrt = loc("torch.op:aten.sqrt.default|sqrt||=M":1:0)
#sub = loc("torch.op:aten.sub.Tensor|sub||=M":1:0)

// A backward graph at o0: one section per operator, each in phase backward.
// BWD-LABEL: func.func @update
// BWD: phase = "backward"{{.*}}sym_name = "s0_mul"
// BWD: phase = "backward"{{.*}}sym_name = "s1_sqrt"
// BWD: phase = "backward"{{.*}}sym_name = "s2_sub"
// BWD-NOT: phase = "forward"

// An optimizer graph whose result 0 is the total gradient norm (clip_grad_norm): the
// operators it depends on (mul, sqrt) form a grad_norm section even at o3, which would
// otherwise keep the whole graph in one section; the update (sub) is the optimizer's.
// NORM-LABEL: func.func @update
// NORM: "rdu.section"(%arg1)
// NORM: phase = "grad_norm"{{.*}}rdu.ops = ["mul:mul", "sqrt:sqrt"]{{.*}}sym_name = "s0_graph0"
// NORM: "rdu.section"(%arg0, %arg1)
// NORM: phase = "optimizer"{{.*}}rdu.ops = ["sub:sub"]{{.*}}sym_name = "s1_graph1"
// NORM-NOT: "rdu.section"

// Negative: without norm-result nothing is grad_norm and o3 keeps one section.
// NONORM-LABEL: func.func @update
// NONORM: phase = "optimizer"{{.*}}rdu.ops = ["mul:mul", "sqrt:sqrt", "sub:sub"]
// NONORM-NOT: "rdu.section"
// NONORM-NOT: grad_norm

// The gradient-normalization factor (third of four) applies to grad_norm sections only: at
// 2 PCUs and 2 PMUs they are cut per operator, the optimizer section keeps the full chip.
// TIGHTNORM-LABEL: func.func @update
// TIGHTNORM: phase = "grad_norm"{{.*}}rdu.ops = ["mul:mul"]
// TIGHTNORM: phase = "grad_norm"{{.*}}rdu.ops = ["sqrt:sqrt"]
// TIGHTNORM: phase = "optimizer"{{.*}}rdu.ops = ["sub:sub"]
func.func @update(%p: tensor<4xf32>, %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = arith.mulf %g, %g : tensor<4xf32> loc(#mul)
  %1 = math.sqrt %0 : tensor<4xf32> loc(#sqrt)
  %2 = arith.subf %p, %g : tensor<4xf32> loc(#sub)
  return %1, %2 : tensor<4xf32>, tensor<4xf32>
}
