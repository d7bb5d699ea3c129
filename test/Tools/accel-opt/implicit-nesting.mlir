// RUN: accel-opt %s -affine-scalrep -cse --dump-pass-pipeline 2>&1 | FileCheck %s
// RUN: accel-opt %s --pass-pipeline='builtin.module(func.func(affine-scalrep),cse)' | FileCheck %s --check-prefix=NESTED
// RUN: not accel-opt %s --pass-pipeline='builtin.module(affine-scalrep)' 2>&1 | FileCheck %s --check-prefix=ERR

// Short form nests a func.func-restricted upstream pass under func.func, like mlir-opt.
// CHECK: Pass Manager with 2 passes:
// CHECK-NEXT: builtin.module(
// CHECK-NEXT:   func.func(
// CHECK-NEXT:     affine-scalrep
// CHECK-NEXT:   ),
// CHECK-NEXT:   cse
// CHECK-NEXT: )
// CHECK-LABEL: func.func @f
// NESTED-LABEL: func.func @f
// A textual pipeline must nest it explicitly (negative case: no implicit nesting there).
// ERR: <pass-pipeline>:1:16: error: pass 'affine-scalrep' runs on 'func.func', not on 'builtin.module': nest it as 'func.func(affine-scalrep)'
// ERR-NOT: valid options
func.func @f() {
  return
}

// A module pipeline nested under func.func used to abort the process (LLVM ERROR).
// RUN: not accel-opt %s --pass-pipeline='builtin.module(func.func(sparsifier))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PIPE
// PIPE: <pass-pipeline>:1:26: error: pass 'sparsifier' runs on 'builtin.module', not on 'func.func'
// PIPE-NOT: LLVM ERROR
