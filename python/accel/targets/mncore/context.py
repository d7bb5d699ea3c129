"""MLSDK's device and context API on the emulated MN-Core (`accel.mlsdk`).

The names and semantics follow the reference (mncore2-mlsdk-advanced-features.txt, 4.1 and
4.5):

    device = mlsdk.MNDevice("auto")             # or a Device Index, as gpfn3-smi lists
    context = mlsdk.Context(device)
    context.register_param(model.parameters())  # parameters live on the device
    compiled = context.compile(step, {"x": x, "t": t}, mlsdk.storage.path("/tmp/step"),
                               options={"option_json": "O1"})  # or MLSDK's O1.json path
    proxies = compiled.allocate_input_proxy()   # {"x": TensorProxy, "t": TensorProxy}
    proxies["x"].load_from(x, clone=True)       # H2D starts now, asynchronously
    out = compiled(proxies)                     # {"loss": TensorProxy}
    out["loss"].cpu()                           # D2H, synchronous: a torch.Tensor

- `MNDevice(index | "auto")`: an emulated board (`accel-smi list`); "mncore2:auto" and
  "mncore2:<index>" are accepted too.
- `Context.register_param` / `register_buffer` (a tensor, an iterable of them or a module):
  each gets a `TensorProxy` with device DRAM of its own; the first call that uses it
  transfers it (implicit H2D), later calls find it there, and a training function's updates
  stay there: the host tensor is unchanged until `get_registered_value_proxy(t).cpu()`
  brings the value back (explicit D2H), or `load_from` sends a new one.
- `Context.compile(function, inputs, codegen_dir=None, options=..., cache_options=...)`:
  `function` takes and returns a dict of tensors. It is traced with the modules and
  optimizers it names (globals and closure, also through the plain functions it calls)
  replaced by their device copies, whose registered tensors are the proxies' memory. A
  function that calls `.backward()` and has an optimizer is compiled as a train step
  (`accel.compile_train_step`: forward, backward, optimizer update) and must return only
  its loss; any other function is compiled with `accel.compile`. Options are the mncore
  target's (`option_json`, `float_dtype`, ...), `cache_options` (`CacheOptions(path)`)
  keeps node simulations for later compiles.
- `CompiledFunction(inputs)`: inputs are tensors (implicit, synchronous H2D) or proxies;
  results are proxies. `allocate_input_proxy()` gives one proxy per input.
- `TensorProxy.load_from(tensor, clone=True)`: clone copies the tensor now; clone=False
  keeps a reference (modifying the tensor afterwards is the caller's risk, as MLSDK says).

The numerics run on the host when called (the emulation); the timing is modelled by a
`timeline.Timeline`: transfers overlap compute when inputs are loaded ahead, which
`CompiledFunction.estimated_step_us` and `profile.json` (pid 1, the runtime) show.
"""

from __future__ import annotations

import copy
import inspect
import json
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from accel.diagnostics import AccelError
from accel.targets.mncore.timeline import Timeline

_PREFIX = "mlsdk: "


def _error(message: str) -> AccelError:
    return AccelError(_PREFIX + message)


class _Storage:
    """`mlsdk.storage.path(p)`: where a codegen_dir goes (a local path here)."""

    @staticmethod
    def path(p: str | Path) -> str:
        return str(p)


storage = _Storage()


class MNDevice:
    """An MN-Core board by Device Index (`accel-smi list`) or "auto" (the first free)."""

    def __init__(self, device: int | str = "auto"):
        from accel.targets.mncore.arch import EMULATED_DEVICES

        spec = device
        if isinstance(spec, str) and spec.startswith("mncore2:"):
            spec = spec.split(":", 1)[1]
        if isinstance(spec, str) and spec.isdigit():
            spec = int(spec)
        if spec == "auto":
            index = 0
        elif isinstance(spec, int) and not isinstance(spec, bool) and \
                0 <= spec < len(EMULATED_DEVICES):
            index = spec
        else:
            listing = ", ".join(f"{i}: {n}" for i, n in enumerate(EMULATED_DEVICES))
            raise _error(f"no MN-Core device {device!r}: give a Device Index or 'auto' "
                         f"(devices: {listing})")
        self.index = index
        self.name = EMULATED_DEVICES[index]

    def __repr__(self) -> str:
        return f"MNDevice({self.index}: {self.name}, emulated)"


class CacheOptions:
    """Where node simulations are kept and reused across compiles."""

    def __init__(self, path: str | Path):
        self.path = str(path)


class TensorProxy:
    """A device-side tensor: a compiled function's input or output, or a registered one."""

    def __init__(self, context: Context, name: str, value: Any, *, on_device: bool,
                 host: Any = None):
        self._context = context
        self.name = name
        self._value = value          # the device memory (a torch tensor)
        self._host = host            # registered: the host tensor it mirrors
        self._on_device = on_device  # False until the first H2D
        self._ready_us = 0.0         # when the device value is complete
        self._busy_us = 0.0          # until when an enqueued call reads it

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._value.shape)

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    def __repr__(self) -> str:
        return f"TensorProxy({self.name}, shape={list(self.shape)}, dtype={self.dtype})"

    def _bytes(self) -> int:
        return self._value.numel() * self._value.element_size()

    def load_from(self, tensor: Any, clone: bool = True) -> None:
        """Start an H2D of `tensor` (same shape and dtype) into this proxy; returns at once."""
        import torch

        if not isinstance(tensor, torch.Tensor):
            raise _error(f"TensorProxy.load_from({self.name}) takes a torch.Tensor, got "
                         f"{type(tensor).__name__}")
        if tuple(tensor.shape) != self.shape or tensor.dtype != self.dtype:
            raise _error(f"TensorProxy {self.name} is {list(self.shape)} {self.dtype}, got a "
                         f"tensor {list(tensor.shape)} {tensor.dtype}")
        data = tensor.detach()
        if self._host is not None or clone:  # registered memory is the device's own: copy
            with torch.no_grad():
                self._value.copy_(data)
        else:
            self._value = data  # a reference, as clone=False asks
        self._ready_us = self._context.timeline.h2d(f"H2D {self.name}", [self._bytes()],
                                                     not_before_us=self._busy_us)
        self._on_device = True

    def cpu(self) -> Any:
        """D2H, synchronous: the value as a new host tensor (the proxy keeps its own)."""
        self._context.timeline.d2h(f"D2H {self.name}", [self._bytes()], self._ready_us)
        return self._value.detach().clone()

    def _ensure_on_device(self, sizes: list[int]) -> None:
        """The implicit H2D of a registered tensor at its first use (batched by the call)."""
        import torch

        if not self._on_device and self._host is not None:
            with torch.no_grad():
                self._value.copy_(self._host.detach())
            sizes.append(self._bytes())
            self._on_device = True


class CompiledFunction:
    """A compiled function of a Context: call it with a dict of tensors or proxies."""

    def __init__(self, context: Context, name: str, run: Any, inputs: list[str],
                 outputs: list[str], registered: list[TensorProxy], device_us: float,
                 codegen_dir: str | None, compiled: Any, samples: dict[str, Any]):
        self._context = context
        self.name = name
        self._run = run
        self.input_names = inputs
        self.output_names = outputs
        self._registered = registered
        #: The cost model's device time of one call (microseconds).
        self.device_us = device_us
        self.codegen_dir = codegen_dir
        #: The accel object doing the work (a CompiledModule, or a TrainStep).
        self.compiled = compiled
        self._samples = samples

    def allocate_input_proxy(self) -> dict[str, TensorProxy]:
        """A proxy per input, with device DRAM for it; fill them with `load_from`."""
        import torch

        return {n: TensorProxy(self._context, n, torch.empty_like(self._samples[n]),
                               on_device=False) for n in self.input_names}

    @property
    def estimated_step_us(self) -> float | None:
        """The modelled time between successive calls' ends, transfers included."""
        return self._context.timeline.step_us()

    def __call__(self, inputs: Mapping[str, Any]) -> dict[str, TensorProxy]:
        import torch

        if not isinstance(inputs, Mapping) or set(inputs) != set(self.input_names):
            got = sorted(inputs) if isinstance(inputs, Mapping) else type(inputs).__name__
            raise _error(f"{self.name} takes a dict with keys {self.input_names}, got {got}")
        timeline = self._context.timeline
        implicit: list[int] = []
        ready, values, proxies = 0.0, [], []
        for n in self.input_names:
            v = inputs[n]
            if isinstance(v, TensorProxy):
                if not v._on_device:
                    raise _error(f"input '{n}': its proxy was allocated but never loaded "
                                 "(TensorProxy.load_from)")
                ready = max(ready, v._ready_us)
                values.append(v._value)
                proxies.append(v)
            elif isinstance(v, torch.Tensor):
                if tuple(v.shape) != tuple(self._samples[n].shape) or \
                        v.dtype != self._samples[n].dtype:
                    raise _error(f"input '{n}' must be {list(self._samples[n].shape)} "
                                 f"{self._samples[n].dtype}, got {list(v.shape)} {v.dtype}")
                implicit.append(v.numel() * v.element_size())
                values.append(v.detach())
            else:
                raise _error(f"input '{n}' must be a torch.Tensor or a TensorProxy, got "
                             f"{type(v).__name__}")
        for proxy in self._registered:
            proxy._ensure_on_device(implicit)
            ready = max(ready, proxy._ready_us)
        if implicit:  # implicit H2D: the host waits for it (synchronous)
            done = timeline.h2d(f"H2D {self.name} (implicit)", implicit)
            timeline.host_us = done
            ready = max(ready, done)
        end = timeline.compute(self.name, ready, self.device_us)
        with torch.no_grad():
            results = self._run(values)
        for p in proxies:
            p._busy_us = max(p._busy_us, end)
        for p in self._registered:  # a train step writes them: complete at its end
            p._ready_us = max(p._ready_us, end)
            p._busy_us = max(p._busy_us, end)
        outputs = {}
        for n, value in zip(self.output_names, results, strict=True):
            proxy = TensorProxy(self._context, f"{self.name}.{n}", value, on_device=True)
            proxy._ready_us = end
            outputs[n] = proxy
        self._context._write_profile(self)
        return outputs


class Context:
    """The registry of device tensors and the compiler's entry (MLSDK's mlsdk.Context)."""

    def __init__(self, device: MNDevice | None = None,
                 cache_options: CacheOptions | None = None):
        self.device = device or MNDevice("auto")
        self.cache_options = cache_options
        self.timeline = Timeline()
        self._registry: dict[int, TensorProxy] = {}
        self._clones: dict[int, Any] = {}

    # -- the registry ---------------------------------------------------------------------
    def _register(self, what: Any, kind: str) -> None:
        import torch

        if isinstance(what, torch.nn.Module):
            what = what.parameters() if kind == "param" else what.buffers()
        items = [what] if isinstance(what, torch.Tensor) else list(what)
        for t in items:
            if not isinstance(t, torch.Tensor):
                raise _error(f"register_{kind} takes tensors, an iterable of tensors or a "
                             f"module, got {type(t).__name__}")
            if id(t) not in self._registry:
                name = f"{kind}{len(self._registry)}"
                self._registry[id(t)] = TensorProxy(self, name, t.detach().clone(),
                                                    on_device=False, host=t)

    def register_param(self, params: Any) -> None:
        """Give each parameter device memory of its own (see the module docstring)."""
        self._register(params, "param")

    def register_buffer(self, buffers: Any) -> None:
        self._register(buffers, "buffer")

    def get_registered_value_proxy(self, tensor: Any) -> TensorProxy:
        """The proxy of a tensor given to register_param/register_buffer (no new memory)."""
        proxy = self._registry.get(id(tensor))
        if proxy is None:
            raise _error("get_registered_value_proxy: this tensor was not registered "
                         "(Context.register_param / register_buffer)")
        return proxy

    # -- compiling ------------------------------------------------------------------------
    def load_codegen_dir(self, path: Any) -> CompiledFunction:
        """A function compiled earlier into `path`, without tracing it again."""
        import accel

        meta_file = Path(str(path)) / MLSDK_JSON
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise _error(f"load_codegen_dir: {path} has no readable {MLSDK_JSON} (it was "
                         "not written by Context.compile)") from None
        if meta.get("kind") != "inference":
            raise _error(f"load_codegen_dir: {path} holds a {meta.get('kind')} function; "
                         "only inference functions reload without tracing")
        module = accel.load_codegen_dir(path)
        import torch

        samples = {n: torch.empty(s, dtype=getattr(torch, d))
                   for n, s, d in zip(meta["inputs"], meta["shapes"], meta["dtypes"],
                                      strict=True)}
        return CompiledFunction(self, meta["name"], _caller(module), meta["inputs"],
                                meta["outputs"], [], float(meta["device_us"]), str(path),
                                module, samples)

    def _write_profile(self, fn: CompiledFunction) -> None:
        """codegen_dir/profile.json: the compiler's modelled layer timeline (pid 0) and this
        context's runtime timeline (pid 1: H2D, compute, D2H)."""
        if not fn.codegen_dir:
            return
        from accel.cache import atomic_write

        path = Path(fn.codegen_dir) / "profile.json"
        try:
            base = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, ValueError):
            base = {}
        events = [e for e in base.get("traceEvents", []) if e.get("pid") != 1]
        doc = {"traceEvents": events + self.timeline.trace_events(pid=1),
               "displayTimeUnit": base.get("displayTimeUnit", "ns"),
               "runtime": {"estimated_step_us": self.timeline.step_us(),
                           "h2d_overlapping_compute_us": round(self.timeline.overlap_us(), 3),
                           "calls": len(self.timeline.call_ends)}}
        try:
            Path(fn.codegen_dir).mkdir(parents=True, exist_ok=True)
            atomic_write(path, (json.dumps(doc, indent=1) + "\n").encode())
        except OSError as err:
            raise _error(f"cannot write {path}: {err.strerror}") from None


MLSDK_JSON = "mlsdk.json"


def _caller(module: Any) -> Any:
    """Run a CompiledModule on a list of tensors; a tuple of result tensors."""
    def run(values: list[Any]) -> tuple[Any, ...]:
        out = module(*values)
        return out if isinstance(out, tuple) else (out,)
    return run


def referenced(function: Any, seen: set[int] | None = None) -> dict[str, Any]:
    """Objects `function` names (globals and closure cells), also through the plain Python
    functions it calls."""
    seen = set() if seen is None else seen
    if id(function) in seen or not isinstance(function, types.FunctionType):
        return {}
    seen.add(id(function))
    try:
        found = inspect.getclosurevars(function)
    except (TypeError, ValueError):
        return {}
    names = {**found.globals, **found.nonlocals}
    for value in list(names.values()):
        if isinstance(value, types.FunctionType):
            for k, v in referenced(value, seen).items():
                names.setdefault(k, v)
    return names


def rebind(function: Any, subst: Mapping[int, Any], memo: dict[int, Any] | None = None) -> Any:
    """A copy of `function` whose globals and closure cells holding an object of `subst`
    (by id) hold its replacement instead; plain functions it names are rebound too."""
    memo = {} if memo is None else memo
    if not isinstance(function, types.FunctionType):
        return subst.get(id(function), function)
    if id(function) in memo:
        return memo[id(function)]
    code = function.__code__
    scope = dict(function.__globals__)
    memo[id(function)] = None  # recursion guard; filled below
    for name in code.co_names:
        value = scope.get(name)
        if value is not None and (id(value) in subst or isinstance(value, types.FunctionType)):
            scope[name] = rebind(value, subst, memo) or value
    cells = None
    if function.__closure__:
        cells = tuple(types.CellType(rebind(c.cell_contents, subst, memo) or c.cell_contents)
                      if _filled(c) else c for c in function.__closure__)
    new = types.FunctionType(code, scope, function.__name__, function.__defaults__, cells)
    new.__kwdefaults__ = function.__kwdefaults__
    memo[id(function)] = new
    return new


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def device_copy(context: Context, module: Any) -> Any:
    """The device copy of `module`: registered parameters and buffers share the memory of
    their proxies (updates land there), the rest are copies frozen at compile time."""
    import torch

    found = context._clones.get(id(module))
    if found is not None:
        return found
    clone = copy.deepcopy(module)
    originals = dict(module.named_parameters(remove_duplicate=False))
    for name, p in clone.named_parameters(remove_duplicate=False):
        proxy = context._registry.get(id(originals[name]))
        if proxy is not None:
            p.data = proxy._value
    buffers = dict(module.named_buffers(remove_duplicate=False))
    for name, b in clone.named_buffers(remove_duplicate=False):
        proxy = context._registry.get(id(buffers[name]))
        if proxy is not None:
            with torch.no_grad():
                b.data = proxy._value
    context._clones[id(module)] = clone
    return clone


def registered_of(context: Context, modules: Iterable[Any]) -> list[TensorProxy]:
    """The proxies of the registered tensors of `modules` (host modules)."""
    found: dict[int, TensorProxy] = {}
    for m in modules:
        for t in [*m.parameters(), *m.buffers()]:
            proxy = context._registry.get(id(t))
            if proxy is not None:
                found[id(proxy)] = proxy
    return list(found.values())


__all__ = ["CacheOptions", "CompiledFunction", "Context", "MNDevice", "TensorProxy", "storage"]
