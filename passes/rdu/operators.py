"""The operator graph of a function: its ops grouped by the PyTorch operator they come from.

Sectioning works on torch operators (linear, gelu, softmax, ...), not on linalg ops: the
frontend records each op's torch operator in its location (`accel.frontend.provenance`).
An *operator* is either one call of a leaf module whose class has a kind (`nn.Linear`,
GPT-2's `Conv1D`, `nn.LayerNorm`, GELU activations, ...) or one torch call outside such
modules (all ops decomposed from it share the original FX node name).

Ops are sorted into three roles:
- free: constants, `tensor.empty` and fills of them: cheap, rematerialised in every section
  that uses them, never a section boundary;
- weight reads (`memref.get_global` + `bufferization.to_tensor`): stay in the function, and
  sections take the weights as operands (streamed from DRAM, so repeated layers share one
  body);
- compute: everything else, owned by an operator. An op without provenance (a lowering
  helper) joins the operator of its first user, else the one before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from accel.frontend.provenance import Provenance, parse
from accel.ir import Operation, OpView, Value, ir

#: Leaf module classes (last component of the class name) and their operator kind.
MODULE_KINDS: dict[str, str] = {
    "Linear": "linear", "Conv1D": "linear", "LazyLinear": "linear", "Bilinear": "linear",
    "LayerNorm": "layer_norm", "RMSNorm": "rms_norm", "Embedding": "embedding",
    "GELU": "gelu", "NewGELUActivation": "gelu", "GELUActivation": "gelu",
    "FastGELUActivation": "gelu", "GELUTanh": "gelu", "QuickGELUActivation": "gelu",
    "BloomGelu": "gelu", "GeLUFunction": "gelu",
    "ReLU": "relu", "SiLU": "silu", "Tanh": "tanh", "Sigmoid": "sigmoid",
    "Softmax": "softmax", "Dropout": "dropout", "Conv2d": "conv2d", "Conv1d": "conv1d",
    "BatchNorm2d": "batch_norm", "MaxPool2d": "max_pool2d", "CrossEntropyLoss": "cross_entropy",
}
#: aten operator names (`aten.<name>.<overload>`) whose kind is not the name itself.
ATEN_KINDS: dict[str, str] = {
    "mm": "matmul", "bmm": "matmul", "matmul": "matmul", "baddbmm": "matmul",
    "addmm": "linear", "native_layer_norm": "layer_norm", "div": "div", "true_divide": "div",
    "scaled_dot_product_attention": "sdpa", "cross_entropy_loss": "cross_entropy",
    "log_softmax": "log_softmax", "softmax": "softmax", "nll_loss_forward": "nll_loss",
    "_to_copy": "cast", "to": "cast", "type_as": "cast", "__and__": "bitwise_and",
    "__or__": "bitwise_or", "masked_fill": "where", "ones_like": "full_like",
    "new_ones": "full_like", "zeros_like": "full_like",
}
#: Kinds that only move or re-type data: they ride along with a neighbour at -o0.
VIEW_KINDS = frozenset({
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "expand", "clone", "contiguous", "flatten", "split", "split_with_sizes", "getitem",
    "slice", "select", "unflatten", "chunk", "alias", "detach", "cast", "expand_as",
})
FREE_OPS = frozenset({"arith.constant", "tensor.empty"})
WEIGHT_OPS = frozenset({"memref.get_global", "bufferization.to_tensor"})


def kind_of(prov: Provenance | None) -> str:
    """The operator kind of `prov`: its leaf module's kind, else the aten name's."""
    if prov is None:
        return "unknown"
    module = prov.module
    if module is not None:
        kind = MODULE_KINDS.get(module.cls.rsplit(".", 1)[-1])
        if kind is not None:
            return kind
    parts = prov.aten.split(".")
    name = parts[1] if len(parts) > 1 and parts[0] in ("aten", "prims") else parts[0]
    kind = ATEN_KINDS.get(name, name.lstrip("_"))
    return "view" if kind in VIEW_KINDS else kind


def _key(prov: Provenance) -> str:
    module = prov.module
    if module is not None and module.cls.rsplit(".", 1)[-1] in MODULE_KINDS:
        return "module:" + module.path
    return "node:" + prov.origin


@dataclass
class Operator:
    """One torch operator: its kind, provenance and the compute ops lowered from it."""

    index: int
    kind: str
    prov: Provenance | None
    ops: list[Operation] = field(default_factory=list)
    preds: set[int] = field(default_factory=set)
    succs: set[int] = field(default_factory=set)

    @property
    def label(self) -> str:
        """`kind:origin`, e.g. `linear:model.h.0.mlp.c_fc` (sections.json's `ops`)."""
        if self.prov is None:
            return self.kind
        module = self.prov.module
        if module is not None and _key(self.prov).startswith("module:"):
            return f"{self.kind}:{module.path}"
        return f"{self.kind}:{self.prov.origin}"

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(m.path for m in self.prov.modules) if self.prov else ()


def is_free(op: Operation, free: set[Operation]) -> bool:
    """Constants, empty tensors and fills of them (recomputed where used)."""
    if op.name in FREE_OPS:
        return not (op.name == "arith.constant" and "value" in op.attributes
                    and "dense_resource" in str(op.attributes["value"]))
    if op.name == "linalg.fill":
        return all(defining_op(v) in free for v in op.operands)
    return False


def defining_op(value: Value) -> Operation | None:
    """The op that defines `value`, None for a block argument."""
    owner = value.owner
    return owner.operation if isinstance(owner, Operation | OpView) else None


def is_weight(op: Operation) -> bool:
    """`memref.get_global` and the `bufferization.to_tensor` of one: a weight read."""
    if op.name == "memref.get_global":
        return True
    if op.name == "bufferization.to_tensor":
        src = defining_op(op.operands[0])
        return src is not None and src.name == "memref.get_global"
    return False


def used_values(op: Operation) -> Iterator[Value]:
    """Operands of `op` and of the ops nested in it (values captured by regions too)."""
    yield from op.operands
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from used_values(inner.operation)


@dataclass
class Graph:
    """The operators of one function, in program order (a topological order)."""

    operators: list[Operator]
    owner: dict[Operation, int]       # compute op -> operator index
    free: set[Operation]
    weights: set[Operation]
    body: list[Operation]              # the function's ops, terminator excluded
    #: Derived per-operator facts the partitioners compute once (partition._facts).
    cache: dict[str, Any] = field(default_factory=dict)

    def producers(self, op: Operation) -> set[int]:
        found = set()
        for value in used_values(op):
            src = defining_op(value)
            if src in self.owner:
                found.add(self.owner[src])
        return found


def build(func: Operation | OpView) -> Graph:
    """The operator graph of `func` (a `func.func` with one block)."""
    block = func.operation.regions[0].blocks[0]
    body = [op.operation for op in block.operations][:-1]
    free: set[Operation] = set()
    weights: set[Operation] = set()
    keyed: dict[str, int] = {}
    operators: list[Operator] = []
    owner: dict[Operation, int] = {}
    pending: list[Operation] = []
    for op in body:
        if is_free(op, free):
            free.add(op)
            continue
        if is_weight(op):
            weights.add(op)
            continue
        prov = parse(op.location)
        if prov is None:
            pending.append(op)
            continue
        key = _key(prov)
        if key not in keyed:
            keyed[key] = len(operators)
            operators.append(Operator(len(operators), kind_of(prov), prov))
        operators[keyed[key]].ops.append(op)
        owner[op] = keyed[key]
    _adopt(pending, body, owner, operators)
    graph = Graph(operators, owner, free, weights, body)
    for op in body:
        if op in owner:
            me = owner[op]
            for pred in graph.producers(op) - {me}:
                operators[me].preds.add(pred)
                operators[pred].succs.add(me)
    _merge_cycles(graph)
    return graph


def _adopt(pending: list[Operation], body: list[Operation], owner: dict[Operation, int],
           operators: list[Operator]) -> None:
    """Give ops without provenance to their first user's operator, else the previous op's."""
    if not pending:
        return
    if not operators:  # no provenance at all (plain MLIR input): one operator per op
        for op in pending:
            owner[op] = len(operators)
            operators.append(Operator(len(operators), op.name.split(".")[-1], None, [op]))
        return
    for op in reversed(pending):  # users come later: resolve the latest first
        target = None
        for result in op.results:
            for use in result.uses:
                user = use.owner.operation
                while user is not None and user not in owner and user.parent is not None \
                        and user.parent.name != "func.func":
                    user = user.parent.operation
                if user in owner:
                    target = owner[user] if target is None else min(target, owner[user])
        if target is None:
            before = [o for o in body[:body.index(op)] if o in owner]
            target = owner[before[-1]] if before else 0
        owner[op] = target
        operators[target].ops.append(op)
    position = {op: i for i, op in enumerate(body)}
    for operator in operators:
        operator.ops.sort(key=position.__getitem__)


def _merge_cycles(graph: Graph) -> None:
    """Operators are the unit of sectioning, so the operator graph must be acyclic; an
    operator whose ops interleave with another's both ways is merged into it."""
    while True:
        order = topological(graph.operators)
        if order is not None:
            return
        cycle = _a_cycle(graph.operators)
        keep = graph.operators[min(cycle)]
        for index in sorted(cycle - {keep.index}, reverse=True):
            gone = graph.operators[index]
            keep.ops += gone.ops
            for op in gone.ops:
                graph.owner[op] = keep.index
            gone.ops = []
        _reindex(graph)


def _reindex(graph: Graph) -> None:
    alive = [o for o in graph.operators if o.ops]
    renumber = {o.index: i for i, o in enumerate(alive)}
    for op, index in list(graph.owner.items()):
        graph.owner[op] = renumber[index]
    for i, operator in enumerate(alive):
        operator.index = i
        operator.preds, operator.succs = set(), set()
    graph.operators = alive
    for op in graph.body:
        if op in graph.owner:
            me = graph.owner[op]
            for pred in graph.producers(op) - {me}:
                alive[me].preds.add(pred)
                alive[pred].succs.add(me)


def topological(operators: list[Operator]) -> list[int] | None:
    """A topological order preferring program order, or None if there is a cycle."""
    import heapq

    indegree = {o.index: len(o.preds) for o in operators}
    ready = [i for i, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in operators[i].succs:
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, j)
    return order if len(order) == len(operators) else None


def _a_cycle(operators: list[Operator]) -> set[int]:
    """The operators of one cycle (strongly connected, found by DFS colours)."""
    colour: dict[int, int] = {}
    stack: list[int] = []

    def visit(i: int) -> set[int] | None:
        colour[i] = 1
        stack.append(i)
        for j in operators[i].succs:
            if colour.get(j) == 1:
                return set(stack[stack.index(j):])
            if j not in colour:
                found = visit(j)
                if found:
                    return found
        colour[i] = 2
        stack.pop()
        return None

    for o in operators:
        if o.index not in colour:
            found = visit(o.index)
            if found:
                return found
    return set()


def numel(value: Value) -> int:
    """Elements of a statically shaped tensor value (dynamic dims count as 1)."""
    t = value.type
    if not isinstance(t, ir.ShapedType) or not t.has_rank:
        return 1
    n = 1
    for d in t.shape:
        n *= d if d >= 0 else 1
    return n


def nbytes(value: Value) -> int:
    t = value.type
    if not isinstance(t, ir.ShapedType):
        return 8
    try:
        width = t.element_type.width
    except AttributeError:  # index
        width = 64
    return numel(value) * max(1, width // 8)
