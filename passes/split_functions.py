"""`accel-split-functions`: a long function body becomes a chain of calls to private parts.

Why: a whole model lowers to one `main` with hundreds of loop nests one after the other.
LLVM's analyses cost more than linear time in one function's size (ScalarEvolution climbs
the chain of loop predecessors up to the entry for every "is this block guarded?" query;
loop rotation and the vectoriser update a dominator tree of the whole function), so a
2+2-layer T5 (292 nests) spent 27 s in LLVM's `-O1` pipeline. Each part is optimised on
its own, and marked `llvm.no_inline` so that LLVM's inliner does not rebuild the body.

    %buf = memref.alloc() : memref<64xf32>     %st = memref.alloca() : memref<i8>
    affine.for ... { ... %a ... %buf ... }     %buf = memref.alloc() : memref<64xf32>
    %tmp = memref.alloc() : memref<8xf32>  ->  memref.store %c0, %st[]
    affine.for ... { ... %tmp ... %buf ...}    call @main_part0(%a, %buf, %st)
    memref.dealloc %tmp                        %ok = memref.load %st[]; cf.assert %ok != 0
    ... (%buf used later)                      ...
                                               func.func private @main_part0(%a, %buf, %st)
                                                   attributes {llvm.no_inline} {
                                                 %tmp = memref.alloc() ... (its loops)
                                                 memref.dealloc %tmp
                                                 memref.store %c1, %st[]; return }

What moves: runs of consecutive "work" ops (no results, no `cf.assert` inside: loop nests,
calls, copies) of at most `max-ops` nested operations. Between two work ops of a run, pure
ops and allocations move up before the call and `memref.dealloc`s down after it (both keep
the program's meaning); anything else ends the run. An allocation (or view) used only
inside the run, with its dealloc, moves into the part; the rest stay in the caller and are
passed as arguments. Constants are cloned into the part (LLVM keeps seeing constant trip
counts); globals (a layer's weights) are arguments, so that the parts of repeated layers
are equal and `dedupe` (accel-dedupe-functions) keeps one of each: LLVM then compiles a
12-layer GPT-2's `main` as 6 different parts instead of 27.

Failures: a part that allocates can fail there (`accel-check-allocations` makes it report
and return). Such a part sets a status byte as its last act; the caller checks it after
the call with a `cf.assert` (which `accel-assert-to-error-return` turns into a return), so
an error never runs on into the next part. The runtime reports the first failure, the
part's own. Functions with fewer than `min-ops` nested operations are left alone.

Run it on memrefs, after bufferization and deallocation, before lowering to LLVM.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accel.ir import InsertionPoint, Operation, dialects, ir, walk
from accel.passes._affine import VIEW_OPS, base_buffer
from accel.passes.base import ModulePass, is_inside, register_pass
from accel.passes.dedupe_functions import dedupe_functions

#: Side-effect-free ops (or allocations) that may move up before a part's call.
_HOISTABLE = frozenset({
    "memref.alloc", "memref.alloca", "memref.get_global", "memref.subview",
    "memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast", "memref.cast",
    "memref.view", "memref.dim", "memref.extract_strided_metadata",
    "memref.extract_aligned_pointer_as_index", "affine.apply", "affine.min", "affine.max",
    "llvm.mlir.constant", "llvm.mlir.addressof", "llvm.mlir.zero", "ub.poison",
})
_PURE_DIALECTS = ("arith.", "index.", "math.")
#: Operand-free ops a part makes itself instead of taking their value as an argument.
_CLONEABLE = frozenset({"arith.constant", "llvm.mlir.constant", "llvm.mlir.addressof",
                        "llvm.mlir.zero", "ub.poison"})
#: Ops without results that never start or join a run.
_NOT_WORK = frozenset({"cf.assert", "func.return", "memref.dealloc"})
#: Ops whose non-memref results are data read from a buffer, never its address.
_DATA_ONLY = frozenset({"memref.load", "affine.load", "memref.dim", "vector.load",
                        "affine.vector_load", "vector.transfer_read",
                        "memref.extract_strided_metadata"})
#: Ops whose move into a part makes the part fallible (accel-check-allocations).
_ALLOCATIONS = frozenset({"memref.alloc", "memref.alloca"})
#: The message of the caller's status check; never shown (the part's failure is reported).
STATUS_MESSAGE = "a split part of this function failed"


def _hoistable(op: Operation) -> bool:
    return len(op.regions) == 0 and (op.name in _HOISTABLE or op.name.startswith(_PURE_DIALECTS))


def _size_and_asserts(op: Operation) -> tuple[int, bool]:
    """(nested op count, whether a cf.assert is nested in `op`)."""
    count, asserts = 0, False

    def visit(inner: Operation) -> ir.WalkResult:
        nonlocal count, asserts
        count += 1
        asserts = asserts or inner.name == "cf.assert"
        return ir.WalkResult.ADVANCE

    walk(op, visit)
    return count, asserts


@dataclass
class _Run:
    work: list[Operation] = field(default_factory=list)
    up: list[Operation] = field(default_factory=list)  # pure ops / allocations in between
    down: list[Operation] = field(default_factory=list)  # deallocations in between
    size: int = 0
    tail: int = 0  # up[tail:] come after the last work op


def _runs(block: ir.Block, max_ops: int) -> list[_Run]:
    runs: list[_Run] = []
    current = _Run()

    def close() -> None:
        nonlocal current
        if current.size > 1:
            runs.append(current)
        current = _Run()

    def split() -> None:  # the next work op starts a new run after the current one
        nonlocal current
        # Pure ops and allocations after the last work op go with the next run's work.
        tail = current.up[current.tail:]
        del current.up[current.tail:]
        runs.append(current)
        current = _Run(up=tail)

    ops = [op.operation for op in block.operations]
    for op in ops[:-1]:  # the terminator stays
        if len(op.results) == 0 and op.name not in _NOT_WORK:
            size, asserts = _size_and_asserts(op)
            if asserts:
                close()
                continue
            if current.work and current.size + size > max_ops:
                split()
            current.work.append(op)
            current.size += size
            current.tail = len(current.up)
        elif _hoistable(op):  # before the first work op too: it may be the part's own
            current.up.append(op)
        elif current.work and op.name == "memref.dealloc":
            current.down.append(op)
        else:
            close()
    close()
    return runs


def _top(op: Operation, func: Operation) -> Operation:
    """The op of `func`'s body that is or contains `op`."""
    while op.parent is not None and op.parent != func:
        op = op.parent
    return op


def _escapes(op: Operation) -> bool:
    """Whether `op`, using a buffer, may hand its address on through a result that is no
    memref: `builtin.unrealized_conversion_cast` to an LLVM descriptor that a parallel loop's
    context then stores (accel-parallelize-loops), `extract_aligned_pointer_as_index`, ...
    Uses of such values (stores into memory, calls) are out of sight, so the buffer must
    live to the end. Loads and sizes carry data, never the address."""
    if op.name in _DATA_ONLY:
        return False
    return any(not isinstance(r.type, ir.MemRefType) for r in op.results)


def _deallocate_early(func: Operation) -> None:
    """Each top-level `memref.dealloc` of a top-level allocation moves up to just after the
    last op using the buffer or a view of it (the deallocation pipeline puts them all at
    the end, which would keep every temporary out of the parts; freeing earlier also lowers
    the peak memory)."""
    block = func.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    position = {op: i for i, op in enumerate(ops)}
    for dealloc in [op for op in ops if op.name == "memref.dealloc"]:
        owner = _owner(dealloc.operands[0])
        if owner is None or owner.name not in _ALLOCATIONS or owner.parent != func:
            continue
        last, todo = position[owner], [dealloc.operands[0]]
        while todo and last < len(ops):
            for use in todo.pop().uses:
                top = _top(use.owner.operation, func)
                if top == dealloc:
                    continue
                # Returned, or its address handed on out of sight: it lives to the end.
                if top.name == "func.return" or _escapes(top):
                    last = len(ops)
                    break
                last = max(last, position[top])
                # Memref results of a user may alias the buffer (views, selects, loops
                # carrying it): their uses count too.
                todo.extend(r for r in top.results if isinstance(r.type, ir.MemRefType))
        if last < position[dealloc]:
            dealloc.move_after(ops[last])


def _local(run: _Run, func: Operation) -> set[Operation]:
    """The run's in-between ops used only inside the run (they move into the part)."""
    inside = set(run.work)
    deallocs = set(run.down)
    local: set[Operation] = set()
    for op in reversed(run.up):  # users come after their producers: decide users first
        tops = [_top(use.owner.operation, func) for r in op.results for use in r.uses]
        if all(t in inside or t in local or t in deallocs for t in tops):
            local.add(op)
    for op in run.down:
        owner = op.operands[0].owner
        if isinstance(owner, ir.Operation | ir.OpView) and owner.operation in local:
            local.add(op)
    return local


def _uses(ops: list[Operation]) -> list[ir.Value]:
    """Values `ops` use but do not define, in order of first use."""
    defined: set[ir.Value] = set()
    used: dict[ir.Value, None] = {}

    def visit(op: Operation) -> ir.WalkResult:
        for region in op.regions:
            for block in region.blocks:
                defined.update(block.arguments)
        defined.update(op.results)
        for value in op.operands:
            used.setdefault(value, None)
        return ir.WalkResult.ADVANCE

    for op in ops:
        walk(op, visit)
    return [v for v in used if v not in defined]


def _unique(values: list[ir.Value]) -> list[ir.Value]:
    out: list[ir.Value] = []
    for v in values:
        if not any(v == u for u in out):
            out.append(v)
    return out


def _static_view(value: ir.Value) -> Operation | None:
    owner = _owner(value)
    return owner if owner is not None and owner.name in VIEW_OPS and len(owner.operands) == 1 \
        else None


def _static_base(value: ir.Value) -> ir.Value:
    """`value` under its chain of static views."""
    while (view := _static_view(value)) is not None:
        value = view.operands[0]
    return value


def _static_views(values: list[ir.Value]) -> list[Operation]:
    """The view ops (static: the source is their only operand) under `values`, each chain
    from its root up: a part recreates them from the buffer, so that it never takes a
    buffer and a view of it as two arguments."""
    out: list[Operation] = []
    for value in values:
        chain = []
        while (view := _static_view(value)) is not None:
            chain.append(view)
            value = view.operands[0]
        for op in reversed(chain):
            if not any(op == o for o in out):
                out.append(op)
    return out


def _owner(value: ir.Value) -> Operation | None:
    owner = value.owner
    return owner.operation if isinstance(owner, ir.Operation | ir.OpView) else None


class _Splitter:
    def __init__(self, module: Operation, func: Operation, names: set[str]) -> None:
        self.module_body = module.regions[0].blocks[0]
        self.func = func
        self.names = names
        self.fname = ir.StringAttr(func.attributes["sym_name"]).value
        self.status: ir.Value | None = None

    def _status(self) -> ir.Value:
        """A stack byte in the function's entry for the parts' status (made once)."""
        if self.status is None:
            entry = self.func.regions[0].blocks[0]
            with InsertionPoint.at_block_begin(entry), self.func.location:
                i8 = ir.IntegerType.get_signless(8)
                self.status = dialects.memref.AllocaOp(ir.MemRefType.get([], i8), [], []).result
        return self.status

    def _name(self) -> str:
        count = 0
        while f"{self.fname}_part{count}" in self.names:
            count += 1
        name = f"{self.fname}_part{count}"
        self.names.add(name)
        return name

    def outline(self, run: _Run) -> None:
        local = _local(run, self.func)
        first, last = run.work[0], run.work[-1]
        body = [op for op in run.up if op in local] + run.work + \
            [op for op in run.down if op in local]
        values = _uses(body)
        clones = [v for v in values if (o := _owner(v)) is not None and o.name in _CLONEABLE
                  and len(o.operands) == 0]
        views = _static_views([v for v in values if v not in clones])
        args = _unique([_static_base(v) for v in values if v not in clones])
        roots = [base_buffer(v) for v in args if isinstance(v.type, ir.MemRefType)]
        if len(_unique(roots)) < len(roots):
            # Two arguments would name one buffer: the passes after the first split
            # (fusion, parallel loops) take distinct arguments for distinct buffers.
            return
        for op in run.up:
            if op not in local:
                op.move_before(first)
        for op in reversed(run.down):
            if op not in local:
                op.move_after(last)
        fallible = any(op.name in _ALLOCATIONS for op in body)
        if fallible:
            args.append(self._status())
        name = self._name()
        loc = first.location
        i8 = ir.IntegerType.get_signless(8)
        with InsertionPoint(self.module_body), loc:
            part = dialects.func.FuncOp(name, ([v.type for v in args], []),
                                        visibility="private")
            part.operation.attributes["llvm.no_inline"] = ir.UnitAttr.get()
            entry = part.add_entry_block()
        with InsertionPoint(entry), loc:
            mapping = [(v, entry.arguments[i]) for i, v in enumerate(args)]
            for v in clones:
                mapping.append((v, _owner(v).clone().results[0]))  # type: ignore[union-attr]
            for view in views:  # root first: each view's source is mapped already
                copy = view.clone()
                source = view.operands[0]
                copy.operands[0] = next(new for old, new in mapping if old == source)
                mapping.append((view.results[0], copy.results[0]))
            ret = dialects.func.ReturnOp([])
        # In the caller: clear the status, call, and stop unless the part set it.
        with InsertionPoint(first), loc:
            if fallible:
                zero = dialects.arith.ConstantOp(i8, ir.IntegerAttr.get(i8, 0))
                dialects.memref.StoreOp(zero.result, self._status(), [])
            dialects.func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
            if fallible:
                status = dialects.memref.LoadOp(self._status(), []).result
                ok = dialects.arith.CmpIOp(dialects.arith.CmpIPredicate.ne, status,
                                           zero.result)
                dialects.cf.AssertOp(ok.result, STATUS_MESSAGE)
        for op in body:
            op.move_before(ret.operation)
        if fallible:  # reached only when nothing in the part failed
            with InsertionPoint(ret.operation), loc:
                one = dialects.arith.ConstantOp(i8, ir.IntegerAttr.get(i8, 1))
                dialects.memref.StoreOp(one.result, entry.arguments[len(args) - 1], [])
        for old, new in mapping:
            for use in list(old.uses):
                owner = use.owner.operation
                if is_inside(owner, part.operation):
                    owner.operands[use.operand_number] = new


@register_pass
@dataclass(frozen=True)
class SplitFunctions(ModulePass):
    """Long function bodies -> calls to private no-inline parts (LLVM compile time)."""

    name = "accel-split-functions"
    #: Most nested operations in one part.
    max_ops: int = 300
    #: Functions with fewer nested operations than this stay whole (a 2-layer GPT-2's
    #: `main` split: LLVM's CPU time 3.1 s -> 1.6 s, its calls as fast).
    min_ops: int = 500
    #: Merge equal private functions afterwards (parts of repeated layers).
    dedupe: bool = True

    def apply(self, module: Operation) -> None:
        body = module.regions[0].blocks[0]
        names = {ir.StringAttr(op.operation.attributes["sym_name"]).value
                 for op in body.operations if "sym_name" in op.operation.attributes}
        funcs = [op.operation for op in body.operations if op.operation.name == "func.func"
                 and len(op.operation.regions[0].blocks) == 1]
        for func in funcs:
            # Generated kernels (accel_gemm_*, accel_conv_*, accel_attention_*, ...) are
            # sized by their generators (unrolled tiles and transposes) and optimised whole.
            symbol = ir.StringAttr(func.attributes["sym_name"]).value
            if symbol.startswith("accel_"):
                continue
            # Before deallocation (the pipeline's first split) there is nothing to move; a
            # function split then, a few calls, still frees early after deallocation.
            _deallocate_early(func)
            if _size_and_asserts(func)[0] < self.min_ops:
                continue
            splitter = _Splitter(module, func, names)
            for run in _runs(func.regions[0].blocks[0], self.max_ops):
                splitter.outline(run)
        if self.dedupe:
            dedupe_functions(module)
