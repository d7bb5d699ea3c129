// Pass pipelines from the user are checked before anything runs (issue 14): one located
// error line each, exit 1, never a signal from an upstream pass.
//
// An unknown pass given a nested pipeline is not taken as an op anchor:
// RUN: not accel-opt %s -cse '-bogus-pass(builtin.module())' 2>&1 | FileCheck %s --check-prefix=ANCHOR
// An unknown flag is never taken as a pass name (mlir-opt's words):
// ANCHOR: accel-opt: Unknown command line argument '-bogus-pass(builtin.module())'.  Try: 'accel-opt --help'
// RUN: not accel-opt %s --pass-pipeline='builtin.module(cse, bogus-pass(builtin.module()))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ANCHOR2
// ANCHOR2: <pass-pipeline>:1:21: error: unknown pass or pipeline 'bogus-pass'
// RUN: not accel-opt %s --pass-pipeline='builtin.module(cse(func.func(cse)))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PASSANCHOR
// PASSANCHOR: <pass-pipeline>:1:16: error: pass 'cse' takes no nested pipeline
//
// An empty pipeline is an error with a hint, not a silent no-op:
// RUN: not accel-opt %s --pass-pipeline='' 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: <pass-pipeline>:1:1: error: empty pass pipeline '': it names no pass (to only parse, verify and print the input, leave out --pass-pipeline)
// RUN: not accel-opt %s --pass-pipeline='builtin.module(func.func())' 2>&1 | FileCheck %s --check-prefix=EMPTY2
// EMPTY2: error: empty pass pipeline 'builtin.module(func.func())'
//
// Option values: typed, ASCII, in range, and never a value known to crash the pass.
// RUN: not accel-opt %s '--pass-pipeline=builtin.module(func.func(affine-loop-tile{tile-sizes=0}))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TILE
// TILE: <pass-pipeline>:1:26: error: option 'tile-sizes' of pass 'affine-loop-tile': 0 is out of range (min 1; the pass crashes on smaller values)
// RUN: not accel-opt %s '-affine-loop-unroll-jam=unroll-jam-factor=0' 2>&1 | FileCheck %s --check-prefix=JAM
// JAM: error: option 'unroll-jam-factor' of pass 'affine-loop-unroll-jam': 0 is out of range (min 1;
// RUN: not accel-opt %s '-canonicalize=max-iterations=99999999999999999999' 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: option 'max-iterations' of pass 'canonicalize': 99999999999999999999 is out of range (int64: from -9223372036854775808 to 9223372036854775807)
// RUN: not accel-opt %s '-accel-reduce-reduce-fusion=block-size=99999999999999999999' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PYRANGE
// PYRANGE: error: option 'block-size' of pass 'accel-reduce-reduce-fusion': 99999999999999999999 is out of range (min -9223372036854775808, max 9223372036854775807)
// LLVM's own complaint (printed to stderr by its option parser) becomes part of the one line:
// RUN: not accel-opt %s '-affine-loop-fusion=mode=bogus' 2>&1 | FileCheck %s --check-prefix=ENUM
// ENUM: error: pass 'affine-loop-fusion': option 'mode': 'bogus' is not one of its values; valid options:{{.*}}
// ENUM-NOT: {{.}}
// (Nesting limits: test/unit/test_robustness_ir.py.)

// A good pipeline still runs (and the fragile affine-loop-tile runs in a child process).
// RUN: accel-opt %s -cse '-affine-loop-tile=tile-sizes=4' | FileCheck %s
// CHECK-LABEL: func.func @f
// CHECK: affine.for %{{.*}} = 0 to 16 step 4
func.func @f(%a: memref<16xf32>, %b: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %v = affine.load %a[%i] : memref<16xf32>
    affine.store %v, %b[%i] : memref<16xf32>
  }
  return
}
