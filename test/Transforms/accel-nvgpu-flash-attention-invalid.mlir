// RUN: not accel-opt %s -accel-nvgpu-flash-attention="block-q=48" 2>&1 | FileCheck %s

// Blocks are whole warps: 48 query rows per block is refused.
// CHECK: block-q must be a multiple of 32 from 32 to 1024 and block-k from 1 to 1024, got 48 and 32
func.func @f() {
  return
}
