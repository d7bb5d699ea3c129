"""`float_dtype` in emulation: the program runs with the precision MN-Core would use.

MLSDK assigns a dtype to every `torch.float32` tensor (reference section 4.2.2.2):

- `mixed`: GEMMs (MatMul/Gemm/Conv) read and write half precision, the rest stays float.
  Emulated by rounding every f32 operand and the result of each GEMM through f16
  (`arith.truncf` + `arith.extf`); the GEMM accumulates in f32 between the roundings, as
  MN-Core's MAU accumulates FP16 products in a wider register (ASSUMED).
- `half`: every f32 tensor is stored in half: each f32 tensor the function reads (arguments,
  weights) or any layer writes is rounded through f16; arithmetic inside a layer is f32.
- `float` / None: unchanged (matches PyTorch eager).
- `double`: every f32 becomes f64 (types, constants, weights bound as f64 copies); the
  function boundary stays f32 through `DoubleCall`. Casts that the widening makes no-ops
  (f32 -> f64 became f64 -> f64) turn into identities.

The rounding casts are elementwise `arith` ops on tensors, turned into `linalg.generic` by
`convert-elementwise-to-linalg` so the CPU target lowers them like any other layer.
"""

from __future__ import annotations

import re
import struct
from typing import Any

import numpy as np

from accel.ir import InsertionPoint, Location, Module, Operation, ir

GEMM_OPS = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv")


def _is_f32_tensor(type_: Any) -> bool:
    return isinstance(type_, ir.RankedTensorType) and str(type_.element_type) == "f32"


def _round_value(value: Any, ip: InsertionPoint, loc: Location) -> Any:
    """f32 tensor `value` rounded through f16 (ops created at `ip`); the rounded value."""
    half = ir.RankedTensorType.get(value.type.shape, ir.F16Type.get(), loc=loc)
    trunc = Operation.create("arith.truncf", results=[half], operands=[value], loc=loc, ip=ip)
    ext = Operation.create("arith.extf", results=[value.type], operands=[trunc.result],
                           loc=loc, ip=ip)
    return ext.result


def _round_uses(value: Any, before: Any, loc: Location) -> None:
    """Every use of `value` reads it rounded through f16 (casts inserted before `before`,
    the op right after `value`'s definition)."""
    uses = [(u.owner, u.operand_number) for u in value.uses]
    rounded = _round_value(value, InsertionPoint(before), loc)
    for owner, index in uses:
        owner.operands[index] = rounded


def round_to_half(module: Module, gemms_only: bool) -> int:
    """Insert the f16 roundings (mixed: around GEMMs; half: every f32 tensor); returns how
    many values were rounded."""
    count = 0
    for func in module.body.operations:
        if func.operation.name != "func.func" or not func.regions[0].blocks:
            continue
        block = func.regions[0].blocks[0]
        ops = [op.operation for op in block.operations]
        loc = func.location
        if not gemms_only:
            first = ops[0] if ops else None
            for arg in block.arguments:
                if _is_f32_tensor(arg.type) and first is not None:
                    _round_uses(arg, first, loc)
                    count += 1
        for index, op in enumerate(ops):
            gemm = op.name.startswith(GEMM_OPS)
            if gemms_only and not gemm:
                continue
            if gemm:
                ins = len(op.opview.inputs)
                for i in range(ins):
                    operand = op.operands[i]
                    if _is_f32_tensor(operand.type):
                        op.operands[i] = _round_value(operand, InsertionPoint(op), op.location)
                        count += 1
            if op.name in ("func.return",) or len(op.results) != 1 or \
                    not _is_f32_tensor(op.results[0].type) or index + 1 >= len(ops):
                continue
            if op.name in ("tensor.empty", "arith.constant"):
                continue
            _round_uses(op.results[0], ops[index + 1], op.location)
            count += 1
    return count


# -- double -----------------------------------------------------------------------------------
_F32 = re.compile(r"(?<=[x<(\s,:])f32(?![0-9A-Za-z_])")
_HEX_SCALAR = re.compile(r"\b0x([0-9A-Fa-f]{8})(?=>? : (?:f64|tensor<[0-9x]*f64>))")
_NOOP_CAST = re.compile(r"^(\s*%\S+ = )arith\.(?:truncf|extf) (%[^ :]+) : (\S+) to \3"
                        r"(?= loc\(|$)", re.MULTILINE)


def _hex64(match: re.Match[str]) -> str:
    value = struct.unpack(">f", bytes.fromhex(match.group(1)))[0]
    return "0x" + struct.pack(">d", value).hex().upper()


def widen_to_double(text: str) -> str:
    """The module with every f32 turned into f64 (see the module docstring)."""
    text = _F32.sub("f64", text)
    text = _HEX_SCALAR.sub(_hex64, text)
    # f32 -> f64 casts are now f64 -> f64, which arith rejects: keep the value unchanged.
    return _NOOP_CAST.sub(lambda m: f"{m.group(1)}arith.maximumf {m.group(2)}, {m.group(2)} "
                          f": {m.group(3)}" if not m.group(3).startswith("tensor")
                          else f"{m.group(1)}tensor.cast {m.group(2)} : {m.group(3)} to "
                          f"{m.group(3)}", text)


class DoubleCall:
    """A double-precision function called with float arrays: f32 in -> f64 -> f32 out."""

    def __init__(self, fn: Any):
        self._fn = fn

    def __call__(self, *args: Any) -> Any:
        wide = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype == np.float32
                else a for a in args]
        out = self._fn(*wide)
        if isinstance(out, tuple):
            return tuple(_narrow(o) for o in out)
        return _narrow(out)


def _narrow(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return value.astype(np.float32)
    return value
