// RUN: accel-opt --version | FileCheck %s --check-prefix=VERSION
// RUN: accel-opt --help | FileCheck %s --check-prefix=HELP
// RUN: accel-opt -help | FileCheck %s --check-prefix=HELP

// VERSION: accel-opt (accel {{[0-9]+\.[0-9]+\.[0-9]+}})
// VERSION: MLIR bindings: torch-mlir 20261001
// HELP: USAGE: accel-opt [options] <input file>
// HELP-DAG: --pass-pipeline=<string>
// HELP-DAG: --split-input-file
// HELP-DAG: --verify-diagnostics
// HELP-DAG: --load-pass-plugin=<string>
// HELP-DAG: --list-passes
// HELP-DAG: --mlir-timing
// HELP-DAG: --allow-unregistered-dialect
