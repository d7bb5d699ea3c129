// RUN: accel-opt %s -cse -canonicalize | FileCheck %s
// RUN: accel-opt %s --load-pass-plugin=%S/Inputs/tag_funcs.py -cse -tag-funcs{attr=short} \
// RUN:   | FileCheck %s --check-prefix=PLUGIN
// RUN: accel-opt %s --load-pass-plugin=%S/Inputs/tag_funcs.py '--count-ops=scale=3 verbose' \
// RUN:   | FileCheck %s --check-prefix=EQ
// RUN: accel-opt %s --load-pass-plugin=%S/Inputs/tag_funcs.py -cse --dump-pass-pipeline \
// RUN:   -count-ops 2>&1 >/dev/null | FileCheck %s --check-prefix=DUMP

// Short-form flags run in the order given, upstream and plugin passes alike.
// CHECK-LABEL: func.func @f
// CHECK: %[[A:.*]] = arith.addf %arg0, %arg0
// CHECK-NEXT: %[[B:.*]] = arith.addf %[[A]], %[[A]]
// CHECK-NEXT: return %[[B]]
// PLUGIN-LABEL: func.func @f
// PLUGIN-SAME: attributes {short}
// EQ: num_ops = 12
// DUMP: Pass Manager with 2 passes:
// DUMP-NEXT: builtin.module(
// DUMP-NEXT:   cse,
// DUMP-NEXT:   count-ops{scale=1 verbose=false}
// DUMP-NEXT: )
func.func @f(%a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  %1 = arith.addf %a, %a : f32
  %2 = arith.addf %0, %1 : f32
  return %2 : f32
}
