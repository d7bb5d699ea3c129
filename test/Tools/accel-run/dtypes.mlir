// Each function doubles its input (x + x); values and wrap-around worked out by hand.
// RUN: accel-run %s --entry f16 --input 3xf16=0.1,65504,1 | FileCheck %s --check-prefix=F16
// RUN: accel-run %s --entry bf16 --input 3xbf16=1.00390625,0.1,3 | FileCheck %s --check-prefix=BF16
// RUN: accel-run %s --entry f32 --input 2xf32=16777216,0.1 | FileCheck %s --check-prefix=F32
// RUN: accel-run %s --entry f64 --input f64=0.1 | FileCheck %s --check-prefix=F64
// RUN: accel-run %s --entry i1 --input 4xi1=true,true,false,false --input 4xi1=1,0,1,0 | FileCheck %s --check-prefix=I1
// RUN: accel-run %s --entry i8 --input 2xi8=100,-128 | FileCheck %s --check-prefix=I8
// RUN: accel-run %s --entry i16 --input i16=30000 | FileCheck %s --check-prefix=I16
// RUN: accel-run %s --entry i32 --input i32=-1073741825 | FileCheck %s --check-prefix=I32
// RUN: accel-run %s --entry i64 --input 2xi64=4611686018427387904,-3 | FileCheck %s --check-prefix=I64
// RUN: accel-run %s --entry ui8 --input 2xui8=200,255 | FileCheck %s --check-prefix=UI8

// f16: 2*f16(0.1) = 0.199951171875 = f16(0.2) prints as 0.2; 2*65504 overflows to inf.
// F16: 3xf16=[0.2, inf, 2.0]
// bf16: 1+2^-8 is a tie and rounds to even (1.0); 2*bf16(0.1) = 0.2001953125 = bf16(0.2).
// BF16: 3xbf16=[2.0, 0.2, 6.0]
// f32: 2^24 doubles exactly; 2*f32(0.1) = f32(0.2) prints as 0.2.
// F32: 2xf32=[33554432.0, 0.2]
// F64: f64=0.2
// i1: arith.xori
// I1: 4xi1=[false, true, true, false]
// i8: 100+100 = 200 - 256 = -56; -128-128 = -256 wraps to 0.
// I8: 2xi8=[-56, 0]
// I16: i16=-5536
// I32: i32=2147483646
// I64: 2xi64=[-9223372036854775808, -6]
// ui8 is passed through unchanged (arith has no unsigned-typed add).
// UI8: 2xui8=[200, 255]

#map = affine_map<(i) -> (i)>
func.func @f16(%a: tensor<3xf16>) -> tensor<3xf16> {
  %e = tensor.empty() : tensor<3xf16>
  %r = linalg.add ins(%a, %a : tensor<3xf16>, tensor<3xf16>) outs(%e : tensor<3xf16>) -> tensor<3xf16>
  return %r : tensor<3xf16>
}
func.func @bf16(%a: tensor<3xbf16>) -> tensor<3xbf16> {
  %e = tensor.empty() : tensor<3xbf16>
  %r = linalg.add ins(%a, %a : tensor<3xbf16>, tensor<3xbf16>) outs(%e : tensor<3xbf16>) -> tensor<3xbf16>
  return %r : tensor<3xbf16>
}
func.func @f32(%a: tensor<2xf32>) -> tensor<2xf32> {
  %e = tensor.empty() : tensor<2xf32>
  %r = linalg.add ins(%a, %a : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
func.func @f64(%a: f64) -> f64 {
  %r = arith.addf %a, %a : f64
  return %r : f64
}
func.func @i1(%a: tensor<4xi1>, %b: tensor<4xi1>) -> tensor<4xi1> {
  %e = tensor.empty() : tensor<4xi1>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xi1>, tensor<4xi1>) outs(%e : tensor<4xi1>) {
    ^bb0(%x: i1, %y: i1, %o: i1):
      %z = arith.xori %x, %y : i1
      linalg.yield %z : i1
  } -> tensor<4xi1>
  return %r : tensor<4xi1>
}
func.func @i8(%a: tensor<2xi8>) -> tensor<2xi8> {
  %e = tensor.empty() : tensor<2xi8>
  %r = linalg.add ins(%a, %a : tensor<2xi8>, tensor<2xi8>) outs(%e : tensor<2xi8>) -> tensor<2xi8>
  return %r : tensor<2xi8>
}
func.func @i16(%a: i16) -> i16 {
  %r = arith.addi %a, %a : i16
  return %r : i16
}
func.func @i32(%a: i32) -> i32 {
  %r = arith.addi %a, %a : i32
  return %r : i32
}
func.func @i64(%a: tensor<2xi64>) -> tensor<2xi64> {
  %e = tensor.empty() : tensor<2xi64>
  %r = linalg.add ins(%a, %a : tensor<2xi64>, tensor<2xi64>) outs(%e : tensor<2xi64>) -> tensor<2xi64>
  return %r : tensor<2xi64>
}
func.func @ui8(%a: tensor<2xui8>) -> tensor<2xui8> {
  return %a : tensor<2xui8>
}
