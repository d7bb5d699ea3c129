"""`accel-precise-math-to-libm`: `math.expm1` and `math.log1p` as libm calls.

Why: `convert-math-to-llvm` lowers `math.expm1(x)` as `exp(x) - 1` and `math.log1p(x)` as
`log(1 + x)`. Near 0 both cancel: the f64 expm1 of 1e-3 was off by ~2000 ulp (4e-13
relative) and log1p of 1e-10 loses six digits, where torch calls the real functions. libm's
`expm1`/`log1p` (`expm1f`/`log1pf` for f32) are accurate to 1-2 ulp, and
`accel.host.vecmath` widens the calls to libmvec's vector versions like any other.

    %y = math.expm1 %x fastmath<fast> : f64
  ->
    %y = func.call @expm1(%x) : (f64) -> f64
    func.func private @expm1(f64) -> f64

Runs before `convert-math-to-llvm`. Only scalar f32/f64 ops are rewritten (f16/bf16 were
extended to f32 before; vector operands are left to the LLVM lowering). A module symbol of
the same name with another type leaves the op alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.base import ModulePass, ops_named, register_pass

#: math op -> libm name of its f64 version (the f32 one adds `f`).
LIBM = {"math.expm1": "expm1", "math.log1p": "log1p"}


def _callee(module: Operation, name: str, ty: ir.Type) -> str | None:
    """The declaration `name: (ty) -> ty` in `module`, created if missing; None when the
    symbol exists with another type."""
    body = module.regions[0].blocks[0]
    fn_type = ir.FunctionType.get([ty], [ty])
    for op in body.operations:
        op = op.operation
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == name:
            if op.name != "func.func" or \
                    ir.TypeAttr(op.attributes["function_type"]).value != fn_type:
                return None
            return name
    with InsertionPoint.at_block_begin(body), module.location:
        decl = dialects.func.FuncOp(name, fn_type)
        decl.sym_visibility = ir.StringAttr.get("private")
    return name


@register_pass
@dataclass(frozen=True)
class PreciseMathToLibm(ModulePass):
    """Calls libm's expm1/log1p instead of exp(x) - 1 and log(1 + x)."""

    name = "accel-precise-math-to-libm"

    def apply(self, module: Operation) -> None:
        for op in ops_named(module, tuple(LIBM)):
            ty = op.results[0].type
            if not isinstance(ty, ir.F32Type | ir.F64Type):
                continue  # vectors, tensors: left to the LLVM lowering
            name = LIBM[op.name] + ("f" if isinstance(ty, ir.F32Type) else "")
            if _callee(module, name, ty) is None:
                continue
            with InsertionPoint(op), op.location:
                call = dialects.func.CallOp([ty], ir.FlatSymbolRefAttr.get(name),
                                            [op.operands[0]])
            op.results[0].replace_all_uses_with(call.results[0])
            op.erase()
