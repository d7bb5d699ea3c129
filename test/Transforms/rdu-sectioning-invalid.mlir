// RUN: accel-opt %s --split-input-file --verify-diagnostics -rdu-sectioning='level=o3 scaling=0.002,1,1'
// RUN: not accel-opt %s --split-input-file -rdu-sectioning='level=o2' 2>&1 | FileCheck %s --check-prefix=LEVEL
// RUN: not accel-opt %s --split-input-file -rdu-sectioning='phase=training' 2>&1 | FileCheck %s --check-prefix=PHASE
// RUN: not accel-opt %s --split-input-file -rdu-sectioning='spatial-batches=3' 2>&1 | FileCheck %s --check-prefix=SPATIAL

// A bad option fails the pass with one line naming the valid values (the other options'
// errors: test/unit/test_rdu_target.py::test_pass_option_errors).
// LEVEL: error: level must be one of o0, o1, o3, got 'o2'
// PHASE: error: phase must be one of forward, backward, allreduce, grad_norm, optimizer, got 'training'
// --num-spatial-batches must divide the batch (dimension 0 of every argument).
// SPATIAL: error: num_spatial_batches=3 does not divide the batch size 4 (dim 0 of argument 0 of @too_big)

#add = loc("torch.op:aten.add.Tensor|add||=M":1:0)

// An operator that alone needs more than a section may use (2 PMUs after scaling, it needs
// 3: two inputs and one output buffer) cannot be placed.
// expected-error @+1 {{rdu: operator add:add needs 1 PCUs and 3 PMUs, more than one section may use on sn40l (2 PCUs, 2 PMUs after scaling)}}
func.func @too_big(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32> loc(#add)
  return %0 : tensor<4xf32>
}
