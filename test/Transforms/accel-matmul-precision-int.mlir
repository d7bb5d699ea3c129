// RUN: accel-opt %s --split-input-file -accel-matmul-precision="mode=mixed_int8_int32" | FileCheck %s
// RUN: accel-opt %s --split-input-file -accel-matmul-precision="mode=int32" | FileCheck %s --check-prefix=I32

// An i64 matmul (torch's default int): int8 operands wrap like torch's .to(torch.int8),
// the sums are i32 and the result is sign-extended back to i64.
// CHECK-LABEL: func.func @mm
// CHECK:       linalg.generic {{.*}} ins(%arg0 : tensor<4x8xi64>)
// CHECK:         arith.trunci {{.*}} : i64 to i8
// CHECK:       linalg.generic {{.*}} ins(%arg2 : tensor<4x5xi64>)
// CHECK:         arith.trunci {{.*}} : i64 to i32
// CHECK:       %[[R:.*]] = linalg.matmul ins({{.*}} : tensor<4x8xi8>, tensor<8x5xi8>) outs({{.*}} : tensor<4x5xi32>)
// CHECK:       linalg.generic {{.*}} ins(%[[R]] : tensor<4x5xi32>)
// CHECK:         arith.extsi {{.*}} : i32 to i64
// I32-LABEL: func.func @mm
// I32:       linalg.matmul ins({{.*}} : tensor<4x8xi32>, tensor<8x5xi32>) outs({{.*}} : tensor<4x5xi32>)
func.func @mm(%a: tensor<4x8xi64>, %b: tensor<8x5xi64>, %c: tensor<4x5xi64>) -> tensor<4x5xi64> {
  %m = linalg.matmul ins(%a, %b : tensor<4x8xi64>, tensor<8x5xi64>) outs(%c : tensor<4x5xi64>) -> tensor<4x5xi64>
  return %m : tensor<4x5xi64>
}
