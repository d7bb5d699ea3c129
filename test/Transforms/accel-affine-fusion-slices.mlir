// RUN: accel-opt %s -accel-affine-fusion | FileCheck %s

// Guard 4 (passes/_fusion_slices.py). The second part of a 2-layer GPT-2 (width 32, 2
// heads, batch 2 x 5 tokens): attention projection, MLP, the next layer's LayerNorm and
// its QKV projection into a 10x96 buffer, read as three column ranges (the key cache and
// the transposed key from 32..64, the value cache from 64..96, the query from 0..32).
// MLIR's fusion computed the projection inside the key nest for that nest's 32 columns
// only and removed it, so the value and query nests read memory nothing had written (HF
// generation's value cache came out wrong). The guard rejects that fused form; fusion then
// runs again with the buffer's writer (the bias add into the 10x96 buffer) a call it cannot
// slice: the three readers read it whole, and no loop is sliced.
// test_fusion_slices.py checks that without the guard this input does fuse that way.
// CHECK-LABEL: func.func @gpt2_qkv_part
// CHECK-NOT:     to #map{{[0-9]*}}(%
// CHECK:         call @gpt2_qkv_part_nest{{[0-9]+}}(%{{.*}}, %{{.*}}, %[[QKV:.*]]) : (memref<10x96xf32>, memref<96xf32>, memref<10x96xf32>) -> ()
// CHECK-COUNT-3: affine.load %[[QKV]][
// CHECK-NOT:     to #map{{[0-9]*}}(%
// CHECK:         return
// CHECK:       func.func private @gpt2_qkv_part_nest{{[0-9]+}}
// CHECK:         affine.for %{{.*}} = 0 to 10 {
// CHECK-NEXT:      affine.for %{{.*}} = 0 to 96 {
module {
  func.func @gpt2_qkv_part(%arg0: memref<4x5x16xf32>, %arg1: memref<32x32xf32>, %arg2: memref<32xf32>, %arg3: memref<2x5x32xf32>, %arg4: memref<32xf32>, %arg5: memref<32xf32>, %arg6: memref<32x128xf32>, %arg7: memref<128xf32>, %arg8: memref<128x32xf32>, %arg9: memref<32xf32>, %arg10: memref<2x5x32xf32>, %arg11: memref<32xf32>, %arg12: memref<32xf32>, %arg13: memref<32x96xf32>, %arg14: memref<96xf32>, %arg15: memref<2x2x5x16xf32>, %arg16: memref<2x2x5x16xf32>, %arg17: memref<2x2x5x16xf32>, %arg18: memref<2x2x16x5xf32>, %arg19: memref<i8>) {
    %c0 = arith.constant 0 : index
    %c1_i8 = arith.constant 1 : i8
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0.000000e+00 : f64
    %cst_1 = arith.constant 3.125000e-02 : f64
    %cst_2 = arith.constant 1.000000e-05 : f64
    %cst_3 = arith.constant 5.000000e-01 : f32
    %c3_i64 = arith.constant 3 : i64
    %cst_4 = arith.constant 4.471500e-02 : f64
    %cst_5 = arith.constant 0.79788456080286541 : f64
    %cst_6 = arith.constant 1.000000e+00 : f32
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x5x2x16xf32>
    %alloc_7 = memref.alloc() {alignment = 64 : i64} : memref<10x32xf32>
    %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<10x32xf32>
    %alloc_9 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_10 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf64>
    %alloc_11 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf64>
    %alloc_12 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf32>
    %alloc_13 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_14 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_15 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf64>
    %alloc_16 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf64>
    %alloc_17 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf32>
    %alloc_18 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf32>
    %alloc_19 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf32>
    %alloc_20 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_21 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_22 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_23 = memref.alloc() {alignment = 64 : i64} : memref<10x128xf32>
    %alloc_24 = memref.alloc() {alignment = 64 : i64} : memref<10x128xf32>
    %alloc_25 = memref.alloc() {alignment = 64 : i64} : memref<2x5x128xf32>
    %alloc_26 = memref.alloc() {alignment = 64 : i64} : memref<2x5x128xf32>
    %alloc_27 = memref.alloc() {alignment = 64 : i64} : memref<2x5x128xf32>
    %alloc_28 = memref.alloc() {alignment = 64 : i64} : memref<2x5x128xf32>
    %alloc_29 = memref.alloc() {alignment = 64 : i64} : memref<2x5x128xf32>
    %alloc_30 = memref.alloc() {alignment = 64 : i64} : memref<2x5x128xf32>
    %alloc_31 = memref.alloc() {alignment = 64 : i64} : memref<2x5x128xf32>
    %alloc_32 = memref.alloc() {alignment = 64 : i64} : memref<2x5x128xf32>
    %alloc_33 = memref.alloc() {alignment = 64 : i64} : memref<10x32xf32>
    %alloc_34 = memref.alloc() {alignment = 64 : i64} : memref<10x32xf32>
    %alloc_35 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf64>
    %alloc_36 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf64>
    %alloc_37 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf32>
    %alloc_38 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_39 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_40 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf64>
    %alloc_41 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf64>
    %alloc_42 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf32>
    %alloc_43 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf32>
    %alloc_44 = memref.alloc() {alignment = 64 : i64} : memref<2x5x1xf32>
    %alloc_45 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_46 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_47 = memref.alloc() {alignment = 64 : i64} : memref<2x5x32xf32>
    %alloc_48 = memref.alloc() {alignment = 64 : i64} : memref<10x96xf32>
    %alloc_49 = memref.alloc() {alignment = 64 : i64} : memref<10x96xf32>
    %alloc_50 = memref.alloc() {alignment = 64 : i64} : memref<2x2x5x16xf32>
    %alloc_51 = memref.alloc() {alignment = 64 : i64} : memref<2x2x16x5xf32>
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 2 {
          affine.for %arg23 = 0 to 16 {
            %0 = affine.load %arg0[%arg20 * 2 + %arg22, %arg21, %arg23] : memref<4x5x16xf32>
            affine.store %0, %alloc[%arg20, %arg21, %arg22, %arg23] : memref<2x5x2x16xf32>
          }
        }
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 32 {
        affine.store %cst, %alloc_7[%arg20, %arg21] : memref<10x32xf32>
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 32 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc[%arg20 floordiv 5, %arg20 mod 5, %arg22 floordiv 16, %arg22 mod 16] : memref<2x5x2x16xf32>
          %1 = affine.load %arg1[%arg22, %arg21] : memref<32x32xf32>
          %2 = affine.load %alloc_7[%arg20, %arg21] : memref<10x32xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
          affine.store %4, %alloc_7[%arg20, %arg21] : memref<10x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 32 {
        %0 = affine.load %alloc_7[%arg20, %arg21] : memref<10x32xf32>
        %1 = affine.load %arg2[%arg21] : memref<32xf32>
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %alloc_8[%arg20, %arg21] : memref<10x32xf32>
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_8[%arg20 * 5 + %arg21, %arg22] : memref<10x32xf32>
          %1 = affine.load %arg3[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %alloc_9[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          affine.store %cst_0, %alloc_10[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_9[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_10[%arg20, %arg21, %c0] : memref<2x5x1xf64>
          %2 = arith.extf %0 : f32 to f64
          %3 = arith.addf %2, %1 fastmath<reassoc,contract> : f64
          affine.store %3, %alloc_10[%arg20, %arg21, %c0] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_10[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
          %1 = arith.mulf %0, %cst_1 : f64
          affine.store %1, %alloc_11[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_11[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
          %1 = arith.truncf %0 : f64 to f32
          affine.store %1, %alloc_12[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_9[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_12[%arg20, %arg21, %c0] : memref<2x5x1xf32>
          %2 = arith.subf %0, %1 : f32
          affine.store %2, %alloc_13[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_13[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_13[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_14[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          affine.store %cst_0, %alloc_15[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_14[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_15[%arg20, %arg21, %c0] : memref<2x5x1xf64>
          %2 = arith.extf %0 : f32 to f64
          %3 = arith.addf %2, %1 fastmath<reassoc,contract> : f64
          affine.store %3, %alloc_15[%arg20, %arg21, %c0] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_15[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
          %1 = arith.mulf %0, %cst_1 : f64
          affine.store %1, %alloc_16[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_16[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
          %1 = arith.truncf %0 : f64 to f32
          affine.store %1, %alloc_17[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_17[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
          %1 = arith.truncf %cst_2 : f64 to f32
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %alloc_18[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_18[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
          %1 = math.rsqrt %0 : f32
          affine.store %1, %alloc_19[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_13[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_19[%arg20, %arg21, %c0] : memref<2x5x1xf32>
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_20[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_20[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %arg4[%arg22] : memref<32xf32>
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_21[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_21[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %arg5[%arg22] : memref<32xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %alloc_22[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 128 {
        affine.store %cst, %alloc_23[%arg20, %arg21] : memref<10x128xf32>
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 128 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_22[%arg20 floordiv 5, %arg20 mod 5, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %arg6[%arg22, %arg21] : memref<32x128xf32>
          %2 = affine.load %alloc_23[%arg20, %arg21] : memref<10x128xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
          affine.store %4, %alloc_23[%arg20, %arg21] : memref<10x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 128 {
        %0 = affine.load %alloc_23[%arg20, %arg21] : memref<10x128xf32>
        %1 = affine.load %arg7[%arg21] : memref<128xf32>
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %alloc_24[%arg20, %arg21] : memref<10x128xf32>
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_24[%arg20 * 5 + %arg21, %arg22] : memref<10x128xf32>
          %1 = arith.mulf %0, %cst_3 : f32
          affine.store %1, %alloc_25[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_24[%arg20 * 5 + %arg21, %arg22] : memref<10x128xf32>
          %1 = math.fpowi %0, %c3_i64 : f32, i64
          affine.store %1, %alloc_26[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_26[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
          %1 = arith.truncf %cst_4 : f64 to f32
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_27[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_24[%arg20 * 5 + %arg21, %arg22] : memref<10x128xf32>
          %1 = affine.load %alloc_27[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %alloc_28[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_28[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
          %1 = arith.truncf %cst_5 : f64 to f32
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_29[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_29[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
          %1 = math.tanh %0 : f32
          affine.store %1, %alloc_30[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_30[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
          %1 = arith.addf %0, %cst_6 : f32
          affine.store %1, %alloc_31[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_25[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
          %1 = affine.load %alloc_31[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_32[%arg20, %arg21, %arg22] : memref<2x5x128xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 32 {
        affine.store %cst, %alloc_33[%arg20, %arg21] : memref<10x32xf32>
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 32 {
        affine.for %arg22 = 0 to 128 {
          %0 = affine.load %alloc_32[%arg20 floordiv 5, %arg20 mod 5, %arg22] : memref<2x5x128xf32>
          %1 = affine.load %arg8[%arg22, %arg21] : memref<128x32xf32>
          %2 = affine.load %alloc_33[%arg20, %arg21] : memref<10x32xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
          affine.store %4, %alloc_33[%arg20, %arg21] : memref<10x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 32 {
        %0 = affine.load %alloc_33[%arg20, %arg21] : memref<10x32xf32>
        %1 = affine.load %arg9[%arg21] : memref<32xf32>
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %alloc_34[%arg20, %arg21] : memref<10x32xf32>
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_9[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_34[%arg20 * 5 + %arg21, %arg22] : memref<10x32xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %arg10[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          affine.store %cst_0, %alloc_35[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %arg10[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_35[%arg20, %arg21, %c0] : memref<2x5x1xf64>
          %2 = arith.extf %0 : f32 to f64
          %3 = arith.addf %2, %1 fastmath<reassoc,contract> : f64
          affine.store %3, %alloc_35[%arg20, %arg21, %c0] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_35[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
          %1 = arith.mulf %0, %cst_1 : f64
          affine.store %1, %alloc_36[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_36[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
          %1 = arith.truncf %0 : f64 to f32
          affine.store %1, %alloc_37[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %arg10[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_37[%arg20, %arg21, %c0] : memref<2x5x1xf32>
          %2 = arith.subf %0, %1 : f32
          affine.store %2, %alloc_38[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_38[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_38[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_39[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          affine.store %cst_0, %alloc_40[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_39[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_40[%arg20, %arg21, %c0] : memref<2x5x1xf64>
          %2 = arith.extf %0 : f32 to f64
          %3 = arith.addf %2, %1 fastmath<reassoc,contract> : f64
          affine.store %3, %alloc_40[%arg20, %arg21, %c0] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_40[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
          %1 = arith.mulf %0, %cst_1 : f64
          affine.store %1, %alloc_41[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_41[%arg20, %arg21, %arg22] : memref<2x5x1xf64>
          %1 = arith.truncf %0 : f64 to f32
          affine.store %1, %alloc_42[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_42[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
          %1 = arith.truncf %cst_2 : f64 to f32
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %alloc_43[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 1 {
          %0 = affine.load %alloc_43[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
          %1 = math.rsqrt %0 : f32
          affine.store %1, %alloc_44[%arg20, %arg21, %arg22] : memref<2x5x1xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_38[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %alloc_44[%arg20, %arg21, %c0] : memref<2x5x1xf32>
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_45[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_45[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %arg11[%arg22] : memref<32xf32>
          %2 = arith.mulf %0, %1 : f32
          affine.store %2, %alloc_46[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 5 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_46[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %arg12[%arg22] : memref<32xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %alloc_47[%arg20, %arg21, %arg22] : memref<2x5x32xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 96 {
        affine.store %cst, %alloc_48[%arg20, %arg21] : memref<10x96xf32>
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 96 {
        affine.for %arg22 = 0 to 32 {
          %0 = affine.load %alloc_47[%arg20 floordiv 5, %arg20 mod 5, %arg22] : memref<2x5x32xf32>
          %1 = affine.load %arg13[%arg22, %arg21] : memref<32x96xf32>
          %2 = affine.load %alloc_48[%arg20, %arg21] : memref<10x96xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
          affine.store %4, %alloc_48[%arg20, %arg21] : memref<10x96xf32>
        }
      }
    }
    affine.for %arg20 = 0 to 10 {
      affine.for %arg21 = 0 to 96 {
        %0 = affine.load %alloc_48[%arg20, %arg21] : memref<10x96xf32>
        %1 = affine.load %arg14[%arg21] : memref<96xf32>
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %alloc_49[%arg20, %arg21] : memref<10x96xf32>
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 2 {
        affine.for %arg22 = 0 to 5 {
          affine.for %arg23 = 0 to 16 {
            %0 = affine.load %alloc_49[%arg20 * 5 + %arg22, %arg21 * 16 + %arg23 + 32] : memref<10x96xf32>
            affine.store %0, %arg15[%arg20, %arg21, %arg22, %arg23] : memref<2x2x5x16xf32>
          }
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 2 {
        affine.for %arg22 = 0 to 5 {
          affine.for %arg23 = 0 to 16 {
            %0 = affine.load %alloc_49[%arg20 * 5 + %arg22, %arg21 * 16 + %arg23 + 64] : memref<10x96xf32>
            affine.store %0, %arg16[%arg20, %arg21, %arg22, %arg23] : memref<2x2x5x16xf32>
          }
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 2 {
        affine.for %arg22 = 0 to 5 {
          affine.for %arg23 = 0 to 16 {
            %0 = affine.load %alloc_49[%arg20 * 5 + %arg22, %arg21 * 16 + %arg23] : memref<10x96xf32>
            affine.store %0, %alloc_50[%arg20, %arg21, %arg22, %arg23] : memref<2x2x5x16xf32>
          }
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 2 {
        affine.for %arg22 = 0 to 5 {
          affine.for %arg23 = 0 to 16 {
            %0 = affine.load %alloc_50[%arg20, %arg21, %arg22, %arg23] : memref<2x2x5x16xf32>
            %1 = arith.mulf %0, %cst_3 : f32
            affine.store %1, %arg17[%arg20, %arg21, %arg22, %arg23] : memref<2x2x5x16xf32>
          }
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 2 {
        affine.for %arg22 = 0 to 16 {
          affine.for %arg23 = 0 to 5 {
            %0 = affine.load %alloc_49[%arg20 * 5 + %arg23, %arg21 * 16 + %arg22 + 32] : memref<10x96xf32>
            affine.store %0, %alloc_51[%arg20, %arg21, %arg22, %arg23] : memref<2x2x16x5xf32>
          }
        }
      }
    }
    affine.for %arg20 = 0 to 2 {
      affine.for %arg21 = 0 to 2 {
        affine.for %arg22 = 0 to 16 {
          affine.for %arg23 = 0 to 5 {
            %0 = affine.load %alloc_51[%arg20, %arg21, %arg22, %arg23] : memref<2x2x16x5xf32>
            %1 = arith.mulf %0, %cst_3 : f32
            affine.store %1, %arg18[%arg20, %arg21, %arg22, %arg23] : memref<2x2x16x5xf32>
          }
        }
      }
    }
    affine.store %c1_i8, %arg19[] : memref<i8>
    return
  }
}
