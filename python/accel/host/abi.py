"""The CPU target's calling convention in LLVM IR: the `void (ptr)` trampoline each public
function is called through (what `accel.runtime.call` packs arguments for), and the
narrowing helpers compiled code may need. No MLIR bindings: a cache hit links without them.
"""

from __future__ import annotations

from accel.llvm import engine
from accel.runtime.signature import Signature

# Narrowing helpers that codegen calls for `fptrunc` where the CPU has no instruction and
# the system's libgcc may lack them. A missing one would be bound to address 0 by MCJIT
# (a crash at call time), so accel defines those the process does not have. Both round to
# odd into float first (exact-or-odd keeps enough bits), then to nearest-even: one correct
# rounding, no double-rounding error.
_ROUND_TO_ODD_FLOAT = """\
  %f = fptrunc double %d to float
  %back = fpext float %f to double
  %exact = fcmp ueq double %back, %d
  %notexact = xor i1 %exact, true
  %bits = bitcast float %f to i32
  %low = and i32 %bits, 1
  %even = icmp eq i32 %low, 0
  %fix = and i1 %even, %notexact
  %absback = call double @llvm.fabs.f64(double %back)
  %absd = call double @llvm.fabs.f64(double %d)
  %toobig = fcmp ogt double %absback, %absd
  %down = sub i32 %bits, 1
  %up = add i32 %bits, 1
  %nudged = select i1 %toobig, i32 %down, i32 %up
  %odd = select i1 %fix, i32 %nudged, i32 %bits
"""

def _bf16_rne(src: str) -> str:
    """Round the f32 bit pattern `%src` to the nearest-even bf16 (NaNs stay quiet NaNs)."""
    return f"""\
  %hi = lshr i32 %{src}, 16
  %lsb = and i32 %hi, 1
  %bias = add i32 %lsb, 32767
  %sum = add i32 %{src}, %bias
  %rne = lshr i32 %sum, 16
  %quiet = or i32 %hi, 64
  %r32 = select i1 %isnan, i32 %quiet, i32 %rne
  %r16 = trunc i32 %r32 to i16
  %r = bitcast i16 %r16 to bfloat
  ret bfloat %r
}}
"""


_SOFT_FLOAT_HELPERS: dict[str, str] = {
    "__truncdfbf2": """\
define bfloat @__truncdfbf2(double %d) {
%ROUND_TO_ODD%  %isnan = fcmp uno double %d, %d
""" + _bf16_rne("odd"),
    "__truncsfbf2": """\
define bfloat @__truncsfbf2(float %x) {
  %bits = bitcast float %x to i32
  %isnan = fcmp uno float %x, %x
""" + _bf16_rne("bits"),
    "__truncdfhf2": """\
define half @__truncdfhf2(double %d) {
%ROUND_TO_ODD%  %oddf = bitcast i32 %odd to float
  %r = fptrunc float %oddf to half
  ret half %r
}
""",
}


def soft_float_helpers_ir(names: list[str] | None = None) -> str:
    """LLVM IR defining the narrowing helpers in `names` (default: those the process lacks)."""
    if names is None:
        engine.init_native()
        names = [n for n in _SOFT_FLOAT_HELPERS if engine.address_of_symbol(n) is None]
    if not names:
        return ""
    text = "declare double @llvm.fabs.f64(double)\n"
    return text + "".join(_SOFT_FLOAT_HELPERS[n].replace("%ROUND_TO_ODD%", _ROUND_TO_ODD_FLOAT)
                          for n in names)


def _quote(symbol: str) -> str:
    return '@"' + symbol.replace("\\", "\\5C").replace('"', "\\22") + '"'


def trampoline_ir(index: int, sig: Signature) -> str:
    """`void @__accel_call_<index>(ptr %slots)`: load arguments from slots, call the callee."""
    ret, params = sig.callee_llvm_types()
    lines = [f"declare {ret} {_quote(sig.callee)}({', '.join(params)})", "",
             f"define void @__accel_call_{index}(ptr %slots) {{"]
    operands = []
    n_args = len(sig.args)
    result_slot = n_args if sig.results else None
    if result_slot is not None:
        lines.append(f"  %rs = getelementptr inbounds ptr, ptr %slots, i64 {result_slot}")
        lines.append("  %r = load ptr, ptr %rs")
    if sig.results_by_pointer:
        operands.append("ptr %r")
    for i, arg in enumerate(sig.args):
        lines.append(f"  %s{i} = getelementptr inbounds ptr, ptr %slots, i64 {i}")
        lines.append(f"  %p{i} = load ptr, ptr %s{i}")
        if arg.kind == "scalar":
            ty = arg.dtype.llvm  # type: ignore[union-attr]
            lines.append(f"  %v{i} = load {ty}, ptr %p{i}")
            operands.append(f"{ty} %v{i}")
        else:
            operands.append(f"ptr %p{i}")
    call = f"call {ret} {_quote(sig.callee)}({', '.join(operands)})"
    if ret == "void":
        lines.append(f"  {call}")
    else:
        lines.append(f"  %ret = {call}")
        lines.append(f"  store {ret} %ret, ptr %r")
    lines += ["  ret void", "}"]
    return "\n".join(lines) + "\n"


