// RUN: accel-opt --version | FileCheck %s --check-prefix=VERSION
// RUN: accel-opt --help | FileCheck %s --check-prefix=HELP
// RUN: accel-opt -help | FileCheck %s --check-prefix=HELP

// VERSION: accel-opt (accel {{[0-9]+\.[0-9]+\.[0-9]+}})
// VERSION: MLIR bindings: torch-mlir 20261001
// HELP: usage: accel-opt
// HELP-DAG: --pass-pipeline PIPELINE
// HELP-DAG: --split-input-file
// HELP-DAG: --verify-diagnostics
// HELP-DAG: --load-pass-plugin FILE.py
// HELP-DAG: --list-passes
// HELP-DAG: --mlir-timing
// HELP-DAG: --allow-unregistered-dialect
