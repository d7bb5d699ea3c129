"""`accel-assert-to-error-return`: a failed `cf.assert` reports its message and returns.

Why: `convert-cf-to-llvm` lowers `cf.assert` to a `puts` + `abort()`, which kills the whole
Python process (or the program linking an AOT library). torch-mlir emits asserts for
conditions eager PyTorch reports as exceptions (shape mismatches, unsupported values), so
accel turns each one into: call `__accel_assert_fail(message)` and return at once. The
runtime provides that function (the JIT binds it to a recorder; the caller raises an
exception after the call returns), so a failed assert becomes an error, not a crash.

    cf.assert %ok, "boom"                    cf.cond_br %ok, ^cont, ^fail
    <rest of block>                   ->   ^cont: <rest of block>
                                           ^fail:
                                             call @__accel_assert_fail(<"f.py:3:7: boom">)
                                             return <poison for each result>

The message is prefixed with the assert's source location when it has one. Results on the
failure path are `ub.poison`: callers must check for the recorded failure before reading
them (the accel runtime does). Buffers allocated before the failure are not freed.

Fires on every `cf.assert` directly in a `func.func` body, so run it after
`convert-scf-to-cf`. An assert still nested in another op's region (a loop body) cannot
return from the function: the pass fails there rather than leave an `abort()` behind.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from accel.ir import InsertionPoint, Location, Operation, dialects, ir
from accel.passes.base import ModulePass, ops_named, register_pass

#: `void __accel_assert_fail(const char *message)`, provided by the runtime.
FAIL_FUNCTION = "__accel_assert_fail"
_MESSAGE_PREFIX = "__accel_assert_msg_"


def _location_prefix(loc: Location) -> str:
    """`file:line:col: ` of the innermost file location inside `loc`, or ''."""
    text = str(loc)
    match = re.search(r'"([^"]*)":(\d+):(\d+)', text)
    if match is None or match.group(1) in ("-", ""):
        return ""
    return f"{match.group(1)}:{match.group(2)}:{match.group(3)}: "


def _mlir_string(text: str) -> str:
    """`text` NUL-terminated as an MLIR string literal (hex escapes for anything unusual)."""
    out = []
    for byte in text.encode() + b"\0":
        char = chr(byte)
        out.append(char if char.isalnum() or char in " _-.,:;()[]<>=+*/'" else f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


class _Messages:
    """One private string global per distinct message, created on demand."""

    def __init__(self, module: Operation):
        self.module = module
        self.by_text: dict[str, str] = {}

    def symbol(self, text: str) -> str:
        if text in self.by_text:
            return self.by_text[text]
        name = f"{_MESSAGE_PREFIX}{len(self.by_text)}"
        size = len(text.encode()) + 1
        parsed = ir.Module.parse(
            f"llvm.mlir.global private constant @{name}({_mlir_string(text)}) "
            f"{{addr_space = 0 : i32}} : !llvm.array<{size} x i8>")
        body = self.module.regions[0].blocks[0]
        body.append(parsed.body.operations[0].operation)
        self.by_text[text] = name
        return name


def ensure_declaration(module: Operation, name: str, signature: str) -> None:
    """Declare `func.func private @name<signature>` in `module` unless it has `@name`."""
    body = module.regions[0].blocks[0]
    for op in body.operations:
        if op.operation.name == "func.func" and \
                ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
            return
    parsed = ir.Module.parse(f"func.func private @{name}{signature}")
    body.append(parsed.body.operations[0].operation)


def _result_types(func: Operation) -> list[ir.Type]:
    return list(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).results)


def split_on_failure(func: Operation, last: Operation, ok: ir.Value, loc: Location,
                     report: Callable[[], None]) -> None:
    """Continue after `last` (in a new block) when `ok`, else run `report()` (which emits
    the failure call) and return poison from `func`. `last` must be in a block of `func`'s
    body; the failure path is marked cold."""
    block = last.block
    rest = list(block.operations)
    index = next(i for i, op in enumerate(rest) if op.operation == last)
    cont = block.create_after()
    for op in rest[index + 1:]:
        cont.append(op.operation)
    fail = func.regions[0].blocks.append()
    with loc, InsertionPoint(fail):
        report()
        poison = [dialects.ub.PoisonOp(t).result for t in _result_types(func)]
        dialects.func.ReturnOp(poison)
    with loc, InsertionPoint(block):
        # The failure path is cold: let LLVM lay out the common path first.
        dialects.cf.CondBranchOp(ok, [], [], cont, fail, branch_weights=[2000, 1])


@register_pass
@dataclass(frozen=True)
class AssertToErrorReturn(ModulePass):
    """Rewrites each function-level cf.assert into a reported, returning failure branch."""

    name = "accel-assert-to-error-return"

    def apply(self, module: Operation) -> None:
        messages = _Messages(module)
        funcs = [op.operation for op in module.regions[0].blocks[0].operations
                 if op.operation.name == "func.func" and op.operation.regions[0].blocks]
        rewrote = False
        for func in funcs:
            for assertion in ops_named(func, ("cf.assert",)):
                if assertion.parent != func:
                    self.fail(assertion, f"cf.assert nested in '{assertion.parent.name}' "
                              "cannot return from the function; run this pass after "
                              "convert-scf-to-cf")
                self._rewrite(func, assertion, messages)
                rewrote = True
        if rewrote:
            ensure_declaration(module, FAIL_FUNCTION, "(!llvm.ptr)")

    @staticmethod
    def _rewrite(func: Operation, assertion: Operation, messages: _Messages) -> None:
        loc = assertion.location
        text = _location_prefix(loc) + ir.StringAttr(assertion.attributes["msg"]).value
        symbol = messages.symbol(text)
        ptr = ir.Type.parse("!llvm.ptr")

        def report() -> None:
            address = dialects.llvm.AddressOfOp(ptr, symbol).result
            dialects.func.CallOp([], ir.FlatSymbolRefAttr.get(FAIL_FUNCTION), [address])

        split_on_failure(func, assertion, assertion.operands[0], loc, report)
        assertion.erase()
