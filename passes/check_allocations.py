"""`accel-check-allocations`: a failed heap allocation reports its size and returns.

Why: `finalize-memref-to-llvm` lowers `memref.alloc` to `malloc` and uses the pointer
unchecked, so an allocation the system cannot serve (a 200000 x 200000 f32 result asks for
160 GB) wrote through NULL: SIGSEGV in the user's process. After this pass each
`memref.alloc` directly in a function body (run it after `convert-scf-to-cf`) is checked:

    %m = memref.alloc(%n) : memref<?x4xf32>      %m = memref.alloc(%n) : memref<?x4xf32>
    <rest of block>                        ->    %p = memref.extract_aligned_pointer_as_index %m
                                                 %bytes = %n * 16
                                                 cf.cond_br (%p != 0 || %bytes == 0), ^ok, ^fail
                                               ^ok: <rest of block>
                                               ^fail:
                                                 call @__accel_alloc_fail(%bytes : i64)
                                                 return <poison for each result>

The runtime provides `__accel_alloc_fail` (the JIT raises `MemoryError` naming the size
after the call returns, an AOT library returns status 3); on a worker thread of the
parallel runtime the failure reaches the calling thread. Buffers allocated earlier in the
call are not freed on this path.

`memref.alloca` (stack) cannot fail cleanly at all: a buffer larger than the thread's stack
moves the stack pointer past its guard page and the first write is a SIGSEGV. Each
`memref.alloca` directly in a function body larger than `STACK_LIMIT` bytes (its size
checked before it, at run time for dynamic sizes) takes the same reporting path instead
(`MemoryError` naming the size: use `memref.alloc` for large buffers). Not covered: allocas
nested in other regions (`memref.alloca_scope`, loops not yet lowered to branches) and
the sum of many small allocas executed in a loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.assert_to_error_return import ensure_declaration, split_on_failure
from accel.passes.base import ModulePass, ops_named, register_pass
from accel.runtime.symbols import ALLOC_FAIL_SYMBOL

#: The largest stack buffer left unchecked: well inside the 8 MiB default stack of the main
#: thread and of pthreads (the parallel runtime's workers), with room for the callers.
STACK_LIMIT = 1 << 20


def _element_bytes(t: ir.Type) -> int:
    """Bytes of one element as `finalize-memref-to-llvm` lays it out."""
    if isinstance(t, ir.ComplexType):
        return 2 * _element_bytes(t.element_type)
    if isinstance(t, ir.IndexType):
        return 8
    if isinstance(t, ir.VectorType):
        count = 1
        for d in t.shape:
            count *= d
        return count * _element_bytes(t.element_type)
    width = getattr(t, "width", 64)
    return max(1, (width + 7) // 8)


@register_pass
@dataclass(frozen=True)
class CheckAllocations(ModulePass):
    """Every memref.alloc is checked: a NULL from malloc reports its size and returns."""

    name = "accel-check-allocations"

    def apply(self, module: Operation) -> None:
        checked = False
        for func in ops_named(module, ("func.func",)):
            if not func.regions[0].blocks:
                continue
            for alloc in ops_named(func, ("memref.alloc",)):
                if alloc.parent != func:
                    self.fail(alloc, f"memref.alloc nested in '{alloc.parent.name}' cannot "
                              "return from the function; run this pass after "
                              "convert-scf-to-cf")
                self._check(func, alloc)
                checked = True
            for alloca in ops_named(func, ("memref.alloca",)):
                if alloca.parent != func:  # nested ones: see the module docstring
                    continue
                mtype = ir.MemRefType(alloca.results[0].type)
                if mtype.has_static_shape and _static_bytes(mtype) <= STACK_LIMIT:
                    continue  # known small: nothing to check
                self._check_stack(func, alloca)
                checked = True
        if checked:
            ensure_declaration(module, ALLOC_FAIL_SYMBOL, "(i64)")

    @staticmethod
    def _check_stack(func: Operation, alloca: Operation) -> None:
        """Before `alloca`: bytes <= STACK_LIMIT, else report and return."""
        index = ir.IndexType.get()
        pred = dialects.arith.CmpIPredicate
        with alloca.location, InsertionPoint(alloca):
            bytes_ = _byte_size(alloca)
            limit = dialects.arith.ConstantOp(index, ir.IntegerAttr.get(index, STACK_LIMIT))
            ok = dialects.arith.CmpIOp(pred.ule, bytes_, limit.result)
            # Each size within the limit too: a product that wrapped past 2^64 is not small.
            for size in _dynamic_sizes(alloca):
                small = dialects.arith.CmpIOp(pred.ule, size, limit.result)
                ok = dialects.arith.AndIOp(ok.result, small.result)

        def report() -> None:
            size = dialects.arith.IndexCastOp(ir.IntegerType.get_signless(64), bytes_).result
            dialects.func.CallOp([], ir.FlatSymbolRefAttr.get(ALLOC_FAIL_SYMBOL), [size])

        split_on_failure(func, ok.operation, ok.result, alloca.location, report)

    @staticmethod
    def _check(func: Operation, alloc: Operation) -> None:
        memref = alloc.results[0]
        index, i64 = ir.IndexType.get(), ir.IntegerType.get_signless(64)
        pred = dialects.arith.CmpIPredicate
        loc = alloc.location

        def const(value: int) -> ir.Value:
            return dialects.arith.ConstantOp(index, ir.IntegerAttr.get(index, value)).result

        with loc, InsertionPoint.after(alloc):
            bytes_ = _byte_size(alloc)
            pointer = dialects.memref.ExtractAlignedPointerAsIndexOp(memref).result
            ok = dialects.arith.OrIOp(
                dialects.arith.CmpIOp(pred.ne, pointer, const(0)).result,
                dialects.arith.CmpIOp(pred.eq, bytes_, const(0)).result)
        count = dialects.arith.IndexCastOp

        def report() -> None:
            size = count(i64, bytes_).result
            dialects.func.CallOp([], ir.FlatSymbolRefAttr.get(ALLOC_FAIL_SYMBOL), [size])

        split_on_failure(func, ok.operation, ok.result, loc, report)


def _dynamic_sizes(alloc: Operation) -> list[ir.Value]:
    """The dynamic sizes of `alloc` (its first operands; layout-map symbols follow)."""
    shape = ir.MemRefType(alloc.results[0].type).shape
    dynamic = sum(1 for d in shape if d == ir.ShapedType.get_dynamic_size())
    return list(alloc.operands)[:dynamic]


def _static_bytes(mtype: ir.MemRefType) -> int:
    """Bytes of the static dimensions (all of it for a static shape)."""
    static = _element_bytes(mtype.element_type)
    for d in mtype.shape:
        static *= 1 if d == ir.ShapedType.get_dynamic_size() else d
    return static


def _byte_size(alloc: Operation) -> ir.Value:
    """The bytes `alloc` (memref.alloc or alloca) takes, computed at the insertion point."""
    index = ir.IndexType.get()
    static = _static_bytes(ir.MemRefType(alloc.results[0].type))
    bytes_ = dialects.arith.ConstantOp(index, ir.IntegerAttr.get(index, static)).result
    for size in _dynamic_sizes(alloc):
        bytes_ = dialects.arith.MulIOp(bytes_, size).result
    return bytes_
