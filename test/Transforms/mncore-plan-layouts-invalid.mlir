// RUN: not accel-opt %s '-mncore-plan-layouts=planner=greedy' 2>&1 | FileCheck %s

// An unknown planner is refused, naming the valid ones.
// CHECK: error: unknown planner 'greedy' (choose from lpz, bidi, legacy)
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
