// RUN: accel-run --version | FileCheck %s --check-prefix=VERSION
// RUN: accel-run --help | FileCheck %s --check-prefix=HELP
// RUN: accel-run %s --list-functions | FileCheck %s --check-prefix=LIST
// RUN: accel-run %s --input f32=1 --print-ir-after-lowering --print-llvm-ir 2>&1 >/dev/null | FileCheck %s --check-prefix=IR

// VERSION: accel-run (accel {{[0-9]+\.[0-9]+\.[0-9]+}})
// VERSION: MLIR bindings: torch-mlir
// VERSION: llvmlite 0.50
// HELP: usage: accel-run
// HELP-DAG: --entry NAME
// HELP-DAG: --input SPEC
// HELP-DAG: --opt-level N
// HELP-DAG: SHAPExDTYPE=VALUES
// HELP-DAG: i1 prints true/false
// LIST: @main(f32) -> (f32)
// IR: llvm.func @_mlir_ciface_main
// IR: define {{.*}} @_mlir_ciface_main

func.func @main(%a: f32) -> f32 {
  return %a : f32
}
