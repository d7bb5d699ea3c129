// accel-compile --target nvgpu cross-compiles without a GPU: one .ptx per kernel and the
// kernel sequence (launch sizes, argument order) in manifest.json; ptxas checks the PTX.
// RUN: rm -rf %t && mkdir -p %t
// RUN: accel-compile %s --target nvgpu --option device=sm_90 --option verify_ptx=true \
// RUN:   --output-folder %t/a --entry f 2>&1 | FileCheck %s --check-prefix=WROTE
// RUN: ls %t/a | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --input-file %t/a/f_kernel.ptx --check-prefix=PTX
// RUN: FileCheck %s --input-file %t/a/manifest.json --check-prefix=MANIFEST
// REQUIRES: ptxas

// WROTE: accel-compile: wrote {{.*}}a (entry @f)

// FILES: f_kernel.ptx
// FILES: manifest.json

// exp comes from libdevice, inlined: no call is left.
// PTX: .target sm_90
// PTX: .visible .entry f_kernel(
// PTX-NOT: call
// PTX: ex2.approx

// MANIFEST: "target": "nvgpu"
// MANIFEST: "arch": "sm_90"
// MANIFEST: "f_kernel.ptx":
// MANIFEST: "op": "launch"
// MANIFEST-NEXT: "kernel": "f_kernel.f_kernel"
// MANIFEST-NEXT: "grid": [
// MANIFEST-NEXT: 4,
// MANIFEST: "block": [
// MANIFEST-NEXT: 256,
// MANIFEST: "args": [
// MANIFEST-NEXT: 0,
// MANIFEST-NEXT: 1

func.func @f(%a: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %e = tensor.empty() : tensor<8x128xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x128xf32>) outs(%e : tensor<8x128xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = math.exp %x : f32
      linalg.yield %y : f32
  } -> tensor<8x128xf32>
  return %r : tensor<8x128xf32>
}
