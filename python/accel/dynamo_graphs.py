"""Compiling AOTAutograd's graphs with accel: the training half of `accel.dynamo`.

With grad mode on and an input (a parameter, under dynamo's `inline_inbuilt_nn_modules`)
requiring grad, `accel.dynamo` hands the captured graph to `compile_training`, which runs
AOTAutograd (`torch._dynamo.backends.common.aot_autograd`): it traces the joint
forward+backward graph at the ATen level, functionalises it (in-place updates such as
BatchNorm's running statistics become extra forward outputs, which AOTAutograd's runtime
wrapper copies back into the buffers, as eager does) and partitions it into a forward graph
(returns the outputs and the activations saved for backward) and a backward graph (takes
the saved activations and the outputs' gradients, returns the inputs' gradients, `None` for
inputs that need none). Each of the two is compiled by `compile_part` with `accel.compile`,
so `loss.backward()` runs accel-compiled code.

`compile_part` compiles only what has to be computed: outputs that are graph inputs passed
through (AOTAutograd saves parameters and inputs for backward), constants, `None`s,
repeated outputs and view ops at the end of an output's chain (a transposed weight, a
detached activation) are filled in around the compiled call by torch, not compiled.

Random ops (dropout in training mode) become a counter-based generator on one more input,
a key drawn from torch's default generator per call (`accel.training.rng`): the forward
graph computes the dropout mask and returns it for the backward graph. SDPA is traced
through its math path (`sdpa_kernel(SDPBackend.MATH)`), whose backward accel lowers.

A graph runs eagerly (its FX code, as AOTAutograd traced it; one warning per reason) when
it has symbolic shapes, a random op without a compiled generator (`randperm`, ...), or
accel cannot compile it. The two graphs are decided separately. The
callbacks `selected(name)` and `report(record)` (`accel.dynamo`) decide which graphs
accel compiles and count what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from accel.api import compile_phase_graph
from accel.diagnostics import AccelError
from accel.training.rng import draw_key, functionalize_random


@dataclass
class GraphRecord:
    """One graph the backend received: its name (`graph_3`, `graph_3_forward`, ...), kind
    (`inference`, `forward`, `backward`), whether accel compiled it, why not, and how many
    times its compiled code ran."""

    name: str
    kind: str
    compiled: bool
    reason: str = ""
    calls: int = 0


Report = Callable[[GraphRecord], None]

#: The reason recorded for a graph that select_graphs/filter_graphs leave out.
NOT_SELECTED = "not selected (select_graphs/filter_graphs)"


def concrete(value: Any) -> torch.Tensor | None:
    """A real tensor with `value`'s shape/dtype (fake tensors materialised as zeros), or
    None for a non-tensor or a symbolic shape."""
    if not isinstance(value, torch.Tensor):
        return None
    if not all(isinstance(d, int) for d in value.shape):
        return None  # symbolic shape (dynamic=True)
    if isinstance(value, torch._subclasses.FakeTensor):
        return torch.zeros(tuple(value.shape), dtype=value.dtype)
    return value


def _random_op(gm: torch.fx.GraphModule) -> str | None:
    """The first op of `gm` that draws random numbers (dropout, rand, bernoulli...)."""
    for node in gm.graph.nodes:
        tags = getattr(node.target, "tags", ())
        if node.op == "call_function" and torch.Tag.nondeterministic_seeded in tags:
            return str(node.target.name())
    return None


def _has_node(values: Any) -> bool:
    return any(isinstance(v, torch.fx.Node)
               for v in torch.utils._pytree.tree_leaves(values))


def _view_chain(node: Any) -> tuple[Any, list[torch.fx.Node]]:
    """`node` as (base, views): the first node that is no view op, and the view ops (t,
    view, expand, detach, ...; constant arguments only) that make `node` from it, base
    first. Those run in torch on the base's value: the same zero-copy views and strides as
    eager, and no copies compiled (a transposed weight saved for backward is not copied)."""
    views: list[torch.fx.Node] = []
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and \
            getattr(node.target, "is_view", False) and node.args and \
            not _has_node((node.args[1:], node.kwargs)):
        views.append(node)
        node = node.args[0]
    return node, views[::-1]


Step = tuple[str, Any, list[torch.fx.Node]]


def _plan(gm: torch.fx.GraphModule) -> tuple[list[Step], list[torch.fx.Node]]:
    """How each flat output is made: (how, what, views) with how "compiled" (what: the
    index of a compiled output), "input" (what: a placeholder's index) or "value" (a
    constant or None), then `views` applied in torch; and the distinct nodes to compile."""
    placeholders = {n: i for i, n in enumerate(gm.graph.find_nodes(op="placeholder"))}
    outputs = gm.graph.output_node().args[0]
    flat = list(outputs) if isinstance(outputs, tuple | list) else [outputs]
    plan: list[Step] = []
    computed: dict[torch.fx.Node, int] = {}
    for out in flat:
        node, views = _view_chain(out)
        if not isinstance(node, torch.fx.Node):
            plan.append(("value", out, []))
        elif node in placeholders:
            plan.append(("input", placeholders[node], views))
        else:
            if node not in computed:
                computed[node] = len(computed)
            plan.append(("compiled", computed[node], views))
    return plan, list(computed)


def _replay(value: Any, views: list[torch.fx.Node]) -> Any:
    for node in views:
        value = node.target(value, *node.args[1:], **node.kwargs)
    return value


def _pruned(gm: torch.fx.GraphModule, nodes: list[torch.fx.Node]) -> torch.fx.GraphModule:
    """A copy of `gm` returning just `nodes`, as a tuple, dead code removed."""
    graph = torch.fx.Graph()
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    graph.graph_copy(gm.graph, mapping)
    graph.output(tuple(mapping[n] for n in nodes))
    graph.eliminate_dead_code()
    return torch.fx.GraphModule(gm, graph)


def _not_tensor(node: torch.fx.Node) -> bool:
    """Whether AOTAutograd's metadata says `node` is a SymInt or another non-tensor."""
    value = node.meta.get("val")
    return value is not None and not isinstance(value, torch.Tensor)


def compile_part(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, name: str,
                 kind: str, options: dict[str, Any], strict: bool, report: Report,
                 eager_reason: str | None = None) -> Callable[..., Any]:
    """An AOTAutograd graph (functional: no in-place updates) compiled with accel, as a
    boxed callable (takes the list of inputs); or its FX code when it must run eagerly."""
    from functorch.compile import make_boxed_func

    def eager(reason: str) -> Callable[..., Any]:
        report(GraphRecord(name, kind, False, reason))
        return make_boxed_func(gm.forward)

    if eager_reason is not None:
        return eager(eager_reason)
    inputs = [concrete(x) for x in example_inputs]
    if any(x is None for x in inputs):
        return eager("the graph takes non-tensor or symbolic-shape inputs (use dynamic=False)")
    random_op = _random_op(gm)
    if random_op is not None and kind == "backward":  # it would draw another dropout mask
        return eager(f"the backward graph draws random numbers ({random_op})")
    plan, nodes = _plan(gm)
    if any(_not_tensor(n) for n in nodes):
        return eager("the graph returns non-tensor values (symbolic sizes)")
    compiled = None
    keyed = False
    if nodes:
        try:
            pruned = _pruned(gm, nodes)
            # Dropout & co: a counter-based generator on one more input, a key drawn from
            # torch's generator per call (accel.training.rng); the mask is an output that
            # AOTAutograd saves for the backward graph.
            keyed = functionalize_random(pruned, f"accel backend: {name}") > 0
            # AOTAutograd's forward and backward graphs: a target that labels phases (the
            # RDU's sections) sees which this is.
            compiled = compile_phase_graph(
                pruned, tuple(inputs) + ((torch.zeros((), dtype=torch.int64),) if keyed
                                         else ()), options,
                "backward" if kind == "backward" else "forward", ())
        except AccelError as err:
            if strict:
                raise
            return eager(str(err))
        count = len(compiled.compiled.functions[compiled.func_name].results)
        if count != len(nodes):
            reason = f"{count} compiled outputs for {len(nodes)} graph outputs"
            if strict:
                raise AccelError(f"accel backend: {name}: {reason}")
            return eager(reason)
    record = GraphRecord(name, kind, True)
    report(record)

    def run(args: list[Any]) -> list[Any]:
        record.calls += 1
        results: Any = ()
        if compiled is not None:
            results = compiled(*args, draw_key()) if keyed else compiled(*args)
            if len(nodes) == 1:
                results = (results,)
        out = [_replay(results[v] if how == "compiled" else args[v] if how == "input" else v,
                       views) for how, v, views in plan]
        args.clear()  # the boxed convention: the inputs can be freed now
        return out

    run._boxed_call = True  # type: ignore[attr-defined]
    run.compiled = compiled  # type: ignore[attr-defined] - for inspection/tests
    return run


def compile_training(gm: torch.fx.GraphModule, example_inputs: list[Any], *, name: str,
                     options: dict[str, Any], strict: bool,
                     selected: Callable[[str], bool], report: Report) -> Callable[..., Any]:
    """`gm` through AOTAutograd, its forward and backward graphs (`<name>_forward`,
    `<name>_backward`) compiled by accel where `selected(name)` says so; returns dynamo's
    callable. The backward graph is compiled when AOTAutograd asks for it (on the first
    `backward()` through it)."""
    from torch._dynamo.backends.common import aot_autograd

    def part(kind: str) -> Callable[..., Any]:
        full = name if kind == "inference" else f"{name}_{kind}"

        def compiler(fx: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
            reason = None if selected(full) else NOT_SELECTED
            return compile_part(fx, inputs, name=full, kind=kind, options=options,
                                strict=strict, report=report, eager_reason=reason)

        return compiler

    from torch.nn.attention import SDPBackend, sdpa_kernel

    from accel import interrupts

    # inference_compiler: AOTAutograd's choice when no output needs a gradient after all.
    backend = aot_autograd(fw_compiler=part("forward"), bw_compiler=part("backward"),
                           inference_compiler=part("inference"))
    # SDPA through its math path (matmuls, softmax, dropout): the backward op of its CPU
    # flash kernel has no lowering, the math ops' backward does. AOTAutograd traces the
    # joint graph here, the backward graph included.
    # Ctrl-C while AOTAutograd traces: raised at a safe place (accel.interrupts).
    with sdpa_kernel([SDPBackend.MATH]), interrupts.guarded():
        return backend(gm, example_inputs)
