"""A train step's graphs: the joint forward+backward trace, split into phase graphs.

    joint = trace_joint(model, loss_fn, batch)          # one aten graph, functional
    forward, backward = partition(joint)                # PhaseGraph each

`trace_joint` runs AOTAutograd's `aot_export_module(..., trace_joint=True)` on a module
whose forward is `loss_fn(model, *batch)`: a functional aten graph whose inputs are the
parameters, the buffers and the batch, and whose outputs are the buffers' new values
(BatchNorm's running statistics and `num_batches_tracked`, through
`_native_batch_norm_legit_functional`: a `make_fx(functionalize(...))` trace leaves them
unchanged, because `native_batch_norm`'s schema does not mark them as written), the loss and
the gradients. Tracing uses fake tensors: the model's code runs once on shapes only, nothing
is computed, no buffer changes.

`partition` splits the joint graph in two, the way AOTAutograd's default partitioner does:
the forward graph computes what the loss and the buffer updates need and also returns the
intermediate values the backward graph reads ("saved" values); the backward graph computes
the gradients from them. Views of inputs (a transposed weight) are recomputed in the backward
graph rather than saved. Each graph is a plain `torch.fx.GraphModule` on flat tensors that
`accel.compile` compiles like any model.

Every input and output of a phase graph is named by a string: `param:<name>`,
`buffer:<name>`, `batch:<i>`, `rng:key` (the random ops' key, `accel.training.rng`),
`saved:<i>`, `grad:<name>`, `loss`, `state:<i>:<key>`, `hyper:<name>`, `grad_norm`
(`PhaseGraph.inputs` / `.outputs`): the train step wires the graphs together by these
names, and a target that maps phases to hardware (the RDU's forward/backward/optimizer
sections) reads them from `TrainGraphs`.
"""

from __future__ import annotations

import operator
import os
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from accel.diagnostics import AccelError
from accel.training.rng import functionalize_random

#: Ops that only reinterpret an input's memory: recomputed where needed, never saved.
_VIEW_OPS = ("t", "permute", "view", "reshape", "_unsafe_view", "expand", "unsqueeze",
             "squeeze", "transpose", "slice", "select", "alias", "detach", "as_strided")


@dataclass
class PhaseGraph:
    """One separately compiled graph of a train step.

    `name` is its phase (`forward`, `backward`, `optimizer`); `module` the graph on flat
    tensor inputs, in the order of `inputs`, returning a tuple in the order of `outputs`
    (the naming scheme is in the module docstring); `example_inputs` tensors of the right
    shapes and dtypes (for compiling and exporting it).
    """

    name: str
    module: Any
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    example_inputs: tuple[Any, ...] = ()


@dataclass
class TrainGraphs:
    """The phase graphs of a train step, in execution order: what runs where.

    `graphs` lists forward, backward, optimizer; a step runs forward then backward once per
    micro-batch (`grad_accumulation_steps`), then averages gradients across replicas
    (`data_parallel`), then runs the optimizer graph once.
    """

    graphs: list[PhaseGraph] = field(default_factory=list)

    def __getitem__(self, name: str) -> PhaseGraph:
        for graph in self.graphs:
            if graph.name == name:
                return graph
        raise KeyError(name)

    def names(self) -> list[str]:
        return [g.name for g in self.graphs]


@dataclass
class JointGraph:
    """`trace_joint`'s result: the joint graph and what its inputs and outputs are."""

    module: Any  # torch.fx.GraphModule
    inputs: list[str]
    outputs: list[str]
    #: Parameters that get a gradient (the others are read, not trained).
    trained: list[str]


def _loss_module(model: Any, loss_fn: Callable[..., Any]) -> Any:
    import torch

    class TrainLoss(torch.nn.Module):
        """`loss_fn(model, *batch)` as a module (what aot_export_module traces)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *batch: Any) -> tuple[Any]:
            return (loss_fn(self.model, *batch),)

    return TrainLoss()


def trace_joint(model: Any, loss_fn: Callable[..., Any], batch: Sequence[Any],
                decompositions: dict[Any, Any] | None = None) -> JointGraph:
    """The functional joint forward+backward graph of `loss_fn(model, *batch)`.

    Raises `AccelError` naming the problem: a loss that is not a scalar float, data-dependent
    control flow (the Python line that reads a tensor's value), a random op without a
    compiled generator (`accel.training.rng`), or any other tracing failure. Random ops
    become ops on one more input, `rng:key` (the last).
    """
    import torch
    from torch._functorch.aot_autograd import aot_export_module
    from torch.nn.attention import SDPBackend, sdpa_kernel

    name = type(model).__name__
    wrapper = _loss_module(model, loss_fn)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)
            warnings.filterwarnings("ignore", category=UserWarning)
            # torch.export first: models check `torch.compiler.is_compiling()` to skip
            # data-dependent code (transformers' packed-sequence detection) and it keeps the
            # buffers' in-place updates; then AOTAutograd differentiates its graph.
            # SDPA through its math path (matmuls, softmax, dropout): its CPU flash kernel's
            # backward op has no lowering, the math ops' backward does.
            with sdpa_kernel([SDPBackend.MATH]):
                exported = torch.export.export(wrapper, tuple(batch), strict=False)
                _check_loss(exported, name)
                module = _without_unused_parameters(exported.module())
                gm, sig = aot_export_module(module, tuple(batch), trace_joint=True,
                                            output_loss_index=0,
                                            decompositions=decompositions)
    except AccelError:
        raise
    except Exception as err:  # noqa: BLE001 - tracing raises many unrelated types
        raise _trace_error(name, err) from None
    prefix = "model."
    inputs = []
    by_input = {**sig.inputs_to_parameters, **sig.inputs_to_buffers}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    user = iter(range(len(sig.user_inputs)))
    for node in placeholders:
        target = by_input.get(node.name)
        if target is None:
            inputs.append(f"batch:{next(user)}")
        elif node.name in sig.inputs_to_parameters:
            inputs.append(f"param:{target.removeprefix(prefix)}")
        else:
            inputs.append(f"buffer:{target.removeprefix(prefix)}")
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    values = list(out_node.args[0])
    outputs = []
    mutated = sig.buffers_to_mutate
    grads = sig.backward_signature.gradients_to_parameters
    n_mut, n_user = len(mutated), len(sig.user_outputs)
    if n_user != 1 or sig.parameters_to_mutate or sig.user_inputs_to_mutate:
        raise AccelError(f"train step of {name}: loss_fn must return one scalar loss and "
                         "must not change parameters or the batch in place")
    # Gradients come in the order of the parameters that require one (by position: two
    # parameters may share one gradient node, which a by-name map would merge).
    needs = {n for n, p in module.named_parameters(remove_duplicate=False) if p.requires_grad}
    grad_names = [p for p in sig.parameters if p in needs]
    if len(grad_names) != len(values) - n_mut - n_user or any(
            grads.get(v.name, p) != p for v, p in zip(values[n_mut + n_user:], grad_names,
                                                        strict=False)
            if sum(w is v for w in values) == 1):
        raise AccelError(f"internal error: train step of {name}: the joint graph's gradients "
                         "do not match its parameters")
    for i, value in enumerate(values):
        if i < n_mut:
            outputs.append(f"buffer:{mutated[value.name].removeprefix(prefix)}")
        elif i < n_mut + n_user:
            outputs.append("loss")
        else:
            outputs.append(f"grad:{grad_names[i - n_mut - n_user].removeprefix(prefix)}")
    # Dropout and other random ops: a counter-based generator on one more input, the key
    # the step draws from torch's generator per forward call (accel.training.rng).
    if functionalize_random(gm, f"train step of {name}", _export_lines(exported)):
        inputs.append("rng:key")
    _drop_aliases(gm)
    trained = [o.split(":", 1)[1] for o in outputs if o.startswith("grad:")]
    return JointGraph(gm, inputs, outputs, trained)


def _check_loss(exported: Any, name: str) -> None:
    """`AccelError` unless the exported loss is one scalar float tensor."""
    import torch

    out = next(n for n in exported.graph.nodes if n.op == "output")
    user = list(exported.graph_signature.user_outputs)
    if len(user) != 1:
        raise AccelError(f"train step of {name}: loss_fn must return one scalar loss tensor, "
                         f"got {len(user)} outputs")
    node = next((v for v in out.args[0] if getattr(v, "name", None) == user[0]), None)
    loss = node.meta.get("val") if node is not None else None
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0 or not loss.is_floating_point():
        raise AccelError(f"train step of {name}: loss_fn must return a scalar float tensor, "
                         f"got {_describe(loss)}")


def _export_lines(exported: Any) -> Callable[[Any], str]:
    """A joint-graph node -> the model's source line of its op's first call in the exported
    graph (the joint graph is traced from the exported module's generated code)."""
    from accel.training.rng import source_line

    lines: dict[Any, str] = {}
    for node in exported.graph.nodes:
        line = source_line(node.meta.get("stack_trace"))
        if line:
            lines.setdefault(node.target, line)
    return lambda node: lines.get(node.target, "")


def _without_unused_parameters(gm: Any) -> Any:
    """`gm` (the exported program's module) without the parameters its graph never reads.

    AOTAutograd wants a gradient for every parameter; a parameter the loss does not use gets
    none (eager leaves its `.grad` None and the optimizer skips it). A tied weight (GPT-2's
    lm_head and wte) is registered under both names, and the graph reads one of them.
    The registrations are dropped from the exported module only; the tensors are shared.
    """
    used = {n.target for n in gm.graph.nodes if n.op == "get_attr" and n.users}
    for node in list(gm.graph.nodes):
        if node.op == "get_attr" and not node.users:
            gm.graph.erase_node(node)
    gm.recompile()
    for name, _ in list(gm.named_parameters(remove_duplicate=False)):
        if name not in used:
            owner, _, leaf = name.rpartition(".")
            delattr(gm.get_submodule(owner) if owner else gm, leaf)
    return gm


def _describe(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return type(value).__name__


def _user_frame(tb: Any) -> str:
    """`file:line` of the innermost frame outside torch and accel (the model's code)."""
    import torch

    skip = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)),
            os.path.dirname(operator.__file__))
    found = ""
    for frame in traceback.extract_tb(tb):
        if not frame.filename.startswith(skip) and not frame.filename.startswith("<"):
            found = f"{frame.filename}:{frame.lineno}"
    return found


def _trace_error(name: str, err: BaseException) -> AccelError:
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
    )

    where = _user_frame(err.__traceback__)
    at = f" at {where}" if where else ""
    data_dependent = (DataDependentOutputException, DynamicOutputShapeException)
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if isinstance(err, data_dependent) or "data-dependent" in text or \
            "GuardOnDataDependentSymNode" in type(err).__name__:
        return AccelError(f"train step of {name}: data-dependent control flow{at}: the code "
                          f"reads a tensor's value in Python ({text}), so no fixed graph "
                          "exists; use torch.where / masks instead of `if` on tensor values")
    if isinstance(err, RecursionError):
        return AccelError(f"train step of {name}: the model nests too deeply to trace")
    return AccelError(f"train step of {name}: tracing forward and backward failed{at}: "
                      f"{type(err).__name__}: {text}")


def _op_name(node: Any) -> str:
    """`aten.<name>` of a call_function node's overload packet, else ''."""
    target = node.target
    packet = getattr(target, "overloadpacket", None)
    return getattr(packet, "__name__", "") if packet is not None else ""


def _drop_aliases(gm: Any) -> None:
    """Remove `alias`/`detach` nodes (no-ops in a functional graph) and dead code."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and _op_name(node) in ("alias", "detach") and \
                len(node.args) == 1:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()
    gm.recompile()


def _is_view_of_inputs(node: Any, cache: dict[Any, bool]) -> bool:
    """True for a chain of view ops ending at placeholders (cheap to recompute)."""
    if node in cache:
        return cache[node]
    if node.op == "placeholder":
        result = True
    elif node.op == "call_function" and _op_name(node) in _VIEW_OPS:
        result = all(_is_view_of_inputs(a, cache) for a in node.all_input_nodes)
    else:
        result = False
    cache[node] = result
    return result


def partition(joint: JointGraph) -> tuple[PhaseGraph, PhaseGraph]:
    """The forward and backward graphs of `joint` (see the module docstring)."""
    import torch.fx as fx

    gm = joint.module
    graph = gm.graph
    out_node = next(n for n in graph.nodes if n.op == "output")
    values = list(out_node.args[0])
    fwd_out = [(o, v) for o, v in zip(joint.outputs, values, strict=True)
               if not o.startswith("grad:")]
    bwd_out = [(o, v) for o, v in zip(joint.outputs, values, strict=True)
               if o.startswith("grad:")]
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    forward: set[Any] = set()
    stack = [v for _, v in fwd_out]
    while stack:
        node = stack.pop()
        if node in forward or node.op == "placeholder":
            continue
        forward.add(node)
        stack.extend(node.all_input_nodes)
    for node in graph.nodes:  # a multi-output op's parts stay with it
        if node.op == "call_function" and node.target is operator.getitem and \
                node.args[0] in forward:
            forward.add(node)
    in_backward = {n for n in graph.nodes if n.op == "call_function" and n not in forward}
    views: dict[Any, bool] = {}
    grown = True
    while grown:  # views of inputs the backward graph reads are recomputed, not saved
        grown = False
        for node in list(in_backward):
            for arg in node.all_input_nodes:
                if arg in forward and arg not in in_backward and \
                        _is_view_of_inputs(arg, views):
                    in_backward.add(arg)
                    grown = True
    backward = [n for n in graph.nodes if n in in_backward]
    needed = ({a for n in backward for a in n.all_input_nodes} | {v for _, v in bwd_out}) \
        - in_backward
    saved = [n for n in graph.nodes if n in forward and n in needed]
    by_node = dict(zip(placeholders, joint.inputs, strict=True))
    reads = [p for p in placeholders if p in needed]
    fwd_inputs = [p for p in placeholders if any(u in forward for u in p.users)
                  or any(p is v for _, v in fwd_out)]
    saved_names = [f"saved:{i}" for i in range(len(saved))]
    fwd = _subgraph(gm, fx, fwd_inputs, forward, [v for _, v in fwd_out] + saved)
    bwd = _subgraph(gm, fx, reads + saved, set(backward), [v for _, v in bwd_out])
    return (PhaseGraph("forward", fwd, tuple(by_node[p] for p in fwd_inputs),
                       tuple([o for o, _ in fwd_out] + saved_names),
                       _examples(fwd_inputs)),
            PhaseGraph("backward", bwd,
                       tuple([by_node[p] for p in reads] + saved_names),
                       tuple(o for o, _ in bwd_out), _examples(reads + saved)))


def _examples(nodes: list[Any]) -> tuple[Any, ...]:
    """Zero tensors with the shapes and dtypes the trace recorded for `nodes`."""
    import torch

    found = []
    for node in nodes:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise AccelError(f"internal error: graph value {node.name} is not a tensor "
                             f"({type(val).__name__})")
        found.append(torch.zeros(tuple(val.shape), dtype=val.dtype))
    return tuple(found)


def _subgraph(gm: Any, fx: Any, inputs: list[Any], nodes: set[Any], outputs: list[Any]
              ) -> Any:
    """A GraphModule of `nodes` (in the joint graph's order) on `inputs` -> `outputs`."""
    graph = fx.Graph()
    env: dict[Any, Any] = {}
    for i, node in enumerate(inputs):
        env[node] = graph.placeholder(f"in{i}_{node.name}")
        env[node].meta = dict(node.meta)
    def value(node: Any) -> Any:
        if node not in env and node.op == "get_attr":
            # A constant of the joint graph (Mistral's sliding-window mask has one) that
            # only this phase reads: each phase gets its own reference to it.
            env[node] = graph.node_copy(node)
        return env[node]

    for node in gm.graph.nodes:
        if node in nodes:
            env[node] = graph.node_copy(node, value)
    graph.output(tuple(env[o] for o in outputs))
    graph.eliminate_dead_code()
    module = fx.GraphModule(gm, graph)
    return module


