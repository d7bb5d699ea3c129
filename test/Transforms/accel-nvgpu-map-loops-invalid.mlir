// RUN: accel-opt %s --split-input-file --verify-diagnostics -accel-nvgpu-map-loops="threads=100"

// A block must be whole warps: 100 threads is refused.
// expected-error @+1 {{threads must be a multiple of 32 from 32 to 1024, got 100}}
func.func @f() {
  return
}
