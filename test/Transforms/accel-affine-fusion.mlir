// RUN: accel-opt %s --split-input-file -accel-affine-fusion | FileCheck %s
// RUN: accel-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(affine-loop-tile{tile-size=8}),accel-affine-fusion)' \
// RUN:   | FileCheck %s --check-prefix=TILED

// CHECK-LABEL: func.func @mlp_layer
// CHECK:         %[[ACC:.*]] = memref.alloca() : memref<1x1xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         affine.for
// CHECK-NEXT:      affine.for
// CHECK-NEXT:        affine.store %{{.*}}, %[[ACC]]
// CHECK-NEXT:        affine.for
// CHECK:             arith.mulf
// CHECK:           arith.maximumf
// CHECK-NEXT:      affine.store %{{.*}}, %[[OUT]]
// CHECK-NOT:     affine.for
// CHECK:         return %[[OUT]]
// An MLP layer: the fill, the matmul and its bias + ReLU epilogue become one nest, and the
// product buffer shrinks to one element on the stack.
func.func @mlp_layer(%x: memref<4x16xf32>, %w: memref<16x8xf32>, %b: memref<8xf32>) -> memref<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      affine.store %zero, %c[%i, %j] : memref<4x8xf32>
    }
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 16 {
        %a = affine.load %x[%i, %k] : memref<4x16xf32>
        %v = affine.load %w[%k, %j] : memref<16x8xf32>
        %acc = affine.load %c[%i, %j] : memref<4x8xf32>
        %p = arith.mulf %a, %v : f32
        %s = arith.addf %acc, %p : f32
        affine.store %s, %c[%i, %j] : memref<4x8xf32>
      }
    }
  }
  %out = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %c[%i, %j] : memref<4x8xf32>
      %bj = affine.load %b[%j] : memref<8xf32>
      %s = arith.addf %v, %bj : f32
      %r = arith.maximumf %s, %zero : f32
      affine.store %r, %out[%i, %j] : memref<4x8xf32>
    }
  }
  return %out : memref<4x8xf32>
}


// -----

// CHECK-LABEL: func.func @through_a_view
// CHECK-NOT:     memref.expand_shape
// CHECK:         affine.for
// CHECK-NOT:     affine.for
// CHECK:         return
// Accesses through a static expand_shape are rewritten onto the base buffer, then fused.
func.func @through_a_view(%x: memref<8xf32>) -> memref<8xf32> {
  %t = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  %v = memref.expand_shape %t [[0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 4 {
      %a = affine.load %x[%i * 4 + %j] : memref<8xf32>
      %d = arith.addf %a, %a : f32
      affine.store %d, %v[%i, %j] : memref<2x4xf32>
    }
  }
  %out = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  affine.for %i = 0 to 8 {
    %a = affine.load %t[%i] : memref<8xf32>
    %m = arith.mulf %a, %a : f32
    affine.store %m, %out[%i] : memref<8xf32>
  }
  return %out : memref<8xf32>
}


// -----

// CHECK-LABEL: func.func @reused_buffer
// CHECK-COUNT-3: affine.for %{{.*}} = 0 to 8 {
// Negative: a buffer one nest only reads and a later nest overwrites (reuse) hides an
// anti-dependence from MLIR's fusion, so the function is left unfused.
func.func @reused_buffer(%x: memref<8xf32>) -> memref<8xf32> {
  %t = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  %out = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  affine.for %i = 0 to 8 {
    %a = affine.load %x[%i] : memref<8xf32>
    affine.store %a, %t[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %a = affine.load %t[%i] : memref<8xf32>
    %b = affine.load %t[7 - %i] : memref<8xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %out[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %a = affine.load %out[%i] : memref<8xf32>
    affine.store %a, %t[%i] : memref<8xf32>
  }
  return %out : memref<8xf32>
}


// -----

// CHECK-LABEL: func.func @dynamic_view
// CHECK:         memref.subview
// CHECK-COUNT-2: affine.for
// Negative: a dynamically shaped view cannot be rewritten, so nothing is fused.
func.func @dynamic_view(%x: memref<?xf32>, %n: index) -> memref<?xf32> {
  %t = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  %v = memref.subview %t[0] [%n] [1] : memref<?xf32> to memref<?xf32, strided<[1]>>
  affine.for %i = 0 to %n {
    %a = affine.load %x[%i] : memref<?xf32>
    affine.store %a, %v[%i] : memref<?xf32, strided<[1]>>
  }
  %out = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  affine.for %i = 0 to %n {
    %a = affine.load %t[%i] : memref<?xf32>
    affine.store %a, %out[%i] : memref<?xf32>
  }
  return %out : memref<?xf32>
}


// -----

// CHECK-LABEL: func.func @live_loop_results
// CHECK:         affine.for {{.*}} iter_args
// TILED-LABEL:   func.func @live_loop_results
// TILED:         arith.addi
// TILED:         return
// Negative (the crash shape, llvm-project's test for issue 212046): loops whose iter_args
// results are used get producer-consumer fusion only; after tiling, MLIR's sibling fusion
// of them segfaults.
func.func @live_loop_results() -> i64 {
  %a = memref.alloc() : memref<4xi64>
  %b = memref.alloc() : memref<4xi64>
  %c = memref.alloc() : memref<4xi64>
  %c0 = arith.constant 0 : i64
  %c3 = arith.constant 3 : i64
  %c7 = arith.constant 7 : i64
  affine.for %i = 0 to 4 {
    affine.store %c3, %a[%i] : memref<4xi64>
  }
  affine.for %i = 0 to 4 {
    affine.store %c0, %b[%i] : memref<4xi64>
    affine.store %c0, %c[%i] : memref<4xi64>
  }
  affine.for %i = 0 to 4 {
    %v = affine.load %a[%i] : memref<4xi64>
    %p = arith.muli %v, %c3 : i64
    affine.store %p, %b[%i] : memref<4xi64>
  }
  affine.for %i = 0 to 4 {
    %v = affine.load %b[%i] : memref<4xi64>
    %q = arith.addi %v, %c7 : i64
    affine.store %q, %c[%i] : memref<4xi64>
  }
  %sum0 = affine.for %i = 0 to 4 iter_args(%sum = %c0) -> i64 {
    %v = affine.load %b[%i] : memref<4xi64>
    %next = arith.addi %sum, %v : i64
    affine.yield %next : i64
  }
  %sum1 = affine.for %i = 0 to 4 iter_args(%sum = %c0) -> i64 {
    %v = affine.load %c[%i] : memref<4xi64>
    %next = arith.addi %sum, %v : i64
    affine.yield %next : i64
  }
  %sum = arith.addi %sum0, %sum1 : i64
  return %sum : i64
}

// -----

// A reduction fuses into the elementwise op that uses it; the sum stays a row of four.
// CHECK-LABEL: func.func @reduction_into_consumer
// CHECK:         affine.for
// CHECK-NOT:     affine.for %{{.*}} = 0 to 4
// CHECK:         return
func.func @reduction_into_consumer(%x: memref<4x8xf32>) -> memref<4xf32> {
  %zero = arith.constant 0.0 : f32
  %eight = arith.constant 8.0 : f32
  %sum = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  affine.for %i = 0 to 4 {
    affine.store %zero, %sum[%i] : memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %a = affine.load %sum[%i] : memref<4xf32>
      %s = arith.addf %v, %a : f32
      affine.store %s, %sum[%i] : memref<4xf32>
    }
  }
  %mean = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  affine.for %i = 0 to 4 {
    %a = affine.load %sum[%i] : memref<4xf32>
    %m = arith.divf %a, %eight : f32
    affine.store %m, %mean[%i] : memref<4xf32>
  }
  memref.dealloc %sum : memref<4xf32>
  return %mean : memref<4xf32>
}

// -----
// MLIR would keep the accumulation into %sum (freed afterwards) and recompute it inside
// the consumer, adding it twice. That fused form is rejected; fusion runs again with the
// writers of %sum (its zero fill and the accumulation) made calls, which it cannot
// recompute, and the rest fuses: the mean and its scaled copy in one nest.
// CHECK-LABEL: func.func @repeated_accumulation
// CHECK:         affine.for %{{.*}} = 0 to 4 {
// CHECK:         call @repeated_accumulation_nest{{[0-9]+}}(
// CHECK-NEXT:    call @repeated_accumulation_nest{{[0-9]+}}(
// CHECK:         affine.for %{{.*}} = 0 to 4 {
// CHECK:           arith.divf
// CHECK:           arith.mulf
// CHECK-NOT:     affine.for
// CHECK:         return
// CHECK-DAG:   func.func private @repeated_accumulation_nest{{[0-9]+}}
// CHECK-DAG:   func.func private @repeated_accumulation_nest{{[0-9]+}}
func.func @repeated_accumulation(%x: memref<4x8x6xf32>, %y: memref<4x8x6xf32>) -> (memref<f32>, memref<4x1x6xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %eight = arith.constant 8.0 : f32
  %total = memref.alloc() {alignment = 64 : i64} : memref<f32>
  affine.store %zero, %total[] : memref<f32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 6 {
        %v = affine.load %x[%i, %j, %k] : memref<4x8x6xf32>
        %a = affine.load %total[] : memref<f32>
        %s = arith.addf %v, %a : f32
        affine.store %s, %total[] : memref<f32>
      }
    }
  }
  %sum = memref.alloc() {alignment = 64 : i64} : memref<4x1x6xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 1 {
      affine.for %k = 0 to 6 {
        affine.store %zero, %sum[%i, %j, %k] : memref<4x1x6xf32>
      }
    }
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 6 {
        %v = affine.load %y[%i, %j, %k] : memref<4x8x6xf32>
        %a = affine.load %sum[%i, %c0, %k] : memref<4x1x6xf32>
        %s = arith.addf %v, %a : f32
        affine.store %s, %sum[%i, %c0, %k] : memref<4x1x6xf32>
      }
    }
  }
  %mean = memref.alloc() {alignment = 64 : i64} : memref<4x1x6xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 1 {
      affine.for %k = 0 to 6 {
        %a = affine.load %sum[%i, %j, %k] : memref<4x1x6xf32>
        %m = arith.divf %a, %eight : f32
        affine.store %m, %mean[%i, %j, %k] : memref<4x1x6xf32>
      }
    }
  }
  %scaled = memref.alloc() {alignment = 64 : i64} : memref<4x1x6xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 1 {
      affine.for %k = 0 to 6 {
        %a = affine.load %mean[%i, %j, %k] : memref<4x1x6xf32>
        %m = arith.mulf %a, %eight : f32
        affine.store %m, %scaled[%i, %j, %k] : memref<4x1x6xf32>
      }
    }
  }
  memref.dealloc %sum : memref<4x1x6xf32>
  memref.dealloc %mean : memref<4x1x6xf32>
  return %total, %scaled : memref<f32>, memref<4x1x6xf32>
}

// -----

// Negative: several nests write one buffer (an RNN's output, one step each); MLIR's
// producer-consumer fusion recomputed one writer's slice over another's, so the writers
// become calls (opaque to fusion, ordered by their stand-ins) and nothing fuses with them.
// CHECK-LABEL: func.func @many_writers
// CHECK:         call @many_writers_nest0
// CHECK:         call @many_writers_nest1
// CHECK:         affine.for %{{.*}} = 0 to 4 {
// CHECK-NOT:     accel.call_proxy
// CHECK-DAG:   func.func private @many_writers_nest0
// CHECK-DAG:   func.func private @many_writers_nest1
func.func @many_writers(%x: memref<4xf32>) -> memref<4xf32> {
  %seq = memref.alloc() {alignment = 64 : i64} : memref<2x4xf32>
  affine.for %i = 0 to 4 {
    %a = affine.load %x[%i] : memref<4xf32>
    affine.store %a, %seq[0, %i] : memref<2x4xf32>
  }
  affine.for %i = 0 to 4 {
    %a = affine.load %seq[0, %i] : memref<2x4xf32>
    %d = arith.addf %a, %a : f32
    affine.store %d, %seq[1, %i] : memref<2x4xf32>
  }
  %out = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  affine.for %i = 0 to 4 {
    %a = affine.load %seq[0, %i] : memref<2x4xf32>
    %b = affine.load %seq[1, %i] : memref<2x4xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %out[%i] : memref<4xf32>
  }
  return %out : memref<4xf32>
}

// -----

// A call between a writer and a reader of its buffer: MLIR's fusion does not see calls and
// merged the reader into the writer ahead of the call (reading what the call overwrites).
// The call's stand-ins (erased afterwards) keep both nests where they are.
// CHECK-LABEL: func.func @call_between
// CHECK:         affine.for
// CHECK-NEXT:      affine.store %{{.*}}, %[[BUF:[a-z_0-9]+]]{{\[}}
// CHECK-NOT:       affine.store
// CHECK:         call @overwrite(%[[BUF]])
// CHECK-NEXT:    affine.for
// CHECK-NEXT:      affine.load %[[BUF]]
// CHECK-NOT:     accel.call_proxy
func.func private @overwrite(memref<8xf32>)
func.func @call_between(%out: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  %one = arith.constant 1.0 : f32
  affine.for %i = 0 to 8 {
    affine.store %one, %a[%i] : memref<8xf32>
  }
  func.call @overwrite(%a) : (memref<8xf32>) -> ()
  affine.for %i = 0 to 8 {
    %v = affine.load %a[%i] : memref<8xf32>
    affine.store %v, %out[%i] : memref<8xf32>
  }
  memref.dealloc %a : memref<8xf32>
  return
}

// -----

// A gather (a load at a data-dependent index, cross-entropy's) moves into a function of
// its own; the elementwise chain around it still fuses (it used to leave all unfused).
// CHECK-LABEL: func.func @gather_outlined
// CHECK:         affine.for
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK-NOT:     affine.for
// CHECK:         call @gather_outlined_nest0
// CHECK-NOT:     accel.call_proxy
// CHECK:       func.func private @gather_outlined_nest0
// CHECK:         memref.load
func.func @gather_outlined(%x: memref<4x8xf32>, %idx: memref<4xindex>, %y: memref<4x8xf32>,
                           %g: memref<4xf32>) {
  %t = memref.alloc() : memref<4x8xf32>
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %m = arith.mulf %v, %two : f32
      affine.store %m, %t[%i, %j] : memref<4x8xf32>
    }
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %t[%i, %j] : memref<4x8xf32>
      %s = arith.addf %v, %two : f32
      affine.store %s, %y[%i, %j] : memref<4x8xf32>
    }
  }
  affine.for %i = 0 to 4 {
    %k = affine.load %idx[%i] : memref<4xindex>
    %v = memref.load %x[%i, %k] : memref<4x8xf32>
    affine.store %v, %g[%i] : memref<4xf32>
  }
  memref.dealloc %t : memref<4x8xf32>
  return
}

// -----

// A loop that carries its output buffer through iter_args unchanged (reduce-reduce
// fusion's attention loop over heads, with a view at a dynamic offset inside) moves into a
// function of its own once its result's uses read the buffer itself; the nests around it
// still fuse (the view used to leave the whole model unfused).
// CHECK-LABEL: func.func @carried_buffer_outlined
// CHECK:         affine.for
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK-NOT:     affine.for
// CHECK:         call @carried_buffer_outlined_nest0
// CHECK-NOT:     scf.for
// CHECK:         return
// CHECK:       func.func private @carried_buffer_outlined_nest0
// CHECK:         scf.for {{.*}} iter_args
// CHECK:           memref.subview
func.func @carried_buffer_outlined(%x: memref<4x8xf32>, %y: memref<4x8xf32>,
                                   %o: memref<2x8xf32>) -> memref<2x8xf32> {
  %t = memref.alloc() : memref<4x8xf32>
  %two = arith.constant 2.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %m = arith.mulf %v, %two : f32
      affine.store %m, %t[%i, %j] : memref<4x8xf32>
    }
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %t[%i, %j] : memref<4x8xf32>
      %s = arith.addf %v, %two : f32
      affine.store %s, %y[%i, %j] : memref<4x8xf32>
    }
  }
  %r = scf.for %h = %c0 to %c2 step %c1 iter_args(%acc = %o) -> (memref<2x8xf32>) {
    %row = memref.subview %acc[%h, 0] [1, 8] [1, 1]
        : memref<2x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    affine.for %j = 0 to 8 {
      %v = affine.load %x[0, %j] : memref<4x8xf32>
      affine.store %v, %row[%j] : memref<8xf32, strided<[1], offset: ?>>
    }
    scf.yield %acc : memref<2x8xf32>
  }
  memref.dealloc %t : memref<4x8xf32>
  return %r : memref<2x8xf32>
}

// -----

// Negative: a loop whose iter_args carry a buffer that changes (another one is yielded)
// keeps its result, stays in place, and its view keeps the function unfused.
// CHECK-LABEL: func.func @carried_buffer_changes
// CHECK-COUNT-2: affine.for %{{.*}} = 0 to 4 {
// CHECK:         scf.for {{.*}} iter_args
// CHECK-NOT:     call @
func.func @carried_buffer_changes(%x: memref<4x8xf32>, %y: memref<4x8xf32>,
                                  %o: memref<2x8xf32>, %p: memref<2x8xf32>)
    -> memref<2x8xf32> {
  %t = memref.alloc() : memref<4x8xf32>
  %two = arith.constant 2.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %m = arith.mulf %v, %two : f32
      affine.store %m, %t[%i, %j] : memref<4x8xf32>
    }
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %t[%i, %j] : memref<4x8xf32>
      %s = arith.addf %v, %two : f32
      affine.store %s, %y[%i, %j] : memref<4x8xf32>
    }
  }
  %r = scf.for %h = %c0 to %c2 step %c1 iter_args(%acc = %o) -> (memref<2x8xf32>) {
    %row = memref.subview %acc[%h, 0] [1, 8] [1, 1]
        : memref<2x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    affine.for %j = 0 to 8 {
      %v = affine.load %x[0, %j] : memref<4x8xf32>
      affine.store %v, %row[%j] : memref<8xf32, strided<[1], offset: ?>>
    }
    scf.yield %p : memref<2x8xf32>
  }
  memref.dealloc %t : memref<4x8xf32>
  return %r : memref<2x8xf32>
}

// -----

// An accumulation into an argument, whose initial value comes from the caller (a split
// part's conv output, filled in another part), stays a nest of its own: MLIR's fusion
// may recompute it in a consumer into a private buffer that starts with garbage
// (MobileNetV2's train-mode forward read back values 20x its range).
// CHECK-LABEL: func.func @accumulate_into_argument
// CHECK:         call @accumulate_into_argument_nest{{[0-9]+}}(
// CHECK:         affine.for
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         return
// CHECK:       func.func private @accumulate_into_argument_nest{{[0-9]+}}
func.func @accumulate_into_argument(%x: memref<4x8xf32>, %acc: memref<4xf32>, %out: memref<4xf32>, %out2: memref<4xf32>) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %a = affine.load %acc[%i] : memref<4xf32>
      %s = arith.addf %v, %a : f32
      affine.store %s, %acc[%i] : memref<4xf32>
    }
  }
  affine.for %i = 0 to 4 {
    %a = affine.load %acc[%i] : memref<4xf32>
    %m = arith.mulf %a, %two : f32
    affine.store %m, %out[%i] : memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    %a = affine.load %acc[%i] : memref<4xf32>
    %m = arith.addf %a, %two : f32
    affine.store %m, %out2[%i] : memref<4xf32>
  }
  return
}

// -----

// Negative: the function sets the argument's initial value itself, so fusion sees where
// the accumulation starts; it fuses, no call.
// CHECK-LABEL: func.func @accumulate_into_initialised_argument
// CHECK-NOT:     call
// CHECK:         affine.for
// CHECK:         return
func.func @accumulate_into_initialised_argument(%x: memref<4x8xf32>, %acc: memref<4xf32>, %out: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 4 {
    affine.store %zero, %acc[%i] : memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %a = affine.load %acc[%i] : memref<4xf32>
      %s = arith.addf %v, %a : f32
      affine.store %s, %acc[%i] : memref<4xf32>
    }
  }
  affine.for %i = 0 to 4 {
    %a = affine.load %acc[%i] : memref<4xf32>
    %m = arith.mulf %a, %two : f32
    affine.store %m, %out[%i] : memref<4xf32>
  }
  return
}

// -----

// A buffer that reaches a call through a chain of views (a weight gradient's im2col:
// expand_shape -> collapse_shape -> the GEMM kernel's call): the call's stand-ins use the
// base under the whole chain, so the function still fuses (the elementwise pair becomes
// one nest, without %t). Refusing the chain left a CNN's whole backward unfused.
// CHECK-LABEL: func.func @view_chain_to_call
// CHECK:         memref.collapse_shape
// CHECK-NEXT:    call @consume
// CHECK-NEXT:    affine.for
// CHECK-NEXT:      affine.load %arg0
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      affine.store %{{.*}}, %arg1
// CHECK-NOT:     affine.for
func.func private @consume(memref<6x4xf32>)
func.func @view_chain_to_call(%x: memref<24xf32>, %out: memref<24xf32>) {
  %two = arith.constant 2.0 : f32
  %b = memref.alloc() : memref<24xf32>
  affine.for %i = 0 to 24 {
    %v = affine.load %x[%i] : memref<24xf32>
    affine.store %v, %b[%i] : memref<24xf32>
  }
  %e = memref.expand_shape %b [[0, 1, 2]] output_shape [2, 3, 4] : memref<24xf32> into memref<2x3x4xf32>
  %c = memref.collapse_shape %e [[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
  func.call @consume(%c) : (memref<6x4xf32>) -> ()
  %t = memref.alloc() : memref<24xf32>
  affine.for %i = 0 to 24 {
    %v = affine.load %x[%i] : memref<24xf32>
    %m = arith.mulf %v, %two : f32
    affine.store %m, %t[%i] : memref<24xf32>
  }
  affine.for %i = 0 to 24 {
    %v = affine.load %t[%i] : memref<24xf32>
    %a = arith.addf %v, %two : f32
    affine.store %a, %out[%i] : memref<24xf32>
  }
  memref.dealloc %t : memref<24xf32>
  memref.dealloc %b : memref<24xf32>
  return
}

// -----

// Negative: the chain of views ends in a non-affine load, which fusion's dependence
// analysis cannot see: the function is left unfused (three nests).
// CHECK-LABEL: func.func @view_chain_to_a_load
// CHECK-COUNT-3: affine.for
func.func @view_chain_to_a_load(%x: memref<24xf32>, %out: memref<24xf32>, %k: index) -> f32 {
  %two = arith.constant 2.0 : f32
  %b = memref.alloc() : memref<24xf32>
  affine.for %i = 0 to 24 {
    %v = affine.load %x[%i] : memref<24xf32>
    affine.store %v, %b[%i] : memref<24xf32>
  }
  %e = memref.expand_shape %b [[0, 1, 2]] output_shape [2, 3, 4] : memref<24xf32> into memref<2x3x4xf32>
  %c = memref.collapse_shape %e [[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
  %r = memref.load %c[%k, %k] : memref<6x4xf32>
  %t = memref.alloc() : memref<24xf32>
  affine.for %i = 0 to 24 {
    %v = affine.load %x[%i] : memref<24xf32>
    %m = arith.mulf %v, %two : f32
    affine.store %m, %t[%i] : memref<24xf32>
  }
  affine.for %i = 0 to 24 {
    %v = affine.load %t[%i] : memref<24xf32>
    %a = arith.addf %v, %two : f32
    affine.store %a, %out[%i] : memref<24xf32>
  }
  memref.dealloc %t : memref<24xf32>
  memref.dealloc %b : memref<24xf32>
  return %r : f32
}

// -----

// BatchNorm at inference: a per-channel scale (a square root, a division) feeding the
// per-element nest. Fusion recomputes the producer's slice inside the consumer; the
// scale, which only depends on the channel, is hoisted out of the row and column loops
// (affine-loop-invariant-code-motion after scalar replacement), not recomputed per element.
// CHECK-LABEL: func.func @per_channel_scale
// CHECK:       affine.for %[[C:.*]] = 0 to 8 {
// CHECK:         math.sqrt
// CHECK:         arith.divf
// CHECK:         affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT:      affine.for %{{.*}} = 0 to 16 {
// CHECK-NOT:         math.sqrt
// CHECK:             arith.mulf
// CHECK:             affine.store
func.func @per_channel_scale(%x: memref<8x16x16xf32>, %var: memref<8xf32>) -> memref<8x16x16xf32> {
  %one = arith.constant 1.0 : f32
  %s = memref.alloc() : memref<8xf32>
  affine.for %c = 0 to 8 {
    %v = affine.load %var[%c] : memref<8xf32>
    %r = math.sqrt %v : f32
    %q = arith.divf %one, %r : f32
    affine.store %q, %s[%c] : memref<8xf32>
  }
  %y = memref.alloc() : memref<8x16x16xf32>
  affine.for %c = 0 to 8 {
    affine.for %h = 0 to 16 {
      affine.for %w = 0 to 16 {
        %a = affine.load %x[%c, %h, %w] : memref<8x16x16xf32>
        %b = affine.load %s[%c] : memref<8xf32>
        %p = arith.mulf %a, %b : f32
        affine.store %p, %y[%c, %h, %w] : memref<8x16x16xf32>
      }
    }
  }
  memref.dealloc %s : memref<8xf32>
  return %y : memref<8x16x16xf32>
}

// -----

// A nest with a data-dependent access becomes a private function before fusion; the
// constants it captures (here the dimension index of `memref.dim`) are cloned into it,
// not passed: a `memref.dim` with an index argument lowers to an `alloca` of the sizes
// inside the loop, which grew the stack at every iteration (a batch-8 GPT-2 decode
// step's broadcast of the KV cache overflowed the 8 MB stack).
// CHECK-LABEL: func.func @broadcast_copy
// CHECK:       call @[[N:broadcast_copy_nest[0-9]*]](%{{[^,]*}}, %{{[^,]*}}, %{{[^,)]*}})
// CHECK:       func.func private @[[N]](%{{[^,]*}}: index, %{{[^,]*}}: memref<4x?xf32>, %{{[^,)]*}}: memref<4x?xf32>) {
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         memref.dim %{{.*}}, %[[C1]] : memref<4x?xf32>
func.func @broadcast_copy(%m: memref<4x?xf32>, %n: index) -> memref<4x?xf32> {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %o = memref.alloc(%n) : memref<4x?xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to %n {
      %d = memref.dim %m, %c1 : memref<4x?xf32>
      %e = arith.cmpi eq, %d, %c1 : index
      %s = arith.select %e, %c0, %j : index
      %v = memref.load %m[%i, %s] : memref<4x?xf32>
      affine.store %v, %o[%i, %j] : memref<4x?xf32>
    }
  }
  %r = memref.alloc(%n) : memref<4x?xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to %n {
      %v = affine.load %o[%i, %j] : memref<4x?xf32>
      %w = arith.addf %v, %v : f32
      affine.store %w, %r[%i, %j] : memref<4x?xf32>
    }
  }
  return %r : memref<4x?xf32>
}
