"""`accel-outline-nonaffine-linalg`: linalg ops whose loop bounds affine cannot name go into
functions of their own.

Why: `convert-linalg-to-affine-loops` bounds each loop by the operands' sizes. A dynamic
size that comes from inside an `scf.for` (torch-mlir's `torch.linalg.det` eliminates one
row per iteration: `tensor.extract_slice %m[%i + 1, 0] [3 - %i, 4]`) is neither a valid
affine dimension nor symbol there, so the pass built an invalid `affine.for` and the
compile failed ("'affine.for' op operand cannot be used as a dimension id"). Moved into a
private function, the op's operands are function arguments, whose sizes are valid
symbols; the call stays where the op was:

    scf.for %i ... {                          scf.for %i ... {
      %v = memref.subview %m[...] [%n, 4]       %v = memref.subview %m[...] [%n, 4]
      linalg.generic ins(%v ...) outs(...)  ->  func.call @f_linalg0(%v, ...)
    }                                         }
                                              func.func private @f_linalg0(%a: memref<?x4xf32,
                                                  strided<...>>, ...) { linalg.generic ...}

Only linalg ops nested in a non-affine op (scf, ...) with a dynamically sized operand move;
static ones get constant bounds where they are. Affine fusion leaves a function that calls
one alone (a call is opaque to it), and LLVM inlines the small private function again.
Run it on memrefs, before `convert-linalg-to-affine-loops`.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.base import ModulePass, is_inside, ops_named, register_pass

#: Ops whose regions keep affine dimensions and symbols valid for what they contain.
_AFFINE_PARENTS = ("func.func", "affine.for", "affine.if", "affine.parallel")


def _dynamic(value: ir.Value) -> bool:
    t = value.type
    return isinstance(t, ir.MemRefType | ir.RankedTensorType) and \
        ir.ShapedType.get_dynamic_size() in t.shape


def _needs_outlining(op: Operation) -> bool:
    if op.name in ("linalg.yield", "linalg.index") or op.parent.name.startswith("linalg."):
        return False
    if op.parent.name in _AFFINE_PARENTS:
        return False
    return any(_dynamic(v) for v in op.operands) and not op.results


@register_pass
@dataclass(frozen=True)
class OutlineNonAffineLinalg(ModulePass):
    """linalg ops with sizes from inside scf loops go into private functions (valid affine)."""

    name = "accel-outline-nonaffine-linalg"

    def apply(self, module: Operation) -> None:
        names = symbol_names(module)
        for func in ops_named(module, ("func.func",)):
            fname = ir.StringAttr(func.attributes["sym_name"]).value
            # Chosen before any is outlined: outlining erases the op, and a list of every op
            # would still hold handles to its body's ops, freed (a segfault; docs/passes.md).
            found = [op for op in ops_named(func, None)
                     if op.name.startswith("linalg.") and _needs_outlining(op)]
            for op in found:
                outline_op(func, op, fresh_symbol(f"{fname}_linalg", names))


def symbol_names(module: Operation) -> set[str]:
    """The symbol names of `module`'s top-level ops."""
    return {ir.StringAttr(op.operation.attributes["sym_name"]).value
            for op in module.regions[0].blocks[0].operations
            if "sym_name" in op.operation.attributes}


def fresh_symbol(prefix: str, taken: set[str]) -> str:
    """`<prefix><k>` for the least k not in `taken` (added to it)."""
    count = 0
    while f"{prefix}{count}" in taken:
        count += 1
    taken.add(f"{prefix}{count}")
    return f"{prefix}{count}"


def outline_op(func: Operation, op: Operation, name: str) -> None:
    """Move `op` into a new private function `@name` after `func`; call it instead.
    Values its body uses from outside (a linalg region may capture them) become
    arguments too."""
    operands = list(op.operands)
    # Captured constants are cloned into the new function, not passed: an index that
    # arrives as an argument is no constant there, and `memref.dim` with a dynamic index
    # lowers to a copy of the sizes in an `alloca`, which inside a loop grows the stack at
    # every iteration (a batch-8 GPT-2 decode step's cache copy overflowed the 8 MB stack).
    outside = _captures(op)
    captured = [v for v in outside if not _is_constant(v)]
    constants = [v for v in outside if _is_constant(v)]
    ftype = ir.FunctionType.get([v.type for v in operands + captured], [])
    with op.location, InsertionPoint.after(func):
        outlined = dialects.func.FuncOp(name, ftype, visibility="private")
        entry = outlined.add_entry_block()
    args = list(entry.arguments)
    with op.location, InsertionPoint(entry):
        inside = [value.owner.clone().results[0] for value in constants]
        clone = op.clone()
        for i, arg in enumerate(args[:len(operands)]):
            clone.operands[i] = arg
        mapping = list(zip(captured, args[len(operands):], strict=True)) + \
            list(zip(constants, inside, strict=True))
        for inner in ops_named(clone, None)[1:]:
            for i, value in enumerate(inner.operands):
                for outer, new in mapping:
                    if value == outer:
                        inner.operands[i] = new
        dialects.func.ReturnOp([])
    with op.location, InsertionPoint(op):
        dialects.func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands + captured)
    op.erase()


def _is_constant(value: ir.Value) -> bool:
    owner = value.owner
    return isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant"


def _captures(op: Operation) -> list[ir.Value]:
    """Values used inside `op`'s regions that are defined outside `op`, once each."""
    found: list[ir.Value] = []
    for inner in ops_named(op, None)[1:]:
        for value in inner.operands:
            owner = value.owner
            where = owner.owner if isinstance(owner, ir.Block) else owner
            if not is_inside(where, op) and not any(value == v for v in found):
                found.append(value)
    return found
