// RUN: accel-opt %s --load-pass-plugin=%S/Inputs/tag_funcs.py -cse -tag-funcs \
// RUN:   --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER
// RUN: accel-opt %s -cse --mlir-print-ir-before-all 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE
// RUN: not accel-opt %s --load-pass-plugin=%S/Inputs/tag_funcs.py -cse -reject-addf \
// RUN:   --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=FAILURE
// RUN: accel-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: accel-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUGINFO

// IR dumps name upstream and Python passes alike, in pipeline order.
// AFTER: IR Dump After CSEPass
// AFTER: IR Dump After tag-funcs
// AFTER: func.func @f({{.*}}) -> f32 attributes {tag}
// BEFORE: IR Dump Before CSEPass
// BEFORE-NEXT: module {
// BEFORE: arith.addf
// BEFORE: arith.addf
// As in mlir-opt, the failed pass's error comes before its dump.
// FAILURE: error: arith.addf is not allowed here
// FAILURE: IR Dump After reject-addf Failed: reject-addf
// GENERIC: "func.func"() <{function_type = (f32) -> f32, sym_name = "f"}>
// GENERIC: "arith.addf"
// DEBUGINFO: loc(
func.func @f(%a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  %1 = arith.addf %a, %a : f32
  %2 = arith.addf %0, %1 : f32
  return %2 : f32
}
