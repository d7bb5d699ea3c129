"""The CPU target's function boundary: what a module's public functions take and return,
the `void (ptr)` trampoline each is called through, and the helpers compiled code may need.

Signatures are read at the memref level (`func.func`) or from raw LLVM-dialect functions;
`trampoline_ir` renders the calling convention `accel.runtime.call` packs arguments for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import llvmlite.binding as llvm

from accel.diagnostics import AccelError, relocate
from accel.ir import Module, Operation, ir
from accel.llvm import engine
from accel.runtime.dtypes import DTYPES
from accel.runtime.signature import Signature, ValueSpec


def _ops(op: Operation) -> Iterator[Operation]:
    """`op` and every op nested in it, outer first."""
    yield op
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield from _ops(child.operation)


def _top_level(module: Module) -> Iterator[Operation]:
    for op in module.body.operations:
        yield op.operation


def _is_public_definition(op: Operation) -> bool:
    if op.name == "func.func":
        visibility = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
        return len(op.regions[0].blocks) > 0 and (visibility is None or
                                                  ir.StringAttr(visibility).value == "public")
    if op.name == "llvm.func":
        linkage = str(op.attributes["linkage"]) if "linkage" in op.attributes else ""
        return len(op.regions[0].blocks) > 0 and not re.search(r"private|internal", linkage)
    return False


def external_globals(module: Module) -> dict[str, int]:
    """`memref.global` declarations (no initial value): name -> byte size."""
    found = {}
    for op in _top_level(module):
        if op.name != "memref.global" or "initial_value" in op.attributes:
            continue
        memref = ir.MemRefType(ir.TypeAttr(op.attributes["type"]).value)
        bits = memref.element_type.width if hasattr(memref.element_type, "width") else 0
        count = 1
        for dim in memref.shape:
            count *= dim
        found[_symbol(op)] = count * bits // 8
    return found


def _symbol(op: Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def mark_tensor_args_read_only(module: Module) -> None:
    """Tensor arguments are values: bufferization must copy rather than write into them."""
    for op in _top_level(module):
        if op.name != "func.func" or not _is_public_definition(op):
            continue
        ftype = ir.TypeAttr(op.attributes["function_type"]).value
        old = list(ir.ArrayAttr(op.attributes["arg_attrs"])) if "arg_attrs" in op.attributes \
            else [ir.DictAttr.get({}) for _ in ftype.inputs]
        new = []
        for arg_type, attrs in zip(ftype.inputs, old, strict=True):
            entries = {a.name: a.attr for a in ir.DictAttr(attrs)}
            if isinstance(arg_type, ir.RankedTensorType):
                entries.setdefault("bufferization.writable", ir.BoolAttr.get(False))
            new.append(ir.DictAttr.get(entries))
        op.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


# -- signatures -----------------------------------------------------------------------------
class _Unsupported(Exception):
    """A type Python cannot pass or receive (the function stays uncallable, with a reason)."""


def signatures_of(module: Module) -> list[Signature]:
    """Signatures of public functions at the memref level (func.func) or LLVM (llvm.func)."""
    out = []
    for op in _top_level(module):
        if not _is_public_definition(op):
            continue
        if op.name == "func.func":
            out.append(_func_signature(op))
        else:
            out.append(_llvm_func_signature(op))
    return out


def _func_signature(op: Operation) -> Signature:
    name = _symbol(op)
    ftype = ir.TypeAttr(op.attributes["function_type"]).value
    inputs, results = list(ftype.inputs), list(ftype.results)
    # C returns a struct (memref descriptor, complex) through a pointer argument.
    by_pointer = len(results) > 1 or (len(results) == 1 and isinstance(
        results[0], ir.MemRefType | ir.ComplexType))
    try:
        args = tuple(_value_spec(t) for t in inputs)
        res = tuple(_value_spec(t) for t in results)
    except _Unsupported as why:
        return Signature(name, (), (), f"_mlir_ciface_{name}", by_pointer, str(why))
    return Signature(name, args, res, f"_mlir_ciface_{name}", by_pointer)


def _value_spec(t: ir.Type) -> ValueSpec:
    text = str(t)
    if isinstance(t, ir.MemRefType):
        return _memref_spec(t)
    if text in DTYPES:
        return ValueSpec("scalar", DTYPES[text], text)
    raise _Unsupported(f"type {text} has no Python mapping")


def _memref_spec(t: ir.MemRefType) -> ValueSpec:
    text, element = str(t), str(t.element_type)
    if element not in DTYPES:
        raise _Unsupported(f"element type of {text} has no numpy mapping")
    if t.memory_space is not None:
        raise _Unsupported(f"{text} is not in the default memory space")
    dyn = ir.ShapedType.get_dynamic_size()
    shape = tuple(None if d == dyn else d for d in t.shape)
    identity = isinstance(t.layout, ir.AffineMapAttr) and \
        t.layout.value == ir.AffineMap.get_identity(t.rank)
    if identity:
        return ValueSpec("memref", DTYPES[element], text, shape)
    try:
        strides, offset = t.get_strides_and_offset()
    except Exception:  # noqa: BLE001 - the bindings raise a plain ValueError/RuntimeError
        raise _Unsupported(f"layout of {text} is not strided") from None
    dyn_so = ir.ShapedType.get_dynamic_stride_or_offset()
    return ValueSpec("memref", DTYPES[element], text, shape, identity=False,
                     strides=tuple(None if s == dyn_so else s for s in strides),
                     offset=None if offset == dyn_so else offset)


_LLVM_SCALARS = {"f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64"}


def _llvm_func_signature(op: Operation) -> Signature:
    """Raw LLVM-dialect functions: scalars by value, `!llvm.ptr` as an array's data pointer."""
    name = _symbol(op)
    ftype = ir.TypeAttr(op.attributes["function_type"]).value

    def spec(t: ir.Type) -> ValueSpec:
        text = str(t)
        if text in _LLVM_SCALARS:
            return ValueSpec("scalar", DTYPES[text], text)
        if text == "!llvm.ptr":
            return ValueSpec("pointer", None, text)
        raise _Unsupported(f"type {text} has no Python mapping")

    try:
        if ftype.is_var_arg:
            raise _Unsupported("variadic functions cannot be called")
        args = tuple(spec(t) for t in ftype.inputs)
        ret = str(ftype.return_type)
        results = () if ret == "!llvm.void" else (spec(ftype.return_type),)
        if results and results[0].kind != "scalar":
            raise _Unsupported(f"result type {ret} has no Python mapping")
    except _Unsupported as why:
        return Signature(name, (), (), name, False, str(why))
    return Signature(name, args, results, name, False)


def check_all_llvm(module: Module, filename: str) -> None:
    """Every op must be in the LLVM dialect now; name the first one that is not.

    Casts left by partial conversions only point at the real culprit, so they are named
    only when nothing else is left.
    """
    left = [op for op in _ops(module.operation)
            if op.name != "builtin.module" and not op.name.startswith("llvm.")]
    if not left:
        return
    op = next((o for o in left if o.name != "builtin.unrealized_conversion_cast"), left[0])
    file, line, col = relocate(op.location, filename)
    raise AccelError(f"'{op.name}' op was not lowered to the LLVM dialect by the CPU "
                     "pipeline (no conversion for it)", file=file, line=line, col=col)


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
        names = [n for n in _SOFT_FLOAT_HELPERS if llvm.address_of_symbol(n) is None]
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


