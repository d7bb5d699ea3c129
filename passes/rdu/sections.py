"""IR rewrites for RDU sections: form `rdu.section`s, fold repeats into hypersections,
and outline a sectioned function into plain functions the CPU target runs.

`form_section` moves a group of top-level ops of a function into a new `rdu.section`
placed before the terminator: values it reads from outside become operands (block
arguments inside), free ops (constants, `tensor.empty`, fills of them) are cloned into the
body, results used outside leave through `rdu.yield`. Groups must be formed in a
topological order; the function is valid again once every compute op is in a section.

`fold_hypersections` wraps each run of sections that belongs to one repeated-module
instance (attribute `rdu.instance`) into an outer section, compares the runs by a
structural hash of their bodies (names and indices ignored; weights are operands, so
layers with different weights share a body) and turns every class of 2 or more identical
runs into one `rdu.hypersection` plus instance sections; a run without a twin is unwrapped.

`outline` turns each section body into a private `func.func` and each section into a
`func.call`, so the CPU target compiles every distinct body once (a hypersection's too)
and the original function runs them in order: the emulated program.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from accel.dialects import rdu
from accel.ir import InsertionPoint, Operation, Value, func, ir, walk
from accel.passes.rdu.operators import defining_op, used_values

INSTANCE_ATTR = "rdu.instance"
OPS_ATTR = "rdu.ops"
EST_ATTR = "rdu.est_us"
LABEL_ATTR = "rdu.label"
#: Pipeline stages of a section (its compute ops): the cost model's fill term.
STAGES_ATTR = "rdu.stages"
#: On a hypersection instance: each inner section's operators in this instance.
INNER_OPS_ATTR = "rdu.inner_ops"


def _top(op: Operation, block: ir.Block) -> Operation | None:
    """The ancestor of `op` that sits directly in `block` (None if none)."""
    while op is not None:
        parent = op.parent
        if parent is None:  # a module: it has no block (asking would crash)
            return None
        if op.block == block:
            return op
        op = parent.operation
    return None


def _nested(op: Operation) -> list[Operation]:
    found = [op]
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                found += _nested(inner.operation)
    return found


def form_section(block: ir.Block, ops: Sequence[Operation], free: set[Operation], *,
                 name: str, index: int, attributes: dict[str, ir.Attribute] | None = None,
                 buffers: bool = False) -> rdu.SectionOp:
    """Move `ops` (top-level ops of `block`, program order) into a new `rdu.section`;
    with `buffers`, each result another op of the section reads goes through an
    `rdu.stage_buffer` (depth 2: double buffering between pipeline stages)."""
    inside = set(ops)
    inputs: list[Value] = []
    for op in ops:
        for value in used_values(op):
            src = defining_op(value)
            if src is not None and (src in free or _top(src, block) in inside):
                continue
            if src is None and _top(value.owner.owner.operation, block) in inside:
                continue
            if value not in inputs:
                inputs.append(value)
    outputs = [r for op in ops for r in op.results
               if any(_top(u.owner.operation, block) not in inside for u in r.uses)]
    terminator = list(block.operations)[-1]
    section = rdu.section(inputs, [v.type for v in outputs], name=name, index=index,
                          loc=ops[0].location, ip=InsertionPoint(terminator))
    for key, value in (attributes or {}).items():
        section.operation.attributes[key] = value
    body = section.entry
    for op in ops:
        body.append(op)
    mapping = dict(zip(inputs, body.arguments, strict=True))
    clones: dict[Operation, Operation] = {}
    first = list(body.operations)[0]

    def materialise(src: Operation) -> Operation:
        if src not in clones:
            for value in src.operands:
                inner = defining_op(value)
                if inner is not None and inner in free:
                    materialise(inner)
            clone = src.clone(ip=InsertionPoint(first))
            for i, value in enumerate(src.operands):
                inner = defining_op(value)
                if inner is not None and inner in clones:
                    clone.operands[i] = clones[inner].results[list(inner.results).index(value)]
            clones[src] = clone
        return clones[src]

    for op in ops:
        for nested in _nested(op):
            for i, value in enumerate(list(nested.operands)):
                if value in mapping:
                    nested.operands[i] = mapping[value]
                    continue
                src = defining_op(value)
                if src is not None and src in free:
                    clone = materialise(src)
                    nested.operands[i] = clone.results[list(src.results).index(value)]
    rdu.yield_(outputs, loc=ops[-1].location, ip=InsertionPoint(body))
    if buffers:
        _buffer_stages(body, ops)
    for k, value in enumerate(outputs):
        for use in list(value.uses):
            if _top(use.owner.operation, block) != section.operation:
                use.owner.operands[use.operand_number] = section.results[k]
    return section


def _buffer_stages(body: ir.Block, ops: Sequence[Operation]) -> None:
    """A stage buffer after each op whose result feeds another op of the section."""
    inside = set(ops)
    for op in ops:
        for result in op.results:
            uses = [u for u in result.uses if _top(u.owner.operation, body) in inside]
            if not uses:
                continue
            buffered = rdu.stage_buffer(result, 2, loc=op.location, ip=InsertionPoint(op))
            buffered.owner.move_after(op)
            for use in uses:
                use.owner.operands[use.operand_number] = buffered


def strip_stage_buffers(root: Operation) -> None:
    """Replace every `rdu.stage_buffer` by its operand (the host has no PMUs)."""
    found: list[Operation] = []

    def visit(op: Operation) -> ir.WalkResult:
        if op.name == "rdu.stage_buffer":
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    walk(root, visit)
    for op in found:
        op.results[0].replace_all_uses_with(op.operands[0])
        op.erase()


def erase_dead_free(block: ir.Block, free: set[Operation]) -> None:
    """Erase the free ops no one uses any more (their clones live in the sections)."""
    for op in reversed([o.operation for o in block.operations]):
        if op in free and all(not list(r.uses) for r in op.results):
            op.erase()


def sections_of(block: ir.Block) -> list[Operation]:
    return [op.operation for op in block.operations if op.operation.name == "rdu.section"]


# -- hypersections --------------------------------------------------------------------------
_VOLATILE = re.compile(r'(sym_name = "[^"]*"|index = \d+ : i64|rdu\.est_us = [^,}]*|'
                       r'rdu\.label = "[^"]*"|rdu\.instance = "[^"]*"|rdu\.ops = \[[^\]]*\])')


def structural_hash(op: Operation) -> str:
    """A hash of `op`'s body and signature that ignores names, indices and locations."""
    text = op.get_asm(print_generic_op_form=True, enable_debug_info=False, use_local_scope=True,
                      assume_verified=True)
    head, _, body = text.partition("\n")  # the first line names the outer operands
    head = re.sub(r"%[\w#:]+", "%", head)
    return hashlib.sha256(_VOLATILE.sub("", head + "\n" + body).encode()).hexdigest()


def _instance(op: Operation) -> str | None:
    attr = op.attributes[INSTANCE_ATTR] if INSTANCE_ATTR in op.attributes else None
    return attr.value if isinstance(attr, ir.StringAttr) else None


def _runs(block: ir.Block) -> list[tuple[str, list[Operation]]]:
    runs: list[tuple[str, list[Operation]]] = []
    for section in sections_of(block):
        key = _instance(section)
        if key is not None and runs and runs[-1][0] == key:
            runs[-1][1].append(section)
        elif key is not None:
            runs.append((key, [section]))
    return runs


def _max_attr(sections: Sequence[Operation], name: str) -> int:
    return max((s.attributes[name].value for s in sections if name in s.attributes), default=0)


def fold_hypersections(module: Operation, block: ir.Block) -> dict[str, list[str]]:
    """Fold identical runs of sections into hypersections; returns name -> instances."""
    runs = [(key, ops) for key, ops in _runs(block) if ops]
    if len(runs) < 2:
        return {}
    wrapped: list[tuple[str, Operation]] = []
    for key, ops in runs:
        everything = [o.operation for o in block.operations]
        after = everything[everything.index(ops[-1]) + 1]
        outer = form_section(block, ops, set(), name=key, index=0)
        outer.operation.attributes["pcus"] = rdu._i64(_max_attr(ops, "pcus"))
        outer.operation.attributes["pmus"] = rdu._i64(_max_attr(ops, "pmus"))
        if "phase" in ops[0].attributes:  # a run is one module instance: one phase
            outer.operation.attributes["phase"] = ops[0].attributes["phase"]
        outer.operation.move_before(after)
        wrapped.append((key, outer.operation))
    classes: dict[str, list[tuple[str, Operation]]] = {}
    for key, outer in wrapped:
        classes.setdefault(structural_hash(outer), []).append((key, outer))
    found: dict[str, list[str]] = {}
    used_names: set[str] = set()
    labels = {key: ir.ArrayAttr.get([a for inner in sections_of(outer.regions[0].blocks[0])
                                       if OPS_ATTR in inner.attributes
                                       for a in inner.attributes[OPS_ATTR]])
              for key, outer in wrapped}
    # Per inner section: what the instance's own operators are (the body keeps the first's).
    inner_labels = {key: ir.ArrayAttr.get([
        inner.attributes[OPS_ATTR] if OPS_ATTR in inner.attributes else ir.ArrayAttr.get([])
        for inner in sections_of(outer.regions[0].blocks[0])]) for key, outer in wrapped}
    for members in classes.values():
        if len(members) < 2:
            _unwrap(members[0][1])
            continue
        name = _hypersection_name(members[0][0], used_names)
        found[name] = [key for key, _ in members]
        first = members[0][1]
        signature_in = [v.type for v in first.operands]
        signature_out = [v.type for v in first.results]
        hyper = rdu.hypersection(name, signature_in, signature_out, loc=first.location,
                                 ip=InsertionPoint(module.regions[0].blocks[0]))
        body = hyper.entry
        old = first.regions[0].blocks[0]
        for op in list(old.operations):
            body.append(op.operation)
        for a, b in zip(old.arguments, body.arguments, strict=True):
            a.replace_all_uses_with(b)
        renumber(body)  # the body's sections: s0_..., s1_... (compiled once, reused)
        for key, outer in members:
            instance = rdu.section(list(outer.operands), signature_out, name=key, index=0,
                                   hypersection=name, loc=outer.location,
                                   ip=InsertionPoint(outer))
            for attr in ("pcus", "pmus", "phase"):
                instance.operation.attributes[attr] = outer.attributes[attr]
            instance.operation.attributes[INSTANCE_ATTR] = ir.StringAttr.get(key)
            instance.operation.attributes[OPS_ATTR] = labels[key]
            instance.operation.attributes[INNER_OPS_ATTR] = inner_labels[key]
            for a, b in zip(outer.results, instance.results, strict=True):
                a.replace_all_uses_with(b)
            outer.erase()
    return found


def _hypersection_name(key: str, used: set[str]) -> str:
    """`h.0` -> `h`: the container the repeated instances live in."""
    return _fresh(re.sub(r"(\.\d+|#\d+)$", "", key).replace(".", "_") or "layer", used)


def _unwrap(outer: Operation) -> None:
    """Put the sections of a wrapped run back in place of `outer`."""
    body = outer.regions[0].blocks[0]
    ops = list(body.operations)
    terminator = ops[-1].operation
    for a, value in zip(body.arguments, outer.operands, strict=True):
        a.replace_all_uses_with(value)
    for op in ops[:-1]:
        op.operation.move_before(outer)
    for result, value in zip(outer.results, terminator.operands, strict=True):
        result.replace_all_uses_with(value)
    outer.erase()


def renumber(block: ir.Block, module: Operation | None = None) -> None:
    """Sections' `index` and `s<index>_` name prefix in execution order. With `module`, a
    hypersection instance counts as its body's sections (an instance `s<n>_<instance>`
    covers indices n, n+1, ...: each runs one section of the body), so indices number the
    sections the chip runs; without it every section counts one."""
    sizes: dict[str, int] = {}
    if module is not None:
        for op in module.regions[0].blocks[0].operations:
            if op.operation.name == "rdu.hypersection":
                sizes[op.operation.attributes["sym_name"].value] = max(
                    1, len(sections_of(op.operation.regions[0].blocks[0])))
    n = 0
    for section in sections_of(block):
        section.attributes["index"] = rdu._i64(n)
        name = re.sub(r"^s\d+_", "", section.attributes["sym_name"].value)
        section.attributes["sym_name"] = ir.StringAttr.get(f"s{n}_{name}")
        ref = section.attributes[rdu.HYPERSECTION_ATTR].value \
            if rdu.HYPERSECTION_ATTR in section.attributes else None
        n += sizes.get(ref, 1)


# -- outlining for emulation ----------------------------------------------------------------
def outline(module: Operation) -> list[str]:
    """Every section body -> a private func; sections -> calls. Returns the function names
    the sections became, in execution order of the top level."""
    strip_stage_buffers(module)
    top = module.regions[0].blocks[0]
    hypers = [op.operation for op in top.operations if op.operation.name == "rdu.hypersection"]
    names: dict[str, str] = {}
    taken = {op.operation.attributes["sym_name"].value for op in top.operations
             if "sym_name" in op.operation.attributes}
    for hyper in hypers:
        fname = _fresh(f"rdu_hs_{hyper.attributes['sym_name'].value}", taken)
        names[hyper.attributes["sym_name"].value] = fname
        _outline_inner(module, hyper.regions[0].blocks[0], taken, names)
        _to_func(module, hyper, fname, list(hyper.regions[0].blocks[0].arguments))
    called: list[str] = []
    for fn in [op.operation for op in top.operations if op.operation.name == "func.func"]:
        if fn.regions[0].blocks:
            called += _outline_inner(module, fn.regions[0].blocks[0], taken, names)
    return called


def _fresh(name: str, taken: set[str]) -> str:
    """`name` made a symbol (non-word characters to `_`), suffixed `_2`, `_3`, ... until
    it is not in `taken`; the result is added to `taken`."""
    base = re.sub(r"[^\w]", "_", name)
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{base}_{n}"
    taken.add(out)
    return out


def _outline_inner(module: Operation, block: ir.Block, taken: set[str],
                   names: dict[str, str]) -> list[str]:
    called = []
    for section in sections_of(block):
        if rdu.HYPERSECTION_ATTR in section.attributes:
            callee = names[section.attributes[rdu.HYPERSECTION_ATTR].value]
        else:
            callee = _fresh(f"rdu_{section.attributes['sym_name'].value}", taken)
            _to_func(module, section, callee, list(section.regions[0].blocks[0].arguments))
        call = func.CallOp([r.type for r in section.results], ir.FlatSymbolRefAttr.get(callee),
                           list(section.operands), loc=section.location,
                           ip=InsertionPoint(section))
        for a, b in zip(section.results, call.results, strict=True):
            a.replace_all_uses_with(b)
        section.erase()
        called.append(callee)
    return called


def _to_func(module: Operation, op: Operation, name: str, args: list[Value]) -> None:
    """A private func.func `name` holding `op`'s body (its yield becomes the return)."""
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    results = [v.type for v in ops[-1].operands]
    fn = func.FuncOp(name, ir.FunctionType.get([a.type for a in args], results),
                     visibility="private", loc=op.location,
                     ip=InsertionPoint(module.regions[0].blocks[0]))
    entry = fn.add_entry_block()
    for a, b in zip(args, entry.arguments, strict=True):
        a.replace_all_uses_with(b)
    for inner in ops[:-1]:
        entry.append(inner.operation)
    func.ReturnOp(list(ops[-1].operands), loc=ops[-1].location, ip=InsertionPoint(entry))
    ops[-1].operation.erase()
    if op.name == "rdu.hypersection":
        op.erase()

