// Without device=sm_*, target nvgpu means this machine's GPU: without one, a one-line error
// that says how to cross-compile.
// RUN: not accel-compile %s --target nvgpu --output-folder %t 2>&1 | FileCheck %s
// REQUIRES: no-nvidia-gpu

// CHECK: accel-compile: error: target nvgpu: no NVIDIA driver (libcuda.so.1) on this machine; to cross-compile without a GPU pass device=sm_80, sm_90 or sm_90a
// CHECK-NOT: Traceback
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
