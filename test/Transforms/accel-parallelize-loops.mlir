// RUN: accel-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(accel-parallelize-loops{min-work=65536 chunk-work=0})' \
// RUN:   | FileCheck %s
// RUN: accel-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(accel-parallelize-loops{min-work=65536 chunk-work=65536})' \
// RUN:   | FileCheck %s --check-prefix=CHUNK

// An elementwise nest is outlined: the function calls a dispatcher, which passes the
// descriptors through a stack context to accel_parallel_for over the 256 rows.
// With chunk-work (CHUNK): 256 x 512 x 5 ops (two loads, add, max, store) = 655360 of work
// makes 10 items of 65536, each a contiguous run of rows: item k starts at row k * 256 / 10.
// CHUNK-LABEL: func.func private @elementwise_par0(
// CHUNK:         %[[N:.*]] = arith.constant 10 : index
// CHUNK:         call @accel_parallel_for(%{{.*}}, %{{.*}}, %[[N]])
// CHUNK:       func.func private @elementwise_par0_entry(%{{.*}}: !llvm.ptr, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHUNK-DAG:     %[[T:.*]] = arith.constant 256 : index
// CHUNK-DAG:     %[[C:.*]] = arith.constant 10 : index
// CHUNK:         %[[LT:.*]] = arith.muli %[[LO]], %[[T]] : index
// CHUNK:         %[[FIRST:.*]] = arith.divui %[[LT]], %[[C]] : index
// CHUNK:         %[[HT:.*]] = arith.muli %[[HI]], %[[T]] : index
// CHUNK:         %[[LAST:.*]] = arith.divui %[[HT]], %[[C]] : index
// CHUNK:         call @elementwise_par0_body({{.*}}, %[[FIRST]], %[[LAST]])
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME:    (%[[A:.*]]: memref<256x512xf32>, %[[B:.*]]: memref<256x512xf32>)
// CHECK:         %[[OUT:.*]] = memref.alloc()
// CHECK-NEXT:    call @elementwise_par0(%[[A]], %[[B]], %[[OUT]])
// CHECK-NOT:     affine.for
// CHECK:         return %[[OUT]]
// CHECK:       func.func private @accel_parallel_for((!llvm.ptr, index, index) -> (), !llvm.ptr, index)
// CHECK:       func.func private @elementwise_par0(
// CHECK:         llvm.alloca
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} : memref<256x512xf32> to !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK:         %[[N:.*]] = arith.constant 256 : index
// CHECK:         %[[F:.*]] = constant @elementwise_par0_entry
// CHECK:         call @accel_parallel_for(%[[F]], %{{.*}}, %[[N]])
// CHECK:       func.func private @elementwise_par0_entry(%[[CTX:.*]]: !llvm.ptr, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK:         llvm.load
// CHECK:         call @elementwise_par0_body({{.*}}, %[[LO]], %[[HI]])
// CHECK:       func.func private @elementwise_par0_body({{.*}}, %[[BLO:.*]]: index, %[[BHI:.*]]: index)
// CHECK:         %[[ZERO:.*]] = arith.constant 0.0
// CHECK:         affine.for %[[I:.*]] = %[[BLO]] to %[[BHI]] {
// CHECK-NEXT:      affine.for
// CHECK:             arith.maximumf %{{.*}}, %[[ZERO]]
// CHECK:             affine.store
func.func @elementwise(%a: memref<256x512xf32>, %b: memref<256x512xf32>) -> memref<256x512xf32> {
  %zero = arith.constant 0.0 : f32
  %out = memref.alloc() {alignment = 64 : i64} : memref<256x512xf32>
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 512 {
      %x = affine.load %a[%i, %j] : memref<256x512xf32>
      %y = affine.load %b[%i, %j] : memref<256x512xf32>
      %s = arith.addf %x, %y : f32
      %r = arith.maximumf %s, %zero : f32
      affine.store %r, %out[%i, %j] : memref<256x512xf32>
    }
  }
  return %out : memref<256x512xf32>
}

// -----

// A row reduction (sum[i] += x[i, j]) runs in parallel over rows; the per-row scratch
// buffer (fully written before it is read in each row) is private to each body call.
// CHECK-LABEL: func.func @row_reduction
// CHECK-NOT:     memref.alloca
// CHECK:         call @row_reduction_par0
// CHECK-NOT:     affine.for
// CHECK:       func.func private @row_reduction_par0_body(
// CHECK:         %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x512xf32>
// CHECK:         affine.for %[[I:.*]] = %{{.*}} to %{{.*}} {
// CHECK:           affine.store %{{.*}}, %[[T]][0, %{{.*}}]
// CHECK:           affine.store %{{.*}}, %{{.*}}[%[[I]]] : memref<256xf32>
// CHECK:           affine.for
// CHECK:             affine.load %[[T]]
func.func @row_reduction(%x: memref<256x512xf32>) -> memref<256xf32> {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloca() : memref<1x512xf32>
  %sum = memref.alloc() : memref<256xf32>
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 512 {
      %v = affine.load %x[%i, %j] : memref<256x512xf32>
      %e = math.exp %v : f32
      affine.store %e, %t[0, %j] : memref<1x512xf32>
    }
    affine.store %zero, %sum[%i] : memref<256xf32>
    affine.for %j = 0 to 512 {
      %v = affine.load %t[0, %j] : memref<1x512xf32>
      %acc = affine.load %sum[%i] : memref<256xf32>
      %s = arith.addf %v, %acc : f32
      affine.store %s, %sum[%i] : memref<256xf32>
    }
  }
  return %sum : memref<256xf32>
}

// -----

// An outer loop that runs once is skipped; the loop inside it goes parallel, and a
// transposed store (out[j, i]) is still a disjoint slice per iteration of %i.
// CHECK-LABEL: func.func @transpose_under_unit_loop
// CHECK:         affine.for %[[B:.*]] = 0 to 1 {
// CHECK-NEXT:      call @transpose_under_unit_loop_par0(%{{.*}}, %[[B]], %{{.*}})
// CHECK:       func.func private @transpose_under_unit_loop_par0(%{{.*}}: memref<1x256x512xf32>, %{{.*}}: index, %{{.*}}: memref<1x512x256xf32>)
// CHECK:         arith.index_cast %{{.*}} : index to i64
func.func @transpose_under_unit_loop(%x: memref<1x256x512xf32>) -> memref<1x512x256xf32> {
  %out = memref.alloc() : memref<1x512x256xf32>
  affine.for %b = 0 to 1 {
    affine.for %i = 0 to 256 {
      affine.for %j = 0 to 512 {
        %v = affine.load %x[%b, %i, %j] : memref<1x256x512xf32>
        affine.store %v, %out[%b, %j, %i] : memref<1x512x256xf32>
      }
    }
  }
  return %out : memref<1x512x256xf32>
}

// -----

// Too little work (64 x 64 ops < min-work): stays serial, nothing is declared.
// CHECK-LABEL: func.func @too_small
// CHECK:         affine.for
// CHECK-NOT:     call
// CHECK-NOT:     accel_parallel_for
func.func @too_small(%a: memref<64x64xf32>, %out: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %x = affine.load %a[%i, %j] : memref<64x64xf32>
      %y = arith.mulf %x, %x : f32
      affine.store %y, %out[%i, %j] : memref<64x64xf32>
    }
  }
  return
}

// -----

// A loop-carried dependence through memory (a prefix sum over rows, x[i] += x[i - 1]):
// the outer loop stays serial, and the inner loop is parallel but too small.
// CHECK-LABEL: func.func @prefix_sum
// CHECK:         affine.for %{{.*}} = 1 to 1024 {
// CHECK-NOT:     accel_parallel_for
func.func @prefix_sum(%x: memref<1024x256xf32>) {
  affine.for %i = 1 to 1024 {
    affine.for %j = 0 to 256 {
      %p = affine.load %x[%i - 1, %j] : memref<1024x256xf32>
      %c = affine.load %x[%i, %j] : memref<1024x256xf32>
      %s = arith.addf %p, %c : f32
      affine.store %s, %x[%i, %j] : memref<1024x256xf32>
    }
  }
  return
}

// -----

// The written buffer is also read through a view (a shifted subview of the same buffer),
// which affine analysis would take for a different memref: stays serial.
// CHECK-LABEL: func.func @aliasing_view
// CHECK:         affine.for
// CHECK-NOT:     accel_parallel_for
func.func @aliasing_view(%x: memref<1025x256xf32>) {
  %v = memref.subview %x[1, 0] [1024, 256] [1, 1] : memref<1025x256xf32> to memref<1024x256xf32, strided<[256, 1], offset: 256>>
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 256 {
      %a = affine.load %v[%i, %j] : memref<1024x256xf32, strided<[256, 1], offset: 256>>
      %b = arith.mulf %a, %a : f32
      affine.store %b, %x[%i, %j] : memref<1025x256xf32>
    }
  }
  return
}

// -----

// A row buffer used only inside an inner loop (a channel's loop over images, as fusion
// leaves BatchNorm's backward), which fills it before reading it in each of its
// iterations, is private to the outer loop too: the channel loop runs in parallel.
// CHECK-LABEL: func.func @nested_scratch
// CHECK:         call @nested_scratch_par0
// CHECK:       func.func private @nested_scratch_par0_body(
// CHECK:         %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x196xf32>
// CHECK:         affine.for %{{.*}} = %{{.*}} to %{{.*}} {
// CHECK:           affine.for
// CHECK:             affine.store %{{.*}}, %[[T]]
func.func @nested_scratch(%x: memref<32x16x196xf32>, %sum: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloca() : memref<1x196xf32>
  affine.for %c = 0 to 16 {
    affine.store %zero, %sum[%c] : memref<16xf32>
    affine.for %n = 0 to 32 {
      affine.for %p = 0 to 196 {
        %v = affine.load %x[%n, %c, %p] : memref<32x16x196xf32>
        %e = math.exp %v : f32
        affine.store %e, %t[0, %p] : memref<1x196xf32>
      }
      affine.for %p = 0 to 196 {
        %v = affine.load %t[0, %p] : memref<1x196xf32>
        %acc = affine.load %sum[%c] : memref<16xf32>
        %s = arith.addf %v, %acc : f32
        affine.store %s, %sum[%c] : memref<16xf32>
      }
    }
  }
  return
}

// -----

// Negative: the same row buffer, also read after the inner loop (its last image's row
// leaks out of the inner loop's iterations): not private, the channel loop stays serial.
// CHECK-LABEL: func.func @nested_scratch_read_after
// CHECK:         affine.for
// CHECK-NOT:     accel_parallel_for
func.func @nested_scratch_read_after(%x: memref<32x16x196xf32>, %sum: memref<16xf32>) {
  %t = memref.alloca() : memref<1x196xf32>
  affine.for %c = 0 to 16 {
    affine.for %n = 0 to 32 {
      affine.for %p = 0 to 196 {
        %v = affine.load %x[%n, %c, %p] : memref<32x16x196xf32>
        %e = math.exp %v : f32
        affine.store %e, %t[0, %p] : memref<1x196xf32>
      }
    }
    %last = affine.load %t[0, 0] : memref<1x196xf32>
    affine.store %last, %sum[%c] : memref<16xf32>
  }
  return
}

// -----

// Fusion leaves a per-channel value (a BatchNorm scale) computed and stored in every image's
// iteration: the same values into the same elements, a write all images share. The store
// moves into a copy of the channel loop in front (_hoist_stores.py), the value stays
// computed where it is used, and the loop over images runs in parallel.
// CHECK-LABEL: func.func @invariant_store
// CHECK:         affine.for %[[C:.*]] = 0 to 8 {
// CHECK-NEXT:      %[[G:.*]] = affine.load %{{.*}}[%[[C]]] : memref<8xf32>
// CHECK-NEXT:      %[[S:.*]] = math.rsqrt %[[G]]
// CHECK-NEXT:      affine.store %[[S]], %{{.*}}[%[[C]]] : memref<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    call @invariant_store_par0(
// CHECK:       func.func private @invariant_store_par0_body(
// CHECK:         math.rsqrt
// CHECK-NOT:     affine.store %{{.*}} : memref<8xf32>
// CHECK:         return
func.func @invariant_store(%x: memref<32x8x196xf32>, %g: memref<8xf32>, %scale: memref<8xf32>, %out: memref<32x8x196xf32>) {
  affine.for %n = 0 to 32 {
    affine.for %c = 0 to 8 {
      %v = affine.load %g[%c] : memref<8xf32>
      %s = math.rsqrt %v : f32
      affine.store %s, %scale[%c] : memref<8xf32>
      affine.for %p = 0 to 196 {
        %a = affine.load %x[%n, %c, %p] : memref<32x8x196xf32>
        %b = arith.mulf %a, %s : f32
        affine.store %b, %out[%n, %c, %p] : memref<32x8x196xf32>
      }
    }
  }
  return
}

// -----

// The same with a 2x2 max pool whose running maximum is carried in iter_args (as
// accel-promote-accumulators leaves it): the copy in front keeps only the scale's store, and
// the pool's loops and their yields go with it whole (erasing their bodies first left a
// yield using freed values: a heap corruption).
// CHECK-LABEL: func.func @invariant_store_with_carried_max
// CHECK:         affine.for %[[C:.*]] = 0 to 8 {
// CHECK-NEXT:      %[[G:.*]] = affine.load %{{.*}}[%[[C]]] : memref<8xf32>
// CHECK-NEXT:      %[[S:.*]] = math.rsqrt %[[G]]
// CHECK-NEXT:      affine.store %[[S]], %{{.*}}[%[[C]]] : memref<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    call @invariant_store_with_carried_max_par0(
// CHECK:       func.func private @invariant_store_with_carried_max_par0_body(
// CHECK:         iter_args
// CHECK:         arith.maximumf
func.func @invariant_store_with_carried_max(%x: memref<32x8x28x28xf32>, %g: memref<8xf32>, %scale: memref<8xf32>, %out: memref<32x8x14x14xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  affine.for %n = 0 to 32 {
    affine.for %c = 0 to 8 {
      %v = affine.load %g[%c] : memref<8xf32>
      %s = math.rsqrt %v : f32
      affine.store %s, %scale[%c] : memref<8xf32>
      affine.for %h = 0 to 14 {
        affine.for %w = 0 to 14 {
          %m = affine.for %i = 0 to 2 iter_args(%a = %ninf) -> (f32) {
            %m2 = affine.for %j = 0 to 2 iter_args(%b = %a) -> (f32) {
              %e = affine.load %x[%n, %c, %h * 2 + %i, %w * 2 + %j] : memref<32x8x28x28xf32>
              %t = arith.mulf %e, %s : f32
              %u = arith.maximumf %b, %t : f32
              affine.yield %u : f32
            }
            affine.yield %m2 : f32
          }
          affine.store %m, %out[%n, %c, %h, %w] : memref<32x8x14x14xf32>
        }
      }
    }
  }
  return
}

// -----

// Negative: the loop also reads the per-channel buffer, so its first image would see the
// values from before the loop: the store stays, and so does the loop's serial order.
// CHECK-LABEL: func.func @invariant_store_read_back
// CHECK:         affine.for
// CHECK:           affine.store %{{.*}} : memref<8xf32>
// CHECK-NOT:     accel_parallel_for
func.func @invariant_store_read_back(%x: memref<32x8x196xf32>, %g: memref<8xf32>, %scale: memref<8xf32>, %out: memref<32x8x196xf32>) {
  affine.for %n = 0 to 32 {
    affine.for %c = 0 to 8 {
      %old = affine.load %scale[%c] : memref<8xf32>
      %v = affine.load %g[%c] : memref<8xf32>
      %s = math.rsqrt %v : f32
      affine.store %s, %scale[%c] : memref<8xf32>
      affine.for %p = 0 to 196 {
        %a = affine.load %x[%n, %c, %p] : memref<32x8x196xf32>
        %b = arith.mulf %a, %old : f32
        affine.store %b, %out[%n, %c, %p] : memref<32x8x196xf32>
      }
    }
  }
  return
}

// -----

// A scratch buffer read before it is written in an iteration carries values between
// iterations: not private, stays serial.
// CHECK-LABEL: func.func @scratch_read_first
// CHECK:         affine.for
// CHECK-NOT:     accel_parallel_for
func.func @scratch_read_first(%x: memref<1024x256xf32>, %out: memref<1024x256xf32>) {
  %t = memref.alloca() : memref<1xf32>
  affine.for %i = 0 to 1024 {
    %prev = affine.load %t[0] : memref<1xf32>
    affine.for %j = 0 to 256 {
      %a = affine.load %x[%i, %j] : memref<1024x256xf32>
      %b = arith.addf %a, %prev : f32
      affine.store %b, %out[%i, %j] : memref<1024x256xf32>
    }
    %last = affine.load %x[%i, 255] : memref<1024x256xf32>
    affine.store %last, %t[0] : memref<1xf32>
  }
  return
}

// -----

// Dynamic trip counts stay serial (the work is unknown at compile time).
// CHECK-LABEL: func.func @dynamic
// CHECK:         affine.for
// CHECK-NOT:     accel_parallel_for
func.func @dynamic(%a: memref<?x1024xf32>, %out: memref<?x1024xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x1024xf32>
  affine.for %i = 0 to %n {
    affine.for %j = 0 to 1024 {
      %x = affine.load %a[%i, %j] : memref<?x1024xf32>
      %y = arith.mulf %x, %x : f32
      affine.store %y, %out[%i, %j] : memref<?x1024xf32>
    }
  }
  return
}

// -----

// A call inside the loop has unknown effects: stays serial.
// CHECK-LABEL: func.func @with_call
// CHECK:         affine.for
// CHECK-NOT:     accel_parallel_for
func.func private @ext(f32) -> f32
func.func @with_call(%a: memref<1024x256xf32>, %out: memref<1024x256xf32>) {
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 256 {
      %x = affine.load %a[%i, %j] : memref<1024x256xf32>
      %y = func.call @ext(%x) : (f32) -> f32
      affine.store %y, %out[%i, %j] : memref<1024x256xf32>
    }
  }
  return
}

// -----

// An existing declaration of the runtime (from the GEMM kernels) is reused, not repeated;
// a loop with iter_args stays serial, and its inner loop is too small.
// CHECK-LABEL: func.func private @accel_parallel_for
// CHECK-NOT:   func.func private @accel_parallel_for
// CHECK-LABEL: func.func @declared_once
// CHECK:         call @declared_once_par0
// CHECK:         affine.for {{.*}} iter_args
// CHECK-NOT:   func.func private @accel_parallel_for
func.func private @accel_parallel_for((!llvm.ptr, index, index) -> (), !llvm.ptr, index)
func.func @declared_once(%a: memref<1024x256xf32>, %out: memref<1024x256xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 256 {
      %x = affine.load %a[%i, %j] : memref<1024x256xf32>
      %y = arith.mulf %x, %x : f32
      affine.store %y, %out[%i, %j] : memref<1024x256xf32>
    }
  }
  %r = affine.for %i = 0 to 1024 iter_args(%acc = %zero) -> f32 {
    %x = affine.load %a[%i, 0] : memref<1024x256xf32>
    %s = arith.addf %acc, %x : f32
    affine.yield %s : f32
  }
  return %r : f32
}

// -----

// A written argument whose layout repeats elements (a broadcast's 0 stride): two rows are
// one row in memory, stays serial.
// CHECK-LABEL: func.func @overlapping_layout
// CHECK:         affine.for
// CHECK-NOT:     accel_parallel_for
func.func @overlapping_layout(%a: memref<1024x256xf32>, %out: memref<1024x256xf32, strided<[0, 1]>>) {
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 256 {
      %x = affine.load %a[%i, %j] : memref<1024x256xf32>
      %y = arith.mulf %x, %x : f32
      affine.store %y, %out[%i, %j] : memref<1024x256xf32, strided<[0, 1]>>
    }
  }
  return
}

// -----

// The store that fills the scratch buffer runs only on even rows (under an affine.if), so
// an odd row reads the row before's value: not private, stays serial.
// CHECK-LABEL: func.func @scratch_maybe_unwritten
// CHECK:         affine.for
// CHECK-NOT:     accel_parallel_for
func.func @scratch_maybe_unwritten(%x: memref<1024x256xf32>, %out: memref<1024x256xf32>) {
  %t = memref.alloca() : memref<1xf32>
  affine.for %i = 0 to 1024 {
    affine.if affine_set<(d0) : (d0 mod 2 == 0)>(%i) {
      %v = affine.load %x[%i, 0] : memref<1024x256xf32>
      affine.store %v, %t[0] : memref<1xf32>
    }
    affine.for %j = 0 to 256 {
      %a = affine.load %x[%i, %j] : memref<1024x256xf32>
      %p = affine.load %t[0] : memref<1xf32>
      %b = arith.addf %a, %p : f32
      affine.store %b, %out[%i, %j] : memref<1024x256xf32>
    }
  }
  return
}

// -----

// A tiled transpose: the outer tile loop (step 8) is parallel because each of its
// iterations writes rows [%t, %t + 8) only (the inner loop's bounds follow %t).
// CHECK-LABEL: func.func @tiled_transpose
// CHECK:         call @tiled_transpose_par0
// CHECK:       func.func private @tiled_transpose_par0(
// CHECK:         %[[N:.*]] = arith.constant 88 : index
// CHECK:         call @accel_parallel_for(%{{.*}}, %{{.*}}, %[[N]])
// CHECK:       func.func private @tiled_transpose_par0_body(
// CHECK:         affine.for %{{.*}} = #{{.*}}()[%{{.*}}] to #{{.*}}()[%{{.*}}] step 8 {
func.func @tiled_transpose(%x: memref<1000x700xf32>, %y: memref<700x1000xf32>) {
  affine.for %t = 0 to 700 step 8 {
    affine.for %u = 0 to 1000 step 8 {
      affine.for %i = affine_map<(d0) -> (d0)>(%t) to min affine_map<(d0) -> (d0 + 8, 700)>(%t) {
        affine.for %j = affine_map<(d0) -> (d0)>(%u) to affine_map<(d0) -> (d0 + 8)>(%u) {
          %v = affine.load %x[%j, %i] : memref<1000x700xf32>
          affine.store %v, %y[%i, %j] : memref<700x1000xf32>
        }
      }
    }
  }
  return
}

// -----

// Tiles that overlap (rows [%t, %t + 16) at step 8): two iterations write the same rows,
// stays serial.
// CHECK-LABEL: func.func @overlapping_tiles
// CHECK:         affine.for
// CHECK-NOT:     accel_parallel_for
func.func @overlapping_tiles(%x: memref<1000x708xf32>, %y: memref<708x1000xf32>) {
  affine.for %t = 0 to 700 step 8 {
    affine.for %u = 0 to 1000 {
      affine.for %i = affine_map<(d0) -> (d0)>(%t) to affine_map<(d0) -> (d0 + 16)>(%t) {
        %v = affine.load %x[%u, %i] : memref<1000x708xf32>
        %w = affine.load %y[%i, %u] : memref<708x1000xf32>
        %s = arith.addf %v, %w : f32
        affine.store %s, %y[%i, %u] : memref<708x1000xf32>
      }
    }
  }
  return
}

// -----

// Two parallel nests in one function: two outlined loops, one runtime declaration.
// CHECK-LABEL: func.func @two_nests
// CHECK:         call @two_nests_par0
// CHECK:         call @two_nests_par1
// CHECK-COUNT-1: func.func private @accel_parallel_for
// CHECK-NOT:     func.func private @accel_parallel_for
func.func @two_nests(%a: memref<1024x256xf32>, %b: memref<1024x256xf32>, %c: memref<1024x256xf32>) {
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 256 {
      %x = affine.load %a[%i, %j] : memref<1024x256xf32>
      %y = arith.mulf %x, %x : f32
      affine.store %y, %b[%i, %j] : memref<1024x256xf32>
    }
  }
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 256 {
      %x = affine.load %b[%i, %j] : memref<1024x256xf32>
      %y = arith.addf %x, %x : f32
      affine.store %y, %c[%i, %j] : memref<1024x256xf32>
    }
  }
  return
}

// -----

// Two nests share one stack scratch buffer (affine fusion leaves such), each overwriting it
// before reading it in every iteration: the first gets a copy of its own, and both run in
// parallel, each thread with a private buffer (a CNN+BN train step's 2x2 pool backward).
// CHECK-LABEL: func.func @shared_scratch
// CHECK-NOT:     affine.for
// CHECK:         call @shared_scratch_par0(
// CHECK-NEXT:    call @shared_scratch_par1(
// CHECK:       func.func private @shared_scratch_par0_body(
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<32x32xf32>
// CHECK:       func.func private @shared_scratch_par1_body(
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<32x32xf32>
func.func @shared_scratch(%a: memref<64x32x32xf32>, %b: memref<64x32x32xf32>, %c: memref<64x32x32xf32>) {
  %s = memref.alloca() : memref<32x32xf32>
  affine.for %n = 0 to 64 {
    affine.for %i = 0 to 32 {
      affine.for %j = 0 to 32 {
        %x = affine.load %a[%n, %i, %j] : memref<64x32x32xf32>
        %y = arith.mulf %x, %x : f32
        affine.store %y, %s[%i, %j] : memref<32x32xf32>
      }
    }
    affine.for %i = 0 to 32 {
      affine.for %j = 0 to 32 {
        %y = affine.load %s[%i, %j] : memref<32x32xf32>
        %z = arith.addf %y, %y : f32
        affine.store %z, %b[%n, %i, %j] : memref<64x32x32xf32>
      }
    }
  }
  affine.for %n = 0 to 64 {
    affine.for %i = 0 to 32 {
      affine.for %j = 0 to 32 {
        %x = affine.load %b[%n, %i, %j] : memref<64x32x32xf32>
        %y = arith.subf %x, %x : f32
        affine.store %y, %s[%i, %j] : memref<32x32xf32>
      }
    }
    affine.for %i = 0 to 32 {
      affine.for %j = 0 to 32 {
        %y = affine.load %s[%i, %j] : memref<32x32xf32>
        %z = arith.mulf %y, %y : f32
        affine.store %z, %c[%n, %i, %j] : memref<64x32x32xf32>
      }
    }
  }
  return
}

// -----

// Negative: the second nest reads the scratch buffer before writing it (what the first
// nest's last iteration left): no copy, and both nests stay serial.
// CHECK-LABEL: func.func @scratch_flows_between_nests
// CHECK:         affine.for
// CHECK-NOT:     call @scratch_flows_between_nests_par
// CHECK:         return
func.func @scratch_flows_between_nests(%a: memref<64x32x32xf32>, %b: memref<64x32x32xf32>, %c: memref<64x32x32xf32>) {
  %s = memref.alloca() : memref<32x32xf32>
  affine.for %n = 0 to 64 {
    affine.for %i = 0 to 32 {
      affine.for %j = 0 to 32 {
        %x = affine.load %a[%n, %i, %j] : memref<64x32x32xf32>
        %y = arith.mulf %x, %x : f32
        affine.store %y, %s[%i, %j] : memref<32x32xf32>
      }
    }
    affine.for %i = 0 to 32 {
      affine.for %j = 0 to 32 {
        %y = affine.load %s[%i, %j] : memref<32x32xf32>
        affine.store %y, %b[%n, %i, %j] : memref<64x32x32xf32>
      }
    }
  }
  affine.for %n = 0 to 64 {
    affine.for %i = 0 to 32 {
      affine.for %j = 0 to 32 {
        %y = affine.load %s[%i, %j] : memref<32x32xf32>
        %x = affine.load %b[%n, %i, %j] : memref<64x32x32xf32>
        %z = arith.addf %x, %y : f32
        affine.store %z, %s[%i, %j] : memref<32x32xf32>
        affine.store %z, %c[%n, %i, %j] : memref<64x32x32xf32>
      }
    }
  }
  return
}
