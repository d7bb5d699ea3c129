// Arrays from .npy files keep their dtype; results print in the --input form.
// RUN: %python -c "import numpy as np; np.save('%t.npy', np.arange(6, dtype=np.float64).reshape(2, 3))"
// RUN: accel-run %s --input %t.npy | FileCheck %s

// Transpose of [[0, 1, 2], [3, 4, 5]].
// CHECK: 3x2xf64=[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]

func.func @main(%a: tensor<2x3xf64>) -> tensor<3x2xf64> {
  %e = tensor.empty() : tensor<3x2xf64>
  %r = linalg.transpose ins(%a : tensor<2x3xf64>) outs(%e : tensor<3x2xf64>) permutation = [1, 0]
  return %r : tensor<3x2xf64>
}
