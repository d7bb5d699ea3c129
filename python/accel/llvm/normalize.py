"""Normalising LLVM IR text from the MLIR bindings so that llvmlite's LLVM 22 parses it.

The bindings translate the LLVM dialect with a newer LLVM than the one inside llvmlite, and
the newer printer writes floating-point literals in a syntax LLVM 22 rejects:

    float f0x3FB504F3          hex of the IEEE single bits     (22: 0x3FF6A09E60000000)
    half f0x3E00, bfloat f0x..  hex of the 16-bit pattern       (22: 0xH3E00, 0xR3FC0)
    float +inf, -inf, +qnan     keywords                        (22: hex)
    double +nan(0x1)            quiet NaN with payload          (22: 0x7FF8000000000001)
    float +snan(0x200001)       signalling NaN with payload     (22: 0x7FF4000020000000)
    half 1.414060e+00           shortest decimal, *rounded* to the type; LLVM 22 accepts a
                                decimal only if it is exact ("constant invalid for type")

`normalize_llvm_ir` rewrites every such literal into LLVM 22's form (hex doubles for
float/double, `0xH`/`0xR` bit patterns for half/bfloat) and leaves exact decimals alone.
Literals carry no type of their own (`fadd half %1, +inf`), so the type is the nearest
floating-point type keyword before the literal on the same line; string literals and
comments are skipped. This module is the one place that knows about the syntax gap.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-style binary format: `mantissa` explicit fraction bits, `exponent` bits."""

    bits: int
    mantissa: int
    exponent: int

    @property
    def bias(self) -> int:
        return (1 << (self.exponent - 1)) - 1

    @property
    def quiet_bit(self) -> int:
        return 1 << (self.mantissa - 1)

    @property
    def exp_mask(self) -> int:
        return ((1 << self.exponent) - 1) << self.mantissa

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1)


#: The LLVM IR floating-point types accel emits; x86_fp80/fp128 literals are left untouched.
FORMATS: dict[str, FloatFormat] = {
    "half": FloatFormat(16, 10, 5),
    "bfloat": FloatFormat(16, 7, 8),
    "float": FloatFormat(32, 23, 8),
    "double": FloatFormat(64, 52, 11),
}

#: The literal spellings rewritten: hex bits, decimals, infinity and NaN keywords.
_LITERAL = (r"f0x[0-9A-Fa-f]+|[-+]?\d+\.\d*(?:[eE][-+]?\d+)?"
            r"|[-+]?(?:inf|qnan|nan|snan)(?:\(0x[0-9A-Fa-f]+\))?")

# One left-to-right scan of a line: strings and comments are consumed whole so nothing inside
# them is rewritten; a type keyword sets the type of the literals after it on the line.
_TOKEN = re.compile(
    r'(?P<string>"[^"\n]*")'
    r"|(?P<comment>;[^\n]*)"
    r"|(?<![\w.$%@-])(?P<type>half|bfloat|float|double|x86_fp80|fp128|ppc_fp128)(?![\w.$-])"
    rf"|(?<![\w.$%@-])(?P<literal>{_LITERAL})(?![\w.$-])")

#: What every literal `_TOKEN` rewrites contains: lines without it are left alone unread.
_CANDIDATE = re.compile(r"f0x|\d\.|inf|nan")

#: A type keyword and the literal right after it (the literal alternatives of `_TOKEN`).
_PAIR = re.compile(rf"(?<![\w.$%@-])(half|bfloat|float|double) ({_LITERAL})(?![\w.$-])")

_SPECIAL = re.compile(
    r"(?P<sign>[-+]?)(?P<kind>inf|qnan|nan|snan)(?:\(0x(?P<payload>[0-9A-Fa-f]+)\))?")


class LiteralError(ValueError):
    """A floating-point literal that cannot be represented in its type."""


def normalize_llvm_ir(text: str) -> str:
    """Rewrite floating-point literals of newer LLVM syntax into LLVM 22 syntax.

    `fadd float %0, f0x3FB504F3` -> `fadd float %0, 0x3FF6A09E60000000`. Everything else
    (including literals LLVM 22 already reads exactly) is returned unchanged.
    """
    # Only lines holding something a literal could start with are scanned token by token
    # (the type in effect resets at each newline, so lines are independent): most lines hold
    # no float literal, and a module with big constant arrays is megabytes of text.
    pieces: list[str] = []
    done = 0
    for m in _CANDIDATE.finditer(text):
        start = m.start()
        if start < done:
            continue  # on a line already rewritten
        start = text.rfind("\n", 0, start) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        line = text[start:end]
        fast = _normalize_pairs(line) if '"' not in line and ";" not in line else None
        pieces += (text[done:start], _normalize_line(line) if fast is None else fast)
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _normalize_pairs(line: str) -> str | None:
    """`line` (no string, no comment) rewritten where every literal directly follows its type
    keyword, as in constant arrays of weights (tens of thousands on one line): the float hex
    ones all at once through numpy. None where some literal stands apart from its type."""
    parts = _PAIR.split(line)  # text, type, literal, text, type, literal, ..., text
    if any(_CANDIDATE.search(piece) for piece in parts[0::3]):
        return None
    types, literals = parts[1::3], parts[2::3]
    hexes = [i for i, (t, lit) in enumerate(zip(types, literals, strict=True))
             if t == "float" and len(lit) == 11 and lit.startswith("f0x")]
    if hexes:
        bits = np.frombuffer(bytes.fromhex("".join(literals[i][3:] for i in hexes)),
                             dtype=">u4").astype(np.uint32)
        with np.errstate(invalid="ignore"):  # signalling NaNs: set right below
            wide = bits.view(np.float32).astype(np.float64).view(np.uint64)
        nan = (bits & 0x7F800000 == 0x7F800000) & (bits & 0x007FFFFF != 0)
        if nan.any():  # as float_to_double_bits: not through the FPU, which quiets them
            b = bits[nan].astype(np.uint64)
            wide[nan] = ((b >> 31) << 63) | (0x7FF << 52) | ((b & 0x007FFFFF) << 29)
        digits = wide.astype(">u8").tobytes().hex().upper()
        for k, i in enumerate(hexes):
            literals[i] = f"0x{digits[16 * k:16 * k + 16]}"
    vectorised = set(hexes)
    for i, (t, lit) in enumerate(zip(types, literals, strict=True)):
        if i not in vectorised:
            literals[i] = convert_literal(lit, t)
    parts[1::3] = [f"{t} " for t in types]  # the space the split took
    parts[2::3] = literals
    return "".join(parts)


def _normalize_line(line: str) -> str:
    current: str | None = None  # FP type in effect

    def replace(m: re.Match[str]) -> str:
        nonlocal current
        kind = m.lastgroup
        if kind == "type":
            current = m.group("type")
        elif kind == "literal" and current in FORMATS:
            return convert_literal(m.group("literal"), current)
        return m.group(0)

    return _TOKEN.sub(replace, line)


@lru_cache(maxsize=4096)
def convert_literal(literal: str, type_name: str) -> str:
    """One literal of LLVM IR type `type_name` in LLVM 22 syntax (exact decimals unchanged)."""
    fmt = FORMATS[type_name]
    bits = literal_bits(literal, fmt)
    if _is_decimal(literal) and Fraction(literal) == _finite_value(bits, fmt):
        return literal  # exact: LLVM 22 reads it as is
    return llvm22_literal(bits, fmt)


def _is_decimal(literal: str) -> bool:
    return literal.lstrip("+-")[:1].isdigit()


def literal_bits(literal: str, fmt: FloatFormat) -> int:
    """The bit pattern a literal (hex, keyword or decimal) denotes in `fmt`."""
    if literal.startswith("f0x"):
        bits = int(literal[3:], 16)
        if bits >> fmt.bits:
            raise LiteralError(f"hex literal '{literal}' is wider than {fmt.bits} bits")
        return bits
    special = _SPECIAL.fullmatch(literal)
    if special is not None:
        return _special_bits(special, fmt)
    return round_to_format(Fraction(literal), fmt, negative=literal.startswith("-"))


def _special_bits(m: re.Match[str], fmt: FloatFormat) -> int:
    sign = fmt.sign_bit if m.group("sign") == "-" else 0
    kind, payload = m.group("kind"), int(m.group("payload") or "0", 16)
    if kind == "inf":
        return sign | fmt.exp_mask
    if payload >= fmt.quiet_bit:
        raise LiteralError(f"NaN payload 0x{payload:X} does not fit {fmt.bits}-bit float")
    if kind == "snan":
        if payload == 0:
            raise LiteralError("a signalling NaN needs a non-zero payload")
        return sign | fmt.exp_mask | payload
    return sign | fmt.exp_mask | fmt.quiet_bit | payload  # qnan, nan(payload)


def round_to_format(value: Fraction, fmt: FloatFormat, *, negative: bool = False) -> int:
    """Bits of `value` rounded to nearest, ties to even (overflow gives infinity)."""
    sign = fmt.sign_bit if value < 0 or (value == 0 and negative) else 0
    x = abs(value)
    if x == 0:
        return sign
    precision = fmt.mantissa + 1
    emin = 1 - fmt.bias
    e = x.numerator.bit_length() - x.denominator.bit_length()  # floor(log2 x) or one less
    if Fraction(2) ** e > x:
        e -= 1
    q = max(e, emin) - fmt.mantissa  # weight of the last significand bit
    scaled = x / Fraction(2) ** q
    m = scaled.numerator // scaled.denominator
    rest = scaled - m
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and m & 1):
        m += 1
    if m >> precision:  # rounding carried into a new binade
        m >>= 1
        q += 1
    if q + fmt.mantissa > fmt.bias:
        return sign | fmt.exp_mask  # overflow
    if m >> fmt.mantissa == 0:
        return sign | m  # subnormal (or rounded to zero)
    biased = q + fmt.mantissa + fmt.bias
    return sign | (biased << fmt.mantissa) | (m & ((1 << fmt.mantissa) - 1))


def _finite_value(bits: int, fmt: FloatFormat) -> Fraction | None:
    """Exact value of finite `bits`, None for infinities and NaNs."""
    exp = (bits & fmt.exp_mask) >> fmt.mantissa
    frac = bits & ((1 << fmt.mantissa) - 1)
    if exp == (1 << fmt.exponent) - 1:
        return None
    sign = -1 if bits & fmt.sign_bit else 1
    if exp == 0:  # subnormal: no implicit leading bit, exponent of the smallest normal
        return sign * Fraction(frac) * Fraction(2) ** (1 - fmt.bias - fmt.mantissa)
    significand = frac | (1 << fmt.mantissa)
    return sign * significand * Fraction(2) ** (exp - fmt.bias - fmt.mantissa)


def llvm22_literal(bits: int, fmt: FloatFormat) -> str:
    """LLVM 22 spelling of a bit pattern: `0xH`/`0xR` for 16-bit types, hex double otherwise."""
    if fmt is FORMATS["half"]:
        return f"0xH{bits:04X}"
    if fmt is FORMATS["bfloat"]:
        return f"0xR{bits:04X}"
    if fmt is FORMATS["double"]:
        return f"0x{bits:016X}"
    if fmt is FORMATS["float"]:
        return f"0x{float_to_double_bits(bits):016X}"
    raise LiteralError(f"no LLVM 22 hex form for a {fmt.bits}-bit float")


def float_to_double_bits(bits: int) -> int:
    """Widen IEEE single bits to double bits exactly; NaNs keep sign, quietness and payload."""
    if bits & 0x7F800000 == 0x7F800000 and bits & 0x007FFFFF:
        # Not through a C float: the hardware would quiet a signalling NaN. LLVM 22 narrows
        # the double back by dropping the low 29 fraction bits, so shift the payload up.
        sign = (bits >> 31) << 63
        return sign | (0x7FF << 52) | ((bits & 0x007FFFFF) << 29)
    (value,) = struct.unpack("<f", struct.pack("<I", bits))
    (wide,) = struct.unpack("<Q", struct.pack("<d", value))
    return wide
