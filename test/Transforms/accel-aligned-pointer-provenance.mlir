// RUN: accel-opt %s --split-input-file -accel-aligned-pointer-provenance | FileCheck %s

// The aligned pointer of a malloc'ed buffer (finalize-memref-to-llvm's idiom) becomes a GEP
// from malloc's result by the same byte offset; the integer arithmetic stays for the GEP.
// CHECK-LABEL: llvm.func @aligned
// CHECK:         %[[P:.*]] = llvm.call @malloc
// CHECK:         %[[I:.*]] = llvm.ptrtoint %[[P]] : !llvm.ptr to i64
// CHECK:         %[[B:.*]] = llvm.add %[[I]], %{{.*}} : i64
// CHECK:         %[[R:.*]] = llvm.urem %[[B]], %{{.*}} : i64
// CHECK:         %[[A:.*]] = llvm.sub %[[B]], %[[R]] : i64
// CHECK:         %[[D:.*]] = llvm.sub %[[A]], %[[I]] : i64
// CHECK:         %[[Q:.*]] = llvm.getelementptr %[[P]][%[[D]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NOT:     llvm.inttoptr
// CHECK:         llvm.return %[[Q]]
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @aligned(%bytes: i64) -> !llvm.ptr {
  %align = llvm.mlir.constant(64 : i64) : i64
  %bump = llvm.mlir.constant(63 : i64) : i64
  %p = llvm.call @malloc(%bytes) : (i64) -> !llvm.ptr
  %i = llvm.ptrtoint %p : !llvm.ptr to i64
  %b = llvm.add %i, %bump : i64
  %r = llvm.urem %b, %align : i64
  %a = llvm.sub %b, %r : i64
  %q = llvm.inttoptr %a : i64 to !llvm.ptr
  llvm.return %q : !llvm.ptr
}

// -----

// Negative: an integer not derived from a pointer by the alignment idiom (here an offset
// added without the remainder) keeps its inttoptr: its object is unknown.
// CHECK-LABEL: llvm.func @other
// CHECK:         llvm.inttoptr
// CHECK-NOT:     llvm.getelementptr
llvm.func @other(%p: !llvm.ptr, %n: i64) -> !llvm.ptr {
  %i = llvm.ptrtoint %p : !llvm.ptr to i64
  %b = llvm.add %i, %n : i64
  %a = llvm.sub %b, %n : i64
  %q = llvm.inttoptr %a : i64 to !llvm.ptr
  llvm.return %q : !llvm.ptr
}

// -----

// Negative: the remainder of a different value than the bumped address is not alignment.
// CHECK-LABEL: llvm.func @mismatched
// CHECK:         llvm.inttoptr
// CHECK-NOT:     llvm.getelementptr
llvm.func @mismatched(%p: !llvm.ptr, %n: i64) -> !llvm.ptr {
  %align = llvm.mlir.constant(64 : i64) : i64
  %i = llvm.ptrtoint %p : !llvm.ptr to i64
  %b = llvm.add %i, %n : i64
  %r = llvm.urem %n, %align : i64
  %a = llvm.sub %b, %r : i64
  %q = llvm.inttoptr %a : i64 to !llvm.ptr
  llvm.return %q : !llvm.ptr
}

// -----

// Negative: a pointer of another address space (GPU shared memory, say) is left alone.
// CHECK-LABEL: llvm.func @address_space
// CHECK:         llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
llvm.func @address_space(%p: !llvm.ptr, %bump: i64, %align: i64) -> !llvm.ptr<3> {
  %i = llvm.ptrtoint %p : !llvm.ptr to i64
  %b = llvm.add %i, %bump : i64
  %r = llvm.urem %b, %align : i64
  %a = llvm.sub %b, %r : i64
  %q = llvm.inttoptr %a : i64 to !llvm.ptr<3>
  llvm.return %q : !llvm.ptr<3>
}
