// accel-compile on an .mlir file: the artifact folder, option.json, compile.log, and a
// rebuild from option.json that gives the same option.json and LLVM IR.
// RUN: rm -rf %t && mkdir -p %t
// RUN: accel-compile %s --pef-name neg --output-folder %t/a --entry neg -o1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=WROTE
// RUN: ls %t/a %t/a/ir | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --input-file %t/a/option.json --check-prefix=JSON
// RUN: FileCheck %s --input-file %t/a/compile.log --check-prefix=LOG
// RUN: accel-compile %s --option-json %t/a/option.json --output-folder %t/b 2>&1 \
// RUN:   | FileCheck %s --check-prefix=WROTE-B
// RUN: diff %t/a/option.json %t/b/option.json
// RUN: diff %t/a/module.ll %t/b/module.ll
// RUN: cd %t && accel-compile %s -v 2>&1 | FileCheck %s --check-prefix=VERBOSE
// RUN: ls %t/out/artifact | FileCheck %s --check-prefix=DEFAULT

// WROTE: accel-compile: wrote {{.*}}a (entry @neg)
// WROTE-B: accel-compile: wrote {{.*}}b (entry @neg)

// FILES: compile.log
// FILES: input.mlir
// FILES: ir
// FILES: manifest.json
// FILES: model.mlir
// FILES: module.ll
// FILES: neg.o
// FILES: option.json
// FILES: 01-fuse.mlir
// FILES-NEXT: 02-bufferize.mlir
// FILES-NEXT: 03-llvm-dialect.mlir
// FILES-NEXT: 04-llvm-ir.ll

// JSON:      "pef_name": "neg",
// JSON-NEXT: "entry": "neg",
// JSON-NEXT: "batch_size": null,
// JSON-NEXT: "inference": false,
// JSON-NEXT: "options": {
// JSON-NEXT:   "target": "cpu",
// JSON-NEXT:   "preset": "o1",
// JSON-NEXT:   "opt_level": 1,
// JSON-NEXT:   "device": "host",
// JSON:        "cache": false,
// JSON-NEXT:   "aot": false,
// JSON:        "disable_affine_fusion": false,

// LOG: versions: accel {{.*}} llvmlite
// LOG: options: target="cpu" preset="o1" opt_level=1 device="host" {{.*}} cache=false
// LOG: phase fuse {{[0-9.]+}}s -> ir/01-fuse.mlir
// LOG: phase bufferize {{[0-9.]+}}s -> ir/02-bufferize.mlir
// LOG: phase llvm-dialect {{[0-9.]+}}s -> ir/03-llvm-dialect.mlir
// LOG: phase llvm-ir {{[0-9.]+}}s -> ir/04-llvm-ir.ll
// LOG: phase codegen {{[0-9.]+}}s
// LOG: cache hit: no
// LOG: object: neg.o
// LOG: total {{[0-9.]+}}s

// VERBOSE: [accel-compile] compiling {{.*}}artifact.mlir -> out/artifact (target="cpu" preset="o3" opt_level=3 {{.*}} cache=false {{.*}})
// VERBOSE: [accel-compile] bufferize {{[0-9.]+}}s
// VERBOSE: [accel-compile] codegen {{[0-9.]+}}s
// VERBOSE: accel-compile: wrote out/artifact (entry @add)
// DEFAULT: artifact.o

func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>)
      -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func @neg(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.negf ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
