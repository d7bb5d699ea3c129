"""`Context.compile`: tracing an MLSDK-style function (dict in, dict out) for the device.

The modules and optimizers the function names are replaced by their device copies
(`context.device_copy`: registered tensors share their proxies' memory), then:

- an inference function is wrapped in a module holding those copies (so their tensors are
  the program's weights, read from the proxies' memory at every call) and compiled with
  `accel.compile` for the mncore target;
- a function that calls `.backward()` and names an optimizer is a train step: its loss is
  what `.backward()` was called on (`Tensor.backward` is intercepted while tracing, so the
  update after it is not traced but compiled by `accel.compile_train_step` from the
  optimizer, as eager would run it), and it must return only that loss.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from accel.targets.mncore.context import (
    MLSDK_JSON,
    CacheOptions,
    CompiledFunction,
    _caller,
    _error,
    device_copy,
    rebind,
    referenced,
    registered_of,
)
from accel.targets.mncore.context import Context as _DeviceContext


class Context(_DeviceContext):
    """MLSDK's `Context`: the device state of `accel.targets.mncore.context.Context`
    (registered values, proxies, `load_codegen_dir`) plus `compile`, which traces here
    (kept apart so the device model does not import the tracer)."""

    def compile(self, function: Any, inputs: Mapping[str, Any], codegen_dir: Any = None, *,
                options: Mapping[str, Any] | None = None,
                cache_options: CacheOptions | None = None) -> CompiledFunction:
        """Compile `function` (dict of tensors -> dict of tensors) for the device."""
        if not callable(function):
            raise _error(f"compile takes a function, got {type(function).__name__}")
        if not isinstance(inputs, Mapping) or not inputs:
            raise _error("compile takes the sample inputs as a dict {name: tensor}")
        cache = cache_options or self.cache_options
        opts = {"target": "mncore", **dict(options or {})}
        if cache is not None:
            opts["node_simulation_cache"] = cache.path
        return compile_function(self, function, dict(inputs),
                                str(codegen_dir) if codegen_dir is not None else None, opts)



class _Backward(Exception):
    """Raised by the intercepted `Tensor.backward`: carries the loss."""

    def __init__(self, loss: Any):
        super().__init__("backward")
        self.loss = loss


@contextlib.contextmanager
def _intercept_backward() -> Iterator[None]:
    import torch

    original = torch.Tensor.backward

    def backward(self: Any, *args: Any, **kwargs: Any) -> None:
        raise _Backward(self)

    torch.Tensor.backward = backward  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.backward = original  # type: ignore[method-assign]


def _is_training(function: Any, optimizers: list[Any]) -> bool:
    code = getattr(function, "__code__", None)
    names = set(code.co_names) if code is not None else set()
    return bool(optimizers) and "backward" in names


def compile_function(context: Context, function: Any, inputs: dict[str, Any],
                     codegen_dir: str | None, opts: dict[str, Any]) -> CompiledFunction:
    import torch

    for name, value in inputs.items():
        if not isinstance(value, torch.Tensor):
            raise _error(f"sample input '{name}' must be a torch.Tensor, got "
                         f"{type(value).__name__}")
    named = referenced(function)
    modules = [v for v in named.values() if isinstance(v, torch.nn.Module)]
    optimizers = [v for v in named.values() if isinstance(v, torch.optim.Optimizer)]
    clones = {id(m): device_copy(context, m) for m in modules}
    registered = registered_of(context, modules)
    fname = getattr(function, "__name__", "function")
    if _is_training(function, optimizers):
        return _train_step(context, function, inputs, modules, optimizers, clones, registered,
                           codegen_dir, opts, fname)
    device_fn = rebind(function, clones)
    with torch.no_grad():
        sample_out = device_fn(dict(inputs))
    outputs = _output_names(sample_out, fname)
    names = list(inputs)
    wrapper = _Wrapper(device_fn, list(clones.values()), names, outputs)
    import accel

    compiled = accel.compile(wrapper, tuple(inputs.values()),
                             options={**opts, "codegen_dir": codegen_dir})
    device_us = float(compiled.compiled.estimated_us)
    if codegen_dir:
        _write_meta(codegen_dir, fname, "inference", names, outputs, inputs, device_us)
    return CompiledFunction(context, fname, _caller(compiled), names, outputs, registered,
                            device_us, codegen_dir, compiled, dict(inputs))


def _output_names(result: Any, fname: str) -> list[str]:
    import torch

    if not isinstance(result, Mapping) or not result or \
            not all(isinstance(v, torch.Tensor) for v in result.values()):
        raise _error(f"{fname} must return a dict {{name: tensor}}, got "
                     f"{type(result).__name__}")
    return list(result)


class _Wrapper:
    """A module running `fn` on positional tensors (dict in, tuple out); the device copies
    are its submodules so their tensors are the program's weights."""

    def __new__(cls, fn: Any, modules: list[Any], names: list[str], outputs: list[str]) -> Any:
        import torch

        class MlsdkFunction(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.device_modules = torch.nn.ModuleList(modules)

            def forward(self, *xs: Any) -> tuple[Any, ...]:
                out = fn(dict(zip(names, xs, strict=True)))
                return tuple(out[k] for k in outputs)

        wrapper = MlsdkFunction()
        wrapper.training = all(m.training for m in modules) if modules else False
        return wrapper


def _train_step(context: Context, function: Any, inputs: dict[str, Any], modules: list[Any],
                optimizers: list[Any], clones: dict[int, Any], registered: list[Any],
                codegen_dir: str | None, opts: dict[str, Any], fname: str) -> CompiledFunction:
    import torch

    import accel

    if len(optimizers) != 1:
        raise _error(f"{fname}: a training function uses one optimizer, it names "
                     f"{len(optimizers)}")
    optimizer = optimizers[0]
    params = {id(p) for g in optimizer.param_groups for p in g["params"]}
    missing = [p for p in params if p not in context._registry]
    if missing:
        raise _error(f"{fname}: the optimizer trains {len(missing)} parameter(s) that are not "
                     "registered (Context.register_param): they would not stay on the device")
    outputs = _probe_outputs(function, inputs, modules, optimizer, fname)
    # The device optimizer: the same hyper-parameters and state over the device copies.
    by_host = {id(p): q for m in modules
               for p, q in zip(m.parameters(), clones[id(m)].parameters(), strict=True)}
    groups = [{**{k: v for k, v in g.items() if k != "params"},
               "params": [by_host[id(p)] for p in g["params"]]} for g in optimizer.param_groups]
    device_opt = type(optimizer)(groups, **optimizer.defaults)
    device_opt.load_state_dict(optimizer.state_dict())
    subst = {**clones, id(optimizer): device_opt}
    device_fn = rebind(function, subst)
    names = list(inputs)

    def loss_fn(model: Any, *batch: Any) -> Any:
        with _intercept_backward():
            try:
                device_fn(dict(zip(names, batch, strict=True)))
            except _Backward as found:
                return found.loss
        raise _error(f"{fname} did not call .backward()")

    holder = torch.nn.ModuleList(list(clones.values()))
    holder.training = all(m.training for m in clones.values())
    opts = {k: v for k, v in opts.items() if k != "codegen_dir"}  # three programs: one dir
    step = accel.compile_train_step(holder, loss_fn, device_opt, tuple(inputs.values()),
                                    options=opts)
    device_us = sum(float(step.compiled[p].compiled.estimated_us) for p in step.compiled)

    def run(values: list[Any]) -> tuple[Any, ...]:
        loss = step(*values)
        return tuple(loss for _ in outputs)

    if codegen_dir:
        Path(codegen_dir).mkdir(parents=True, exist_ok=True)
        _write_meta(codegen_dir, fname, "train_step", names, outputs, inputs, device_us)
    return CompiledFunction(context, fname, run, names, outputs, registered, device_us,
                            codegen_dir, step, dict(inputs))


def _probe_outputs(function: Any, inputs: dict[str, Any], modules: list[Any],
                   optimizer: Any, fname: str) -> list[str]:
    """Run the function once on throw-away copies of its modules and optimizer: its outputs
    must all be the loss `.backward()` was called on."""
    import torch

    copies = {id(m): copy.deepcopy(m) for m in modules}
    by_host = {id(p): q for m in modules
               for p, q in zip(m.parameters(), copies[id(m)].parameters(), strict=True)}
    groups = [{**{k: v for k, v in g.items() if k != "params"},
               "params": [by_host[id(p)] for p in g["params"]]} for g in optimizer.param_groups]
    probe_opt = type(optimizer)(groups, **optimizer.defaults)
    probe_opt.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    probe = rebind(function, {**copies, id(optimizer): probe_opt})
    seen: list[Any] = []
    original = torch.Tensor.backward

    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(self)
        return original(self, *args, **kwargs)

    torch.Tensor.backward = backward  # type: ignore[method-assign]
    try:
        result = probe({k: v.clone() for k, v in inputs.items()})
    finally:
        torch.Tensor.backward = original  # type: ignore[method-assign]
    names = _output_names(result, fname)
    loss = seen[0] if seen else None
    for k in names:
        v = result[k]
        if loss is None or not (v is loss or (v.shape == loss.shape and
                                              v.data_ptr() == loss.data_ptr())):
            raise _error(f"{fname}: a training function returns only its loss (the tensor "
                         f".backward() was called on); output '{k}' is another tensor")
    return names


def _write_meta(folder: str, name: str, kind: str, inputs: list[str], outputs: list[str],
                samples: Mapping[str, Any], device_us: float) -> None:
    from accel.cache import atomic_write

    doc = {"name": name, "kind": kind, "inputs": inputs, "outputs": outputs,
           "shapes": [list(samples[n].shape) for n in inputs],
           "dtypes": [str(samples[n].dtype).replace("torch.", "") for n in inputs],
           "device_us": device_us}
    try:
        atomic_write(Path(folder) / MLSDK_JSON, (json.dumps(doc, indent=1) + "\n").encode())
    except OSError as err:
        raise _error(f"cannot write {folder}: {err.strerror}") from None
