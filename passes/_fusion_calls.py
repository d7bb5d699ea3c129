"""Calls and data-dependent accesses in a function that `accel-affine-fusion` fuses.

Why: MLIR's `affine-loop-fusion` builds its dependence graph from affine loads and stores
only, so a top-level `func.call` is invisible to it. Given a nest that writes a buffer, a
call that overwrites it, and a nest that reads it, fusion merged the reader into the writer
ahead of the call: the reader saw the old values (test_affine_fusion's call case). So:

* Before each top-level call, one tagged `affine.load` and `affine.store` of element 0 of
  each buffer the call takes (through views: of the base buffer) stand in for the call's
  accesses. Fusion's graph then has an edge from every nest that touches such a buffer to
  the call, and none moves across it. The pair is a no-op (it stores what it read), and it
  is erased after fusion.
* A top-level nest that reads or writes with a data-dependent index (`memref.load
  %logp[%i, %label]`: cross-entropy's gather) moves into a private function called in its
  place (`outline_nonaffine_linalg.outline_op`), and the call gets the stand-ins above. So do
  the nests that write one buffer in pieces (a `torch.cat`: zeros, then each part; an
  RNN's time steps), which MLIR's fusion recomputes over each other. Either used to leave
  the whole function unfused: every BatchNorm, ReLU and pooling nest of a CNN's training
  step ran as a loop of its own, with full-size temporaries.
* So does a loop with a view inside that cannot be folded onto its buffer (a dynamic
  offset), once the uses of any result it only carries through unchanged (reduce-reduce
  fusion's attention loop carries its output buffer) read the initial value instead: such
  a view used to leave every transformer's `main` unfused.
* The stand-ins are erased before `affine-scalrep` runs: with them in place its output
  summed a clipped optimizer's grad norm wrongly (test_accel_compile's training build,
  whose norm accumulations had become calls); without them it is right.

`isEscapingMemref` in MLIR already keeps a buffer that a call or view uses from being
privatised, so the call reads and writes the real buffer.
"""

from __future__ import annotations

from accel.ir import InsertionPoint, Operation, dialects, ir
from accel.passes._affine import VIEW_OPS, base_buffer
from accel.passes.base import ops_named
from accel.passes.outline_nonaffine_linalg import fresh_symbol, outline_op

#: Unit attribute on the stand-in loads and stores (erased after fusion).
PROXY = "accel.call_proxy"
#: Ops inside a loop that fusion's dependence analysis cannot see.
_OPAQUE = ("memref.load", "memref.store", "func.call")


def opaque_nests(func: Operation) -> list[Operation]:
    """Top-level loops holding a non-affine access, a call or a view (one `prepare` could
    not fold: a dynamic offset, e.g. the attention's per-head slice): `affine.for` nests,
    and `scf` loops (a `tm_tensor.scatter` lowers to them: max-pool's backward)."""
    return [op.operation for op in func.regions[0].blocks[0].operations
            if op.operation.name in ("affine.for", "scf.for", "scf.while", "scf.parallel")
            and ops_named(op.operation, _OPAQUE + VIEW_OPS)]


def forward_unchanged_results(loop: Operation) -> None:
    """Uses of an `scf.for` result whose iteration argument is yielded unchanged read the
    initial value instead (the same buffer: reduce-reduce fusion's attention loop carries
    its output buffer this way), so that the loop's results go unused."""
    if loop.name != "scf.for" or not loop.results:
        return
    body = loop.regions[0].blocks[0]
    yielded = list(body.operations)[-1].operands
    inits = list(loop.operands)[3:]  # lower bound, upper bound, step, then the inits
    for i, result in enumerate(loop.results):
        if yielded[i] == body.arguments[i + 1]:
            result.replace_all_uses_with(inits[i])


def outline_nests(func: Operation, nests: list[Operation], taken: set[str]) -> None:
    """Move each of `nests` (top-level `affine.for`s of `func`) into a private function
    (`<func>_nest<k>`), called where it was. Nests whose results are used stay."""
    fname = ir.StringAttr(func.attributes["sym_name"]).value
    for op in nests:
        forward_unchanged_results(op)
        if not any(list(r.uses) for r in op.results):
            outline_op(func, op, fresh_symbol(f"{fname}_nest", taken))


def add_call_proxies(func: Operation) -> str | None:
    """Stand-ins for each top-level call's buffers (see the module docstring); returns why
    it cannot (a buffer with no element 0: dynamic or empty), None when done."""
    unit = ir.UnitAttr.get()
    for call in list(func.regions[0].blocks[0].operations):
        call = call.operation
        if call.name != "func.call":
            continue
        bases: list[ir.Value] = []
        for operand in call.operands:
            if not isinstance(operand.type, ir.MemRefType):
                continue
            base = base_buffer(operand)
            if not any(base == b for b in bases):
                bases.append(base)
        for base in bases:
            shape = ir.MemRefType(base.type)
            if not shape.has_static_shape or 0 in shape.shape:
                return "a call on a dynamically shaped or empty buffer"
            zero = ir.AffineMap.get(0, 0, [ir.AffineExpr.get_constant(0)] * shape.rank)
            with call.location, InsertionPoint(call):
                load = dialects.affine.AffineLoadOp(shape.element_type, base, [], zero)
                store = dialects.affine.AffineStoreOp(load.result, base, [], zero)
            load.operation.attributes[PROXY] = unit
            store.operation.attributes[PROXY] = unit
    return None


def is_proxy(op: Operation) -> bool:
    return PROXY in op.attributes


def remove_call_proxies(func: Operation) -> None:
    """Erase the stand-ins (stores first: each uses its load's value)."""
    found = [o for o in ops_named(func, ("affine.store", "affine.load")) if is_proxy(o)]
    loads = [o for o in found if o.name == "affine.load"]
    for op in found:
        if op.name == "affine.store":
            op.erase()
    for op in loads:
        if not list(op.results[0].uses):
            op.erase()
        else:  # fusion forwarded it somewhere: keep the (harmless) load, untagged
            del op.attributes[PROXY]
