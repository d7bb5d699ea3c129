// RUN: accel-opt %s --split-input-file --load-pass-plugin=%S/Inputs/tag_funcs.py \
// RUN:   --pass-pipeline='builtin.module(func.func(canonicalize,cse),tag-funcs{attr=x},lower-affine)' \
// RUN:   | FileCheck %s
// RUN: accel-opt %s --split-input-file --load-pass-plugin=%S/Inputs/tag_funcs.py \
// RUN:   --pass-pipeline='builtin.module(func.func(cse),count-ops{scale=2})' | FileCheck %s --check-prefix=NEST

// A mixed upstream/Python pipeline: CSE merges the adds, the plugin tags, lower-affine lowers.
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: attributes {x}
// CHECK: %[[A:.*]] = arith.addf %arg0, %arg0
// CHECK-NEXT: arith.addf %[[A]], %[[A]]
// CHECK-NOT: affine.apply
// NEST-LABEL: func.func @mixed
// NEST-SAME: num_ops = 8
func.func @mixed(%a: f32, %i: index) -> (f32, index) {
  %0 = arith.addf %a, %a : f32
  %1 = arith.addf %a, %a : f32
  %2 = arith.addf %0, %1 : f32
  %3 = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
  return %2, %3 : f32, index
}

// -----

// A function pass nested under func.func visits every function.
// CHECK-LABEL: func.func @second
// CHECK-SAME: attributes {x}
// NEST-LABEL: func.func @second
// NEST-SAME: num_ops = 2
func.func @second() {
  return
}
