// Every user-facing error of accel-opt: one located line, exit 1, never a traceback.
// RUN: not accel-opt %s.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: cannot open input file '{{.*}}invalid.mlir.missing': No such file or directory
// RUN: not accel-opt %s --allow-unregistered-dialect -no-such-pass 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: accel-opt: Unknown command line argument '-no-such-pass'.  Try: 'accel-opt --help'
// RUN: not accel-opt %s --allow-unregistered-dialect -canonicalise 2>&1 | FileCheck %s --check-prefix=TYPO
// TYPO: accel-opt: Unknown command line argument '-canonicalise'.  Try: 'accel-opt --help'
// TYPO-NEXT: accel-opt: Did you mean '--canonicalize'?
// RUN: not accel-opt %s --allow-unregistered-dialect --pass-pipeline='builtin.module(func.func(cse)' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: <pass-pipeline>:1:30: error: encountered unbalanced parentheses while parsing pipeline
// RUN: not accel-opt %s --allow-unregistered-dialect '--canonicalize=max-iteration=3' 2>&1 | FileCheck %s --check-prefix=UPOPT
// UPOPT: error: pass 'canonicalize': no such option max-iteration; valid options: {{.*}}max-iterations
// RUN: not accel-opt %s --allow-unregistered-dialect --load-pass-plugin=%S/Inputs/tag_funcs.py '-count-ops{scale=abc}' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADVAL
// BADVAL: error: pass 'count-ops': bad value 'abc' for option 'scale' (expected int); valid options: scale: int = 1; verbose: bool = false
// RUN: not accel-opt %s --allow-unregistered-dialect --load-pass-plugin=%S/Inputs/tag_funcs.py '-tag-funcs{atr=x}' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: pass 'tag-funcs': unknown option 'atr' (did you mean 'attr'?); valid options: attr: str = tag
// RUN: not accel-opt %s --allow-unregistered-dialect --load-pass-plugin=%S/Inputs/tag_funcs.py \
// RUN:   --pass-pipeline='builtin.module(func.func(tag-funcs))' 2>&1 | FileCheck %s --check-prefix=NEST
// NEST: <pass-pipeline>:1:26: error: pass 'tag-funcs' runs on 'builtin.module' and cannot be nested under 'func.func'
// RUN: not accel-opt %s --allow-unregistered-dialect --pass-pipeline='builtin.module(cse)' -cse 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: <unknown>:0: error: '-pass-pipeline' option can't be used with individual pass options
// RUN: not accel-opt %s --allow-unregistered-dialect --load-pass-plugin=%S/Inputs/nope.py 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// NOPLUGIN: nope.py: error: cannot load pass plugin: no such file
// RUN: not accel-opt %s --allow-unregistered-dialect --load-pass-plugin=%S/Inputs/syntax_error.py 2>&1 | FileCheck %s --check-prefix=PLUGINSYNTAX
// PLUGINSYNTAX: syntax_error.py:1:12: error: invalid pass plugin: invalid syntax
// RUN: not accel-opt %s --allow-unregistered-dialect --load-pass-plugin=%S/Inputs/import_error.py 2>&1 | FileCheck %s --check-prefix=PLUGINRAISE
// PLUGINRAISE: import_error.py:2:1: error: loading pass plugin failed: ImportError: needs a missing dependency
// RUN: not accel-opt %s --allow-unregistered-dialect --load-pass-plugin=%S/Inputs/tag_funcs.py -crash-in-python 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CRASH
// CRASH: invalid.mlir:1:1: error: pass 'crash-in-python' raised RuntimeError: plugin bug
// CRASH: tag_funcs.py:{{[0-9]+}}:1: note: raised here
// CRASH-NOT: Traceback
// RUN: not accel-opt %s --allow-unregistered-dialect -one-shot-bufferize 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PASSFAIL
// PASSFAIL: invalid.mlir:[[# @LINE + 8]]:8: error: op was not bufferized
// PASSFAIL: note: input IR of the failed pipeline: {{.*}}accel-repro-{{.*}}.mlir
// PASSFAIL: note: reproduce with: accel-opt {{.*}}accel-repro-{{.*}}.mlir --allow-unregistered-dialect --pass-pipeline='builtin.module(one-shot-bufferize{{.*}})'
// RUN: not accel-opt %s --allow-unregistered-dialect -o %t.dir/does/not/exist 2>&1 | FileCheck %s --check-prefix=OUT
// OUT: cannot open output file '{{.*}}does/not/exist': No such file or directory
// RUN: not accel-opt %s --allow-unregistered-dialect --no-such-driver-flag=3 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: accel-opt: Unknown command line argument '--no-such-driver-flag=3'.  Try: 'accel-opt --help'
func.func @f(%t: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "test.op"(%t) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
