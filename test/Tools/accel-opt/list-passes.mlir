// RUN: accel-opt --list-passes | FileCheck %s
// RUN: accel-opt --list-passes --load-pass-plugin=%S/Inputs/tag_funcs.py \
// RUN:   | FileCheck %s --check-prefix=PLUGIN

// accel passes first, then every upstream pass the bindings register, with options.
// CHECK: Available passes (accel and plugins):
// CHECK: accel-emit-c-interface {{ +}}- Adds `llvm.emit_c_interface` to every func.func definition.
// CHECK-NEXT: --include-declarations=<bool> (default: false)
// CHECK: Upstream MLIR passes (from the bindings):
// CHECK: affine-loop-fusion {{ +}}- Fuse affine loop nests
// CHECK: canonicalize {{ +}}- Canonicalize operations
// CHECK: --max-iterations=<{{[a-z]+}}> (default: 10)
// CHECK: convert-linalg-to-loops {{ +}}- Lower the operations from the linalg dialect into loops
// CHECK: cse {{ +}}- Eliminate common sub-expressions
// CHECK: lower-affine {{ +}}- Lower Affine operations to a combination of Arith and SCF operations
// CHECK: one-shot-bufferize {{ +}}- One-Shot Bufferize
// PLUGIN: tag-funcs {{ +}}- Adds a unit attribute `tag` to every func.func.
// PLUGIN-NEXT: --attr=<str> (default: tag)
