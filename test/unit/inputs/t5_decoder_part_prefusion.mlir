func.func @main_part5(%arg0: memref<2x4x1x8xf32>, %arg1: memref<2x4x1x8xf32>, %arg2: memref<1x1x4xf32>, %arg3: memref<2x1x1x1xi1>, %arg4: memref<f32>, %arg5: memref<2x4x1x1xf32>, %arg6: memref<2x32xf32>, %arg7: memref<2x4x1x1xf32>, %arg8: memref<32x32xf32>, %arg9: memref<2x1x32xf32>, %arg10: memref<2x1x32xf32>, %arg11: memref<32xf32>, %arg12: memref<32x32xf32>, %arg13: memref<2x4x1x8xf32>, %arg14: memref<32x32xf32>, %arg15: memref<2x7x32xf32>, %arg16: memref<2x4x7x8xf32>, %arg17: memref<32x32xf32>, %arg18: memref<2x4x7x8xf32>, %arg19: memref<2x1x1x7xi1>, %arg20: memref<1x4x1x7xf32>, %arg21: memref<2x4x1x7xf32>, %arg22: memref<2x4x8x7xf32>, %arg23: memref<i8>) attributes {llvm.no_inline} {
  %c0 = arith.constant 0 : index
  %c1_i8 = arith.constant 1 : i8
  %cst = arith.constant 0.000000e+00 : f32
  %c0_i64 = arith.constant 0 : i64
  %cst_0 = arith.constant 0xFF800000 : f32
  %cst_1 = arith.constant 0xFFF0000000000000 : f64
  %true = arith.constant true
  %c2_i64 = arith.constant 2 : i64
  %cst_2 = arith.constant 3.125000e-02 : f32
  %cst_3 = arith.constant 9.9999999999999995E-7 : f64
  %expand_shape = memref.expand_shape %arg6 [[0], [1, 2, 3]] output_shape [2, 1, 4, 8] : memref<2x32xf32> into memref<2x1x4x8xf32>
  %collapse_shape = memref.collapse_shape %arg15 [[0, 1], [2]] : memref<2x7x32xf32> into memref<14x32xf32>
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<4x1x1xf32>
  %expand_shape_4 = memref.expand_shape %alloc [[0, 1], [2], [3]] output_shape [1, 4, 1, 1] : memref<4x1x1xf32> into memref<1x4x1x1xf32>
  %alloc_5 = memref.alloc() {alignment = 64 : i64} : memref<2x4x8x1xf32>
  %collapse_shape_6 = memref.collapse_shape %arg0 [[0, 1], [2], [3]] : memref<2x4x1x8xf32> into memref<8x1x8xf32>
  %collapse_shape_7 = memref.collapse_shape %alloc_5 [[0, 1], [2], [3]] : memref<2x4x8x1xf32> into memref<8x8x1xf32>
  %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<8x1x1xf32>
  %expand_shape_9 = memref.expand_shape %alloc_8 [[0, 1], [2], [3]] output_shape [2, 4, 1, 1] : memref<8x1x1xf32> into memref<2x4x1x1xf32>
  %alloc_10 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1x1xf32>
  %alloc_11 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1xi64>
  %alloc_12 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1xf32>
  %expand_shape_13 = memref.expand_shape %alloc_12 [[0], [1], [2, 3]] output_shape [2, 4, 1, 1] : memref<2x4x1xf32> into memref<2x4x1x1xf32>
  %alloc_14 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1x1xf32>
  %alloc_15 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1x1xf32>
  %alloc_16 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1x1xf32>
  %alloc_17 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1x1xf32>
  %alloc_18 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1x1xi1>
  %alloc_19 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1x1xi1>
  %alloc_20 = memref.alloc() {alignment = 64 : i64} : memref<2x4x1x1xf32>
  %collapse_shape_21 = memref.collapse_shape %alloc_20 [[0, 1], [2], [3]] : memref<2x4x1x1xf32> into memref<8x1x1xf32>
  %collapse_shape_22 = memref.collapse_shape %arg1 [[0, 1], [2], [3]] : memref<2x4x1x8xf32> into memref<8x1x8xf32>
  %alloc_23 = memref.alloc() {alignment = 64 : i64} : memref<8x1x8xf32>
  %expand_shape_24 = memref.expand_shape %alloc_23 [[0, 1], [2], [3]] output_shape [2, 4, 1, 8] : memref<8x1x8xf32> into memref<2x4x1x8xf32>
  %alloc_25 = memref.alloc() {alignment = 64 : i64} : memref<2x1x4x8xf32>
  %alloc_26 = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %collapse_shape_27 = memref.collapse_shape %alloc_25 [[0], [1, 2, 3]] : memref<2x1x4x8xf32> into memref<2x32xf32>
  %alloc_28 = memref.alloc() {alignment = 64 : i64} : memref<2x32xf32>
  %expand_shape_29 = memref.expand_shape %alloc_28 [[0], [1, 2]] output_shape [2, 1, 32] : memref<2x32xf32> into memref<2x1x32xf32>
  %alloc_30 = memref.alloc() {alignment = 64 : i64} : memref<2x1x32xf32>
  %alloc_31 = memref.alloc() {alignment = 64 : i64} : memref<2x1x1xf32>
  %alloc_32 = memref.alloc() {alignment = 64 : i64} : memref<2x1x1xf32>
  %alloc_33 = memref.alloc() {alignment = 64 : i64} : memref<2x1x1xf32>
  %alloc_34 = memref.alloc() {alignment = 64 : i64} : memref<2x1x1xf32>
  %alloc_35 = memref.alloc() {alignment = 64 : i64} : memref<2x1x32xf32>
  %alloc_36 = memref.alloc() {alignment = 64 : i64} : memref<2x1x32xf32>
  %alloc_37 = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %collapse_shape_38 = memref.collapse_shape %alloc_36 [[0], [1, 2]] : memref<2x1x32xf32> into memref<2x32xf32>
  %alloc_39 = memref.alloc() {alignment = 64 : i64} : memref<2x32xf32>
  %expand_shape_40 = memref.expand_shape %alloc_39 [[0], [1, 2, 3]] output_shape [2, 1, 4, 8] : memref<2x32xf32> into memref<2x1x4x8xf32>
  %alloc_41 = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %alloc_42 = memref.alloc() {alignment = 64 : i64} : memref<14x32xf32>
  %expand_shape_43 = memref.expand_shape %alloc_42 [[0, 1], [2, 3]] output_shape [2, 7, 4, 8] : memref<14x32xf32> into memref<2x7x4x8xf32>
  %alloc_44 = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %alloc_45 = memref.alloc() {alignment = 64 : i64} : memref<14x32xf32>
  %expand_shape_46 = memref.expand_shape %alloc_45 [[0, 1], [2, 3]] output_shape [2, 7, 4, 8] : memref<14x32xf32> into memref<2x7x4x8xf32>
  affine.for %arg24 = 0 to 4 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 1 {
        %0 = affine.load %arg2[%arg25, %arg26, %arg24] : memref<1x1x4xf32>
        affine.store %0, %alloc[%arg24, %arg25, %arg26] : memref<4x1x1xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %arg3[%arg24, %c0, %arg26, %arg27] : memref<2x1x1x1xi1>
          %1 = affine.load %expand_shape_4[%c0, %arg25, %arg26, %arg27] : memref<1x4x1x1xf32>
          %2 = affine.load %arg4[] : memref<f32>
          %3 = arith.select %0, %1, %2 : f32
          affine.store %3, %arg5[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 8 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %expand_shape[%arg24, %arg27, %arg25, %arg26] : memref<2x1x4x8xf32>
          affine.store %0, %alloc_5[%arg24, %arg25, %arg26, %arg27] : memref<2x4x8x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 8 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 1 {
        affine.store %cst, %alloc_8[%arg24, %arg25, %arg26] : memref<8x1x1xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 8 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 8 {
          %0 = affine.load %collapse_shape_6[%arg24, %arg25, %arg27] : memref<8x1x8xf32>
          %1 = affine.load %collapse_shape_7[%arg24, %arg27, %arg26] : memref<8x8x1xf32>
          %2 = affine.load %alloc_8[%arg24, %arg25, %arg26] : memref<8x1x1xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
          affine.store %4, %alloc_8[%arg24, %arg25, %arg26] : memref<8x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %expand_shape_9[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %1 = affine.load %arg5[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %alloc_10[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.store %c0_i64, %alloc_11[%arg24, %arg25, %arg26] : memref<2x4x1xi64>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.store %cst_0, %alloc_12[%arg24, %arg25, %arg26] : memref<2x4x1xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %alloc_10[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %1 = affine.load %alloc_12[%arg24, %arg25, %arg26] : memref<2x4x1xf32>
          %2 = affine.load %alloc_11[%arg24, %arg25, %arg26] : memref<2x4x1xi64>
          %3 = arith.maximumf %0, %1 : f32
          %4 = arith.cmpf ogt, %0, %1 : f32
          %5 = arith.select %4, %c0_i64, %2 : i64
          affine.store %3, %alloc_12[%arg24, %arg25, %arg26] : memref<2x4x1xf32>
          affine.store %5, %alloc_11[%arg24, %arg25, %arg26] : memref<2x4x1xi64>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %alloc_10[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %1 = affine.load %expand_shape_13[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %2 = arith.subf %0, %1 : f32
          affine.store %2, %alloc_14[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %alloc_14[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %1 = math.exp %0 : f32
          affine.store %1, %alloc_15[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          affine.store %cst, %alloc_16[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %alloc_15[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %1 = affine.load %alloc_16[%arg24, %arg25, %arg26, %c0] : memref<2x4x1x1xf32>
          %2 = arith.addf %0, %1 fastmath<reassoc,contract> : f32
          affine.store %2, %alloc_16[%arg24, %arg25, %arg26, %c0] : memref<2x4x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %alloc_15[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %1 = affine.load %alloc_16[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %2 = arith.divf %0, %1 : f32
          affine.store %2, %alloc_17[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %alloc_10[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %1 = arith.extf %0 : f32 to f64
          %2 = arith.cmpf oeq, %1, %cst_1 : f64
          affine.store %2, %alloc_18[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xi1>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          affine.store %true, %alloc_19[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xi1>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %alloc_18[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xi1>
          %1 = affine.load %alloc_19[%arg24, %arg25, %arg26, %c0] : memref<2x4x1x1xi1>
          %2 = arith.andi %0, %1 : i1
          affine.store %2, %alloc_19[%arg24, %arg25, %arg26, %c0] : memref<2x4x1x1xi1>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %alloc_19[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xi1>
          %1 = affine.load %arg7[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %2 = affine.load %alloc_17[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
          %3 = arith.select %0, %1, %2 : f32
          affine.store %3, %alloc_20[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x1xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 8 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 8 {
        affine.store %cst, %alloc_23[%arg24, %arg25, %arg26] : memref<8x1x8xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 8 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 8 {
        affine.for %arg27 = 0 to 1 {
          %0 = affine.load %collapse_shape_21[%arg24, %arg25, %arg27] : memref<8x1x1xf32>
          %1 = affine.load %collapse_shape_22[%arg24, %arg27, %arg26] : memref<8x1x8xf32>
          %2 = affine.load %alloc_23[%arg24, %arg25, %arg26] : memref<8x1x8xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
          affine.store %4, %alloc_23[%arg24, %arg25, %arg26] : memref<8x1x8xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 4 {
        affine.for %arg27 = 0 to 8 {
          %0 = affine.load %expand_shape_24[%arg24, %arg26, %arg25, %arg27] : memref<2x4x1x8xf32>
          affine.store %0, %alloc_25[%arg24, %arg25, %arg26, %arg27] : memref<2x1x4x8xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 32 {
    affine.for %arg25 = 0 to 32 {
      %0 = affine.load %arg8[%arg25, %arg24] : memref<32x32xf32>
      affine.store %0, %alloc_26[%arg24, %arg25] : memref<32x32xf32>
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 32 {
      affine.store %cst, %alloc_28[%arg24, %arg25] : memref<2x32xf32>
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 32 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %collapse_shape_27[%arg24, %arg26] : memref<2x32xf32>
        %1 = affine.load %alloc_26[%arg26, %arg25] : memref<32x32xf32>
        %2 = affine.load %alloc_28[%arg24, %arg25] : memref<2x32xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
        affine.store %4, %alloc_28[%arg24, %arg25] : memref<2x32xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %arg9[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
        %1 = affine.load %expand_shape_29[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %arg10[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %arg10[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
        %1 = math.fpowi %0, %c2_i64 : f32, i64
        affine.store %1, %alloc_30[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 1 {
        affine.store %cst, %alloc_31[%arg24, %arg25, %arg26] : memref<2x1x1xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %alloc_30[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
        %1 = affine.load %alloc_31[%arg24, %arg25, %c0] : memref<2x1x1xf32>
        %2 = arith.addf %0, %1 fastmath<reassoc,contract> : f32
        affine.store %2, %alloc_31[%arg24, %arg25, %c0] : memref<2x1x1xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 1 {
        %0 = affine.load %alloc_31[%arg24, %arg25, %arg26] : memref<2x1x1xf32>
        %1 = arith.mulf %0, %cst_2 : f32
        affine.store %1, %alloc_32[%arg24, %arg25, %arg26] : memref<2x1x1xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 1 {
        %0 = affine.load %alloc_32[%arg24, %arg25, %arg26] : memref<2x1x1xf32>
        %1 = arith.truncf %cst_3 : f64 to f32
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %alloc_33[%arg24, %arg25, %arg26] : memref<2x1x1xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 1 {
        %0 = affine.load %alloc_33[%arg24, %arg25, %arg26] : memref<2x1x1xf32>
        %1 = math.rsqrt %0 : f32
        affine.store %1, %alloc_34[%arg24, %arg25, %arg26] : memref<2x1x1xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %arg10[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
        %1 = affine.load %alloc_34[%arg24, %arg25, %c0] : memref<2x1x1xf32>
        %2 = arith.mulf %0, %1 : f32
        affine.store %2, %alloc_35[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 1 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %arg11[%arg26] : memref<32xf32>
        %1 = affine.load %alloc_35[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
        %2 = arith.mulf %0, %1 : f32
        affine.store %2, %alloc_36[%arg24, %arg25, %arg26] : memref<2x1x32xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 32 {
    affine.for %arg25 = 0 to 32 {
      %0 = affine.load %arg12[%arg25, %arg24] : memref<32x32xf32>
      affine.store %0, %alloc_37[%arg24, %arg25] : memref<32x32xf32>
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 32 {
      affine.store %cst, %alloc_39[%arg24, %arg25] : memref<2x32xf32>
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 32 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %collapse_shape_38[%arg24, %arg26] : memref<2x32xf32>
        %1 = affine.load %alloc_37[%arg26, %arg25] : memref<32x32xf32>
        %2 = affine.load %alloc_39[%arg24, %arg25] : memref<2x32xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
        affine.store %4, %alloc_39[%arg24, %arg25] : memref<2x32xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 8 {
          %0 = affine.load %expand_shape_40[%arg24, %arg26, %arg25, %arg27] : memref<2x1x4x8xf32>
          affine.store %0, %arg13[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x8xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 32 {
    affine.for %arg25 = 0 to 32 {
      %0 = affine.load %arg14[%arg25, %arg24] : memref<32x32xf32>
      affine.store %0, %alloc_41[%arg24, %arg25] : memref<32x32xf32>
    }
  }
  affine.for %arg24 = 0 to 14 {
    affine.for %arg25 = 0 to 32 {
      affine.store %cst, %alloc_42[%arg24, %arg25] : memref<14x32xf32>
    }
  }
  affine.for %arg24 = 0 to 14 {
    affine.for %arg25 = 0 to 32 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %collapse_shape[%arg24, %arg26] : memref<14x32xf32>
        %1 = affine.load %alloc_41[%arg26, %arg25] : memref<32x32xf32>
        %2 = affine.load %alloc_42[%arg24, %arg25] : memref<14x32xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
        affine.store %4, %alloc_42[%arg24, %arg25] : memref<14x32xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 7 {
        affine.for %arg27 = 0 to 8 {
          %0 = affine.load %expand_shape_43[%arg24, %arg26, %arg25, %arg27] : memref<2x7x4x8xf32>
          affine.store %0, %arg16[%arg24, %arg25, %arg26, %arg27] : memref<2x4x7x8xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 32 {
    affine.for %arg25 = 0 to 32 {
      %0 = affine.load %arg17[%arg25, %arg24] : memref<32x32xf32>
      affine.store %0, %alloc_44[%arg24, %arg25] : memref<32x32xf32>
    }
  }
  affine.for %arg24 = 0 to 14 {
    affine.for %arg25 = 0 to 32 {
      affine.store %cst, %alloc_45[%arg24, %arg25] : memref<14x32xf32>
    }
  }
  affine.for %arg24 = 0 to 14 {
    affine.for %arg25 = 0 to 32 {
      affine.for %arg26 = 0 to 32 {
        %0 = affine.load %collapse_shape[%arg24, %arg26] : memref<14x32xf32>
        %1 = affine.load %alloc_44[%arg26, %arg25] : memref<32x32xf32>
        %2 = affine.load %alloc_45[%arg24, %arg25] : memref<14x32xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 fastmath<reassoc,contract> : f32
        affine.store %4, %alloc_45[%arg24, %arg25] : memref<14x32xf32>
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 7 {
        affine.for %arg27 = 0 to 8 {
          %0 = affine.load %expand_shape_46[%arg24, %arg26, %arg25, %arg27] : memref<2x7x4x8xf32>
          affine.store %0, %arg18[%arg24, %arg25, %arg26, %arg27] : memref<2x4x7x8xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 1 {
        affine.for %arg27 = 0 to 7 {
          %0 = affine.load %arg19[%arg24, %c0, %arg26, %arg27] : memref<2x1x1x7xi1>
          %1 = affine.load %arg20[%c0, %arg25, %arg26, %arg27] : memref<1x4x1x7xf32>
          %2 = affine.load %arg4[] : memref<f32>
          %3 = arith.select %0, %1, %2 : f32
          affine.store %3, %arg21[%arg24, %arg25, %arg26, %arg27] : memref<2x4x1x7xf32>
        }
      }
    }
  }
  affine.for %arg24 = 0 to 2 {
    affine.for %arg25 = 0 to 4 {
      affine.for %arg26 = 0 to 8 {
        affine.for %arg27 = 0 to 7 {
          %0 = affine.load %expand_shape_43[%arg24, %arg27, %arg25, %arg26] : memref<2x7x4x8xf32>
          affine.store %0, %arg22[%arg24, %arg25, %arg26, %arg27] : memref<2x4x8x7xf32>
        }
      }
    }
  }
  affine.store %c1_i8, %arg23[] : memref<i8>
  return
}