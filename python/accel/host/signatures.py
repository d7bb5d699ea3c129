"""The CPU target's view of a module's function boundary: what its public functions take
and return (`signatures_of`), which external weights it reads, and a check that lowering left
only the LLVM dialect. Needs the MLIR bindings; `abi` (the LLVM IR side) does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from accel.diagnostics import AccelError, relocate
from accel.ir import (
    Module,
    Operation,
    enable_torch_mlir_extensions,
    ir,
    load_torch_dialects,
)
from accel.runtime.dtypes import DTYPES, UNSIGNED_ATTR
from accel.runtime.signature import Signature, ValueSpec
from accel.runtime.weights import check_bindings
from accel.safe_parse import parse_module


@contextmanager
def parsed(source: str | Module, filename: str,
           weights: Mapping[str, object] | None
           ) -> Iterator[tuple[Module, dict[str, int]]]:
    """(module, external weights' byte sizes) of `source` parsed in a fresh context with the
    torch dialects, its tensor arguments read-only and every external weight bound in
    `weights` (None: not checked): where the cpu, nvgpu and mncore pipelines start. A given
    module is copied (lowering is destructive)."""
    from accel.context import make_context

    if not isinstance(source, str):
        source = source.operation.get_asm(enable_debug_info=True)
    enable_torch_mlir_extensions()
    with make_context() as ctx:
        load_torch_dialects(ctx)
        module = parse_module(source, filename)
        mark_tensor_args_read_only(module)
        specs = external_globals(module)
        if weights is not None:
            check_bindings(specs, weights, filename)  # type: ignore[arg-type]
        yield module, specs


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
        args = tuple(_value_spec(t, u) for t, u in zip(inputs, _unsigned(op, "arg_attrs",
                                                                       len(inputs)),
                                                          strict=True))
        res = tuple(_value_spec(t, u) for t, u in zip(results, _unsigned(op, "res_attrs",
                                                                         len(results)),
                                                         strict=True))
    except _Unsupported as why:
        return Signature(name, (), (), f"_mlir_ciface_{name}", by_pointer, str(why))
    return Signature(name, args, res, f"_mlir_ciface_{name}", by_pointer)


def _unsigned(op: Operation, key: str, count: int) -> list[bool]:
    """Which arguments (`arg_attrs`) or results (`res_attrs`) carry `accel.unsigned`: the
    frontend's mark for signless integers that were unsigned in the model (uint8)."""
    if key not in op.attributes:
        return [False] * count
    return [UNSIGNED_ATTR in ir.DictAttr(attrs) for attrs in ir.ArrayAttr(op.attributes[key])]


def _storage(element: str, unsigned: bool) -> str:
    """The DTYPES key of a signless element type, `uiN` when the source was unsigned."""
    if unsigned and re.fullmatch(r"i(8|16|32|64)", element):
        return "u" + element
    return element


def _value_spec(t: ir.Type, unsigned: bool = False) -> ValueSpec:
    text = str(t)
    if isinstance(t, ir.MemRefType):
        return _memref_spec(t, unsigned)
    if text in DTYPES:
        return ValueSpec("scalar", DTYPES[_storage(text, unsigned)], text)
    raise _Unsupported(f"type {text} has no Python mapping")


def _memref_spec(t: ir.MemRefType, unsigned: bool = False) -> ValueSpec:
    text, element = str(t), _storage(str(t.element_type), unsigned)
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


