// Every user error of accel-compile: one line, exit 1, never a traceback, no folder written.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not accel-compile %s -o %t/x 2>&1 | FileCheck %s --check-prefix=DASHO
// RUN: not accel-compile %s -o2 2>&1 | FileCheck %s --check-prefix=O2
// RUN: not accel-compile %s --target rdu --option sectioning=o2 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not accel-compile %s -b 8 2>&1 | FileCheck %s --check-prefix=BATCH
// RUN: not accel-compile %s --entry nope --output-folder %t/x 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not accel-compile %s --option-json %t/missing.json 2>&1 | FileCheck %s --check-prefix=NOJSON
// RUN: not accel-compile %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not ls %t/x

// DASHO: accel-compile: error: -o DIR is not an option: use --output-folder DIR (-o0, -o1 and -o3 set the optimisation level)
// DASHO-NOT: Traceback
// O2: accel-compile: error: no optimisation level -o2: use -o0, -o1, -o3 or --opt-level N (0-3)
// TARGET: accel-compile: error: option 'sectioning' must be one of o0, o1, o3, got 'o2'
// BATCH: accel-compile: error: -b/--batch-size applies to .py models only (an .mlir file has fixed shapes)
// ENTRY: errors.mlir: error: no public function @nope; available: @f
// NOJSON: accel-compile: error: no such file: '{{.*}}missing.json'
// MISSING: accel-compile: error: no such file: '{{.*}}does-not-exist.mlir'

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
