"""`TrainStep`: a compiled train step, called like `loss = step(*batch)`.

One call runs, as compiled code, the forward graph then the backward graph once per
micro-batch (`grad_accumulation_steps`), sums the gradients, averages them across the
processes of the torch.distributed group (`data_parallel`, `accel.training.distributed`),
and runs the optimizer graph; then it writes the new parameters, buffers and optimizer
state back into the model's and the optimizer's own tensors (in place), so eager code sees
exactly what an eager step would have left:

- parameters: `param.data` updated in place (views and aliases see the change);
- buffers: BatchNorm's running_mean/var and num_batches_tracked, in place;
- `optimizer.state[param]`: torch's own keys and tensors ('momentum_buffer', 'step',
  'exp_avg', 'exp_avg_sq', 'max_exp_avg_sq'), so `optimizer.state_dict()`, checkpoints and
  eager steps continue from here.

With random ops (dropout), every forward call takes a fresh key drawn from torch's default
generator (`accel.training.rng`): `torch.manual_seed` makes the masks repeatable.

Not set: `param.grad` (the gradients live only inside the step, as after
`optimizer.zero_grad(set_to_none=True)`). Hyper-parameters are read from
`optimizer.param_groups` at every call (`accel.training.optimizers.hyper_values`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from accel.diagnostics import AccelError
from accel.runtime.heap import collections_paused, reuse_large_blocks
from accel.training import optimizers
from accel.training.graphs import TrainGraphs
from accel.training.rng import draw_key


class TrainStep:
    """A compiled train step (see the module docstring); `accel.compile_train_step` makes it.

    Attributes: `graphs` (`TrainGraphs`: the forward, backward and optimizer phase graphs
    with their inputs and outputs), `compiled` (phase name -> `CompiledModule`), `compiles`
    (graphs compiled so far: 3, more only if the optimizer's structure changed), `grad_norm`
    (the total gradient norm of the last step, with `clip_grad_norm`), `last_loss`.
    """

    def __init__(self, *, params: Sequence[tuple[str, Any]], buffers: Sequence[tuple[str, Any]],
                 optimizer: Any, graphs: TrainGraphs, compiled: dict[str, Any],
                 spec: optimizers.OptimizerSpec, settings: dict[str, Any],
                 recompile: Callable[[optimizers.OptimizerSpec], tuple[Any, Any]] | None,
                 model: Any = None):
        self.model = model
        self.optimizer = optimizer
        self.graphs = graphs
        self.compiled = dict(compiled)
        self.spec = spec
        self.settings = dict(settings)
        self.compiles = len(compiled)
        self.grad_norm: Any = None
        self.last_loss: Any = None
        self._recompile = recompile
        self._params = dict(params)
        self._buffers = dict(buffers)
        self._training = getattr(model, "training", None)
        self._group_ids = self._groups_key()
        self._trained = [self._params[n] for n in spec.names]
        self._optimizer_graphs = {spec: (graphs["optimizer"], compiled["optimizer"])}
        self._plan()
        # Every call allocates the same large results again: reuse malloc's blocks rather
        # than page-faulting fresh mappings (accel.runtime.heap; ~5x on an Adam update).
        reuse_large_blocks()

    # -- wiring ---------------------------------------------------------------------------
    def _plan(self) -> None:
        """Index the phase graphs' inputs and outputs once (calls only look them up)."""
        fwd, bwd = self.graphs["forward"], self.graphs["backward"]
        self._fwd_in = list(fwd.inputs)
        self._fwd_out = list(fwd.outputs)
        self._bwd_in = list(bwd.inputs)
        self._bwd_out = [o.split(":", 1)[1] for o in bwd.outputs]
        self._loss_at = self._fwd_out.index("loss")
        self._saved_at = next((i for i, o in enumerate(self._fwd_out)
                               if o.startswith("saved:")), len(self._fwd_out))
        self._buffer_out = [(i, o.split(":", 1)[1]) for i, o in enumerate(self._fwd_out)
                            if o.startswith("buffer:")]
        grad_at = {name: i for i, name in enumerate(self._bwd_out)}
        self._grad_order = [grad_at[n] for n in self.spec.names]
        self._batch_arity = 1 + max((int(n.split(":")[1]) for n in self._fwd_in + self._bwd_in
                                     if n.startswith("batch:")), default=-1)
        self._fwd_src = self._sources(self._fwd_in)
        self._bwd_src = self._sources(self._bwd_in)
        self._read = [(n, self._params[n]) for n in dict.fromkeys(
            key for kind, key in self._fwd_src + self._bwd_src if kind == 0)]

    def _groups_key(self) -> tuple[int, ...]:
        if self.optimizer is None:
            return ()
        return tuple(id(p) for g in self.optimizer.param_groups for p in g["params"])

    def _sources(self, names: Sequence[str]) -> list[tuple[int, Any]]:
        """Each graph input as (kind, key): 0 parameter, 1 buffer, 2 batch, 3 saved, 4 the
        random ops' key (`accel.training.rng`)."""
        kinds = {"param": 0, "buffer": 1, "batch": 2, "saved": 3, "rng": 4}
        found = []
        for name in names:
            kind, _, key = name.partition(":")
            if kind not in kinds:
                raise AccelError(f"internal error: unknown graph input {name}")
            found.append((kinds[kind], int(key) if kinds[kind] in (2, 3) else key))
        return found

    @staticmethod
    def _args(sources: list[tuple[int, Any]], params: dict[str, Any], buffers: dict[str, Any],
              batch: Sequence[Any], saved: Sequence[Any]) -> list[Any]:
        pools = (params, buffers, batch, saved)
        # A fresh key per forward call: each micro-batch and step draws new random numbers.
        return [pools[kind][key] if kind < 4 else draw_key() for kind, key in sources]

    # -- a step ---------------------------------------------------------------------------
    def __call__(self, *batch: Any) -> Any:
        # A step wraps ~1,300 results (arrays, their owners, tensors: GC-tracked objects)
        # that die when it returns. A cyclic collection in the middle of a step found them
        # alive and promoted them, so every ~100 steps a full collection walked the whole
        # heap: 177 ms with torch imported (566K objects), 1.8 ms per step on average (9%
        # of the ResNet-18 step at 1 thread). Paused for the step, the collections run
        # after it, when the step's objects are gone.
        with collections_paused():
            return self._step(*batch)

    def _step(self, *batch: Any) -> Any:
        import torch

        self._check_unchanged()
        micro = self._split(batch)
        if self.settings.get("data_parallel"):  # the group must exist before any work
            from accel.training.distributed import world_size

            world_size(self.settings.get("world_size"))
        buffers = {k: v.detach() for k, v in self._buffers.items()}
        params = {n: p.detach() for n, p in self._read}
        fwd, bwd = self.compiled["forward"], self.compiled["backward"]
        losses, grads = [], None
        for part in micro:
            out = fwd(*self._args(self._fwd_src, params, buffers, part, ()))
            out = out if isinstance(out, tuple) else (out,)
            losses.append(out[self._loss_at])
            for i, name in self._buffer_out:
                buffers[name] = out[i]
            saved = out[self._saved_at:]
            got = bwd(*self._args(self._bwd_src, params, buffers, part, saved))
            got = list(got) if isinstance(got, tuple) else [got]
            ordered = [got[i] for i in self._grad_order]
            if grads is None:
                grads = ordered
            else:
                torch._foreach_add_(grads, ordered)
        assert grads is not None
        del params  # views of the parameters: the update may then adopt new storage
        if self.settings.get("data_parallel"):
            from accel.training.distributed import all_reduce_sum

            all_reduce_sum(grads)
        self._update(grads)
        if self._buffer_out:
            with torch.no_grad():
                torch._foreach_copy_([self._buffers[n] for _, n in self._buffer_out],
                                     [buffers[n] for _, n in self._buffer_out])
        loss = losses[0] if len(losses) == 1 else torch.stack(losses).mean()
        self.last_loss = loss
        return loss

    def _split(self, batch: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """The batch as `grad_accumulation_steps` micro-batches (split along dim 0)."""
        import torch

        if len(batch) != self._batch_arity and self._batch_arity:
            raise TypeError(f"the train step takes {self._batch_arity} batch tensors "
                            f"(as example_batch), got {len(batch)}")
        steps = self.settings.get("grad_accumulation_steps", 1)
        parts = []
        for i, t in enumerate(batch):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"batch[{i}] must be a torch.Tensor, got {type(t).__name__}")
            t = t.detach()
            if steps == 1:
                parts.append([t.contiguous()])
                continue
            if t.dim() == 0 or t.shape[0] % steps:
                raise ValueError(f"batch[{i}] of shape {tuple(t.shape)}: dimension 0 must "
                                 f"split into grad_accumulation_steps={steps} equal parts")
            parts.append([c.contiguous() for c in t.chunk(steps)])
        return [tuple(p[j] for p in parts) for j in range(steps)]

    def _check_unchanged(self) -> None:
        if self.model is not None and self.model.training != self._training:
            raise AccelError(f"the model was in {'training' if self._training else 'eval'} "
                             "mode when the train step was compiled and has been switched "
                             "since; compile a step for the new mode")
        if self._groups_key() != self._group_ids:
            raise AccelError("the optimizer's parameter groups changed (parameters added or "
                             "removed) after compiling the train step; compile a new one")

    def _update(self, grads: list[Any]) -> None:
        import torch

        opt, spec, params = self.optimizer, self.spec, self._trained
        new_spec = optimizers.structure(opt, spec, params)
        if new_spec is not spec:
            self._use_spec(new_spec)
            spec = new_spec
        optimizers.init_state(opt, spec, params)
        states = optimizers.state_tensors(opt, spec, params)
        hypers = optimizers.hyper_values(opt, spec, params)
        extra = []
        scale = self._grad_scale()
        if scale is not None:
            extra.append(torch.tensor(scale, dtype=torch.float32))
        if self.settings.get("clip_grad_norm") is not None:
            extra.append(torch.tensor(float(self.settings["clip_grad_norm"]),
                                      dtype=torch.float32))
        data = [p.detach() for p in params]
        out = self.compiled["optimizer"](*data, *grads, *states, *hypers, *extra)
        out = list(out) if isinstance(out, tuple) else [out]
        n = len(params)
        if self.settings.get("clip_grad_norm") is not None:
            self.grad_norm = out.pop()
        del data, states  # they share the parameters' and the state's storage
        with torch.no_grad():
            adopt_or_copy(list(params), out[:n])
            self._write_state(out[n:])
        optimizers.advance_steps(opt, spec, params)
        # What optimizer.step() would mark: LR schedulers check it to warn about order.
        opt._opt_called = True

    def _grad_scale(self) -> float | None:
        """The factor turning the summed gradients into the mean (None: 1, no input)."""
        steps = self.settings.get("grad_accumulation_steps", 1)
        world = 1
        if self.settings.get("data_parallel"):
            from accel.training.distributed import world_size

            world = world_size(self.settings.get("world_size"))
        if steps == 1 and not self.settings.get("data_parallel"):
            return None
        return 1.0 / (steps * world)

    def _write_state(self, values: list[Any]) -> None:
        """New optimizer state into `optimizer.state`: into the tensors already there (as
        in place, like torch: `adopt_or_copy`), bound where torch would create one (SGD's
        first step)."""
        opt, spec = self.optimizer, self.spec
        offset = 0
        targets, sources = [], []
        for i, param in enumerate(self._trained):
            state = opt.state[param]
            for key in spec.state_keys(i):
                value = values[offset]
                offset += 1
                current = state.get(key)
                if current is None:
                    state[key] = value
                else:
                    targets.append(current)
                    sources.append(value)
        if targets:
            adopt_or_copy(targets, sources)

    def _use_spec(self, spec: optimizers.OptimizerSpec) -> None:
        """Switch to the optimizer graph of `spec` (compiled once per structure)."""
        found = self._optimizer_graphs.get(spec)
        if found is None:
            if self._recompile is None:
                raise AccelError("the optimizer's settings changed in a way that needs a new "
                                 "optimizer graph (momentum, nesterov, amsgrad, maximize or "
                                 "weight decay switched on or off), and this step cannot "
                                 "compile one")
            found = self._recompile(spec)
            self._optimizer_graphs[spec] = found
            self.compiles += 1
        graph, compiled = found
        self.graphs.graphs = [graph if g.name == "optimizer" else g for g in self.graphs.graphs]
        self.compiled["optimizer"] = compiled
        self.spec = spec

    # -- state ----------------------------------------------------------------------------
    def model_state(self) -> dict[str, Any]:
        """The parameters and buffers by name (the tensors the step updates, not copies)."""
        return {**self._params, **self._buffers}

    def state_dict(self) -> dict[str, Any]:
        """{"model": parameters and buffers, "optimizer": optimizer.state_dict()}: load the
        first into a model with `model.load_state_dict(sd["model"])`."""
        return {"model": {k: v.detach() for k, v in self.model_state().items()},
                "optimizer": self.optimizer.state_dict()}

    def __repr__(self) -> str:
        return (f"TrainStep({type(self.optimizer).__name__}, {len(self._trained)} trained "
                f"parameters, phases {', '.join(self.graphs.names())})")


def adopt_or_copy(targets: list[Any], sources: list[Any]) -> None:
    """Give each target tensor its new value: `target.data = source` where no other tensor
    shares the target's storage, a copy otherwise.

    Why: the optimizer phase returns new buffers for the parameters and the state, and
    copying them back was ~1.2 ms of an 8 ms MLP step (8 MB at batch 64). Taking the new
    buffer is the same as an in-place update for everyone holding the target tensor object
    (a Parameter, `optimizer.state[p]["exp_avg"]`); only another tensor on the same storage
    (a view, a `.detach()` kept somewhere) would miss it, so then it copies, as before.
    """
    import torch

    use_count = getattr(torch._C, "_storage_Use_Count", None)
    seen: set[int] = set()
    copy_to, copy_from = [], []
    for target, source in zip(targets, sources, strict=True):
        ptr = source.data_ptr()
        if use_count is not None and ptr not in seen and _adoptable(target, source, use_count):
            seen.add(ptr)
            target.data = source
        else:
            copy_to.append(target)
            copy_from.append(source)
    if copy_to:
        torch._foreach_copy_(copy_to, copy_from)


def _adoptable(target: Any, source: Any, use_count: Any) -> bool:
    """`target` alone on a storage it fills, and `source` alike, of the same layout."""
    # A storage's use count here: the tensor's own reference and the one of the temporary
    # `untyped_storage()` object.
    return (target.dtype == source.dtype and target.shape == source.shape
            and target.device == source.device and target.is_contiguous()
            and source.is_contiguous() and target.storage_offset() == 0
            and source.storage_offset() == 0
            and target.untyped_storage().nbytes() == target.numel() * target.element_size()
            and source.untyped_storage().nbytes() == source.numel() * source.element_size()
            and use_count(target.untyped_storage()._cdata) == 2
            and use_count(source.untyped_storage()._cdata) == 2)
