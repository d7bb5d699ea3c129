"""`accel-affine-fusion`: fuse affine loop nests so intermediates stay out of memory.

Why: linalg lowers one loop nest per op, each writing its whole result to a buffer that the
next nest reads back. Fusing a producer nest into its consumer (a matmul's fill, transposed
weight and bias + activation epilogue; a reduction into the elementwise ops that use it) and
sibling nests that read the same input into one nest shrinks each intermediate to what one
iteration needs, and `affine-scalrep` forwards what it can; what is left of a private buffer
goes on the stack (up to `STACK_BYTES`), where LLVM promotes it to registers.

    affine.for %i { affine.for %j { store 0, %C[%i, %j] } }          affine.for %i {
    affine.for %i { affine.for %j { affine.for %k {       ->          affine.for %j {
        C[i, j] += A[i, k] * W[j, k] } } }                               store 0, %C[%i, %j]
    affine.for %i { affine.for %j {                                      affine.for %k { ... }
        C[i, j] = relu(C[i, j] + b[j]) } }                               C[i, j] = relu(...) } }

The fusion itself is MLIR's `affine-loop-fusion` (its cost model is the threshold: a fusion
that adds more than `compute-tolerance`, default 30%, redundant computation to the fused
nest is refused) followed by `affine-scalrep`. Four guards make that safe to run on
everything the CPU pipeline produces:

1. Soundness: the fusion's dependence analysis sees memrefs by SSA value, so an access
   through a view (`expand_shape`, `collapse_shape`, `subview`) or a `memref.copy` hides a
   dependence. First, static copies become affine nests and accesses through static views
   are rewritten onto the base buffer (composed affine maps). It also misses the
   anti-dependence of a reused buffer (one nest only reads it, a later one overwrites it
   in place): fusing the writer into the reader's loops miscompiled a GELU -> matmul ->
   tanh MLP. And it recomputed one writer's slice over another's when several nests write
   one buffer (a GRU's output sequence, one time step per nest). It does not see calls at
   all. So (`_fusion_calls.py`): top-level loops with a data-dependent access or a call
   inside, and the writers of a buffer with several (other than "initialise, then
   accumulate"), become calls of private functions; every call gets no-op stand-in
   accesses that give fusion its edges (removed before `affine-scalrep`). A function that
   still has a view (other than a call's), a dynamic copy, a reused buffer or a top-level
   writer that is no loop is left unfused (`accel-prepare-one-shot` gives every
   `tensor.empty` use its own buffer, so reuse is rare).
2. Crashes: sibling fusion crashes on an `affine.for` whose `iter_args` results are used
   (llvm-project issues 212046, 212048): such functions get producer-consumer fusion only.
   And because other upstream crashes exist, the fusion runs in a forked child process
   (`accel.isolation`): if it dies, the functions stay unfused, with a warning, and the
   compiler goes on.
3. Repeated accumulations: MLIR's fusion keeps a producer nest it cannot remove and
   recomputes its slice in the consumer, which for a read-modify-write reduction adds it
   twice. Buffers are tagged before fusion; a function in which some buffer is accumulated
   by more nests afterwards than before keeps its unfused form. Likewise within one nest:
   it may put an accumulating producer inside a consumer loop that does not pick the
   element it updates (a T5 decoder step's attention output, fused into the output
   projection's loops, was summed once per output column). Each accumulating store's
   `repetitions` (the trip counts of its enclosing loops that choose no element) may not
   grow.
4. Partial producers: fusion may remove a producer nest after computing, inside one
   consumer, only the slice that consumer reads, while other nests read the rest of the
   buffer (a QKV projection read as three column ranges). A function in which fusion
   leaves a buffer read after sliced writes that miss some of its elements keeps its
   unfused form (`_fusion_slices.py`).

A function guard 3 or 4 rejects is fused again (up to `RETRIES` rounds) with the top-level
nests that write the blamed buffers made calls, which fusion cannot recompute or slice:
the rest of the function fuses (a small CNN's training backward, unfused because of one
BatchNorm sum: 2.8 -> 1.9 ms at 1 thread).

Only functions with affine loops are touched; everything else passes through.

Run it after bufferization and `convert-linalg-to-affine-loops`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

from accel.ir import InsertionPoint, Module, Operation, dialects, ir
from accel.isolation import IsolatedFailure, run_pipeline_isolated
from accel.passes._affine import VIEW_OPS, trip_count
from accel.passes._fusion_calls import (
    add_call_proxies,
    is_proxy,
    opaque_nests,
    outline_nests,
    remove_call_proxies,
)
from accel.passes._fusion_slices import partial_reads
from accel.passes.base import ModulePass, ops_named, register_pass
from accel.passes.outline_nonaffine_linalg import symbol_names


def _functions(module: Operation) -> list[Operation]:
    return [op.operation for op in module.regions[0].blocks[0].operations
            if op.operation.name == "func.func" and op.operation.regions[0].blocks]


def _fusable_blocks(op: Operation) -> bool:
    """Whether some block in `op` holds two loop nests side by side (upstream fusion works
    on every such block, the function's body or a loop's): without one it has nothing to
    do, and the fork of its child process is saved."""
    for region in op.regions:
        for block in region.blocks:
            if sum(o.operation.name == "affine.for" for o in block.operations) >= 2:
                return True
            if any(_fusable_blocks(o.operation) for o in block.operations
                   if len(o.operation.regions)):
                return True
    return False


def has_live_loop_results(func: Operation) -> bool:
    """True when an `affine.for` in `func` returns values that are used (the crash shape)."""
    return any(list(r.uses) for op in ops_named(func, ("affine.for",)) for r in op.results)


# -- guard 1: one SSA name per buffer --------------------------------------------------------
def _static_shape(t: ir.Type) -> list[int] | None:
    shaped = ir.ShapedType(t)
    return list(shaped.shape) if shaped.has_static_shape else None


def _copy_to_loops(copy: Operation) -> bool:
    """`memref.copy %src, %dst` (static shape) -> an affine load/store nest."""
    src, dst = copy.operands[0], copy.operands[1]
    shape = _static_shape(src.type)
    if shape is None:
        return False
    identity = ir.AffineMap.get_identity(len(shape), context=copy.location.context)
    ivs: list[ir.Value] = []

    def nest(depth: int) -> None:
        if depth == len(shape):
            value = dialects.affine.AffineLoadOp(ir.MemRefType(src.type).element_type, src,
                                                 ivs, identity)
            dialects.affine.AffineStoreOp(value, dst, ivs, identity)
            return
        loop = dialects.affine.AffineForOp(0, shape[depth], 1)
        ivs.append(loop.induction_variable)
        with InsertionPoint(loop.body):
            nest(depth + 1)
            dialects.affine.AffineYieldOp([])

    with copy.location, InsertionPoint(copy):
        nest(0)
    copy.erase()
    return True


def _view_to_base(view: Operation) -> tuple[ir.Value, list[ir.AffineExpr]] | None:
    """(base buffer, base index exprs over the view's dims d0..dn) for a static view."""
    source = view.operands[0]
    view_shape = _static_shape(view.results[0].type)
    base_shape = _static_shape(source.type)
    if view_shape is None or base_shape is None:
        return None
    dims = [ir.AffineExpr.get_dim(i) for i in range(len(view_shape))]
    if view.name in ("memref.expand_shape", "memref.collapse_shape"):
        groups = [[int(ir.IntegerAttr(i).value) for i in ir.ArrayAttr(g)]
                  for g in ir.ArrayAttr(view.attributes["reassociation"])]
        exprs: list[ir.AffineExpr] = [ir.AffineExpr.get_constant(0)] * len(base_shape)
        if view.name == "memref.expand_shape":  # one base dim <- a group of view dims
            for base_dim, group in enumerate(groups):
                expr = ir.AffineExpr.get_constant(0)
                for d in group:
                    expr = ir.AffineExpr.get_add(
                        ir.AffineExpr.get_mul(expr, ir.AffineExpr.get_constant(view_shape[d])),
                        dims[d])
                exprs[base_dim] = expr
        else:  # one view dim <- a group of base dims (row-major split)
            for view_dim, group in enumerate(groups):
                stride = 1
                for d in reversed(group):
                    q = ir.AffineExpr.get_floor_div(dims[view_dim],
                                                    ir.AffineExpr.get_constant(stride))
                    exprs[d] = q if d == group[0] else \
                        ir.AffineExpr.get_mod(q, ir.AffineExpr.get_constant(base_shape[d]))
                    stride *= base_shape[d]
        return source, exprs
    if view.name == "memref.subview":
        offsets = list(ir.DenseI64ArrayAttr(view.attributes["static_offsets"]))
        strides = list(ir.DenseI64ArrayAttr(view.attributes["static_strides"]))
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        if len(view_shape) != len(base_shape) or dynamic in offsets or dynamic in strides:
            return None  # rank-reducing or dynamic: not folded
        return source, [ir.AffineExpr.get_add(ir.AffineExpr.get_constant(o),
                                              ir.AffineExpr.get_mul(dims[i],
                                                                    ir.AffineExpr.get_constant(s)))
                        for i, (o, s) in enumerate(zip(offsets, strides, strict=True))]
    return None


def _fold_view_accesses(func: Operation) -> None:
    """Rewrite affine loads/stores through static views onto the base buffer."""
    changed = True
    while changed:
        changed = False
        for op in ops_named(func, ("affine.load", "affine.store")):
            slot = 0 if op.name == "affine.load" else 1
            memref = op.operands[slot]
            owner = memref.owner
            if not isinstance(owner, ir.OpView | ir.Operation) or owner.name not in VIEW_OPS:
                continue
            folded = _view_to_base(owner.operation)
            if folded is None:
                continue
            base, exprs = folded
            old = ir.AffineMapAttr(op.attributes["map"]).value
            results = [ir.AffineExpr.simplify_affine_expr(e.compose(old), old.n_dims,
                                                          old.n_symbols) for e in exprs]
            op.attributes["map"] = ir.AffineMapAttr.get(
                ir.AffineMap.get(old.n_dims, old.n_symbols, results))
            op.operands[slot] = base
            changed = True


def _accesses(op: Operation) -> tuple[set[ir.Value], set[ir.Value]]:
    """Buffers `op` (with everything nested) reads and writes through affine accesses."""
    reads: set[ir.Value] = set()
    writes: set[ir.Value] = set()
    for access in ops_named(op, ("affine.load", "affine.store")):
        if is_proxy(access):  # a call's stand-in (_fusion_calls): not a nest of its own
            continue
        if access.name == "affine.load":
            reads.add(access.operands[0])
        else:
            writes.add(access.operands[1])
    return reads, writes


def _write_after_read(func: Operation) -> str | None:
    """A buffer that one top-level nest only reads and a later one writes (a reused buffer).

    MLIR's fusion misses this anti-dependence: fusing the later writer (an in-place
    epilogue) into the reader's loops overwrote values the reader still needed.
    """
    read_only_so_far: set[ir.Value] = set()
    for op in func.regions[0].blocks[0].operations:
        reads, writes = _accesses(op.operation)
        if writes & read_only_so_far:
            return "a buffer is written after an earlier nest only read it (reuse)"
        read_only_so_far |= reads - writes
    return None


def _initialises(nest: Operation, memref: ir.Value) -> bool:
    """Every store of `nest` into `memref` stores a value computed without loading memory."""
    for store in ops_named(nest, ("affine.store",)):
        if store.operands[1] != memref:
            continue
        frontier = [store.operands[0].owner]
        while frontier:
            owner = frontier.pop()
            if not isinstance(owner, ir.OpView | ir.Operation):
                continue
            if owner.name in ("affine.load", "memref.load"):
                return False
            frontier += [v.owner for v in owner.operation.operands]
    return True


def _shared_writers(func: Operation) -> list[list[Operation]]:
    """The top-level writers of each buffer written by several, other than "initialise,
    then accumulate".

    MLIR's producer-consumer fusion recomputed one writer's slice over another's (a GRU,
    whose output sequence is written one time step per nest, read back garbage).
    """
    writers: dict[ir.Value, list[Operation]] = {}
    for op in func.regions[0].blocks[0].operations:
        _, writes = _accesses(op.operation)
        for memref in writes:
            writers.setdefault(memref, []).append(op.operation)
    return [nests for memref, nests in writers.items() if len(nests) > 1
            and not (len(nests) == 2 and _initialises(nests[0], memref))]


def _many_writers(func: Operation) -> str | None:
    shared = _shared_writers(func)
    return f"a buffer written by {len(shared[0])} loop nests" if shared else None


def _unsound_reason(func: Operation) -> str | None:
    """Why fusion's dependence analysis cannot be trusted on `func` (None: it can)."""
    hazard = _write_after_read(func) or _many_writers(func)
    if hazard:
        return hazard
    for op in ops_named(func):
        if op.name in VIEW_OPS and not _only_passed_on(op):
            return f"'{op.name}' still aliases a buffer"
        if op.name == "memref.copy":
            return "a dynamically shaped memref.copy"
        if op.name in ("memref.load", "memref.store", "func.call") and \
                _inside_affine_loop(op):
            return f"'{op.name}' inside a loop"
    return None


def _only_passed_on(view: Operation) -> bool:
    """Whether `view` only reaches calls, returns and deallocations, directly or through
    further views: a call's stand-ins use the base under the whole chain (`base_buffer`).
    (A weight gradient's im2col stacked as (i, kh*kw, n, oh, ow) reaches its GEMM call as
    expand_shape -> collapse_shape; refusing that chain left a CNN's whole backward
    unfused.)"""
    for r in view.results:
        for use in r.uses:
            user = use.owner
            if user.name in VIEW_OPS:
                if not _only_passed_on(user.operation):
                    return False
            elif user.name not in ("func.return", "memref.dealloc", "func.call"):
                return False
    return True


def _outline_writers(func: Operation, keys: set[tuple[str, object]]) -> bool:
    """Make the top-level nests of `func` that write a buffer named by `keys` calls (their
    stand-ins then keep fusion from recomputing them); whether `func` is ready to fuse
    again (False: no such nest, or no longer sound)."""
    nests = [op.operation for op in func.regions[0].blocks[0].operations
             if op.operation.name == "affine.for"
             and any(_buffer_key(m) in keys for m in _accesses(op.operation)[1])]
    if not nests:
        return False
    remove_call_proxies(func)
    outline_nests(func, nests, symbol_names(func.parent))
    return (add_call_proxies(func) or _unsound_reason(func)) is None


def _inside_affine_loop(op: Operation) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "affine.for":
            return True
        parent = parent.parent
    return False


def prepare(func: Operation) -> str | None:
    """Make `func` alias-free for fusion; returns why it still is not (None: ready)."""
    for copy in ops_named(func, ("memref.copy",)):
        _copy_to_loops(copy)
    _fold_view_accesses(func)
    for view in reversed(ops_named(func, VIEW_OPS)):  # views nothing reads any more
        if not any(list(r.uses) for r in view.results):
            view.erase()
    taken = symbol_names(func.parent)
    # Nests fusion cannot see into (a gather) or must not recompute over each other (the
    # pieces of a `torch.cat`, an RNN's time steps) become calls, which the stand-ins make
    # safe; the rest of `func` fuses.
    outline_nests(func, opaque_nests(func), taken)
    outline_nests(func, [n for group in _shared_writers(func) for n in group
                         if n.name == "affine.for"], taken)
    outline_nests(func, _outside_accumulators(func), taken)
    return add_call_proxies(func) or _unsound_reason(func)


def _outside_accumulators(func: Operation) -> list[Operation]:
    """Top-level nests that accumulate into a buffer whose initial value comes from outside
    the function (an argument or a global that no earlier nest writes).

    MLIR's producer-consumer fusion may recompute such a producer in a consumer with a
    private buffer in place of the real one, and the private buffer starts with garbage,
    not the caller's zeros: after `accel-split-functions` a depthwise conv's part got its
    output buffer as an argument, filled by the caller, and MobileNetV2's train-mode
    forward read back values 20x its range (test_zoo.py's mobilenet_v2 train step)."""
    def from_outside(store: Operation, written: set[ir.Value]) -> bool:
        key = _buffer_key(store.operands[1])
        return key is not None and key[0] in ("arg", "global") \
            and store.operands[1] not in written and _is_accumulation(store)

    found: list[Operation] = []
    written: set[ir.Value] = set()
    for op in func.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "affine.for" and any(from_outside(st, written)
                                           for st in ops_named(op, ("affine.store",))):
            found.append(op)
        written |= _accesses(op)[1]
    return found


# -- guard 2: the upstream passes run in a child process ---------------------------------------
def run_isolated(module: Operation, funcs: list[Operation], pipeline: str) -> str | None:
    """Run `pipeline` (nested under func.func) on `funcs` in a forked child process.

    Returns the child's module text, or None after a warning when the child failed.
    """
    # The child gets a copy of the module with every other function as a declaration
    # (keeps calls valid; fusion never looks across), printed at once: printing each
    # top-level op alone walked the whole module every time (0.3 s of a 12-layer GPT-2).
    with module.context, ir.Location.unknown():
        copy = Module.create()
        with InsertionPoint(copy.body):
            for op in module.regions[0].blocks[0].operations:
                op = op.operation
                if op.name == "func.func" and op.regions[0].blocks and \
                        not any(op == f for f in funcs):
                    ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                    dialects.func.FuncOp(ir.StringAttr(op.attributes["sym_name"]).value,
                                         ftype, visibility="private")
                else:
                    op.clone()
        text = copy.operation.get_asm(enable_debug_info=True, assume_verified=True)
    try:
        # Threads: MLIR fuses several functions (a split model's parts) at once.
        return run_pipeline_isolated(text, f"builtin.module(func.func({pipeline}))",
                                     threads=True)
    except IsolatedFailure as why:
        from accel.interrupts import pending

        if not pending():  # Ctrl-C: the compile stops after this pass, nothing to warn
            warnings.warn(f"accel-affine-fusion: skipped, upstream affine-loop-fusion failed "
                          f"({why}); the code is correct but unfused", stacklevel=2)
        return None


# -- guard 3: fusion must not repeat an accumulation -------------------------------------------
_TAG = "accel.buffer"


def _tag_buffers(func: Operation) -> None:
    for i, alloc in enumerate(ops_named(func, ("memref.alloc", "memref.alloca"))):
        alloc.attributes[_TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)


def _untag_buffers(func: Operation) -> None:
    for alloc in ops_named(func, ("memref.alloc", "memref.alloca")):
        if _TAG in alloc.attributes:
            del alloc.attributes[_TAG]


def _buffer_key(memref: ir.Value) -> tuple[str, object] | None:
    """A name for a buffer that survives printing and parsing (None: a fusion-private one)."""
    owner = memref.owner
    if isinstance(owner, ir.Block):
        return ("arg", ir.BlockArgument(memref).arg_number)
    if owner.name == "memref.get_global":
        return ("global", str(owner.attributes["name"]))
    if owner.name in ("memref.alloc", "memref.alloca") and _TAG in owner.attributes:
        return ("buffer", ir.IntegerAttr(owner.attributes[_TAG]).value)
    return None


def _local_key(memref: ir.Value) -> tuple[str, object] | None:
    """`_buffer_key` of a buffer the function allocates (None for arguments, globals)."""
    key = _buffer_key(memref)
    return key if key is not None and key[0] == "buffer" else None


def _is_accumulation(store: Operation) -> bool:
    """`store v, M[i]` where `v` is computed from a `load M[i]` earlier in the same block."""
    memref, indices = store.operands[1], list(store.operands)[2:]
    smap = store.attributes["map"]
    value = store.operands[0].owner
    seen: set[int] = set()
    frontier = [value] if isinstance(value, ir.OpView | ir.Operation) else []
    while frontier:
        op = frontier.pop().operation
        if id(op) in seen or op.block != store.block:
            continue
        seen.add(id(op))
        if op.name == "affine.load" and op.operands[0] == memref and \
                list(op.operands)[1:] == indices and op.attributes["map"] == smap:
            return True
        frontier += [v.owner for v in op.operands if isinstance(v.owner, ir.OpView | ir.Operation)]
    return False


def _ivs_reaching(values: list[ir.Value]) -> set[int]:
    """Hashes of the loop induction variables `values` are computed from (through
    `affine.apply`s and other pure ops in the function)."""
    found: set[int] = set()
    frontier = list(values)
    seen: set[int] = set()
    while frontier:
        value = frontier.pop()
        if hash(value) in seen:
            continue
        seen.add(hash(value))
        owner = value.owner
        if isinstance(owner, ir.Block):
            found.add(hash(value))
            continue
        op = owner.operation
        if op.name in ("affine.apply", "affine.min", "affine.max", "arith.index_cast",
                       "arith.addi", "arith.muli", "arith.subi"):
            frontier += list(op.operands)
    return found


def repetitions(store: Operation) -> int:
    """How often an accumulating store runs per element it updates: the product of the
    trip counts of its enclosing loops that take no part in choosing the element (their
    variable reaches neither its indices nor the bounds of a loop whose variable does).
    A reduction's own loops count; fusion must not add to them."""
    loops = []
    op = store.parent
    while op is not None and op.name == "affine.for":
        loops.append(op)
        op = op.parent
    used = _ivs_reaching(list(store.operands)[2:])
    changed = True
    while changed:  # a loop that picks the element makes its bounds' variables count too
        changed = False
        for loop in loops:
            iv = loop.regions[0].blocks[0].arguments[0]
            if hash(iv) in used:
                more = _ivs_reaching(list(loop.operands)) - used
                if more:
                    used |= more
                    changed = True
    count = 1
    for loop in loops:
        if hash(loop.regions[0].blocks[0].arguments[0]) not in used:
            trips = trip_count(loop)
            count *= 1 if trips is None else trips  # non-constant bounds count once
    return count


def accumulations(func: Operation) -> dict[tuple[str, object], int]:
    """How many top-level nests accumulate into (load, update, store back) each buffer."""
    counts: dict[tuple[str, object], int] = {}
    for op in func.regions[0].blocks[0].operations:
        keys = {_buffer_key(st.operands[1]) for st in ops_named(op.operation, ("affine.store",))
                if _is_accumulation(st)}
        for key in keys - {None}:
            counts[key] = counts.get(key, 0) + 1  # type: ignore[index]
    return counts


def accumulation_repeats(func: Operation) -> dict[tuple[str, object], int]:
    """Per buffer, the most `repetitions` of any store accumulating into it."""
    most: dict[tuple[str, object], int] = {}
    for store in ops_named(func, ("affine.store",)):
        key = _buffer_key(store.operands[1])
        if key is not None and _is_accumulation(store):
            most[key] = max(most.get(key, 0), repetitions(store))
    return most


def _replace_functions(module: Operation, funcs: list[Operation], fused_text: str, *,
                       check: bool = True,
                       rejected: list[tuple[Operation, set[tuple[str, object]]]] | None = None
                       ) -> list[Operation]:
    """Swap in each fused function unless fusion repeated an accumulation in it (`check`);
    returns the functions swapped in, and appends each one kept unfused to `rejected` with
    the buffers to blame.

    MLIR's fusion keeps a producer nest it cannot remove and recomputes its slice in the
    consumer; for a read-modify-write reduction that adds it twice (found on `mean` next to
    another output). More accumulating nests for a buffer after fusion than before means
    exactly that, and the function stays unfused.
    """
    fused = Module.parse(fused_text)
    by_name = {ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
               for op in fused.body.operations if op.operation.name == "func.func"}
    swapped = []
    for func in funcs:
        new = by_name[ir.StringAttr(func.attributes["sym_name"]).value]
        if check:
            before, after = accumulations(func), accumulations(new)
            blamed = {key for key, n in after.items() if n > before.get(key, 0)}
            # ... and within one nest: a producer's accumulation recomputed inside a
            # consumer loop that does not pick its element (a T5 decoder step's attention
            # output summed 32 times over, once per output column of the projection).
            reps_before, reps_after = accumulation_repeats(func), accumulation_repeats(new)
            blamed |= {key for key, n in reps_after.items()
                       if key in reps_before and n > reps_before[key]}
            # guard 4: a buffer left partly computed (_fusion_slices.py)
            blamed |= partial_reads(new, _local_key) - partial_reads(func, _local_key)
            if blamed:
                if rejected is not None:
                    rejected.append((func, blamed))
                continue
        new.move_before(func)
        func.erase()
        swapped.append(new)
    return swapped


#: Fusion runs again on a rejected function at most this many times (each outlines the
#: writers of the buffers the guards blamed; a CNN's backward needed 2).
RETRIES = 3

#: Fusion-private buffers up to this size live on the stack, where LLVM's SROA and mem2reg
#: turn them into registers; a heap buffer would stay a malloc per call.
STACK_BYTES = 4096


def _privates_to_stack(func: Operation) -> None:
    for alloc in ops_named(func, ("memref.alloc",)):
        if _TAG in alloc.attributes or alloc.operands:
            continue  # an original buffer, or dynamically sized
        memref = ir.MemRefType(alloc.results[0].type)
        count = 1
        for dim in memref.shape:
            count *= dim
        if count * max(memref.element_type.width // 8, 1) > STACK_BYTES:
            continue
        with alloc.location, InsertionPoint(alloc):
            stack = dialects.memref.AllocaOp(memref, [], [])
        alloc.results[0].replace_all_uses_with(stack.result)
        alloc.erase()


@register_pass
@dataclass(frozen=True)
class AffineFusion(ModulePass):
    """Fuses affine loop nests (producer-consumer and sibling) and scalarises the rest."""

    name = "accel-affine-fusion"
    #: "greedy": producer-consumer then sibling; or only one of them.
    mode: Literal["greedy", "producer", "sibling"] = "greedy"
    #: Largest fraction of redundant computation a fusion may add (MLIR's cost model).
    compute_tolerance: float = 0.30
    #: Fuse whenever legal, ignoring the cost model (for experiments).
    maximal: bool = False
    #: Forward stores to loads and drop dead private buffers afterwards (`affine-scalrep`).
    scalar_replace: bool = True

    def apply(self, module: Operation) -> None:
        if self.compute_tolerance < 0:
            self.fail(module, f"compute-tolerance must be >= 0, got {self.compute_tolerance}")
        ready = []
        try:
            for func in _functions(module):
                if not _fusable_blocks(func):
                    continue
                if prepare(func) is None:
                    ready.append(func)
            for func in ready:
                _tag_buffers(func)
            if ready:
                self._fuse(module, ready)
        finally:  # unfused functions too may hold call stand-ins
            for func in _functions(module):
                _untag_buffers(func)
                remove_call_proxies(func)

    def _fuse(self, module: Operation, ready: list[Operation]) -> None:
        mode = self.mode
        if mode != "producer" and any(has_live_loop_results(f) for f in ready):
            if mode == "sibling":
                return  # nothing safe to do
            mode = "producer"
        options = f"mode={mode} compute-tolerance={self.compute_tolerance}"
        if self.maximal:
            options += " maximal"
        pipeline = f"affine-loop-fusion{{{options}}}"
        fused = run_isolated(module, ready, pipeline)
        if fused is None:
            return
        rejected: list[tuple[Operation, set[tuple[str, object]]]] = []
        swapped = _replace_functions(module, ready, fused, rejected=rejected)
        # A function the guards rejected fuses again with the nests that write the blamed
        # buffers made calls: one reduction fusion cannot handle kept a CNN's whole
        # backward (BatchNorm, pooling, ReLU: ~25 nests over 32x8x28x28 buffers) unfused.
        # Each round blames what the last one found, up to RETRIES rounds.
        for _ in range(RETRIES):
            retry = [func for func, keys in rejected if _outline_writers(func, keys)]
            if not retry:
                break
            again = run_isolated(module, retry, pipeline)
            if again is None:
                break
            rejected = []
            swapped += _replace_functions(module, retry, again, rejected=rejected)
        # The calls' stand-ins go before scalar replacement: with them in place, its
        # output summed a clipped optimizer's grad norm wrongly (_fusion_calls.py).
        for func in swapped:
            remove_call_proxies(func)
        if self.scalar_replace and swapped:
            # Then what only depends on outer loops leaves the inner ones: a BatchNorm's
            # per-channel 1 / sqrt(var + eps), fused into the per-element nest, was
            # computed per element (LLVM cannot hoist the weights' loads past the output's
            # stores). Sound where fusion is: both see memrefs by SSA value.
            replaced = run_isolated(module, swapped,
                                    "affine-scalrep,affine-loop-invariant-code-motion")
            if replaced is not None:
                swapped = _replace_functions(module, swapped, replaced, check=False)
        for func in swapped:
            _privates_to_stack(func)
