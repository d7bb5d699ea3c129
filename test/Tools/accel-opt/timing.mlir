// RUN: accel-opt %s --load-pass-plugin=%S/Inputs/tag_funcs.py -cse -tag-funcs --mlir-timing \
// RUN:   2>&1 >/dev/null | FileCheck %s

// Per-pass wall times for upstream and Python passes.
// CHECK: Execution time report
// CHECK: Wall Time
// CHECK-DAG: CSEPass
// CHECK-DAG: tag-funcs
// CHECK: Total
func.func @f() {
  return
}
