"""The layer graph (MLSDK's "MNGraph") of a linalg-on-tensors function.

Each tensor-producing operation of the function's body is a *layer* with an ONNX operator
name (`op_type`, the names MLSDK's layout_spec uses); weights (`memref.get_global` +
`bufferization.to_tensor`) and function arguments are graph inputs. Constants,
`tensor.empty` and `linalg.fill` are not layers: they only initialise destinations.

ONNX names (see docs/mncore.md for the full table): `linalg.matmul` -> `Gemm` when its
right operand comes from a weight (through transposes), else `MatMul`; `batch_matmul` ->
`MatMul`; `conv_*` -> `Conv`; `linalg.transpose` -> `Transpose`; expand/collapse_shape ->
`Reshape`; extract_slice -> `Slice`; `linalg.generic` by its body: `tensor.extract` ->
`Gather`, a reduction -> `ReduceMax` / `ReduceSum`, else the most telling scalar op
(`Tanh`, `Exp`, `Erf`, `Pow`, `Sqrt`, `Div`, `Where`, `Relu`, `Mul`, `Sub`, `Add`, `Cast`),
`Expand` for a pure broadcast/copy.

The graph is plain data (no MLIR objects except the optional `op` back-references), so the
planners and schedulers also run on graphs built by hand (tests, `gpt2_like`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: Layers whose inputs and output share one layout (elementwise: any layout works).
ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Tanh", "Exp", "Erf", "Pow", "Sqrt",
                         "Where", "Relu", "Cast", "Expand", "Neg", "Max", "Min"})
GEMMS = frozenset({"MatMul", "Gemm", "Conv"})
#: Body ops of a `linalg.generic`, most telling first, and the ONNX name they give.
_BODY_NAMES = (("tensor.extract", "Gather"), ("math.erf", "Erf"), ("math.tanh", "Tanh"),
               ("math.exp", "Exp"), ("math.fpowi", "Pow"), ("math.powf", "Pow"),
               ("math.rsqrt", "Sqrt"), ("math.sqrt", "Sqrt"), ("arith.divf", "Div"),
               ("arith.select", "Where"), ("arith.maximumf", "Relu"), ("arith.maxnumf", "Relu"),
               ("arith.mulf", "Mul"), ("arith.subf", "Sub"), ("arith.negf", "Neg"),
               ("arith.addf", "Add"), ("arith.addi", "Add"), ("arith.truncf", "Cast"),
               ("arith.extf", "Cast"), ("arith.sitofp", "Cast"))
_SKIPPED = frozenset({"arith.constant", "tensor.empty", "linalg.fill", "memref.get_global",
                      "func.return", "arith.index_cast", "arith.cmpi"})


@dataclass
class Value:
    """A tensor: its shape, element width, and where it comes from."""

    name: str
    shape: tuple[int, ...]
    bits: int
    kind: str = "activation"  # "activation" | "input" | "weight"
    #: The global a weight is read from (`memref.global` symbol), else "".
    symbol: str = ""

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * self.bits // 8


@dataclass
class Layer:
    """One operation of the graph: inputs and output are Value names."""

    name: str
    op_type: str
    inputs: list[str]
    output: str
    flops: int
    #: The MLIR op this layer came from (None for graphs built by hand).
    op: Any = field(default=None, repr=False, compare=False)
    #: Index of the MLIR operand of each input (for inserting relayouts).
    operand_index: list[int] = field(default_factory=list, repr=False, compare=False)


@dataclass
class Graph:
    values: dict[str, Value]
    layers: list[Layer]
    outputs: list[str]
    #: Value name -> its MLIR value (graphs imported from MLIR only).
    handles: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def producer(self) -> dict[str, Layer]:
        return {layer.output: layer for layer in self.layers}

    def consumers(self) -> dict[str, list[tuple[Layer, int]]]:
        users: dict[str, list[tuple[Layer, int]]] = {v: [] for v in self.values}
        for layer in self.layers:
            for i, name in enumerate(layer.inputs):
                users[name].append((layer, i))
        return users

    @property
    def flops(self) -> int:
        return sum(layer.flops for layer in self.layers)


# -- from MLIR ------------------------------------------------------------------------------
def _bits(element: str) -> int:
    digits = "".join(c for c in element if c.isdigit())
    # index takes a 64-bit long word; i1 is stored in a byte (as the dialect counts it).
    return max(8, int(digits)) if digits else 64


def _tensor(type_: Any) -> tuple[tuple[int, ...], int] | None:
    """(shape, element bits) of a statically shaped ranked tensor type, else None."""
    text = str(type_)
    if not text.startswith("tensor<") or "?" in text:
        return None
    parts = text[len("tensor<"):-1].split("x")
    shape = tuple(int(p) for p in parts[:-1])
    return shape, _bits(parts[-1])


def _generic_name(op: Any) -> str:
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    iterators = str(op.attributes["iterator_types"])
    if "reduction" in iterators:
        return "ReduceMax" if any(n in ("arith.maximumf", "arith.maxnumf") for n in body) \
            else "ReduceSum"
    for scalar, onnx in _BODY_NAMES:
        if scalar in body:
            return onnx
    return "Expand"


def _op_type(op: Any, producers: dict[str, str], weights: set[str], name_of: Any) -> str:
    name = op.name
    if name == "linalg.generic":
        return _generic_name(op)
    if name == "linalg.matmul":
        rhs = name_of(op.operands[1])
        while rhs not in weights and producers.get(rhs):  # through transposes/reshapes
            rhs = producers[rhs]
        return "Gemm" if rhs in weights else "MatMul"
    if name.startswith("linalg.batch_matmul") or name.startswith("linalg.matmul"):
        return "MatMul"
    if name.startswith("linalg.conv"):
        return "Conv"
    if name.startswith("linalg.pooling"):
        return "MaxPool" if "max" in name else "AveragePool"
    simple = {"linalg.transpose": "Transpose", "tensor.expand_shape": "Reshape",
              "tensor.collapse_shape": "Reshape", "tensor.extract_slice": "Slice",
              "tensor.insert_slice": "Concat", "tensor.pad": "Pad", "linalg.broadcast": "Expand",
              "linalg.softmax": "Softmax", "linalg.reduce": "ReduceSum"}
    return simple.get(name, name.split(".")[-1].capitalize())


def _flops(op: Any, op_type: str, shapes: list[tuple[int, ...]], out: tuple[int, ...]) -> int:
    if op_type in ("Gemm", "MatMul") and len(shapes) >= 2 and shapes[0]:
        return 2 * math.prod(out) * shapes[0][-1]
    if op_type == "Conv" and len(shapes) >= 2:
        return 2 * math.prod(out) * math.prod(shapes[1][1:])
    if op.name == "linalg.generic":
        body = [o for o in op.regions[0].blocks[0].operations
                if o.operation.name.startswith(("arith.", "math."))]
        largest = max([math.prod(s) for s in shapes] + [math.prod(out)])
        return largest * max(1, len(body))
    return 0


def _data_inputs(op: Any) -> list[tuple[int, Any]]:
    """(operand index, value) of the operands an op reads data from (not its `outs`)."""
    view = op.opview
    if hasattr(view, "inputs"):  # destination-passing style: ins come first
        return list(enumerate(view.inputs))
    if hasattr(view, "input"):  # linalg.transpose, linalg.broadcast
        return [(0, view.input)]
    return [(i, o) for i, o in enumerate(op.operands) if _tensor(o.type) is not None][:1]


def from_function(func: Any) -> Graph:
    """The layer graph of `func.func` `func` (ops with dynamic shapes are layers too, but
    their tensors count as empty: the cost model needs static shapes)."""
    from accel.ir import ir

    block = func.regions[0].blocks[0]
    state = ir.AsmState(func)  # one numbering for the whole function: get_name is O(1)

    def name_of(v: Any) -> str:
        return v.get_name(state)

    values: dict[str, Value] = {}
    layers: list[Layer] = []
    outputs: list[str] = []
    aliases: dict[str, str] = {}  # get_global results -> symbol
    producers: dict[str, str] = {}  # value -> its first data input (for Gemm detection)
    weights: set[str] = set()
    counts: dict[str, int] = {}
    handles: dict[str, Any] = {}
    for arg in block.arguments:
        found = _tensor(arg.type)
        if found is not None:
            values[name_of(arg)] = Value(name_of(arg), *found, kind="input")
            handles[name_of(arg)] = arg
    for view in block.operations:
        op = view.operation
        if op.name == "memref.get_global":
            aliases[name_of(op.results[0])] = str(op.attributes["name"]).lstrip("@")
            continue
        if op.name == "bufferization.to_tensor":
            symbol = aliases.get(name_of(op.operands[0]))
            found = _tensor(op.results[0].type)
            if symbol is not None and found is not None:
                name = name_of(op.results[0])
                values[name] = Value(name, *found, kind="weight", symbol=symbol)
                handles[name] = op.results[0]
                weights.add(name)
            continue
        if op.name == "func.return":
            outputs = [name_of(v) for v in op.operands if name_of(v) in values]
            continue
        if op.name in _SKIPPED:
            continue
        kept = [(name_of(v), i) for i, v in _data_inputs(op) if name_of(v) in values]
        op_type = _op_type(op, producers, weights, name_of)
        flops = None
        for result in _layer_results(op):
            found = _tensor(result.type)
            if found is None:
                continue
            out_name = name_of(result)
            if kept:
                producers[out_name] = kept[-1][0] if op_type in ("Transpose", "Reshape") \
                    else ""
            counts[op_type] = counts.get(op_type, 0) + 1
            values[out_name] = Value(out_name, *found)
            handles[out_name] = result
            # An op with several results counts its work once, on its first layer.
            flops = _flops(op, op_type, [values[n].shape for n, _ in kept], found[0]) \
                if flops is None else 0
            layers.append(Layer(f"{op_type}_{counts[op_type] - 1}", op_type,
                                [n for n, _ in kept], out_name, flops, op,
                                [i for _, i in kept]))
    return Graph(values, layers, outputs, handles)


def _layer_results(op: Any) -> list[Any]:
    """The results of `op` that become layers: its only one, or each used one of several
    (`linalg.generic` computing max and argmax, ...). Each used result is a layer of its
    own (the same op, one output), so every consumer names its producer and the scheduler
    never runs a consumer first; the layered emulation runs the op once per layer."""
    if len(op.results) == 1:
        return [op.results[0]]
    return [r for r in op.results if any(True for _ in r.uses)]


# -- by hand --------------------------------------------------------------------------------
def gpt2_like(n_layer: int = 12, n_embd: int = 768, seq: int = 1024, n_head: int = 12,
              vocab: int = 50257, bits: int = 32) -> Graph:
    """A GPT-2-shaped layer graph (defaults: GPT-2 small, 1024 tokens) without importing a
    model: for cost-model tests at a size where SRAM is scarce."""
    values: dict[str, Value] = {}
    layers: list[Layer] = []

    def value(name: str, shape: tuple[int, ...], kind: str = "activation") -> str:
        values[name] = Value(name, shape, bits if kind != "input" else 64, kind)
        return name

    def layer(op_type: str, inputs: list[str], shape: tuple[int, ...]) -> str:
        out = value(f"%{len(layers)}", shape)
        flops = 2 * math.prod(shape) * values[inputs[0]].shape[-1] if op_type in GEMMS \
            else math.prod(shape) * 2
        layers.append(Layer(f"{op_type}_{len(layers)}", op_type, inputs, out, flops))
        return out

    ids = value("%ids", (1, seq), "input")
    wte = value("%wte", (vocab, n_embd), "weight")
    x = layer("Gather", [wte, ids], (1, seq, n_embd))
    head = n_embd // n_head
    for i in range(n_layer):
        w = {k: value(f"%w{i}_{k}", s, "weight") for k, s in (
            ("qkv", (n_embd, 3 * n_embd)), ("proj", (n_embd, n_embd)),
            ("fc", (n_embd, 4 * n_embd)), ("out", (4 * n_embd, n_embd)))}
        h = layer("LayerNormalization", [x], (1, seq, n_embd))
        qkv = layer("Gemm", [h, w["qkv"]], (1, seq, 3 * n_embd))
        q = layer("Slice", [qkv], (1, n_head, seq, head))
        k = layer("Transpose", [layer("Slice", [qkv], (1, n_head, seq, head))],
                  (1, n_head, head, seq))
        v = layer("Slice", [qkv], (1, n_head, seq, head))
        s = layer("MatMul", [q, k], (1, n_head, seq, seq))
        p = layer("Softmax", [layer("Div", [s], (1, n_head, seq, seq))], (1, n_head, seq, seq))
        a = layer("Reshape", [layer("MatMul", [p, v], (1, n_head, seq, head))],
                  (1, seq, n_embd))
        x = layer("Add", [x, layer("Gemm", [a, w["proj"]], (1, seq, n_embd))],
                  (1, seq, n_embd))
        h = layer("LayerNormalization", [x], (1, seq, n_embd))
        f = layer("Tanh", [layer("Gemm", [h, w["fc"]], (1, seq, 4 * n_embd))],
                  (1, seq, 4 * n_embd))
        x = layer("Add", [x, layer("Gemm", [f, w["out"]], (1, seq, n_embd))],
                  (1, seq, n_embd))
    out = layer("LayerNormalization", [x], (1, seq, n_embd))
    return Graph(values, layers, [out])
