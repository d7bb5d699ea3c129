"""Frozen weights packed once: where a kernel's weight comes from, and private globals for
its packed copy.

With `freeze_weights`, a kernel whose weight is an external `memref.global` (a frozen
parameter: `accel.compile` binds the model's parameters to them when the code is loaded)
reads a copy packed into the kernel's layout the first time it runs, instead of packing
the weight on every call (onnxruntime and inductor's `freezing` do the same). The copy
lives in a private global, next to a second one holding the address it was packed from:
a call with the weight at another address (the code bound to other arrays) packs again;
an in-place change to the weight is not seen (the option's contract).

After `accel-split-functions`, a repeated layer's part takes its weights as arguments and
is called once per layer: the packed copy then becomes two more arguments of the part,
and each call passes the globals of the weight it passes.
"""

from __future__ import annotations

import hashlib

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes.base import defining_op, ops_named

#: The type of the global holding the address a weight was packed from (0: not yet).
SOURCE_TYPE = "memref<1xi64>"


def repack_guard(weight: str, weight_t: str, pack_call: str, c0: str = "%c0") -> list[str]:
    """Lines (unindented) that run `pack_call` (a `func.call`) and then record `weight`'s
    address in %SRC when it differs from the one there: the first call, or the code bound
    to other arrays. %SRC is written after the packing, so a call that finds it set reads
    a whole copy."""
    return [f"%wp = memref.extract_aligned_pointer_as_index {weight} : {weight_t} -> index",
            "%wp64 = arith.index_cast %wp : index to i64",
            f"%was = memref.load %SRC[{c0}] : {SOURCE_TYPE}",
            "%stale = arith.cmpi ne, %wp64, %was : i64",
            "scf.if %stale {",
            f"  {pack_call}",
            f"  memref.store %wp64, %SRC[{c0}] : {SOURCE_TYPE}",
            "}"]


def _external_global(module: Operation, value: ir.Value) -> str | None:
    """The name of the external `memref.global` (no initial value) `value` is a
    `memref.get_global` of, or None."""
    source = defining_op(value, "memref.get_global")
    if source is None:
        return None
    name = ir.FlatSymbolRefAttr(source.attributes["name"]).value
    for glob in ops_named(module, ("memref.global",)):
        if ir.StringAttr(glob.attributes["sym_name"]).value == name:
            return None if "initial_value" in glob.attributes else name
    return None


def _calls_to(module: Operation, callee: str) -> list[Operation]:
    return [call for call in ops_named(module, ("func.call",))
            if ir.FlatSymbolRefAttr(call.attributes["callee"]).value == callee]


def frozen_weight_sites(module: Operation, op: Operation
                        ) -> str | tuple[Operation, int, list[tuple[Operation, str]]] | None:
    """Where `op`'s weight (operand 1) comes from: the external global's name when `op`
    reads it directly; (the private function, argument number, [(call, global)]) when it is
    an argument of a private function every call of which passes an external global; else
    None (a computed weight, a public function, an argument from another argument)."""
    weight = op.operands[1]
    direct = _external_global(module, weight)
    if direct is not None:
        return direct
    if not isinstance(weight.owner, ir.Block):
        return None
    arg = weight if isinstance(weight, ir.BlockArgument) else ir.BlockArgument(weight)
    func = arg.owner.owner
    func = None if func is None else func.operation  # (FuncOp's OpView `name` is sym_name)
    if func is None or func.name != "func.func" or \
            arg.owner != func.regions[0].blocks[0] or "sym_visibility" not in func.attributes \
            or ir.StringAttr(func.attributes["sym_visibility"]).value != "private":
        return None
    calls = _calls_to(module, ir.StringAttr(func.attributes["sym_name"]).value)
    sites = [(call, _external_global(module, call.operands[arg.arg_number]))
             for call in calls]
    if not sites or any(name is None for _, name in sites):
        return None
    return func.operation, arg.arg_number, sites  # type: ignore[return-value]


def _packed_globals(module: Operation, at: Operation, weight: str, kernel: str, pa_t: str,
                    known: set[str]) -> list[ir.Value]:
    """`memref.get_global`s, in front of `at`, of the private globals holding `weight`
    packed for `kernel` (type `pa_t`) and the address it was packed from; added to the
    module on first use."""
    packed = f"{weight}_packed_{hashlib.sha1(kernel.encode()).hexdigest()[:8]}"
    if packed not in known:
        text = (f'module {{\n  memref.global "private" @{packed} : {pa_t} = uninitialized '
                f'{{alignment = 64 : i64}}\n  memref.global "private" @{packed}_src : '
                f'{SOURCE_TYPE} = dense<0>\n}}')
        body = module.regions[0].blocks[0]
        parsed = ir.Module.parse(text, module.context)  # kept alive while its ops move
        for glob in list(parsed.body.operations):
            glob.operation.move_before(body.operations[0])
        known.add(packed)
    values = []
    with InsertionPoint(at), at.location:
        for sym, t in ((packed, pa_t), (f"{packed}_src", SOURCE_TYPE)):
            values.append(dialects.memref.GetGlobalOp(ir.MemRefType(ir.Type.parse(t)),
                                                      sym).result)
    return values


def _add_arguments(func: Operation, types: list[ir.Type]) -> list[ir.Value]:
    """Append arguments of `types` to `func` (its entry block and its type)."""
    entry = func.regions[0].blocks[0]
    new = [entry.add_argument(t, func.location) for t in types]
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([*ftype.inputs, *types], list(ftype.results)))
    if "arg_attrs" in func.attributes:
        attrs = list(ir.ArrayAttr(func.attributes["arg_attrs"]))
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(
            attrs + [ir.DictAttr.get({}) for _ in types])
    return new


def _extend_call(call: Operation, extra: list[ir.Value]) -> None:
    """Replace `call` with the same call taking `extra` operands after its own."""
    with InsertionPoint(call), call.location:
        new = ir.Operation.create(
            "func.call", results=[r.type for r in call.results],
            operands=[*call.operands, *extra],
            attributes={call.attributes[i].name: call.attributes[i].attr
                        for i in range(len(call.attributes))})
    for old, value in zip(call.results, new.results, strict=True):
        old.replace_all_uses_with(value)
    call.erase()


def thread_packed_weight(module: Operation, op: Operation,
                         sites: str | tuple[Operation, int, list[tuple[Operation, str]]],
                         kernel: str, pa_t: str, known: set[str]) -> list[ir.Value]:
    """(packed copy, source address) buffers for `op`'s frozen weight, as values in `op`'s
    block: get_globals in front of `op`, or new arguments of its function that each call
    (`frozen_weight_sites`) fills with get_globals of the weight it passes."""
    if isinstance(sites, str):
        return _packed_globals(module, op, sites, kernel, pa_t, known)
    func, _, calls = sites
    args = _add_arguments(func, [ir.Type.parse(pa_t), ir.Type.parse(SOURCE_TYPE)])
    for call, weight in calls:
        _extend_call(call, _packed_globals(module, call, weight, kernel, pa_t, known))
    return args
