"""The train-step cache: `compile_train_step` in a new process without tracing again.

A cold `compile_train_step` traces the joint graph, splits it, traces the optimizer update
and exports each phase graph; the phases' code comes from the compile cache, but those
traces alone took 15 s for a ResNet-18 step (issue 25). This cache keys the whole step on
what the traced graphs are made of, before tracing:

- the model, through `accel.frontend.model_key` (code, submodule attributes, each
  parameter's and buffer's dtype, shape, strides and `requires_grad`, not its values:
  every phase graph takes them as inputs), with the example batch's dtypes and shapes;
- the loss function: its code, defaults, closure and the globals it reads, walked the same
  way (a model it captures is hashed with its values: such a step misses after a resume);
- the optimizer: its class, every param-group setting with its parameters by name, the
  state it already holds;
- the train settings and the code-changing options of the phase compiles;
- torch's default dtype and CPU autocast state (the trace reads them).

The entry names each phase's inputs and outputs and its front-cache entry
(`accel.front_cache`), whose stored code the target links again. Anything unreadable,
missing or not describable (a phase with constants of its own, a model the fingerprint
cannot describe) is a miss: the full path runs, never worse than no cache.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from accel import cache

#: The phases of an entry, in order (checked on read: a damaged entry is a miss).
_PHASES = ("forward", "backward", "optimizer")


def step_key(model: Any, loss_fn: Callable[..., Any], optimizer: Any,
             micro_batch: tuple[Any, ...], settings: Mapping[str, Any],
             phase_options: Mapping[str, Any]) -> str | None:
    """The cache key of a train step, or None when something cannot be described."""
    from accel.frontend.model_key import function_fingerprint, model_fingerprint
    from accel.options import code_options

    # Parameters and buffers are inputs of every phase graph: their values are not part of
    # the key (a run resumed from a checkpoint hits).
    fingerprint = model_fingerprint(model, tuple(micro_batch), "train-step",
                                    state_values=False)
    loss = function_fingerprint(loss_fn)
    if fingerprint is None or loss is None:
        return None
    names = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)}
    try:
        groups = [{"params": [names[id(p)] for p in group["params"]],
                   **{k: repr(v) for k, v in sorted(group.items()) if k != "params"}}
                  for group in optimizer.param_groups]
        state = sorted((names[id(p)], sorted(map(str, s))) for p, s in optimizer.state.items())
    except KeyError:  # the optimizer holds a tensor that is not the model's
        return None
    import torch

    # Global torch state the trace reads: tensors made without a dtype, autocast regions.
    context = [str(torch.get_default_dtype()), torch.is_autocast_enabled("cpu"),
               str(torch.get_autocast_dtype("cpu"))]
    material = json.dumps({"model": fingerprint, "loss": loss, "context": context,
                           "optimizer": type(optimizer).__qualname__,
                           "groups": groups, "state": state,
                           "settings": {k: repr(v) for k, v in sorted(settings.items())}},
                          sort_keys=True)
    options = {"target": phase_options["target"], **code_options(phase_options)}
    return cache.front_key("train-step:" + material, options)


def lookup(key: str) -> dict[str, Any] | None:
    """The entry of `key` when it is complete, else None."""
    entry = cache.lookup_step(key)
    if entry is None:
        return None
    phases, trained = entry["phases"], entry["trained"]
    if not (_strings(trained) and len(phases) == len(_PHASES) and all(
            isinstance(p, dict) and p.get("name") == name and isinstance(p.get("front"), str)
            and _strings(p.get("inputs")) and _strings(p.get("outputs"))
            for p, name in zip(phases, _PHASES, strict=True))):
        return None
    return entry


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def load_phase(phase: Mapping[str, Any], target: Any, options: Any) -> Any:
    """The `CompiledModule` of one phase of an entry, or None (its code is gone)."""
    from accel.compiled_module import CompiledModule
    from accel.diagnostics import AccelError

    front = cache.lookup_front(phase["front"])
    if front is None or front.get("weights") or front.get("mutations"):
        return None
    try:
        compiled = target.from_cache(front["mlir_key"], options, {})
    except (AccelError, NotImplementedError, KeyError, TypeError, ValueError):
        return None
    if compiled is None:
        return None
    module = CompiledModule(None, compiled, None, "main", options)
    module.set_module_text(front.get("mlir"))
    return module


def store(key: str, graphs: Any, compiled: Mapping[str, Any], trained: list[str]) -> None:
    """Record a compiled step, when every phase has a front entry without constants."""
    phases = []
    for graph in graphs.graphs:
        front = getattr(compiled[graph.name], "front_key", None)
        entry = cache.lookup_front(front) if front is not None else None
        if entry is None or entry["weights"] or entry["mutations"]:
            return
        phases.append({"name": graph.name, "front": front, "inputs": list(graph.inputs),
                       "outputs": list(graph.outputs)})
    cache.store_step(key, {"phases": phases, "trained": list(trained)})
