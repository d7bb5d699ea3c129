"""Vector math for the CPU path: scalar libm calls that LLVM's vectorisers can widen.

MLIR lowers `math.exp` to `llvm.exp.f32` and `math.tanh`/`math.erf` to `tanhf`/`erff` calls.
LLVM vectorises neither: it widens the intrinsic to `llvm.exp.v16f32`, which codegen then
splits into sixteen scalar `expf` calls, and it cannot widen a libm call at all (it may
write `errno`). clang fixes both with `-fveclib=libmvec`, a TargetLibraryInfo setting that
llvmlite does not expose. The same information fits in the IR instead: a call site with the
`vector-function-abi-variant` attribute names its vector versions (the VFABI mangling,
`_ZGV<isa>N<lanes><args>_<name>`), and the loop and SLP vectorisers call those.

`attach_vector_variants` rewrites, for every libm function that glibc's libmvec implements
in vector form (exp, log, pow, sin, cos, tanh, erf, ... in float and double):

    %y = call fast float @llvm.exp.f32(float %x)
 -> %y = call fast float @expf(float %x) #<vecmath>
    attributes #<vecmath> = { nounwind memory(none)
        "vector-function-abi-variant"="_ZGV_LLVM_N16v_expf(_ZGVeN16v_expf),..." }

plus declarations of the vector functions (kept alive through `@llvm.compiler.used`).
`memory(none)` is what `-fno-math-errno` asserts: the compiled code never reads `errno`.
Accuracy is libmvec's (glibc documents at most 4 ulp for these; scalar libm is within 1-2).

The ISA letter picks the variants, widest first: `e` AVX-512 (16 floats), `d` AVX2 (8),
`c` AVX (8), `b` SSE (4). The JIT uses the host's; AOT libraries the target CPU's and link
`-lmvec`. Without libmvec (not glibc, not x86-64) the IR is left as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from collections.abc import Iterable
from functools import lru_cache

#: libmvec's one-argument (`v`) and two-argument (`vv`) functions, double-precision names;
#: the float versions add `f`. (sincos writes through pointers: not a candidate.)
UNARY = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos", "cosh", "erf", "erfc",
    "exp", "exp10", "exp2", "expm1", "log", "log10", "log1p", "log2", "sin", "sinh", "tan",
    "tanh",
})
BINARY = frozenset({"atan2", "hypot", "pow"})

#: Lanes per vector register for (isa, float type).
_LANES = {("b", "float"): 4, ("c", "float"): 8, ("d", "float"): 8, ("e", "float"): 16,
          ("b", "double"): 2, ("c", "double"): 4, ("d", "double"): 4, ("e", "double"): 8}
#: The variants an ISA may call, widest first (one per vector width).
_LADDER = {"e": ("e", "d", "b"), "d": ("d", "b"), "c": ("c", "b"), "b": ("b",)}

LIBRARY = "libmvec.so.1"
ATTRIBUTE_GROUP = 900913  # any number the translated IR does not use

# `call [tail marker] [fast-math flags] <float|double> @<callee>(<args>)` with no attributes
# after it (a call that has some is left alone).
_CALL = re.compile(
    r"(?P<head>call(?: [a-z]+)*) (?P<ty>float|double) @(?P<callee>[\w.]+)"
    r"\((?P<args>[^()\n]*)\)(?P<tail>[ \t]*(?:[;\n]|$))")


def isa_for_features(features: Iterable[str]) -> str:
    """The widest libmvec ISA letter the CPU features (`avx512f`, `+avx2`, ...) allow."""
    have = {f.lstrip("+") for f in features if not f.startswith("-")}
    if "avx512f" in have:
        return "e"
    if {"avx2", "fma"} <= have:
        return "d"
    if "avx" in have:
        return "c"
    return "b"


@lru_cache(maxsize=1)
def _library() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("mvec") or LIBRARY)
    except OSError:
        return None


def available() -> bool:
    """Whether this process can load libmvec (glibc on x86-64)."""
    return _library() is not None


def host_isa() -> str | None:
    """The ISA letter for this machine, or None when the JIT cannot call libmvec."""
    if not load_for_jit():
        return None
    from accel.llvm import engine

    return isa_for_features(engine.host_cpu()[1].split(","))


@lru_cache(maxsize=1)
def load_for_jit() -> bool:
    """Make libmvec's symbols visible to the JIT; False when there is no libmvec."""
    lib = _library()
    if lib is None:
        return False
    from accel.llvm import engine

    engine.load_library(lib._name)
    return True


def _scalar_name(callee: str, ty: str) -> str | None:
    """The libm name of a call's callee when libmvec has a vector version, else None."""
    suffix = "f" if ty == "float" else ""
    if callee.startswith("llvm."):
        parts = callee.split(".")
        if len(parts) != 3 or parts[2] != ("f32" if ty == "float" else "f64"):
            return None
        base = parts[1]
    elif ty == "float":
        if not callee.endswith("f"):
            return None
        base = callee[:-1]
    else:
        base = callee
    if base in UNARY or base in BINARY:
        return base + suffix
    return None


def _arity(name: str) -> int:
    return 2 if name in BINARY or name.removesuffix("f") in BINARY else 1


def vector_name(isa: str, name: str, ty: str) -> str:
    """libmvec's symbol for `name` (scalar libm name) on `isa`: `_ZGVeN16v_expf`."""
    return f"_ZGV{isa}N{_LANES[isa, ty]}{'v' * _arity(name)}_{name}"


def attach_vector_variants(text: str, isa: str | None) -> str:
    """`text` with libm-able calls annotated with their libmvec versions for `isa`.

    `isa` None (no libmvec) returns `text` unchanged; so does IR without such calls.
    """
    if isa is None or "@llvm.compiler.used" in text:
        return text
    groups: dict[str, tuple[int, str]] = {}  # scalar name -> (attribute group, float type)

    def rewrite(m: re.Match[str]) -> str:
        ty = m.group("ty")
        name = _scalar_name(m.group("callee"), ty)
        if name is None:
            return m.group(0)
        group, _ = groups.setdefault(name, (ATTRIBUTE_GROUP + len(groups), ty))
        return f"{m.group('head')} {ty} @{name}({m.group('args')}) #{group}{m.group('tail')}"

    defined = set(re.findall(r"^define [^\n]*?@([\w.]+)\(", text, re.M))
    body = _CALL.sub(lambda m: m.group(0) if m.group("callee") in defined else rewrite(m), text)
    if not groups:
        return text
    lines = [body.rstrip("\n"), ""]
    keep: list[str] = []
    for name, (group, ty) in groups.items():
        params = ", ".join([ty] * _arity(name))
        if not re.search(rf"^declare [^\n]*@{re.escape(name)}\(", body, re.M):
            lines.append(f"declare {ty} @{name}({params})")
        mappings = []
        for letter in _LADDER[isa]:
            vname, lanes = vector_name(letter, name, ty), _LANES[letter, ty]
            vparams = ", ".join([f"<{lanes} x {ty}>"] * _arity(name))
            lines.append(f"declare <{lanes} x {ty}> @{vname}({vparams})")
            mappings.append(f"_ZGV_LLVM_N{lanes}{'v' * _arity(name)}_{name}({vname})")
            keep.append(vname)
        # One group per function: the attribute names the variants of that callee only.
        lines.append(f"attributes #{group} = {{ nounwind memory(none) "
                     f'"vector-function-abi-variant"="{",".join(mappings)}" }}')
    # Declarations nobody calls yet would be dropped before the vectoriser wants them.
    lines.append(f"@llvm.compiler.used = appending global [{len(keep)} x ptr] ["
                 + ", ".join(f"ptr @{v}" for v in keep) + '], section "llvm.metadata"')
    return "\n".join(lines) + "\n"
