// Every user error is one diagnostic line and exit code 1, never a traceback.
// RUN: not accel-run %s --input 2xf32=1,2 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not accel-run %s --input 3xf32=1,2,3 --input 2xf32=1,2 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not accel-run %s --input 2x1xf32=1,2 --input 2xf32=1,2 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not accel-run %s --input 2xi32=1,2 --input 2xf32=1,2 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not accel-run %s --input 2xf32=1,x 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not accel-run %s --input 2xf32=1,2,3 2>&1 | FileCheck %s --check-prefix=NVALUES
// RUN: not accel-run %s --input 2xq7=1 2>&1 | FileCheck %s --check-prefix=ELTYPE
// RUN: not accel-run %s --input bogus 2>&1 | FileCheck %s --check-prefix=SPEC
// RUN: not accel-run %s --input i8=300 --input 2xf32=0 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not accel-run %s --input 2xf16=1,70000 --input 2xf32=0 2>&1 | FileCheck %s --check-prefix=F16MAX
// RUN: not accel-run %s --input 2xbf16=1,1e39 --input 2xf32=0 2>&1 | FileCheck %s --check-prefix=BF16MAX
// RUN: not accel-run %s --input 0x9223372036854775807xf32= 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not accel-run %s --entry nope 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not accel-run %s --entry vec --input 4xf32=0 2>&1 | FileCheck %s --check-prefix=NOCALL
// RUN: not accel-run %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not accel-run %S/Inputs/parse-error.mlir --input f32=1 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not accel-run %S/Inputs/not-lowered.mlir --input 2x4xf32=0 2>&1 | FileCheck %s --check-prefix=LOWER

// COUNT: accel-run: error: @main takes 2 arguments (memref<2xf32>, memref<2xf32>), got 1
// COUNT-NOT: Traceback
// SHAPE: accel-run: error: @main argument %arg0: expected memref<2xf32> (a float32 array of shape (2,)), got shape (3,) (dimension 0 is 3, expected 2)
// RANK: accel-run: error: @main argument %arg0: expected memref<2xf32> (a float32 array of shape (2,)), got rank 2 (shape (2, 1))
// DTYPE: accel-run: error: @main argument %arg0: expected memref<2xf32> (a float32 array of shape (2,)), got dtype int32
// VALUE: accel-run: error: --input '2xf32=1,x': 'x' is not a valid f32 value
// NVALUES: accel-run: error: --input '2xf32=1,2,3': expected 2 values for shape 2, got 3
// ELTYPE: accel-run: error: --input '2xq7=1': unknown element type 'q7'
// SPEC: accel-run: error: --input 'bogus': expected SHAPExDTYPE=VALUES, DTYPE=VALUE or a .npy file
// RANGE: accel-run: error: --input 'i8=300': a value does not fit i8
// A finite value past the dtype's range is an error, not a RuntimeWarning and a silent inf.
// Fuzz case 9054: numpy refused the shape with a ValueError ("internal error").
// HUGE: accel-run: error: --input '0x9223372036854775807xf32=': shape 0x9223372036854775807 is too large
// F16MAX: accel-run: error: --input '2xf16=1,70000': 70000 is out of range for f16 (largest finite value: 65504.0)
// F16MAX-NOT: Warning
// BF16MAX: accel-run: error: --input '2xbf16=1,1e39': 1e39 is out of range for bf16 (largest finite value: 3.3895314e+38)
// ENTRY: accel-run: error: no public function @nope in {{.*}}errors.mlir (available: @main, @vec)
// NOCALL: accel-run: error: @vec cannot be called from Python: type vector<4xf32> has no Python mapping
// MISSING: {{.*}}does-not-exist.mlir: error: could not open input file: no such file
// PARSE: {{.*}}parse-error.mlir:2:8: error: {{.*}}foo.bar
// PARSE-NOT: Traceback
// LOWER: {{.*}}not-lowered.mlir:3:8: error: 'linalg.softmax' op was not lowered to the LLVM dialect by the CPU pipeline

func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}

func.func @vec(%v: vector<4xf32>) -> vector<4xf32> {
  return %v : vector<4xf32>
}
