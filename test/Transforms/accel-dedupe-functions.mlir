// RUN: accel-opt %s --split-input-file --pass-pipeline='builtin.module(accel-dedupe-functions)' | FileCheck %s

// Two private functions with the same body (a repeated layer's part): the second goes and
// its calls and its address (a parallel loop's entry) name the first. The public entry
// point stays, however it looks.
// CHECK-LABEL: func.func @main
// CHECK:         call @layer0(%arg0)
// CHECK-NEXT:    call @layer0(%arg1)
// CHECK-NEXT:    constant @layer0
// CHECK:       func.func private @layer0(
// CHECK-NOT:   func.func private @layer1(
func.func @main(%a: memref<8xf32>, %b: memref<8xf32>) -> ((memref<8xf32>) -> ()) {
  call @layer0(%a) : (memref<8xf32>) -> ()
  call @layer1(%b) : (memref<8xf32>) -> ()
  %f = func.constant @layer1 : (memref<8xf32>) -> ()
  return %f : (memref<8xf32>) -> ()
}
func.func private @layer0(%a: memref<8xf32>) attributes {llvm.no_inline} {
  %c2 = arith.constant 2.0 : f32
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %c2 : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}
func.func private @layer1(%a: memref<8xf32>) attributes {llvm.no_inline} {
  %c2 = arith.constant 2.0 : f32
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %c2 : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// Callers become equal once their callees are merged: both pairs go in turn.
// CHECK-LABEL: func.func @chain
// CHECK:         call @outer0()
// CHECK-NEXT:    call @outer0()
// CHECK:       func.func private @outer0()
// CHECK-NEXT:    call @inner0()
// CHECK:       func.func private @inner0()
// CHECK-NOT:   func.func private @outer1
// CHECK-NOT:   func.func private @inner1
func.func @chain() {
  call @outer0() : () -> ()
  call @outer1() : () -> ()
  return
}
func.func private @outer0() {
  call @inner0() : () -> ()
  return
}
func.func private @outer1() {
  call @inner1() : () -> ()
  return
}
func.func private @inner0() {
  return
}
func.func private @inner1() {
  return
}

// -----

// Negative: a different constant (another layer's scale), a different attribute, a public
// function and a declaration all stay.
// CHECK-LABEL: func.func private @scale2
// CHECK:       func.func private @scale3
// CHECK:       func.func private @inlinable
// CHECK:       func.func @public_twin
// CHECK:       func.func private @decl0
// CHECK:       func.func private @decl1
func.func private @scale2(%a: memref<8xf32>) attributes {llvm.no_inline} {
  %c = arith.constant 2.0 : f32
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %c : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}
func.func private @scale3(%a: memref<8xf32>) attributes {llvm.no_inline} {
  %c = arith.constant 3.0 : f32
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %c : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}
func.func private @inlinable(%a: memref<8xf32>) {
  %c = arith.constant 3.0 : f32
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %c : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}
func.func @public_twin(%a: memref<8xf32>) attributes {llvm.no_inline} {
  %c = arith.constant 2.0 : f32
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %c : f32
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}
func.func private @decl0(memref<8xf32>)
func.func private @decl1(memref<8xf32>)
