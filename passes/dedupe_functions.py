"""`accel-dedupe-functions`: private functions with the same body become one.

Why: a model's repeated layers lower to repeated code. `accel-split-functions` cuts a
model's `main` into parts that take their weights as arguments, so the parts of layer 2..N
are the parts of layer 1 again; the parallel loop bodies of each layer's attention are too.
LLVM optimises and compiles every function it is given (a 12-layer GPT-2: 27 parts, 6
different). Here each private function is keyed by its text without its name (types,
attributes and constants included, locations not), and every reference to a later function
with a known key (calls, `func.constant`, `llvm.mlir.addressof`) is renamed to the first
one, which stays; the others are erased. Repeated until nothing changes: two callers become
equal once their callees are merged.

    func.func private @f_part3(%a: memref<8xf32>) { BODY }       func.func private @f_part3(...)
    func.func private @f_part7(%a: memref<8xf32>) { BODY }   ->  (gone)
    call @f_part7(%w7)                                           call @f_part3(%w7)

Public functions (entry points) and declarations are never merged.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from accel.ir import Operation, ir
from accel.passes.base import ModulePass, register_pass


def _key(text: str, name: str) -> str | None:
    """The digest of a function's text with its own name taken out; None for a function
    that names itself (recursion: the renaming would change its meaning)."""
    header = f"@{name}("
    if text.count(f"@{name}") != 1 or header not in text:
        return None
    return hashlib.sha256(text.replace(header, "@(", 1).encode()).hexdigest()


def _private_definitions(body: ir.Block) -> list[tuple[Operation, str]]:
    out = []
    for item in body.operations:
        op = item.operation
        if op.name != "func.func" or len(op.regions[0].blocks) == 0 or \
                "sym_visibility" not in op.attributes or \
                ir.StringAttr(op.attributes["sym_visibility"]).value != "private":
            continue
        out.append((op, ir.StringAttr(op.attributes["sym_name"]).value))
    return out


def dedupe_functions(module: Operation) -> int:
    """Merge the private functions of `module` with equal bodies; returns how many went."""
    body = module.regions[0].blocks[0]
    removed = 0
    # Each function's text, printed once: a round's renames change only the functions that
    # referred to a merged name, and only those are printed again (printing every function
    # every round was 0.1 s of a 12-layer GPT-2's compile). In a local scope: without it,
    # each print walks the whole module first (SSA names and aliases for every op), and the
    # ResNet-18 train step's ~3000 functions took 3.2 s of split-functions, now 0.9 s.
    texts: dict[str, str] = {}
    while True:
        first: dict[str, str] = {}
        duplicates: list[tuple[Operation, str, str]] = []
        for op, name in _private_definitions(body):
            text = texts.get(name)
            if text is None:
                text = texts[name] = op.get_asm(enable_debug_info=False, assume_verified=True,
                                                use_local_scope=True)
            key = _key(text, name)
            if key is None:
                continue
            if key in first:
                duplicates.append((op, name, first[key]))
            else:
                first[key] = name
        if not duplicates:
            return removed
        gone = re.compile("@(?:" + "|".join(re.escape(name) for _, name, _ in duplicates)
                          + r")(?![\w$.])")
        for op, name, keep in duplicates:
            ir.SymbolTable.replace_all_symbol_uses(name, keep, module)
            op.erase()
            del texts[name]
        texts = {name: text for name, text in texts.items() if not gone.search(text)}
        removed += len(duplicates)


@register_pass
@dataclass(frozen=True)
class DedupeFunctions(ModulePass):
    """Private functions with equal bodies -> one function, every reference renamed."""

    name = "accel-dedupe-functions"

    def apply(self, module: Operation) -> None:
        dedupe_functions(module)
