"""Layer-by-layer emulation: one host function per layer, run in the schedule's order.

`split` turns each layer of the graph into its own `func.func @layer_<i>`: the layer's
op, printed with the original function's value names, preceded by copies of the
non-layer ops it needs (`tensor.empty`, `linalg.fill`, constants, also those its regions
capture); every graph tensor it reads (function inputs, weights, earlier layers' results)
becomes an argument. The functions are appended to the program, which the CPU target
JITs once; `LayeredCall` then calls them one by one in the order the scheduler chose,
keeping each layer's result in a host dictionary (the emulated device memory), exactly
the tensors the l3ir program moves. Weights are passed as arguments (the arrays bound by
name), so a layer function reads no global.

The entry function's body is then replaced by `tensor.empty` results (compiler.py,
`_stub_body`): it only gives the host compile the entry's signature, and `executable[entry]`
is a `LayeredCall`, never the stub.

The split never changes numerics: each layer is the same op on the same values. When a
function cannot be split (a return of something that is not a graph tensor), the target
falls back to calling the whole program (said in logs/host-compile.log).
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.ir import ir
from accel.targets.mncore.graph import Graph


@dataclass(frozen=True)
class LayerCall:
    """One layer function: its symbol, the tensors it reads, the tensor it writes."""

    fn: str
    args: tuple[str, ...]
    out: str


@dataclass(frozen=True)
class Program:
    """How to run a split program: entry inputs, weights (value -> symbol), layers in
    schedule order, outputs."""

    inputs: tuple[str, ...]
    weights: Mapping[str, str]
    layers: tuple[LayerCall, ...]
    outputs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"inputs": list(self.inputs), "weights": dict(self.weights),
                "layers": [[c.fn, list(c.args), c.out] for c in self.layers],
                "outputs": list(self.outputs)}

    @staticmethod
    def from_json(data: Any) -> Program:
        try:
            return Program(tuple(data["inputs"]), dict(data["weights"]),
                           tuple(LayerCall(str(f), tuple(a), str(o))
                                 for f, a, o in data["layers"]),
                           tuple(data["outputs"]))
        except (KeyError, TypeError, ValueError) as err:
            raise AccelError(f"malformed layer program ({err})") from None


def _text(op: Any, state: Any) -> str:
    buf = io.StringIO()
    op.print(state=state, file=buf)
    return buf.getvalue()


def split(func: Any, graph: Graph, order: list[str]) -> tuple[str, Program]:
    """(text of the layer functions, the Program running them in `order`)."""
    block = func.regions[0].blocks[0]
    state = ir.AsmState(func)
    top = list(block.operations)
    position = {}
    for index, view in enumerate(top):
        position[_key(view.operation)] = index
    args = [a for a in block.arguments]
    arg_names = [a.get_name(state) for a in args]
    if any(n not in graph.values for n in arg_names):
        raise AccelError("an argument is not a static tensor")
    missing = [n for n in graph.outputs if n not in graph.values]
    returned = [o for o in top if o.operation.name == "func.return"]
    if not returned or len(returned[0].operation.operands) != len(graph.outputs) or missing:
        raise AccelError("the function returns values that are not graph tensors")
    texts = []
    calls: dict[str, LayerCall] = {}
    for index, layer in enumerate(graph.layers):
        if layer.op is None:
            raise AccelError(f"layer {layer.name} has no op")
        deps: dict[int, Any] = {}
        reads: list[str] = []
        _collect(layer.op, layer.op, state, graph, position, top, deps, reads)
        # A layer result read through a copied non-layer op is no dependency the scheduler
        # saw: the schedule could run this layer first. Run the whole program instead.
        hidden = [n for n in reads if n not in layer.inputs and graph.values[n].kind not in
                  ("input", "weight")]
        if hidden:
            raise AccelError(f"layer {layer.name} reads {hidden[0]} through an op that is "
                             "not a layer")
        fn = f"layer_{index}"
        types = [str(graph.handles[n].type) for n in reads]
        params = ", ".join(f"{_param(n)}: {t}" for n, t in zip(reads, types, strict=True))
        out_type = str(graph.handles[layer.output].type)
        body = "".join("    " + _text(top[i].operation, state).replace("\n", "\n    ") + "\n"
                       for i in sorted(deps))
        body += "    " + _text(layer.op, state).replace("\n", "\n    ") + "\n"
        for name in reads:
            if "#" in name:
                body = re.sub(re.escape(name) + r"(?!\d)", _param(name), body)
        texts.append(f"  func.func @{fn}({params}) -> {out_type} {{\n{body}"
                     f"    return {layer.output} : {out_type}\n  }}\n")
        calls[layer.name] = LayerCall(fn, tuple(reads), layer.output)
    weights = {n: v.symbol for n, v in graph.values.items() if v.kind == "weight"}
    program = Program(tuple(arg_names), weights, tuple(calls[n] for n in order),
                      tuple(graph.outputs))
    return "".join(texts), program


def _param(name: str) -> str:
    """The argument name of graph tensor `name`: one result of a multi-result op
    (`%21#0`) is no legal argument name, so it becomes `%mr21_0`."""
    return "%mr" + name[1:].replace("#", "_") if "#" in name else name


def _key(op: Any) -> int:
    return hash(op)


def _collect(root: Any, op: Any, state: Any, graph: Graph, position: dict[int, int],
             top: list[Any], deps: dict[int, Any], reads: list[str]) -> None:
    """Operands `op` (and the ops in its regions) use from outside `root`: graph tensors
    into `reads`, top-level non-layer ops (recursively) into `deps`."""
    for operand in op.operands:
        owner = operand.owner
        name = operand.get_name(state)
        if name in graph.handles:
            if name not in reads:
                reads.append(name)
            continue
        if isinstance(owner, ir.Block):
            continue  # a block argument inside root's regions
        index = position.get(_key(owner.operation if hasattr(owner, "operation") else owner))
        if index is None or index in deps:
            continue  # defined inside root, or already copied
        deps[index] = top[index]
        _collect(root, top[index].operation, state, graph, position, top, deps, reads)
    for region in op.regions:
        for blk in region.blocks:
            for inner in blk.operations:
                _collect(root, inner.operation, state, graph, position, top, deps, reads)


class LayeredCall:
    """The entry function, run layer by layer: numpy in, numpy out (a tuple for several)."""

    def __init__(self, host: Any, program: Program, weights: Mapping[str, np.ndarray],
                 double: bool):
        self._fns = {c.fn: host[c.fn] for c in program.layers}
        self._program = program
        self._double = double
        self._weights = {name: weights[symbol] for name, symbol in program.weights.items()}

    def __call__(self, *args: Any) -> Any:
        p = self._program
        if len(args) != len(p.inputs):
            raise ValueError(f"expected {len(p.inputs)} arguments, got {len(args)}")
        memory: dict[str, Any] = dict(self._weights)
        for name, value in zip(p.inputs, args, strict=True):
            if self._double and isinstance(value, np.ndarray) and value.dtype == np.float32:
                value = value.astype(np.float64)
            memory[name] = value
        for call in p.layers:
            memory[call.out] = self._fns[call.fn](*(memory[n] for n in call.args))
        results = tuple(_narrow(memory[n]) if self._double else memory[n] for n in p.outputs)
        return results[0] if len(results) == 1 else results


def _narrow(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return value.astype(np.float32)
    return value
