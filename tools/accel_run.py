"""`accel-run`: JIT-compile an MLIR file for the host CPU, call one function, print results.

    accel-run matmul.mlir --entry main --input 2x3xf32=1,2,3,4,5,6 --input w.npy
    accel-run - --entry f --input f32=2.5 --input i64=3 < in.mlir

Each result is printed on its own line in the form `--input` accepts, so lit tests can
check execution with `accel-run %s --entry main --input ... | FileCheck %s`.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Any

import numpy as np
from accel.cli import add_option_flags, exit_with, option_flag_values, read_input, version_text
from accel.diagnostics import AccelError

DESCRIPTION = """\
JIT-compile an MLIR file (linalg on tensors, memrefs, affine, scf, ... down to the LLVM
dialect) for the host CPU with accel's CPU pipeline, call one public function with the given
inputs and print its results, one per line. Errors print as FILE:LINE:COL: error: ... (IR
problems) or accel-run: error: ... and exit 1.
"""

EPILOG = """\
input and output values:
  SHAPExDTYPE=VALUES   an array, e.g. 2x3xf32=1,2,3,4,5,6 (row-major, flat). Brackets and
                       spaces are allowed: 2x3xf32=[1, 2, 3, 4, 5, 6]. One value fills the
                       whole shape (2x2xf32=0). 0x3xf32= is an empty array.
  DTYPE=VALUE          a scalar (f32=2.5, i64=3, index=4, i1=true); also a rank-0 array.
  FILE.npy             an array saved with numpy.save, passed with its own dtype.
  DTYPE is f16, bf16, f32, f64, i1, i8, i16, i32, i64, ui8..ui64, si8..si64 or index.
  Floats accept inf, -inf and nan; i1 accepts true/false/1/0; bf16 values are rounded to
  nearest-even.

  Results print as SHAPExDTYPE=[v0, v1, ...] (arrays, flat row-major; rank 0: DTYPE=[v]) or
  DTYPE=v (scalars). Floats use the shortest decimal that reads back as the same value of
  the result type (1.0, 0.1, inf, nan, -0.0, 1e-45); i1 prints true/false.
"""


def build_parser(helping: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="accel-run", description=DESCRIPTION, epilog=EPILOG, allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input_file", nargs="?", default="-", metavar="FILE",
                   help="input .mlir file, or - for stdin (default)")
    p.add_argument("--entry", "-e", default="main", metavar="NAME",
                   help="public function to call (default: main)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="SPEC", dest="inputs",
                   help="one argument, in order: SHAPExDTYPE=VALUES, DTYPE=VALUE or FILE.npy")
    for flag, text in (
            ("--print-ir-after-lowering", "print the module in the LLVM dialect to stderr"),
            ("--print-llvm-ir", "print the LLVM IR handed to the JIT to stderr"),
            ("--list-functions", "print the callable functions with their signatures and exit"),
            ("--version", "print versions and exit"),
            ("--debug", "show Python tracebacks for internal errors")):
        p.add_argument(flag, action="store_true", help=text)
    # --opt-level/-O N, --preset, --disable-..., ...
    add_option_flags(p, run_options(), helping=helping)
    return p


def run_options() -> list[str]:
    """The options accel-run has flags for: the cpu target's options for MLIR input (not
    `target`, nor the AOT and call ones)."""
    from accel.options import for_target

    return [o.name for o in for_target("cpu") if o.scope in ("common", "cpu")
            and o.name not in ("target", "device", "verify_numerics")]


# -- values -----------------------------------------------------------------------------------
_SPEC = re.compile(r"(?:(?P<shape>[0-9]+(?:x[0-9]+)*)x)?(?P<dtype>[a-z]+[0-9]*)=(?P<values>.*)",
                   re.DOTALL)
#: ASCII number grammars: no `1_0`, no other scripts' digits, no `0b`/`0o` prefixes.
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
                    re.IGNORECASE)
_INT = re.compile(r"[+-]?(?:[0-9]+|0[xX][0-9a-fA-F]+)")


def parse_input(spec: str) -> np.ndarray:
    """`2x3xf32=1,2,...`, `f32=2.5` or a `.npy` path -> an array (bf16 values as float32)."""
    from accel.runtime.dtypes import DTYPES

    m = _SPEC.fullmatch(spec.strip())
    if m is None:
        if spec.endswith(".npy"):
            return _load_npy(spec)
        raise AccelError(f"--input '{spec}': expected SHAPExDTYPE=VALUES, DTYPE=VALUE or a "
                         ".npy file")
    dtype_name = m.group("dtype")
    dt = DTYPES.get(dtype_name)
    if dt is None:
        raise AccelError(f"--input '{spec}': unknown element type '{dtype_name}' (valid: "
                         f"{', '.join(DTYPES)})")
    shape = tuple(int(d) for d in m.group("shape").split("x")) if m.group("shape") else ()
    # numpy refuses a shape whose nonzero dimensions multiply past its index range, even
    # when another dimension is 0 (`0x9223372036854775807xf32`).
    if math.prod(d for d in shape if d) >= 2 ** 62:
        raise AccelError(f"--input '{spec}': shape {m.group('shape')} is too large")
    text = m.group("values").strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    tokens = [t.strip() for t in text.split(",")] if text.strip() else []
    count = int(np.prod(shape, dtype=np.int64))
    if len(tokens) == 1 and count != 1:
        tokens = tokens * count  # splat
    if len(tokens) != count:
        raise AccelError(f"--input '{spec}': expected {count} value{'' if count == 1 else 's'} "
                         f"for shape {'x'.join(map(str, shape)) or '()'}, got {len(tokens)}")
    values = [_parse_value(tok, dtype_name, spec) for tok in tokens]
    try:
        with np.errstate(over="ignore"):  # checked below: no RuntimeWarning on stderr
            array = np.array(values, dtype=dt.user_dtype).reshape(shape)
    except OverflowError:
        raise AccelError(f"--input '{spec}': a value does not fit {dtype_name}") from None
    return array


def _parse_value(token: str, dtype_name: str, spec: str) -> Any:
    try:
        if dtype_name == "i1":
            if token.lower() in ("true", "1"):
                return True
            if token.lower() in ("false", "0"):
                return False
            raise ValueError
        if dtype_name.startswith(("f", "bf")):
            if not _FLOAT.fullmatch(token):
                raise ValueError
            value = float(token)
            if not re.search("inf|nan", token, re.IGNORECASE) and _overflows(value, dtype_name):
                raise AccelError(f"--input '{spec}': {token} is out of range for {dtype_name} "
                                 f"(largest finite value: {_LARGEST[dtype_name]})")
            return value
        if not _INT.fullmatch(token):
            raise ValueError
        return int(token, 0)
    except ValueError:
        raise AccelError(f"--input '{spec}': '{token}' is not a valid {dtype_name} value") from None


#: The largest finite value of each float type, as accel-run prints it.
_LARGEST = {"f16": "65504.0", "bf16": "3.3895314e+38", "f32": "3.4028235e+38",
            "f64": "1.7976931348623157e+308"}


def _overflows(value: float, dtype_name: str) -> bool:
    """Whether a finite literal rounds to infinity in `dtype_name` (numpy would only warn,
    with a line of accel-run's source)."""
    if dtype_name == "bf16":
        from accel.runtime.dtypes import python_float_to_bf16_bits

        return math.isinf(value) or python_float_to_bf16_bits(value) & 0x7FFF == 0x7F80
    narrow = {"f16": np.float16, "f32": np.float32}.get(dtype_name)
    if narrow is None:
        return math.isinf(value)
    with np.errstate(over="ignore"):
        return bool(np.isinf(narrow(value)))


def _load_npy(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise AccelError(f"--input '{path}': no such file") from None
    except (OSError, ValueError) as err:
        raise AccelError(f"--input '{path}': not a readable .npy file ({err})") from None


def format_scalar(value: Any, dtype_name: str) -> str:
    """Shortest text that reads back as the same value of `dtype_name`."""
    if dtype_name == "i1":
        return "true" if value else "false"
    if dtype_name == "bf16":
        return _shortest_bf16(float(value))
    if dtype_name in ("f16", "f32", "f64"):
        # numpy finds the shortest digits for the narrow type; Python's repr lays them out
        # the same way for every type (positional from 1e-4 to 1e16, else 1e+20 style).
        narrow = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[dtype_name](value)
        return repr(float(str(narrow)))
    return str(int(value))


def _shortest_bf16(value: float) -> str:
    from accel.runtime.dtypes import python_float_to_bf16_bits

    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    target = python_float_to_bf16_bits(value)
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if python_float_to_bf16_bits(float(text)) == target:
            return repr(float(text))
    return repr(value)


def format_result(value: Any, spec: Any) -> str:
    """`2x3xf32=[1.0, ...]` for arrays (rank 0: `f32=[v]`), `f32=v` for scalars."""
    dtype_name = spec.dtype.mlir
    if spec.kind == "scalar":  # a 0-d array (accel.runtime.call)
        return f"{dtype_name}={format_scalar(np.asarray(value)[()], dtype_name)}"
    arr = np.asarray(value)
    prefix = "".join(f"{d}x" for d in arr.shape)
    items = ", ".join(format_scalar(v, dtype_name) for v in arr.reshape(-1).tolist())
    return f"{prefix}{dtype_name}=[{items}]"


# -- main -------------------------------------------------------------------------------------
def run_tool(argv: list[str]) -> int:
    """The tool's body: returns the exit code, raises `AccelError` for user errors."""
    args = build_parser(helping=bool({"-h", "--help"} & set(argv))).parse_args(argv)
    if args.version:
        print(version_text("accel-run"))
        return 0
    source = read_input(args.input_file)
    inputs = [parse_input(spec) for spec in args.inputs]
    from accel.host.compile import compile_mlir

    filename = "<stdin>" if args.input_file == "-" else args.input_file
    compiled = compile_mlir(source, {**option_flag_values(args), "filename": filename})
    if args.print_ir_after_lowering:
        print(compiled.mlir_llvm, file=sys.stderr)
    if args.print_llvm_ir:
        print(compiled.llvm_ir, file=sys.stderr)
    if args.list_functions:
        for sig in compiled.functions.values():
            print(f"{sig}" + (f"  // not callable: {sig.unsupported}" if sig.unsupported else ""))
        return 0
    sig = compiled.functions.get(args.entry)
    if sig is None:
        names = ", ".join("@" + n for n in compiled.functions) or "none"
        raise AccelError(f"no public function @{args.entry} in {filename} (available: {names})")
    call_args = [_adapt(value, spec) for value, spec in zip(inputs, sig.args, strict=False)]
    call_args += inputs[len(call_args):]
    from accel.runtime.symbols import RuntimeAssertionError

    try:
        results = compiled.invoke(args.entry, *call_args)
    except (TypeError, ValueError) as err:  # wrong count, dtype or shape of an --input
        raise AccelError(str(err)) from None
    except (RuntimeAssertionError, MemoryError) as err:  # a runtime check of the code failed
        raise AccelError(str(err), file=filename) from None
    if results is None:
        return 0
    results = results if isinstance(results, tuple) else (results,)
    sys.stdout.write("".join(format_result(v, s) + "\n" for v, s in zip(results, sig.results,
                                                                          strict=True)))
    return 0


def _adapt(value: np.ndarray, spec: Any) -> Any:
    """A rank-0 input feeds a scalar parameter as its value; arrays stay arrays."""
    if spec.kind == "scalar" and value.ndim == 0:
        return value[()]
    return value


def main() -> None:
    """Console-script entry point of `accel-run`."""
    exit_with(run_tool)


if __name__ == "__main__":
    main()
