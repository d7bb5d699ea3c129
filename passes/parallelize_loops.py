"""`accel-parallelize-loops`: run the outermost parallel loop of large affine nests on threads.

Why: after `accel-affine-fusion` every elementwise op, row reduction, softmax, layernorm,
copy and transpose is one affine loop nest, and only the GEMM/conv kernels and the
flash-attention nest used more than one core. A nest whose outermost parallel loop has
enough static work is outlined and its iterations are split across threads with the
fork-join runtime `accel_parallel_for` (python/accel/host/parallel.py; the thread count
is a runtime setting, 1 runs it serially):

    affine.for %i = 0 to 4096 {                 func.call @f_par0(%x, %out)
      affine.for %j = 0 to 1024 {         ->    @f_par0(x, out): descriptors -> stack ctx,
        out[i, j] = exp(x[i, j]) } }              accel_parallel_for(@f_par0_entry, ctx, 4096)
                                                @f_par0_entry(ctx, lo, hi): loads them back,
                                                  calls @f_par0_body(x, out, lo, hi)
                                                @f_par0_body: affine.for %i = lo to hi {...}

The candidate loop L is the outermost `affine.for` of a nest (at a function's top level, or
inside serial affine loops when the outer ones are not parallel or run once; then each outer
iteration forks and joins). L fires only when all of this holds:

* Static shape: L has constant bounds and no `iter_args`, runs at least twice, and its
  static work (trip counts x body ops; nested loops have constant bounds or, when tiled,
  a constant bound on ub - lb) is at least
  `min-work` (default `MIN_WORK` = 2^16): below it a fork-join costs more than it saves.
  L then runs as `work / chunk-work` items (`CHUNK_WORK` = 2^15; 2 to trips), each a
  contiguous run of iterations: no more threads start than there are items.
* Known effects: everything inside L is `arith`, `math`, `index`, `complex` or the affine
  ops `for`/`if`/`yield`/`apply`/`min`/`max`/`load`/`store` (no calls, no `memref.load`,
  no `scf`, no allocation): nothing touches memory except affine loads and stores.
* Every memref L writes is either
  - sliced by L: in one index position, every load and store of it in L lies in
    [k*i + lo, k*i + hi] for L's induction variable `i` (the same k != 0 for all), with
    hi - lo < |k| * step: distinct iterations touch disjoint slices. The index is `a*i + c`,
    or `a*v + c` for an inner loop variable v with bounds `b*i + c1` to (a min with)
    `b*i + c2` (tiled nests). Elementwise ops, transposes (tiled too), and reductions over
    inner dims (`sum[i] += x[i, j]`) pass; `x[i] = x[i - 1] + y[i]` does not; or
  - a private scratch buffer: a static `memref.alloc`/`alloca` used only by affine
    accesses inside L whose first use in each iteration (in program order, at L's top
    level) stores every element of it and loads none (the per-row buffers fusion leaves for
    softmax and layernorm), or is an inner loop holding all its accesses whose iterations
    each do so (a row buffer inside a channel's loop over images: BatchNorm's backward).
    Each call of the body gets its own copy (at most `PRIVATE_STACK_BYTES` of them on the
    stack, or L stays serial; stack buffers get 64-byte alignment, as a worker's frame is
    only 16-byte aligned).
* No aliasing: a written memref is a root buffer or an injective view of one (subview with
  static strides, expand/collapse_shape, cast, transpose), and no other memref value L
  accesses has the same root buffer (views of one buffer are different SSA values, which
  MLIR's affine analysis would take for distinct buffers). Roots are function arguments,
  `memref.alloc`/`alloca` and globals by name; a memref of any other origin (a call
  result, ...) makes L serial. Like `accel-affine-fusion` and MLIR's affine analysis, two
  different function arguments are assumed not to alias.
* Values L uses from outside are memrefs (passed as descriptors), index/integer/float
  scalars (passed by value), or `arith.constant`/`memref.get_global` (cloned).

A loop that fails only on a store every iteration repeats (the same value into the same
element: a per-channel BatchNorm scale that fusion recomputes for every image) gets that
store moved into a copy of its surrounding loops in front of it (`_hoist_stores.py`), and
is planned again.

Loops with dynamic bounds stay serial (the work is unknown at compile time). Functions that
already run inside an `accel_parallel_for` body (reachable from a `func.constant`) are left
alone: no nested parallelism. Every iteration runs the same ops in the same order as
before (a row's reduction stays in one thread), so results do not depend on the thread
count. A module that calls the runtime gets one declaration of
`accel_parallel_for` (an existing one is reused).

Run it after `accel-affine-fusion` and before the deallocation pipeline, which then frees a
private `memref.alloc` in the body (or set `dealloc` when running it after).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from accel.ir import InsertionPoint, Operation, ir
from accel.passes._affine import bounds, trip_count, value_inside
from accel.passes._affine import constant as _constant
from accel.passes._hoist_stores import hoist_invariant_stores
from accel.passes._parallel_abi import PARALLEL_FOR_DECL, fork_join
from accel.passes._split_scratch import split_shared_scratch
from accel.passes.base import ModulePass, is_inside, ops_named, register_pass

#: Smallest static work (scalar body-op executions of one run of the loop) that goes
#: parallel. A fork-join costs ~8 us with a free second core (20-50 us on a busy machine)
#: and LLVM vectorises simple bodies: an add/mul nest of 2^18 ops ran slower on 2 threads
#: than on 1 (22 vs 16 us), one of 2^20 faster (32 vs 39 us) with the second core free;
#: but the batch-1 MLP's matrix-vector layers (2^20-2^22) made the model slower on 2
#: threads than on 1 (33-57 vs 27 us: the shared VM's second core is often busy), so
#: the default asked for ~100 us of work (2^22), like the GEMM kernels' 2^23 multiply-adds.
#: Since the parallel loops run on PyTorch's OpenMP threads when torch is loaded (a fork-join
#: of a few us) and items follow the work (CHUNK_WORK), 2^18: a small CNN's train step
#: 0.63x -> 0.73x eager at 2 threads, unchanged at 1, the MLPs unchanged (docs/cpu-codegen.md).
#: Since a loop of fewer items keeps the full OpenMP team (no thread restarts), 2^16 with
#: CHUNK_WORK 2^15: on a 16-core Xeon at 16 threads ResNet-18 inference 8.48 -> 7.03 ms
#: (2^14: 7.31) and the CNN+BN train step 3.18 -> 2.98 ms (2^14: 3.37), as the zero fills
#: of padded inputs and the BatchNorm nests of the late layers went parallel; the 2-core
#: host unchanged within noise (docs/benchmarks.md, session 15).
MIN_WORK = 1 << 16

#: Smallest work of one item the runtime hands a thread: a loop of `w` work runs as
#: min(trips, w // CHUNK_WORK) items (at least 2), and the runtime starts no more threads than
#: items. A small loop then uses a few threads on a many-core machine instead of waking all
#: of them for a few microseconds of work each (PyTorch's `at::parallel_for` grain size).
CHUNK_WORK = 1 << 15

#: Most bytes of private `memref.alloca` buffers per body call (they move from the calling
#: thread's stack to each worker's).
PRIVATE_STACK_BYTES = 256 << 10

#: Alignment of private stack buffers (a cache line: whole AVX-512 vectors).
PRIVATE_ALIGNMENT = 64

_PURE_PREFIXES = ("arith.", "math.", "index.", "complex.")
_AFFINE_OK = ("affine.for", "affine.if", "affine.yield", "affine.apply", "affine.min",
              "affine.max", "affine.load", "affine.store")
#: View ops that map distinct view indices to distinct elements of their source.
_INJECTIVE_VIEWS = ("memref.expand_shape", "memref.collapse_shape", "memref.cast",
                    "memref.transpose", "memref.subview")
_VIEWS = _INJECTIVE_VIEWS + ("memref.reinterpret_cast", "memref.view")
_CLONEABLE = ("arith.constant", "memref.get_global")
_FN_T = "(!llvm.ptr, index, index) -> ()"


# -- small IR helpers ---------------------------------------------------------------------
def _op(value_owner: object) -> Operation | None:
    return value_owner.operation if isinstance(value_owner, ir.OpView | ir.Operation) else None


def _defining_op(value: ir.Value) -> Operation | None:
    return _op(value.owner)


def max_trips(loop: Operation) -> int | None:
    """The most iterations `loop` runs: its trip count, or for bounds like
    `%t to min(%t + 8, 700)` (tiled loops) the constant bound on ub - lb."""
    trips = trip_count(loop)
    if trips is not None:
        return trips
    lo = ir.AffineMapAttr(loop.attributes["lowerBoundMap"]).value
    hi = ir.AffineMapAttr(loop.attributes["upperBoundMap"]).value
    sizes = list(ir.DenseI32ArrayAttr(loop.attributes["operandSegmentSizes"]))
    operands = list(loop.operands)
    if len(lo.results) != 1 or lo.n_dims != hi.n_dims or lo.n_symbols != hi.n_symbols or \
            operands[:sizes[0]] != operands[sizes[0]:sizes[0] + sizes[1]]:
        return None
    spans = []
    for result in hi.results:
        diff = ir.AffineExpr.simplify_affine_expr(
            ir.AffineExpr.get_add(result, ir.AffineExpr.get_mul(
                lo.results[0], ir.AffineExpr.get_constant(-1))), lo.n_dims, lo.n_symbols)
        if _constant(diff) is not None:
            spans.append(_constant(diff))
    step = ir.IntegerAttr(loop.attributes["step"]).value
    return max(0, -(-min(spans) // step)) if spans else None


def work(block: ir.Block) -> int | None:
    """Scalar op executions of one run of `block` (None: a loop with non-constant bounds)."""
    total = 0
    for op in block.operations:
        op = op.operation
        if op.name == "affine.for":
            trips, inner = max_trips(op), work(op.regions[0].blocks[0])
            if trips is None or inner is None:
                return None
            total += trips * inner
        elif op.name == "affine.if":
            total += 1
            for region in op.regions:
                for b in region.blocks:
                    inner = work(b)
                    if inner is None:
                        return None
                    total += inner
        elif op.name != "affine.yield":
            total += 1
    return total


def _access(op: Operation) -> tuple[ir.Value, ir.AffineMap, list[ir.Value]]:
    """(memref, map, map operands) of an affine.load / affine.store."""
    slot = 0 if op.name == "affine.load" else 1
    return (op.operands[slot], ir.AffineMapAttr(op.attributes["map"]).value,
            list(op.operands)[slot + 1:])


def _row_major(t: ir.Type) -> bool:
    """A buffer type whose layout maps distinct indices to distinct elements: the identity,
    or strides of a dense row-major layout (any offset). Not, say, a broadcast's 0 stride."""
    memref = ir.MemRefType(t)
    layout = memref.layout
    if isinstance(layout, ir.StridedLayoutAttr):
        expected, stride = [], 1
        for dim in reversed(memref.shape):
            expected.insert(0, stride)
            stride *= max(dim, 1)
        return memref.has_static_shape and list(layout.strides) == expected
    try:
        return ir.AffineMapAttr(layout).value == ir.AffineMap.get_identity(memref.rank)
    except ValueError:
        return False


def _root(memref: ir.Value) -> tuple[object, bool] | None:
    """(key of the buffer `memref` views, whether every view on the way is injective);
    None for a memref of unknown origin."""
    injective = True
    while True:
        owner = memref.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner
            if parent is None or parent.operation.name != "func.func":
                return None  # a loop or region argument of memref type: unknown
            return ("arg", memref), injective and _row_major(memref.type)
        op = owner.operation
        if op.name in _VIEWS:
            if op.name not in _INJECTIVE_VIEWS or (
                    op.name == "memref.subview" and
                    ir.ShapedType.get_dynamic_stride_or_offset()
                    in list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))):
                injective = False
            memref = op.operands[0]
            continue
        if op.name == "memref.get_global":
            return ("global", str(op.attributes["name"])), injective and \
                _row_major(memref.type)
        if op.name in ("memref.alloc", "memref.alloca"):
            return ("buffer", memref), injective and _row_major(memref.type)
        return None


def _linear(expr: ir.AffineExpr, operands: list[ir.Value]
            ) -> tuple[ir.Value | None, int, int] | None:
    """(v, a, c) when `expr` is `a * v + c` over one of the map's dims (v: its operand), or
    (None, 0, c) for a constant; None otherwise."""
    expr = expr.maybe_downcast()
    if isinstance(expr, ir.AffineConstantExpr):
        return None, 0, expr.value
    const, coef = 0, 1
    for kind in (ir.AffineAddExpr, ir.AffineMulExpr):  # a * v + c: peel "+ c", then "a *"
        if not isinstance(expr, kind):
            continue
        split = _constant_operand(expr)
        if split is None:
            return None
        expr, c = split
        if kind is ir.AffineAddExpr:
            const = c
        else:
            coef = c
    if not isinstance(expr, ir.AffineDimExpr) or expr.position >= len(operands):
        return None
    return operands[expr.position], coef, const


def _constant_operand(expr: ir.AffineBinaryExpr) -> tuple[ir.AffineExpr, int] | None:
    """(the other operand, the constant) of a binary expression with a constant side."""
    lhs, rhs = expr.lhs.maybe_downcast(), expr.rhs.maybe_downcast()
    c = _constant(rhs)
    if c is None:
        lhs, rhs = rhs, lhs
        c = _constant(rhs)
    return None if c is None else (lhs.maybe_downcast(), c)


def _relative_bounds(inner: Operation, iv: ir.Value) -> tuple[int, int, int] | None:
    """(b, c1, c2) when `inner`'s variable v always lies in [b*i + c1, b*i + c2) for the
    outer variable i = `iv` (a lower bound `b*i + c1`, an upper bound `b*i + c2` in the
    min); None when its bounds do not say so."""
    found = []
    for attr, at in (("lowerBoundMap", 0), ("upperBoundMap", 1)):
        amap = ir.AffineMapAttr(inner.attributes[attr]).value
        sizes = list(ir.DenseI32ArrayAttr(inner.attributes["operandSegmentSizes"]))
        operands = list(inner.operands)
        operands = operands[:sizes[0]] if at == 0 else operands[sizes[0]:sizes[0] + sizes[1]]
        forms = [_linear(e, operands) for e in amap.results]
        found.append([(f[1], f[2]) for f in forms
                      if f is not None and f[0] is not None and f[0] == iv])
    for b, c1 in found[0]:
        for b2, c2 in found[1]:
            if b == b2 != 0:
                return b, c1, c2
    return None


def _index_range(expr: ir.AffineExpr, operands: list[ir.Value], loop: Operation
                 ) -> tuple[int, int, int] | None:
    """(k, lo, hi): in the iteration with variable i of `loop`, the index `expr` lies in
    [k*i + lo, k*i + hi] (k != 0); None when it does not follow i like that."""
    form = _linear(expr, operands)
    if form is None or form[0] is None or form[1] == 0:
        return None
    v, a, c = form
    iv = loop.regions[0].blocks[0].arguments[0]
    if v == iv:
        return a, c, c
    inner = _loop_of_iv(v)
    if inner is None or inner == loop or not is_inside(inner, loop):
        return None
    rel = _relative_bounds(inner, iv)
    if rel is None:
        return None
    b, c1, c2 = rel  # v in [b*i + c1, b*i + c2 - 1]
    ends = (a * c1 + c, a * (c2 - 1) + c)
    return a * b, min(ends), max(ends)


def _sliced(accesses: list[Operation], loop: Operation) -> bool:
    """Some index of every access in `accesses` (all to one memref) is in
    [k*i + lo, k*i + hi] with the same k for all, and these ranges of two iterations
    (i apart by at least `step`) never meet: iterations touch disjoint slices."""
    step = abs(bounds(loop)[2])  # type: ignore[index]
    maps = [(_access(a)[1], _access(a)[2]) for a in accesses]
    for pos in range(len(maps[0][0].results)):
        ranges = [_index_range(amap.results[pos], ops, loop) for amap, ops in maps]
        if any(r is None for r in ranges):
            continue
        coefs = {r[0] for r in ranges}  # type: ignore[index]
        if len(coefs) != 1:
            continue
        k = coefs.pop()
        lo = min(r[1] for r in ranges)  # type: ignore[index]
        hi = max(r[2] for r in ranges)  # type: ignore[index]
        if hi - lo < abs(k) * step:
            return True
    return False


def _loop_of_iv(value: ir.Value) -> Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block) and owner.owner is not None and \
            owner.owner.operation.name == "affine.for":
        return owner.owner.operation
    return None


def _covers(store: Operation, top: Operation, memref: ir.Value) -> bool:
    """`store` (nested in `top`, only in affine.for loops) writes every element of `memref`."""
    shape = list(ir.MemRefType(memref.type).shape)
    current = store.parent
    while current is not None and not current.operation == top.parent.operation:
        trips = trip_count(current.operation) if current.operation.name == "affine.for" \
            else None
        if not trips:  # not a loop, dynamic, or runs no iteration: may skip the store
            return False
        current = current.parent
    _, amap, operands = _access(store)
    used: list[Operation] = []
    for dim, expr in zip(shape, amap.results, strict=True):
        if dim == 1 and _constant(expr) == 0:
            continue
        expr = expr.maybe_downcast()
        if not isinstance(expr, ir.AffineDimExpr):
            return False
        loop = _loop_of_iv(operands[expr.position])
        if loop is None or not is_inside(loop, top) or any(loop == u for u in used) or \
                bounds(loop) != (0, dim, 1):
            return False
        used.append(loop)
    return True


def _bytes(t: ir.Type) -> int:
    memref = ir.MemRefType(t)
    count = 1
    for dim in memref.shape:
        count *= dim
    return count * max(getattr(memref.element_type, "width", 64) // 8, 1)  # index: 8


def _private(memref: ir.Value, loop: Operation) -> bool:
    """`memref` is a scratch buffer each iteration of `loop` overwrites before reading it."""
    owner = _defining_op(memref)
    if owner is None or owner.name not in ("memref.alloc", "memref.alloca") or \
            list(owner.operands) or not ir.MemRefType(memref.type).has_static_shape:
        return False
    for use in memref.uses:
        user = _op(use.owner)
        if user is None or user.name not in ("affine.load", "affine.store") or \
                not is_inside(user, loop) or _access(user)[0] != memref or \
                (user.name == "affine.store" and use.operand_number == 0):
            return False
    return _overwritten_first(memref, loop, len(list(memref.uses)))


def _overwritten_first(memref: ir.Value, loop: Operation, uses: int) -> bool:
    """Each iteration of `loop` (which holds all `uses` accesses of `memref`) writes all of
    `memref` before reading it: the first top-level op touching it stores every element and
    loads none, or is an `affine.for` holding every access whose own iterations do so (a
    row buffer fusion leaves inside a channel's loop over images and rows)."""
    for top in loop.regions[0].blocks[0].operations:
        top = top.operation
        touching = [a for a in ops_named(top, ("affine.load", "affine.store"))
                    if _access(a)[0] == memref]
        if not touching:
            continue
        if not any(a.name == "affine.load" for a in touching):
            return any(_covers(a, top, memref) for a in touching)
        return top.name == "affine.for" and len(touching) == uses and \
            _overwritten_first(memref, top, uses)
    return False


# -- legality -------------------------------------------------------------------------------
@dataclass
class _Plan:
    """What outlining `loop` needs."""

    loop: Operation
    trips: int
    chunks: int  # items handed to the runtime: the iterations in that many contiguous runs
    captures: list[ir.Value] = field(default_factory=list)  # passed through the context
    clones: list[Operation] = field(default_factory=list)  # constants, globals
    privates: list[Operation] = field(default_factory=list)  # scratch buffer allocations


def _scalar_type(t: ir.Type) -> bool:
    return isinstance(t, ir.IndexType | ir.IntegerType | ir.F16Type | ir.BF16Type | ir.F32Type
                      | ir.F64Type)


#: Why a loop whose iterations share memory stays serial; stores every iteration repeats
#: then move in front of it (`_hoist_stores.py`) and the loop is planned again.
CARRIED = "a loop-carried dependence through memory"


def chunk_count(trips: int, total_work: int, chunk_work: int) -> int:
    """Items for a loop of `trips` iterations and `total_work`: one per iteration when
    `chunk_work` is 0, else about `total_work / chunk_work` (2 to `trips`)."""
    if chunk_work <= 0:
        return trips
    return max(2, min(trips, total_work // chunk_work))


def plan(loop: Operation, min_work: int, chunk_work: int = CHUNK_WORK) -> _Plan | str:
    """The outlining plan for `loop`, or why it stays serial (a short reason)."""
    trips = trip_count(loop)
    if trips is None:
        return "dynamic bounds"
    if list(loop.results) or len(loop.regions[0].blocks[0].arguments) != 1:
        return "iter_args"
    if trips < 2:
        return "runs once"
    body_work = work(loop.regions[0].blocks[0])
    if body_work is None:
        return "inner loop with dynamic bounds"
    if trips * body_work < min_work:
        return "too small"
    inner = [op for op in ops_named(loop) if not op == loop]
    for op in inner:
        if op.name not in _AFFINE_OK and not op.name.startswith(_PURE_PREFIXES):
            return f"'{op.name}' in the loop"
    accesses = [op for op in inner if op.name in ("affine.load", "affine.store")]
    by_memref: dict[ir.Value, list[Operation]] = {}
    for op in accesses:
        by_memref.setdefault(_access(op)[0], []).append(op)
    roots = {m: _root(m) for m in by_memref}
    # In program order, not a set's (values hash by address): the private buffers below
    # keep that order in the body, so the same input gives the same code every run.
    written = list(dict.fromkeys(_access(op)[0] for op in accesses
                                 if op.name == "affine.store"))
    result = _Plan(loop, trips, chunk_count(trips, trips * body_work, chunk_work))
    for memref in written:
        root = roots[memref]
        if root is None:
            return "a written memref of unknown origin"
        if any(r is None or (r[0] == root[0] and m != memref) for m, r in roots.items()):
            return "a written buffer is also accessed through another view"
        if not root[1]:
            return "a written memref is a view or layout that may overlap itself"
        if _sliced(by_memref[memref], loop):
            continue
        if _private(memref, loop):
            result.privates.append(_defining_op(memref))
            if sum(_bytes(p.results[0].type) for p in result.privates
                   if p.name == "memref.alloca") > PRIVATE_STACK_BYTES:
                return "private stack buffers too large for a thread's stack"
            continue
        return CARRIED
    seen: set[ir.Value] = set()
    private_values = {p.results[0] for p in result.privates}
    for op in inner:
        for value in op.operands:
            if value in seen or value in private_values or value_inside(value, loop):
                continue
            seen.add(value)
            owner = _defining_op(value)
            if owner is not None and owner.name in _CLONEABLE and not list(owner.operands):
                result.clones.append(owner)
            elif isinstance(value.type, ir.MemRefType):
                if ir.MemRefType(value.type).memory_space is not None:
                    return "a memref in a non-default memory space"
                result.captures.append(value)
            elif _scalar_type(value.type):
                result.captures.append(value)
            else:
                return f"a captured value of type {value.type}"
    return result


def _written(loop: Operation) -> list[ir.Value]:
    """The memrefs `loop` stores to, in program order."""
    return list(dict.fromkeys(_access(op)[0] for op in ops_named(loop, ("affine.store",))))


# -- outlining ------------------------------------------------------------------------------
def _descriptor(t: ir.Type) -> str:
    rank = ir.MemRefType(t).rank
    if rank == 0:
        return "!llvm.struct<(ptr, ptr, i64)>"
    return f"!llvm.struct<(ptr, ptr, i64, array<{rank} x i64>, array<{rank} x i64>)>"


def _slot_type(t: ir.Type) -> str:
    if isinstance(t, ir.MemRefType):
        return _descriptor(t)
    return "i64" if isinstance(t, ir.IndexType) else str(t)


def render(name: str, types: list[ir.Type], trips: int, lb: int, step: int,
           chunks: int | None = None) -> str:
    """`@name(captures)` (stores them into a stack context and calls `accel_parallel_for`
    over `chunks` items, default one per iteration), `@name_entry(ctx, lo, hi)` (loads them
    back; items [lo, hi) are iterations [lo * trips / chunks, hi * trips / chunks)) and
    `@name_body(captures, lo, hi)` (an empty loop over iterations [lo, hi) that the pass
    fills)."""
    chunks = trips if chunks is None else chunks
    slots = [_slot_type(t) for t in types] or ["i64"]
    ctx_t = f"!llvm.struct<({', '.join(slots)})>"
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    gep = "llvm.getelementptr %ctx[0, {0}] : (!llvm.ptr) -> !llvm.ptr, " + ctx_t
    lines = [PARALLEL_FOR_DECL,
             f"  func.func private @{name}({args}) {{",
             "    %one = llvm.mlir.constant(1 : i64) : i64",
             f"    %ctx = llvm.alloca %one x {ctx_t} : (i64) -> !llvm.ptr"]
    for i, t in enumerate(types):
        value = f"%a{i}"
        if isinstance(t, ir.MemRefType):
            lines.append(f"    %d{i} = builtin.unrealized_conversion_cast %a{i} : {t} to "
                         f"{slots[i]}")
            value = f"%d{i}"
        elif isinstance(t, ir.IndexType):
            lines.append(f"    %d{i} = arith.index_cast %a{i} : index to i64")
            value = f"%d{i}"
        lines += [f"    %p{i} = {gep.format(i)}",
                  f"    llvm.store {value}, %p{i} : {slots[i]}, !llvm.ptr"]
    lines += [f"    %n = arith.constant {chunks} : index",
              *fork_join(f"{name}_entry", "%ctx", "%n", indent="    "),
              "    return",
              "  }",
              f"  func.func private @{name}_entry(%ctx: !llvm.ptr, %lo: index, %hi: index) {{"]
    names = []
    for i, t in enumerate(types):
        lines += [f"    %p{i} = {gep.format(i)}",
                  f"    %d{i} = llvm.load %p{i} : !llvm.ptr -> {slots[i]}"]
        names.append(f"%a{i}")
        if isinstance(t, ir.MemRefType):
            lines.append(f"    %a{i} = builtin.unrealized_conversion_cast %d{i} : {slots[i]} "
                         f"to {t}")
        elif isinstance(t, ir.IndexType):
            lines.append(f"    %a{i} = arith.index_cast %d{i} : i64 to index")
        else:
            names[-1] = f"%d{i}"
    first, last = "%lo", "%hi"
    if chunks != trips:  # items are runs of iterations: item k starts at k * trips / chunks
        lines += [f"    %trips = arith.constant {trips} : index",
                  f"    %chunks = arith.constant {chunks} : index"]
        for item, it in (("%lo", "%first"), ("%hi", "%last")):
            lines += [f"    {it}_x = arith.muli {item}, %trips : index",
                      f"    {it} = arith.divui {it}_x, %chunks : index"]
        first, last = "%first", "%last"
    call_types = ", ".join([*map(str, types), "index", "index"])
    call_args = ", ".join([*names, first, last])
    bound = f"affine_map<()[s0] -> (s0 * {step} + {lb})>"
    lines += [f"    func.call @{name}_body({call_args}) : ({call_types}) -> ()",
              "    return",
              "  }",
              f"  func.func private @{name}_body({args}{', ' if types else ''}%lo: index, "
              "%hi: index) {",
              f"    affine.for %iv = {bound}()[%lo] to {bound}()[%hi] step {step} {{",
              "    }",
              "    return",
              "  }"]
    return "module {\n" + "\n".join(lines) + "\n}\n"


def _symbols(module: Operation) -> set[str]:
    return {ir.StringAttr(op.operation.attributes["sym_name"]).value
            for op in module.regions[0].blocks[0].operations
            if "sym_name" in op.operation.attributes}


def _replace_inside(old: ir.Value, new: ir.Value, scope: Operation) -> None:
    """Replace the uses of `old` by ops nested in `scope` with `new`."""
    for use in list(old.uses):
        user = _op(use.owner)
        if user is not None and is_inside(user, scope):
            user.operands[use.operand_number] = new


def outline(module: Operation, p: _Plan, name: str, dealloc: bool) -> None:
    """Replace `p.loop` with a call running its iterations on threads."""
    loop = p.loop
    lb, _, step = bounds(loop)  # type: ignore[misc]
    types = [v.type for v in p.captures]
    parsed = ir.Module.parse(render(name, types, p.trips, lb, step, p.chunks),
                             module.context)
    body = module.regions[0].blocks[0]
    have_runtime = "accel_parallel_for" in _symbols(module)
    new_funcs = {}
    for f in list(parsed.body.operations):
        symbol = ir.StringAttr(f.operation.attributes["sym_name"]).value
        if symbol == "accel_parallel_for" and have_runtime:
            continue
        f.operation.move_after(body.operations[len(body.operations) - 1])
        new_funcs[symbol] = f.operation
    target = new_funcs[f"{name}_body"]
    entry = target.regions[0].blocks[0]
    new_loop = entry.operations[0].operation
    new_yield = new_loop.regions[0].blocks[0].operations[0].operation
    # Constants, globals and scratch buffers are made in the body; the rest are arguments.
    mapping: list[tuple[ir.Value, ir.Value]] = [
        (v, entry.arguments[i]) for i, v in enumerate(p.captures)]
    with InsertionPoint(new_loop):
        for op in p.clones + p.privates:
            clone = op.clone()
            if op.name == "memref.alloca" and "alignment" not in op.attributes:
                # A worker's stack is only 16-byte aligned; a 64-byte vector straddling two
                # cache lines on every access made a softmax 20% slower.
                clone.attributes["alignment"] = ir.IntegerAttr.get(
                    ir.IntegerType.get_signless(64), PRIVATE_ALIGNMENT)
            mapping.append((op.results[0], clone.results[0]))
    if dealloc:
        with InsertionPoint(entry.operations[len(entry.operations) - 1]), loop.location:
            for op in p.privates:
                if op.name == "memref.alloc":
                    fresh = next(new for old, new in mapping if old == op.results[0])
                    ir.Operation.create("memref.dealloc", operands=[fresh])
    # The call that replaces the loop.
    with InsertionPoint(loop), loop.location:
        ir.Operation.create("func.call", operands=list(p.captures), attributes={
            "callee": ir.FlatSymbolRefAttr.get(name)})
    old_body = loop.regions[0].blocks[0]
    old_body.arguments[0].replace_all_uses_with(new_loop.regions[0].blocks[0].arguments[0])
    for op in list(old_body.operations)[:-1]:
        op.operation.move_before(new_yield)
    for old, new in mapping:
        _replace_inside(old, new, target)
    loop.erase()
    for op in p.privates:
        if not any(True for r in op.results for _ in r.uses):
            op.erase()


def _parallel_reachable(module: Operation) -> set[str]:
    """Functions that run inside a parallel body: `func.constant` targets and their callees."""
    funcs = {ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
             for op in module.regions[0].blocks[0].operations
             if op.operation.name == "func.func"}
    todo = [ir.FlatSymbolRefAttr(op.attributes["value"]).value
            for op in ops_named(module, ("func.constant",))]
    seen: set[str] = set()
    while todo:
        symbol = todo.pop()
        if symbol in seen or symbol not in funcs:
            continue
        seen.add(symbol)
        todo += [ir.FlatSymbolRefAttr(call.attributes["callee"]).value
                 for call in ops_named(funcs[symbol], ("func.call",))]
    return seen


def _fresh_name(fname: str, known: set[str]) -> str:
    """`<fname>_par<N>` whose three symbols (it, `_entry`, `_body`) are all unused."""
    count = 0
    while any(f"{fname}_par{count}{suffix}" in known for suffix in ("", "_entry", "_body")):
        count += 1
    name = f"{fname}_par{count}"
    known.update({name, f"{name}_entry", f"{name}_body"})
    return name


def _nests(block: ir.Block) -> Iterator[Operation]:
    for op in list(block.operations):
        if op.operation.name == "affine.for":
            yield op.operation


@register_pass
@dataclass(frozen=True)
class ParallelizeLoops(ModulePass):
    """Runs the outermost parallel loop of large affine nests on threads (accel_parallel_for)."""

    name = "accel-parallelize-loops"
    #: Off: leave every loop serial (the pass does nothing).
    enabled: bool = field(default=True, metadata={"help": "outline parallel loops"})
    #: Smallest static work (trip counts x body ops of one run of the loop) run in parallel.
    min_work: int = field(default=MIN_WORK, metadata={"help": "smallest work run in parallel"})
    #: Smallest work of one item handed to a thread (0: one item per iteration).
    chunk_work: int = field(default=CHUNK_WORK,
                            metadata={"help": "smallest work per thread item (0: per iteration)"})
    #: Free a private heap scratch buffer in the body (only when running after the
    #: deallocation pipeline, which otherwise does it).
    dealloc: bool = field(default=False, metadata={"help": "emit memref.dealloc"})

    def __post_init__(self) -> None:
        if self.min_work < 0:
            raise ValueError("min-work must not be negative")
        if self.chunk_work < 0:
            raise ValueError("chunk-work must not be negative")

    def apply(self, module: Operation) -> None:
        if not self.enabled:
            return
        inner = _parallel_reachable(module)
        funcs = [op.operation for op in module.regions[0].blocks[0].operations
                 if op.operation.name == "func.func" and op.operation.regions[0].blocks
                 and ir.StringAttr(op.operation.attributes["sym_name"]).value not in inner]
        known = _symbols(module)
        for func in funcs:
            fname = ir.StringAttr(func.attributes["sym_name"]).value
            todo = list(_nests(func.regions[0].blocks[0]))
            while todo:
                loop = todo.pop(0)
                result = plan(loop, self.min_work, self.chunk_work)
                if result == CARRIED and hoist_invariant_stores(loop):
                    result = plan(loop, self.min_work, self.chunk_work)
                if result == CARRIED and split_shared_scratch(
                        loop, _written(loop), _overwritten_first,
                        lambda access: _access(access)[0]):
                    result = plan(loop, self.min_work, self.chunk_work)
                if isinstance(result, _Plan):
                    outline(module, result, _fresh_name(fname, known), self.dealloc)
                elif result != "too small":  # the inner loops may still be parallel
                    todo += list(_nests(loop.regions[0].blocks[0]))
