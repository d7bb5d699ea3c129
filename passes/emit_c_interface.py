"""`accel-emit-c-interface`: mark every `func.func` with `llvm.emit_c_interface`.

Why: the CPU JIT and AOT libraries call compiled functions through MLIR's C interface
(`_mlir_ciface_<name>`, memrefs passed as descriptor pointers). The attribute must be on each
`func.func` (the module-level attribute is not honoured by `convert-func-to-llvm`), and it has
to be set before that conversion runs.

    func.func @f(%a: memref<4xf32>)   ->   func.func @f(%a: memref<4xf32>)
                                             attributes {llvm.emit_c_interface}

Declarations (external functions) are left alone unless `include-declarations` is set:
their C wrappers would reference symbols nobody defines.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.ir import Operation, ir
from accel.passes.base import ModulePass, register_pass


def _is_declaration(func: Operation) -> bool:
    return len(func.regions[0].blocks) == 0


@register_pass
@dataclass(frozen=True)
class EmitCInterface(ModulePass):
    """Adds `llvm.emit_c_interface` to every func.func definition."""

    name = "accel-emit-c-interface"
    include_declarations: bool = False

    def apply(self, module: Operation) -> None:
        for op in module.regions[0].blocks[0].operations:
            func = op.operation
            if func.name != "func.func":
                continue
            if _is_declaration(func) and not self.include_declarations:
                continue
            func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
