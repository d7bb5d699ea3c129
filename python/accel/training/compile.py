"""`accel.compile_train_step(model, loss_fn, optimizer, example_batch, options=None)`.

    step = accel.compile_train_step(model, loss_fn, optimizer, (x, y),
                                    options={"clip_grad_norm": 1.0})
    for x, y in data:
        loss = step(x, y)        # forward, backward, optimizer update: compiled code

Steps: trace the joint forward+backward graph (`accel.training.graphs.trace_joint`, fake
tensors: nothing runs), split it into the forward and backward phase graphs
(`partition`), trace the optimizer's functional update (`accel.training.optimizers`) as the
third, and compile each with `accel.compile` like any model (parameters are inputs here,
not weights). The result is a `TrainStep` (`accel.training.step`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from accel import cache, interrupts, phases
from accel.api import compile_phase_graph, resolve_options
from accel.cache_lock import compiling
from accel.diagnostics import AccelError
from accel.options import OPTIONS
from accel.training import optimizers, step_cache
from accel.training.graphs import PhaseGraph, TrainGraphs, partition, trace_joint
from accel.training.step import TrainStep

if TYPE_CHECKING:
    from accel.settings import Settings

#: The options of compiled training (scope "train"); the rest apply to each phase graph.
TRAIN_OPTIONS = tuple(n for n, o in OPTIONS.items() if o.scope == "train")


def split_options(options: Mapping[str, Any] | None) -> tuple[dict[str, Any], Settings]:
    """(the train settings; the settings each phase graph compiles with: the same, resolved
    once here, with the train options at their defaults)."""
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
    resolved = resolve_options(options)
    if resolved.get("aot"):  # as accel-compile says for a train step (docs/matrix.md)
        from accel.diagnostics import NotSupportedYet

        raise NotSupportedYet("option 'aot' builds a C library of an inference function; a "
                              "train step is not a C library yet (use accel.compile)")
    train = {k: resolved[k] for k in TRAIN_OPTIONS}
    return train, resolved.replace(**{k: OPTIONS[k].default for k in TRAIN_OPTIONS})


def compile_train_step(model: Any, loss_fn: Callable[..., Any], optimizer: Any,
                       example_batch: tuple[Any, ...], options: Mapping[str, Any] | None = None
                       ) -> TrainStep:
    """Compile one training step of `model` (see the module docstring, docs/training.md).

    `loss_fn(model, *batch)` returns the scalar loss; `optimizer` is a `torch.optim.SGD`,
    `Adam` or `AdamW` over the model's parameters; `example_batch` a tuple of tensors with
    the shapes and dtypes of every batch (the whole batch: with `grad_accumulation_steps=k`
    each call splits it along dimension 0 into k micro-batches; with `data_parallel`, the
    batch of one process). The model is traced in its
    current mode (train/eval). Raises `TypeError` for wrong argument types and `AccelError`
    for what accel cannot compile: another optimizer, data-dependent control flow, random
    ops without a compiled generator (dropout has one: `accel.training.rng`), a loss that
    is not a scalar.
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable as loss_fn(model, *batch), got "
                        f"{type(loss_fn).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got "
                        f"{type(optimizer).__name__}")
    if not isinstance(example_batch, tuple | list) or not all(
            isinstance(t, torch.Tensor) for t in example_batch):
        raise TypeError("example_batch must be a tuple of tensors")
    optimizers._kind(optimizer)  # an unsupported optimizer fails before any tracing
    settings, phase_options = split_options(options)
    micro = _micro_batch(tuple(example_batch), settings["grad_accumulation_steps"])
    named = dict(model.named_parameters(remove_duplicate=False))
    # The train-step cache: a step compiled before (this process or another) is linked
    # again from its phases' stored code, without tracing (accel.training.step_cache).
    # Not while a recording wants each phase's IR (accel-compile's ir/ folder).
    rec = phases.current()
    use_cache = phase_options["cache"] and (rec is None or not rec.keep_ir)
    with phases.phase("step-cache"):
        step_key = step_cache.step_key(model, loss_fn, optimizer, micro, settings,
                                       phase_options) if use_cache else None
        entry = step_cache.lookup(step_key) if step_key is not None else None
        cached = _linked(entry, named, phase_options) if entry is not None else None
    # Another process compiling this step (a data-parallel rank): wait, then link its code.
    lock = contextlib.ExitStack()
    if step_key is not None and cached is None and \
            lock.enter_context(compiling(f"step-{step_key}")):
        with phases.phase("step-cache"):
            entry = step_cache.lookup(step_key)
            cached = _linked(entry, named, phase_options) if entry is not None else None
    with lock:
        if step_key is not None:
            cache.STATS["step_hit" if cached is not None else "step_miss"] += 1
        if cached is not None:
            graphs, compiled, trained_names = cached
        else:
            # Ctrl-C while tracing: raised at a safe place, not inside torch (accel.interrupts).
            with phases.phase("trace"), interrupts.guarded():
                from torch._decomp import core_aten_decompositions

                # torch's core ATen set (what AOTAutograd uses); accel.compile then applies
                # torch-mlir's and accel's own table to each phase graph. torch-mlir's table
                # here leaves prims ops (prims.squeeze) that the re-export cannot functionalise.
                joint = trace_joint(model, loss_fn, micro, core_aten_decompositions())
                forward, backward = partition(joint)
            trained_names = list(joint.trained)
        trained = [(name, named[name]) for name in trained_names]
        spec = optimizers.describe(optimizer, trained)
        clip = settings["clip_grad_norm"] is not None
        scaled = settings["grad_accumulation_steps"] > 1 or settings["data_parallel"]
        if settings["data_parallel"]:  # the group may come later (accel-compile has none)
            from accel.training.distributed import check_group

            check_group(settings["world_size"])
        params = [named[n] for n in spec.names]

        def optimizer_graph(spec: optimizers.OptimizerSpec) -> PhaseGraph:
            return trace_update(spec, params, grad_scale=scaled, clip=clip)

        def build(graph: PhaseGraph) -> Any:
            key = _memo_key(graph, phase_options)
            if key is not None and key in _MEMO:
                return _MEMO[key]
            with phases.prefixed(graph.name):
                compiled = compile_phase_graph(graph.module, graph.example_inputs, phase_options,
                                               graph.name, graph.outputs)
            if key is not None:
                while len(_MEMO) >= _MEMO_SIZE:
                    _MEMO.pop(next(iter(_MEMO)))
                _MEMO[key] = compiled
            return compiled

        def recompile(spec: optimizers.OptimizerSpec) -> tuple[PhaseGraph, Any]:
            graph = optimizer_graph(spec)
            return graph, build(graph)

        if cached is None:
            graphs = TrainGraphs([forward, backward, optimizer_graph(spec)])
            compiled = {g.name: build(g) for g in graphs.graphs}
            if step_key is not None:
                step_cache.store(step_key, graphs, compiled, trained_names)
    return TrainStep(params=list(named.items()), buffers=list(model.named_buffers()),
                     optimizer=optimizer, graphs=graphs, compiled=compiled, spec=spec,
                     settings=settings, recompile=recompile, model=model)


def _linked(entry: dict[str, Any], named: dict[str, Any], phase_options: Settings
            ) -> tuple[TrainGraphs, dict[str, Any], list[str]] | None:
    """(graphs, compiled phases, trained parameter names) of a train-step cache entry, or
    None when its code is gone or it names parameters the model does not have."""
    from accel import targets
    from accel.api import phase_settings

    if not all(name in named for name in entry["trained"]):
        return None
    graphs, compiled = [], {}
    target = targets.get(phase_options["target"])
    for phase in entry["phases"]:
        outputs = tuple(phase["outputs"])
        module = step_cache.load_phase(
            phase, target, phase_settings(phase_options, phase["name"], outputs))
        if module is None:
            return None
        graphs.append(PhaseGraph(phase["name"], None, tuple(phase["inputs"]), outputs))
        compiled[phase["name"]] = module
    return TrainGraphs(graphs), compiled, list(entry["trained"])


#: Phase graphs compiled in this process, by `_memo_key` (oldest first; at most _MEMO_SIZE).
_MEMO: dict[str, Any] = {}
_MEMO_SIZE = 64


def _memo_key(graph: PhaseGraph, options: Mapping[str, Any]) -> str | None:
    """A key naming `graph`'s compilation, or None (no reuse) with the cache off.

    A phase graph reads everything through its inputs, so its code, its tensor constants and
    its inputs' shapes and dtypes determine the compiled code: a second step of the same
    model (another optimizer, another instance) reuses the first's compiled forward and
    backward in this process without exporting them again (the compile cache's own model
    key does not see through GraphModules: their code is generated per instance)."""
    import hashlib
    import json

    import torch

    if not options.get("cache", True) or options.get("verify_numerics"):
        return None
    gm = graph.module
    digest = hashlib.sha256(gm.code.encode())
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        value = gm
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            return None
        digest.update(f"{node.target} {value.dtype} {tuple(value.shape)}".encode())
        digest.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
                      .numpy().tobytes())
    for x in graph.example_inputs:
        digest.update(f"{x.dtype} {tuple(x.shape)} {x.stride()}".encode())
    digest.update(json.dumps([graph.name, graph.outputs, dict(options)], sort_keys=True,
                             default=repr).encode())
    return digest.hexdigest()


def _micro_batch(batch: tuple[Any, ...], steps: int) -> tuple[Any, ...]:
    """The first of `steps` micro-batches (the shapes each forward/backward runs at)."""
    if steps == 1:
        return batch
    for i, t in enumerate(batch):
        if t.dim() == 0 or t.shape[0] % steps:
            raise AccelError(f"example_batch[{i}] of shape {tuple(t.shape)}: dimension 0 "
                             f"must split into grad_accumulation_steps={steps} equal parts")
    return tuple(t.chunk(steps)[0] for t in batch)


def trace_update(spec: optimizers.OptimizerSpec, params: list[Any], *, grad_scale: bool,
                 clip: bool) -> PhaseGraph:
    """The optimizer phase graph of `spec` (make_fx of `optimizers.update_function`)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    fn = optimizers.update_function(spec, grad_scale=grad_scale, clip=clip)
    n = len(params)
    state = [torch.zeros_like(p) for i, p in enumerate(params)
             for _ in spec.state_keys(i)]
    hypers = [torch.zeros(n) for _ in spec.hyper_names()]
    extra = [torch.ones(())] * (int(grad_scale) + int(clip))
    examples = tuple(p.detach().clone() for p in params) + tuple(
        torch.zeros_like(p) for p in params) + tuple(state) + tuple(hypers) + tuple(extra)
    gm = make_fx(fn, tracing_mode="fake")(*examples)
    names = [f"param:{x}" for x in spec.names] + [f"grad:{x}" for x in spec.names]
    names += [f"state:{i}:{k}" for i in range(n) for k in spec.state_keys(i)]
    names += [f"hyper:{h}" for h in spec.hyper_names()]
    names += (["hyper:grad_scale"] if grad_scale else []) + (["hyper:max_norm"] if clip
                                                              else [])
    outputs = [f"param:{x}" for x in spec.names]
    outputs += [f"state:{i}:{k}" for i in range(n) for k in spec.state_keys(i)]
    outputs += ["grad_norm"] if clip else []
    examples = tuple(torch.zeros_like(e) for e in examples)
    return PhaseGraph("optimizer", gm, tuple(names), tuple(outputs), examples)
