"""Optimizer updates as functional torch code, and their runtime hyper-parameters.

accel compiles `torch.optim.SGD`, `Adam` and `AdamW` as a graph of tensor ops (the
"optimizer" phase): parameters, gradients, the optimizer's state tensors and hyper-parameter
vectors in; new parameters and new state out. The formulas are torch's single-tensor ones
(`torch/optim/sgd.py`, `adam.py`: `_single_tensor_*`), term for term, so compiled and eager
steps agree to float32 rounding; foreach/fused implementations compute the same formulas.

Hyper-parameters are *inputs*, not constants: `hyper_values` reads `optimizer.param_groups`
and `optimizer.state` at every step and builds one float32 vector per hyper-parameter (one
entry per trained parameter), so an LR scheduler's change, a per-group learning rate or a
parameter whose `step` count differs from the others take effect without recompiling. Only
what changes the formulas' structure (momentum on/off, nesterov, amsgrad, maximize, weight
decay on/off, Adam's lerp branch) is part of `structure(...)`; a change there compiles a new
optimizer graph.

    spec = describe(optimizer, params)          # validated, structure per parameter
    hypers = hyper_values(optimizer, spec)      # advances Adam's `step` like torch does
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from accel.diagnostics import AccelError

#: Optimizer classes accel compiles, by name -> their state tensors (shaped like the param).
SUPPORTED = ("SGD", "Adam", "AdamW")
#: Group flags that change no formula (implementation choices of torch's eager update).
_IMPLEMENTATION_FLAGS = ("foreach", "fused", "capturable")


@dataclass(frozen=True)
class ParamRule:
    """The update's structure for one parameter (from its group's flags)."""

    group: int
    #: sgd: momentum != 0; adam: always True (exp_avg / exp_avg_sq).
    stateful: bool = False
    nesterov: bool = False
    maximize: bool = False
    weight_decay: bool = False
    #: adam: weight decay applied to the parameter (AdamW), not added to the gradient.
    decoupled: bool = False
    amsgrad: bool = False
    #: adam: torch's lerp computes `end - (end - self) * (1 - w)` when w >= 0.5.
    lerp_high: bool = False


@dataclass(frozen=True)
class OptimizerSpec:
    """What the optimizer graph updates and how: `kind` is "sgd" or "adam"."""

    kind: str
    #: Trained parameters' names, in graph order, and the optimizer's tensors for them.
    names: tuple[str, ...]
    rules: tuple[ParamRule, ...]
    #: Each group's structural settings when the spec was made (`structure`'s fast check);
    #: not part of equality.
    group_keys: tuple[Any, ...] = field(default=(), compare=False)

    def state_keys(self, i: int) -> tuple[str, ...]:
        """torch's state keys held as tensors shaped like parameter i, in graph order."""
        rule = self.rules[i]
        if self.kind == "sgd":
            return ("momentum_buffer",) if rule.stateful else ()
        return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if rule.amsgrad else ())

    def hyper_names(self) -> tuple[str, ...]:
        if self.kind == "sgd":
            return ("weight_decay", "momentum_keep", "momentum_add", "momentum", "neg_lr")
        return ("weight_decay", "decay", "beta1_weight", "beta2", "one_minus_beta2",
                "bias_correction2_sqrt", "eps", "neg_step_size")


def _kind(optimizer: Any) -> str:
    import torch

    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got "
                        f"{type(optimizer).__name__}")
    cls = type(optimizer)
    if cls is torch.optim.SGD:
        return "sgd"
    if cls in (torch.optim.Adam, torch.optim.AdamW):
        return "adam"
    raise AccelError(f"optimizer {cls.__name__} is not supported by compiled training "
                     f"(supported: torch.optim.{', torch.optim.'.join(SUPPORTED)})")


def _rule(kind: str, index: int, group: dict[str, Any]) -> ParamRule:
    if group.get("differentiable"):
        raise AccelError("optimizer option differentiable=True is not supported by compiled "
                         "training (the compiled update is not itself differentiated)")
    wd = float(group.get("weight_decay", 0) or 0) != 0
    maximize = bool(group.get("maximize", False))
    if kind == "sgd":
        momentum = float(group["momentum"]) != 0
        return ParamRule(index, stateful=momentum, nesterov=bool(group.get("nesterov")),
                         maximize=maximize, weight_decay=wd)
    beta1 = float(group["betas"][0])
    return ParamRule(index, stateful=True, maximize=maximize, weight_decay=wd,
                     decoupled=type_is_adamw(group), amsgrad=bool(group.get("amsgrad")),
                     lerp_high=(1 - beta1) >= 0.5)


def _group_key(kind: str, group: dict[str, Any]) -> tuple[Any, ...]:
    """What in a group decides the update's structure (`_rule`'s inputs, as booleans)."""
    wd = float(group.get("weight_decay", 0) or 0) != 0
    common = (bool(group.get("differentiable")), wd, bool(group.get("maximize", False)))
    if kind == "sgd":
        return (*common, float(group["momentum"]) != 0, bool(group.get("nesterov")))
    return (*common, type_is_adamw(group), bool(group.get("amsgrad")),
            (1 - float(group["betas"][0])) >= 0.5)


def type_is_adamw(group: dict[str, Any]) -> bool:
    """Adam with decoupled weight decay (AdamW, or Adam(decoupled_weight_decay=True))."""
    return bool(group.get("decoupled_weight_decay", False))


def describe(optimizer: Any, params: Sequence[tuple[str, Any]]) -> OptimizerSpec:
    """The update of `optimizer` for the trained `params` ((name, Parameter) pairs, in the
    backward graph's gradient order); `AccelError` for what accel does not compile.

    Parameters the optimizer does not hold are left as they are (eager would compute their
    gradient and not use it); a tensor the optimizer holds that is not among `params` gets
    no gradient and is skipped, as eager skips parameters whose `.grad` is None.
    """
    kind = _kind(optimizer)
    if getattr(optimizer, "_optimizer_step_pre_hooks", None) or \
            getattr(optimizer, "_optimizer_step_post_hooks", None):
        raise AccelError("the optimizer has step hooks (register_step_pre_hook/post_hook), "
                         "which compiled training does not run")
    group_of = {id(p): i for i, g in enumerate(optimizer.param_groups) for p in g["params"]}
    names, rules = [], []
    for name, param in params:
        index = group_of.get(id(param))
        if index is None:
            continue
        names.append(name)
        rules.append(_rule(kind, index, optimizer.param_groups[index]))
    if not names:
        raise AccelError("the optimizer holds none of the model's trained parameters")
    return OptimizerSpec(kind, tuple(names), tuple(rules),
                         tuple(_group_key(kind, g) for g in optimizer.param_groups))


def structure(optimizer: Any, spec: OptimizerSpec, params: Sequence[Any]) -> OptimizerSpec:
    """`spec` again if the optimizer's groups still have its structure, else the new one
    (the caller compiles a new optimizer graph for it)."""
    groups = optimizer.param_groups
    key = tuple(_group_key(spec.kind, g) for g in groups)
    if spec.group_keys == key:  # the common case: nothing structural changed
        return spec
    rules = []
    for rule, param in zip(spec.rules, params, strict=True):
        group = groups[rule.group] if rule.group < len(groups) else None
        if group is None or not any(p is param for p in group["params"]):
            index = next((i for i, g in enumerate(groups)
                          if any(p is param for p in g["params"])), None)
            if index is None:
                raise AccelError("a parameter was removed from the optimizer after compiling "
                                 "the train step; compile a new one")
            group = groups[index]
            rules.append(_rule(spec.kind, index, group))
        else:
            rules.append(_rule(spec.kind, rule.group, group))
    new = OptimizerSpec(spec.kind, spec.names, tuple(rules), key)
    return spec if new == spec else new


def init_state(optimizer: Any, spec: OptimizerSpec, params: Sequence[Any]) -> None:
    """Create missing state as torch's first `step()` would (Adam's zeros and step 0)."""
    import torch

    if spec.kind != "adam":
        return
    for i, param in enumerate(params):
        state = optimizer.state[param]
        if len(state) == 0:
            state["step"] = torch.tensor(0.0, dtype=_scalar_dtype())
            state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
            if spec.rules[i].amsgrad:
                state["max_exp_avg_sq"] = torch.zeros_like(
                    param, memory_format=torch.preserve_format)
        elif spec.rules[i].amsgrad and "max_exp_avg_sq" not in state:
            raise AccelError("amsgrad was turned on after steps without it: the optimizer "
                             "state has no max_exp_avg_sq (torch's Adam fails the same way)")


def _scalar_dtype() -> Any:
    import torch

    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


def state_tensors(optimizer: Any, spec: OptimizerSpec, params: Sequence[Any]) -> list[Any]:
    """The state tensors the graph reads, in `spec` order (zeros where SGD has no momentum
    buffer yet: its first step's hyper-parameters make the update ignore them)."""
    import torch

    found = []
    for i, param in enumerate(params):
        state = optimizer.state[param]
        for key in spec.state_keys(i):
            value = state.get(key)
            found.append(torch.zeros_like(param) if value is None else value)
    return found


def advance_steps(optimizer: Any, spec: OptimizerSpec, params: Sequence[Any]) -> None:
    """Adam: count the update in each parameter's `state['step']`, as torch's step does
    (after the compiled update succeeded: a failed call leaves the state as it was)."""
    import torch

    if spec.kind == "adam":
        torch._foreach_add_([optimizer.state[p]["step"] for p in params], 1)


def hyper_values(optimizer: Any, spec: OptimizerSpec, params: Sequence[Any]) -> list[Any]:
    """One float32 vector per `spec.hyper_names()` entry, read from the optimizer now.

    For Adam the bias corrections use each parameter's `state['step']` + 1, the count
    after this update (`advance_steps` then stores it)."""
    import torch

    groups = optimizer.param_groups
    rows: list[list[float]] = []
    if spec.kind == "sgd":
        for rule, param in zip(spec.rules, params, strict=True):
            g = groups[rule.group]
            momentum = float(g["momentum"])
            fresh = rule.stateful and optimizer.state[param].get("momentum_buffer") is None
            keep, add = (0.0, 1.0) if fresh else (momentum, 1.0 - float(g["dampening"]))
            rows.append([float(g["weight_decay"]), keep, add, momentum, -float(g["lr"])])
    else:
        steps = [optimizer.state[p]["step"] for p in params]
        # exact: float32 counts up to 2**24
        counts = [c + 1 for c in torch.stack(steps).tolist()]
        for rule, count in zip(spec.rules, counts, strict=True):
            g = groups[rule.group]
            lr, wd, eps = float(g["lr"]), float(g["weight_decay"]), float(g["eps"])
            beta1, beta2 = float(g["betas"][0]), float(g["betas"][1])
            bias1 = 1 - beta1 ** count
            bias2 = 1 - beta2 ** count
            rows.append([wd, 1 - lr * wd, 1 - beta1, beta2, 1 - beta2, bias2 ** 0.5, eps,
                         -(lr / bias1)])
    table = torch.tensor(rows, dtype=torch.float32).t().contiguous()
    return list(table.unbind(0))


def update_function(spec: OptimizerSpec, *, grad_scale: bool, clip: bool) -> Any:
    """The optimizer graph's function: `f(*params, *grads, *states, *hypers[, grad_scale]
    [, max_norm]) -> (*new_params, *new_states[, grad_norm])`, as torch code to trace."""
    import torch

    n = len(spec.names)
    counts = [len(spec.state_keys(i)) for i in range(n)]
    n_hyper = len(spec.hyper_names())

    def update(*args: Any) -> tuple[Any, ...]:
        params, grads = list(args[:n]), list(args[n:2 * n])
        flat_states = list(args[2 * n:2 * n + sum(counts)])
        rest = list(args[2 * n + sum(counts):])
        hypers, rest = rest[:n_hyper], rest[n_hyper:]
        if grad_scale:
            scale, rest = rest[0], rest[1:]
            grads = [g * scale for g in grads]
        norm = None
        if clip:
            max_norm = rest[0]
            norm = torch.linalg.vector_norm(
                torch.stack([torch.linalg.vector_norm(g) for g in grads]))
            coef = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
            grads = [g * coef for g in grads]
        new_params, new_states = [], []
        offset = 0
        for i in range(n):
            h = {name: hypers[k][i] for k, name in enumerate(spec.hyper_names())}
            states = flat_states[offset:offset + counts[i]]
            offset += counts[i]
            step = _sgd if spec.kind == "sgd" else _adam
            p, s = step(spec.rules[i], params[i], grads[i], states, h)
            new_params.append(p)
            new_states.extend(s)
        out = [*new_params, *new_states]
        if norm is not None:
            out.append(norm)
        return tuple(out)

    return update


def _sgd(rule: ParamRule, p: Any, g: Any, states: list[Any], h: dict[str, Any]
         ) -> tuple[Any, list[Any]]:
    """torch.optim.SGD's single-tensor update of one parameter."""
    if rule.maximize:
        g = -g
    if rule.weight_decay:
        g = g + h["weight_decay"] * p
    new_states = []
    if rule.stateful:
        # First step: keep=0, add=1 (torch clones the gradient); then momentum, 1-dampening.
        buf = states[0] * h["momentum_keep"] + g * h["momentum_add"]
        new_states.append(buf)
        g = g + h["momentum"] * buf if rule.nesterov else buf
    return p + h["neg_lr"] * g, new_states


def _adam(rule: ParamRule, p: Any, g: Any, states: list[Any], h: dict[str, Any]
          ) -> tuple[Any, list[Any]]:
    """torch.optim.Adam/AdamW's single-tensor update of one parameter."""
    import torch

    if rule.maximize:
        g = -g
    if rule.weight_decay:
        if rule.decoupled:
            p = p * h["decay"]
        else:
            g = g + h["weight_decay"] * p
    exp_avg, exp_avg_sq = states[0], states[1]
    w = h["beta1_weight"]
    if rule.lerp_high:  # torch's lerp, both branches
        exp_avg = g - (g - exp_avg) * (1 - w)
    else:
        exp_avg = exp_avg + w * (g - exp_avg)
    exp_avg_sq = exp_avg_sq * h["beta2"] + h["one_minus_beta2"] * (g * g)
    new_states = [exp_avg, exp_avg_sq]
    second = exp_avg_sq
    if rule.amsgrad:
        second = torch.maximum(states[2], exp_avg_sq)
        new_states.append(second)
    denom = torch.sqrt(second) / h["bias_correction2_sqrt"] + h["eps"]
    return p + h["neg_step_size"] * (exp_avg / denom), new_states
