"""`torch.compile(model, backend="accel")`: accel as a TorchDynamo backend.

    import accel.dynamo                     # registers the backend (or via the entry point)
    fast = torch.compile(model.eval(), backend="accel", options={"opt_level": 2})
    with torch.no_grad():
        y = fast(x)
    loss = loss_fn(torch.compile(model.train(), backend="accel")(x))
    loss.backward()                          # runs accel-compiled backward code

Dynamo hands `accel_backend` each captured FX graph with example inputs; dynamo re-captures
and recompiles when a guard such as a shape or the grad mode fails. `options` are
`accel.api.OPTIONS`, plus the `torch_compile`-scoped `select_graphs` and `filter_graphs`.

- Inference (grad mode off, or no input requires grad): the graph is compiled with
  `accel.api.compile` at the example inputs' shapes and dtypes; a graph with symbolic
  sizes (`dynamic=True`, or dynamo's automatic dynamic shapes once a size changed, as a KV
  cache does in `generate()`) once for every size (`accel.dynamo_symbolic`).
- Training (grad mode on and an input, e.g. a parameter, requires grad): AOTAutograd splits
  the joint graph into a forward and a backward graph and accel compiles both
  (`accel.dynamo_graphs`); in-place buffer updates (BatchNorm's running statistics) are
  applied as eager PyTorch does.

Graph names: the backend numbers the graphs it receives from one `torch.compile` call in
capture order from 0 (recompilations included; `torch._dynamo.reset()` starts again at 0):
`graph_N` is the N-th, and a training graph's parts are `graph_N_forward` and
`graph_N_backward`. `select_graphs` (compile only these) and `filter_graphs` (compile all
but these) take indices N or names; N or `graph_N` stands for all parts of graph N. The
numbering is per `options` dict: two `torch.compile` calls given the same dict object share it.

A graph runs eagerly (the usual `torch.compile` backend behaviour), with one `UserWarning`
per distinct reason, when accel cannot compile it (`AccelError`), when it takes non-tensor
inputs or symbolic integers that are no tensor input's size, or when a training graph
draws random numbers without a compiled generator (`randperm`, `multinomial`; dropout,
`rand`, `randn`, `bernoulli` compile: `accel.training.rng`); and, without a warning, when
`select_graphs`/`filter_graphs` leave it out. With `options={"strict_target": True}` an
`AccelError` is raised instead for a compile failure (dynamo wraps it in
`BackendCompilerFailed`). In-place updates of inputs (a StaticCache's `index_copy_`) are
compiled and written back into the inputs after each call.

`stats` counts, in this process, the graphs accel compiled (`"compiled"`, and by kind:
`"inference"`, `"forward"`, `"backward"`) and those it handed back to run eagerly
(`"eager"`). `graphs` lists one `GraphRecord` per graph (name, kind, compiled, reason,
calls: how often its compiled code ran). Dynamo can also leave code out of every graph
before the backend sees it: it graph-breaks on `nn.LSTM`/`nn.GRU`/`nn.RNN` unless
`torch._dynamo.config.allow_rnn = True`, and such code runs eagerly with no count here.

Importing this module registers the backend under "accel" with
`torch._dynamo.register_backend`; the package's `torch_dynamo_backends` entry point lets
torch find it without the import.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch._dynamo.backends import registry as _registry

from accel.api import compile as accel_compile
from accel.api import resolve_options
from accel.diagnostics import AccelError
from accel.dynamo_graphs import NOT_SELECTED, GraphRecord, compile_training, concrete
from accel.dynamo_symbolic import is_symbolic, plan, still_dynamic
from accel.options import GRAPH_NAME, split_torch_compile

__all__ = ["BACKEND_NAME", "GraphRecord", "accel_backend", "graphs", "register", "reset",
           "stats"]

BACKEND_NAME = "accel"

#: Graphs compiled by accel (in all and by kind) / run eagerly, in this process.
stats: dict[str, int] = {"compiled": 0, "eager": 0, "inference": 0, "forward": 0,
                         "backward": 0}
#: One record per graph the backend received, in order (see the docstring).
graphs: list[GraphRecord] = []

#: Fallback reasons already warned about (one warning per distinct reason per process).
_WARNED: set[str] = set()
#: id(options dict) -> [the dict (kept alive so the id stays unique), next graph index].
_NUMBERING: dict[int, list[Any]] = {}


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def _report(record: GraphRecord) -> None:
    graphs.append(record)
    if record.compiled:
        stats["compiled"] += 1
        stats[record.kind] += 1
        return
    stats["eager"] += 1
    if record.reason != NOT_SELECTED:
        _warn_once(f"accel backend: running graph eagerly: {record.reason}")


def reset() -> None:
    """Start the graph numbering of every `torch.compile` call again at 0 (called by
    `torch._dynamo.reset()`, which makes dynamo capture every graph again)."""
    _NUMBERING.clear()


def _next_index(options: Any) -> int:
    entry = _NUMBERING.setdefault(id(options), [options, 0])
    entry[1] += 1
    return entry[1] - 1


def _selector(torch_options: Mapping[str, Any]) -> Callable[[str], bool]:
    """name -> whether accel compiles that graph (select_graphs, filter_graphs)."""
    def names(entries: Any) -> set[str] | None:
        return None if entries is None else \
            {f"graph_{e}" if isinstance(e, int) else e for e in entries}

    select = names(torch_options["select_graphs"])
    skip = names(torch_options["filter_graphs"]) or set()

    def selected(name: str) -> bool:
        match = GRAPH_NAME.fullmatch(name)
        forms = {name, f"graph_{match.group(1)}"} if match else {name}
        return (select is None or bool(forms & select)) and not forms & skip

    return selected


def _fallback(gm: torch.fx.GraphModule, name: str, reason: str) -> Callable[..., Any]:
    _report(GraphRecord(name, "inference", False, reason))
    return gm.forward


def _needs_grad(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> bool:
    if not torch.is_grad_enabled():
        return False
    return any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs) or \
        any(p.requires_grad for p in gm.parameters())


def _freeze_parameters(gm: torch.fx.GraphModule, example_inputs: list[Any]
                       ) -> tuple[torch.fx.GraphModule, list[Any], list[int]]:
    """`freeze_weights`: dynamo passes a module's parameters as graph inputs (its
    `inline_inbuilt_nn_modules`); as attributes of a copy of the graph they are what
    `accel.compile` makes external weights, which the compiled code may pack once. Returns
    (the graph, its example inputs, the positions of the inputs it still takes)."""
    graph = copy.deepcopy(gm.graph)
    frozen = torch.fx.GraphModule(gm, graph)
    keep = []
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for i, (node, value) in enumerate(zip(placeholders, example_inputs, strict=True)):
        if not isinstance(value, torch.nn.Parameter):
            keep.append(i)
            continue
        attr = f"_accel_frozen_{i}"
        frozen.register_parameter(attr, value)  # the parameter itself: no copy
        with graph.inserting_before(node):
            node.replace_all_uses_with(graph.get_attr(attr))
        graph.erase_node(node)
    frozen.recompile()
    return frozen, [example_inputs[i] for i in keep], keep


def accel_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], *,
                  options: dict[str, Any] | None = None, mode: str | None = None
                  ) -> Callable[..., Any]:
    """Dynamo backend: compile `gm` for `example_inputs`; returns a callable on tensors.

    `options` come from `torch.compile(..., options=...)` (`accel.api.OPTIONS`; bad ones
    raise). `mode` (`torch.compile(mode=...)`) is accepted and ignored.
    """
    del mode
    accel_options, torch_options = split_torch_compile(options)
    opts = resolve_options(accel_options)
    if opts["aot"]:  # one library per dynamo graph would overwrite each other's files
        from accel.diagnostics import NotSupportedYet

        raise NotSupportedYet("option 'aot' is not supported by torch.compile(backend="
                              "\"accel\"), whose graphs are not one function (use "
                              "accel.compile)")
    name = f"graph_{_next_index(options)}"
    selected = _selector(torch_options)
    if _needs_grad(gm, example_inputs):
        return compile_training(gm, example_inputs, name=name, options=opts,
                                strict=opts["strict_target"], selected=selected,
                                report=_report)
    if not selected(name):
        return _fallback(gm, name, NOT_SELECTED)
    out_node = gm.graph.output_node()
    flat_out, out_spec = torch.utils._pytree.tree_flatten(out_node.args[0])
    if not flat_out or not all(isinstance(n, torch.fx.Node) for n in flat_out):
        return _fallback(gm, name, "the graph returns no tensors or returns constants")
    symbolic = None
    if is_symbolic(example_inputs):  # sizes that vary between calls: compiled once for all
        symbolic = plan(gm, example_inputs)
        if isinstance(symbolic, str):
            return _fallback(gm, name, symbolic)
        symbolic.call.__name__ = name
    elif any(concrete(x) is None for x in example_inputs):
        return _fallback(gm, name, "the graph takes non-tensor inputs")
    # With freeze_weights, the positions of the inputs that are not parameters (`gm` stays
    # what dynamo gave, for the eager fallbacks).
    kept, target, inputs = None, gm, example_inputs
    if symbolic is None and opts.get("freeze_weights", False):  # (a cpu option)
        target, inputs, kept = _freeze_parameters(gm, example_inputs)
    try:
        # Outside dynamo's tracing context: torch.export's guards on its own inputs must not
        # join the guards dynamo builds for the user's frame (with symbolic sizes they fail
        # there: "Guard failed on the same frame it was created").
        with torch._guards.tracing(None):
            if symbolic is None:
                compiled = accel_compile(target, tuple(concrete(x) for x in inputs),
                                         options=opts)
            else:
                compiled = accel_compile(symbolic.call, symbolic.tensors,
                                         options=opts,
                                         dynamic_shapes=symbolic.dynamic_shapes)
        if symbolic is not None:
            fixed = still_dynamic(compiled, symbolic)
            if fixed is not None:
                raise AccelError(f"accel backend: {name}: {fixed}")
    except AccelError as err:
        if opts["strict_target"]:
            raise
        return _fallback(gm, name, str(err))
    n_out = len(flat_out)
    # In-place updates of inputs (a StaticCache's index_copy_) come first among the compiled
    # results; the CompiledModule writes them back into the graph's inputs, as eager does.
    n_compiled = len(compiled.compiled.functions[compiled.func_name].results) - \
        len(compiled.mutations)
    if n_compiled != n_out:
        reason = f"{n_compiled} compiled outputs for {n_out} graph outputs"
        if opts["strict_target"]:
            raise AccelError(f"accel backend: {name}: {reason}")
        return _fallback(gm, name, reason)
    record = GraphRecord(name, "inference", True)
    _report(record)

    positions = symbolic.positions if symbolic is not None else kept

    def run(*args: Any) -> Any:
        record.calls += 1
        results = compiled(*args) if positions is None else \
            compiled(*[args[p] for p in positions])
        flat = list(results) if isinstance(results, tuple) else [results]
        if len(flat) != n_out:
            raise AccelError(f"accel backend: compiled graph returned {len(flat)} outputs, "
                             f"the FX graph {n_out}")
        return torch.utils._pytree.tree_unflatten(flat, out_spec)

    run.compiled = compiled  # type: ignore[attr-defined] - for inspection/tests
    return run


#: `torch._dynamo.reset()` calls the backend's `reset` (through torch.compile's wrapper).
accel_backend.reset = reset  # type: ignore[attr-defined]


def register() -> None:
    """Register `accel_backend` as "accel" unless torch has it already (idempotent).

    When torch has discovered the entry point but not loaded it, registration is left to
    torch (`lookup_backend` loads this function through the entry point).
    """
    from importlib.metadata import EntryPoint

    if BACKEND_NAME in _registry._COMPILER_FNS:
        return
    if isinstance(_registry._BACKENDS.get(BACKEND_NAME), EntryPoint):
        return
    _registry.register_backend(accel_backend, name=BACKEND_NAME)


register()
