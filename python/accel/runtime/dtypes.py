"""Scalar types of compiled code: how each MLIR element type is stored, passed and shown.

Dtype mapping (MLIR element type -> numpy): f16 float16, f32 float32, f64 float64,
i1 bool, i8/i16/i32/i64 int8..int64 (signless), ui8..ui64 uint8..uint64, si8..si64
int8..int64, index int64, complex<f32> complex64, complex<f64> complex128. **bf16**: numpy
has no bfloat16, so bf16 travels as float32 values (rounded to nearest-even) or uint16 bit
patterns; bf16 results come back as float32 (exact).
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


# -- dtypes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DType:
    """How one MLIR scalar type is stored, passed and shown to numpy."""

    mlir: str
    numpy: np.dtype  # storage dtype in memory (uint16 for bf16)
    ctype: type  # ctypes type of one element
    llvm: str  # LLVM IR type of a scalar argument/result

    @property
    def is_bf16(self) -> bool:
        return self.mlir == "bf16"

    @property
    def user_dtype(self) -> np.dtype:
        """The dtype users pass and get back (float32 for bf16)."""
        return np.dtype(np.float32) if self.is_bf16 else self.numpy

    @property
    def is_int(self) -> bool:
        return self.numpy.kind in "iu" and not self.is_bf16

    @property
    def is_complex(self) -> bool:
        return self.numpy.kind == "c"


def _dtypes() -> dict[str, DType]:
    table = {
        "f16": DType("f16", np.dtype(np.float16), ctypes.c_uint16, "half"),
        "bf16": DType("bf16", np.dtype(np.uint16), ctypes.c_uint16, "bfloat"),
        "f32": DType("f32", np.dtype(np.float32), ctypes.c_float, "float"),
        "f64": DType("f64", np.dtype(np.float64), ctypes.c_double, "double"),
        "i1": DType("i1", np.dtype(np.bool_), ctypes.c_bool, "i1"),
        "index": DType("index", np.dtype(np.int64), ctypes.c_int64, "i64"),
        # An {re, im} pair: ctypes arrays share the LLVM struct's layout and alignment.
        "complex<f32>": DType("complex<f32>", np.dtype(np.complex64), ctypes.c_float * 2,
                              "{ float, float }"),
        "complex<f64>": DType("complex<f64>", np.dtype(np.complex128), ctypes.c_double * 2,
                              "{ double, double }"),
    }
    for bits in (8, 16, 32, 64):
        signed = np.dtype(f"int{bits}")
        unsigned = np.dtype(f"uint{bits}")
        sc = getattr(ctypes, f"c_int{bits}")
        uc = getattr(ctypes, f"c_uint{bits}")
        table[f"i{bits}"] = DType(f"i{bits}", signed, sc, f"i{bits}")
        table[f"si{bits}"] = DType(f"si{bits}", signed, sc, f"i{bits}")
        table[f"ui{bits}"] = DType(f"ui{bits}", unsigned, uc, f"i{bits}")
    return table


DTYPES: dict[str, DType] = _dtypes()
#: Function arg/result attribute: this signless integer was unsigned in the source model
#: (torch-mlir lowers uint8 to i8); signatures then use `uiN` (numpy uintN) for it.
UNSIGNED_ATTR = "accel.unsigned"


# -- bf16 -----------------------------------------------------------------------------------
def float32_to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """Round float32 values to bf16 (nearest, ties to even); NaNs become quiet NaNs."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    quiet = (bits >> np.uint32(16)) | np.uint32(0x0040)
    return np.where(nan, quiet, rounded).astype(np.uint16)


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen bf16 bit patterns to float32 (exact); a 0-d array stays a 0-d array."""
    wide = np.asarray(bits, dtype=np.uint16).astype(np.uint32)
    wide <<= np.uint32(16)  # in place: a shift of a 0-d array would give a numpy scalar
    return wide.view(np.float32)


def python_float_to_bf16_bits(value: float) -> int:
    """Round a Python float (a double) to bf16 bits directly, with no float32 step."""
    from accel.llvm.normalize import FORMATS, round_to_format

    if value != value:  # NaN
        return 0xFFC0 if struct.pack("<d", value)[7] & 0x80 else 0x7FC0
    if value in (float("inf"), float("-inf")):
        return 0xFF80 if value < 0 else 0x7F80
    return round_to_format(Fraction(value), FORMATS["bfloat"],
                           negative=struct.pack("<d", value)[7] & 0x80 != 0)


