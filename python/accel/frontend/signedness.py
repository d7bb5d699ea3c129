"""Unsigned tensors at the function boundary: torch-mlir lowers `uint8` to signless `i8`.

torch's `uint8` tensors become `!torch.vtensor<[...],ui8>` in the FX import and signless
`tensor<...xi8>` in linalg, so the compiled function's signature alone would take (and
return) int8 arrays and refuse the uint8 tensors the model was exported with. The frontend
notes which arguments and results were unsigned before lowering (`unsigned_positions`) and
marks them afterwards with the unit attribute `accel.unsigned` (`mark_unsigned`); the CPU
target's signatures then use `ui8` (numpy `uint8`, and so on) for them, so uint8 arrays and tensors
are accepted and returned, and int8 ones are refused as a dtype mismatch.
"""

from __future__ import annotations

import re

from accel.ir import Module, Operation, ir
from accel.runtime.dtypes import UNSIGNED_ATTR

_UNSIGNED_TORCH = re.compile(r"^!torch\.vtensor<\[[^\]]*\],ui\d+>$")


def _func(module: Module, name: str) -> Operation | None:
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    return None


def unsigned_positions(module: Module, func_name: str) -> tuple[list[int], list[int]]:
    """(argument indices, result indices) of `@func_name` with unsigned torch tensor types."""
    func = _func(module, func_name)
    if func is None:
        return [], []
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)

    def unsigned(t: ir.Type) -> bool:
        return bool(_UNSIGNED_TORCH.match(str(t)))

    return ([i for i, t in enumerate(ftype.inputs) if unsigned(t)],
            [i for i, t in enumerate(ftype.results) if unsigned(t)])


def mark_unsigned(module: Module, func_name: str, positions: tuple[list[int], list[int]]
                  ) -> None:
    """Put `accel.unsigned` on the given arguments and results of `@func_name`."""
    args, results = positions
    func = _func(module, func_name)
    if func is None or not (args or results):
        return
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    for key, count, marked in (("arg_attrs", len(ftype.inputs), args),
                               ("res_attrs", len(ftype.results), results)):
        old = list(ir.ArrayAttr(func.attributes[key])) if key in func.attributes \
            else [ir.DictAttr.get({}) for _ in range(count)]
        new = []
        for i, attrs in enumerate(old):
            entries = {a.name: a.attr for a in ir.DictAttr(attrs)}
            if i in marked:
                entries[UNSIGNED_ATTR] = ir.UnitAttr.get()
            new.append(ir.DictAttr.get(entries))
        func.attributes[key] = ir.ArrayAttr.get(new)
