"""Random ops in compiled graphs: rewritten into a counter-based generator on a key input.

    count = functionalize_random(gm, "train step of M")   # random ops -> integer hashes
    key = draw_key()                                     # per call, from torch's generator
    outputs = compiled(*inputs, key)

accel's compiled code cannot call torch's generator, so `functionalize_random` replaces
every random op of an aten FX graph (dropout, `bernoulli`, `rand`, `randn`, ...) with ops on
one extra input, an int64 0-d tensor `key` (the graph's last placeholder): the random bits
of element `i` of the op that owns counters `start .. start + numel - 1` are SplitMix64's
output at position `start + i` of the stream `key`,

    z = key + (start + i + 1) * 0x9E3779B97F4A7C15        (mod 2**64)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    bits = z ^ (z >> 31)

written with int64 tensor ops (wrapping multiplication, arithmetic shifts masked to logical
ones) that torch-mlir lowers to linalg like any elementwise op. Each random op of a graph
owns its own counter range, so they are independent; a fresh key per call (`draw_key`, one
draw from torch's default generator) makes successive calls independent and
`torch.manual_seed` makes them repeatable. A dropout mask is computed once, in the forward
graph, and saved for the backward graph like any activation: the backward uses the same
mask. The numbers differ from eager PyTorch's own stream (eager CPU dropout uses mt19937
through `bernoulli_`): compiled and eager dropout draw different masks from one seed.

The rewrite is plain torch code (`_uniform`, `_dropout`, ...) traced with `make_fx`; the
rewritten FX graph run eagerly with a key gives the numbers its compiled code computes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from accel.diagnostics import AccelError

_GAMMA = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
#: Random bits turned into a uniform float of each dtype (its significand's width, so that
#: `bits * 2**-width` is exact and below 1).
_FLOAT_BITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}


def _signed(value: int) -> int:
    """`value` mod 2**64 as the int64 with the same bits (torch's integer scalars)."""
    value %= 1 << 64
    return value - (1 << 64) if value >= 1 << 63 else value


def _shr(z: Any, shift: int) -> Any:
    """Logical right shift of int64 `z` (torch's `>>` is arithmetic on signed integers)."""
    return (z >> shift) & ((1 << (64 - shift)) - 1)


def random_bits(key: Any, start: int, shape: tuple[int, ...]) -> Any:
    """64 random bits per element (int64) of a tensor of `shape`: SplitMix64 at positions
    `start, start + 1, ...` (row-major) of the stream `key` (an int64 0-d tensor)."""
    import torch

    n = math.prod(shape)
    index = torch.arange(n, dtype=torch.int64, device=key.device).reshape(shape)
    z = index * _signed(_GAMMA) + (key + _signed((start + 1) * _GAMMA))
    z = (z ^ _shr(z, 30)) * _signed(_MIX1)
    z = (z ^ _shr(z, 27)) * _signed(_MIX2)
    return z ^ _shr(z, 31)


def _uniform(key: Any, start: int, shape: tuple[int, ...], dtype: Any) -> Any:
    """Uniform floats in [0, 1) of `dtype`: the top bits of `random_bits`."""
    width = _FLOAT_BITS.get(str(dtype).removeprefix("torch."))
    if width is None:
        raise AccelError(f"random numbers of dtype {dtype} are not supported in compiled "
                         "graphs")
    top = _shr(random_bits(key, start, shape), 64 - width)
    return top.to(dtype) * (2.0 ** -width)


def _below(key: Any, start: int, shape: tuple[int, ...], probability: float) -> Any:
    """A bool tensor, True with `probability` (in steps of 2**-64) independently."""
    import torch

    bits = random_bits(key, start, shape)
    threshold = max(round(probability * 2 ** 64), 0)
    if threshold >= 2 ** 64:
        return torch.ones_like(bits, dtype=torch.bool)
    # The bits as a signed int64 are uniform on [-2**63, 2**63): one comparison (a mask
    # costs a loop per op in the compiled code).
    return bits < threshold - 2 ** 63


def _dropout(key: Any, start: int, x: Any, p: float, train: Any = None) -> tuple[Any, Any]:
    """`aten.native_dropout`: (x * mask * 1/(1-p), mask), mask True with probability 1-p."""
    import torch

    if train is False or p == 0:
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    keep = _below(key, start, tuple(x.shape), 1.0 - p)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return x * keep.to(x.dtype) * scale, keep


def _bernoulli_p(key: Any, start: int, x: Any, p: float = 0.5, **_: Any) -> Any:
    return _below(key, start, tuple(x.shape), float(p)).to(x.dtype)


def _bernoulli_tensor(key: Any, start: int, x: Any, p: Any = None, **_: Any) -> Any:
    """`bernoulli(x)` (probabilities x) and `bernoulli.Tensor(x, p)` (probabilities p)."""
    probability = x if p is None else p
    u = _uniform(key, start, tuple(x.shape), probability.dtype)
    return (u < probability).to(x.dtype)


def _dtype(kwargs: dict[str, Any], like: Any = None) -> Any:
    import torch

    dtype = kwargs.get("dtype")
    if dtype is None:
        return like.dtype if like is not None else torch.get_default_dtype()
    return dtype


def _rand(key: Any, start: int, size: Any, **kwargs: Any) -> Any:
    return _uniform(key, start, tuple(size), _dtype(kwargs))


def _rand_like(key: Any, start: int, x: Any, **kwargs: Any) -> Any:
    return _uniform(key, start, tuple(x.shape), _dtype(kwargs, x))


def _uniform_op(key: Any, start: int, x: Any, low: float = 0.0, high: float = 1.0,
                **_: Any) -> Any:
    """`aten.uniform` (functional `uniform_`): x's shape and dtype in [low, high)."""
    return _uniform(key, start, tuple(x.shape), x.dtype) * (high - low) + low


def _normal(key: Any, start: int, shape: tuple[int, ...], dtype: Any) -> Any:
    """Standard normal samples (Box-Muller on two uniforms: counters start .. start+2n)."""
    import torch

    n = math.prod(shape)
    u1 = _uniform(key, start, shape, torch.float32 if dtype != torch.float64 else dtype)
    u2 = _uniform(key, start + n, shape, u1.dtype)
    radius = torch.sqrt(-2.0 * torch.log1p(-u1))
    return (radius * torch.cos(u2 * (2 * math.pi))).to(dtype)


def _randn(key: Any, start: int, size: Any, **kwargs: Any) -> Any:
    return _normal(key, start, tuple(size), _dtype(kwargs))


def _randn_like(key: Any, start: int, x: Any, **kwargs: Any) -> Any:
    return _normal(key, start, tuple(x.shape), _dtype(kwargs, x))


def _normal_op(key: Any, start: int, x: Any, mean: float = 0.0, std: float = 1.0,
               **_: Any) -> Any:
    """`aten.normal_functional` (functional `normal_`)."""
    return _normal(key, start, tuple(x.shape), x.dtype) * std + mean


#: overload name -> (implementation, tensor arguments' positions, counters per element).
_IMPLS: dict[str, tuple[Callable[..., Any], tuple[int, ...], int]] = {
    "aten::native_dropout": (_dropout, (0,), 1),
    "aten::bernoulli.p": (_bernoulli_p, (0,), 1),
    "aten::bernoulli": (_bernoulli_tensor, (0,), 1),
    "aten::bernoulli.Tensor": (_bernoulli_tensor, (0, 1), 1),
    "aten::rand": (_rand, (), 1),
    "aten::rand_like": (_rand_like, (0,), 1),
    "aten::uniform": (_uniform_op, (0,), 1),
    "aten::randn": (_randn, (), 2),
    "aten::randn_like": (_randn_like, (0,), 2),
    "aten::normal_functional": (_normal_op, (0,), 2),
}


def is_random(node: Any) -> bool:
    """Whether FX `node` calls an op that draws from torch's generator."""
    import torch

    return node.op == "call_function" and \
        torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())


def _name(node: Any) -> str:
    """`aten::<op>[.<overload>]` of a call_function node (no `.default`)."""
    return str(node.target.name()).removesuffix(".default")


def source_line(stack_trace: str | None) -> str:
    """The innermost `File "...", line N, in f` of `stack_trace` that is no generated FX
    code, or ''."""
    lines = [ln.strip() for ln in (stack_trace or "").splitlines()
             if ln.strip().startswith("File ") and "<eval_with_key>" not in ln]
    return lines[-1] if lines else ""


def unsupported(gm: Any, where: Callable[[Any], str] | None = None) -> str | None:
    """The first random op of `gm` this module cannot rewrite, as `aten.<op> (<source
    line>)`, or None. `where(node)` gives the line when the node's own stack trace has
    none (a graph traced from generated code)."""
    for node in gm.graph.nodes:
        explicit = node.op == "call_function" and node.kwargs.get("generator") is not None
        if is_random(node) and (_name(node) not in _IMPLS or explicit):
            line = source_line(node.meta.get("stack_trace")) or \
                (where(node) if where is not None else "")
            return (f"aten.{_name(node).removeprefix('aten::')}"
                    f"{' with an explicit generator' if explicit else ''}"
                    f"{f' ({line})' if line else ''}")
    return None


def functionalize_random(gm: Any, what: str, where: Callable[[Any], str] | None = None
                         ) -> int:
    """Rewrite `gm`'s random ops in place (see the module docstring); returns how many.

    With at least one, `gm` gains a last placeholder `rng_key` (an int64 0-d tensor: pass
    `draw_key()` there on every call). Raises `AccelError` naming `what`, the op and its
    source line (`unsupported`) for a random op without a rewrite (`randperm`,
    `multinomial`, ...)."""
    import torch

    bad = unsupported(gm, where)
    if bad is not None:
        supported = ", ".join(sorted(n.removeprefix("aten::") for n in _IMPLS))
        raise AccelError(f"{what}: random op {bad} is not supported in compiled code "
                         f"(supported: {supported})")
    nodes = [n for n in gm.graph.nodes if is_random(n)]
    if not nodes:
        return 0
    graph = gm.graph
    last = list(graph.find_nodes(op="placeholder"))[-1]
    with graph.inserting_after(last):
        key = graph.placeholder("rng_key")
    key.meta["val"] = torch.zeros((), dtype=torch.int64)
    start = 0
    for node in nodes:
        impl, tensor_args, per_element = _IMPLS[_name(node)]
        start = _inline(graph, node, impl, tensor_args, key, start, per_element)
    graph.eliminate_dead_code()
    graph.lint()
    gm.recompile()
    return len(nodes)


def _inline(graph: Any, node: Any, impl: Callable[..., Any], tensor_args: tuple[int, ...],
            key: Any, start: int, per_element: int) -> int:
    """Replace `node` with `impl`'s aten ops (traced by make_fx); returns the next free
    counter."""
    import operator

    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    args = list(node.args)
    kwargs = {k: v for k, v in node.kwargs.items() if k != "generator"}
    sources = [args[i] for i in tensor_args if i < len(args) and
               isinstance(args[i], torch.fx.Node)]
    examples = [torch.zeros(tuple(s.meta["val"].shape), dtype=s.meta["val"].dtype)
                for s in sources]
    value = node.meta.get("val")
    first = value[0] if isinstance(value, tuple | list) else value
    count = per_element * math.prod(tuple(first.shape))

    def traced(k: Any, *tensors: Any) -> Any:
        call = list(args)
        for i, t in zip([i for i in tensor_args if i < len(args) and
                         isinstance(args[i], torch.fx.Node)], tensors, strict=True):
            call[i] = t
        return impl(k, start, *call, **kwargs)

    sub = make_fx(traced, tracing_mode="fake")(torch.zeros((), dtype=torch.int64), *examples)
    env: dict[Any, Any] = dict(zip(sub.graph.find_nodes(op="placeholder"), [key, *sources],
                                   strict=True))
    stack = node.meta.get("stack_trace")
    with graph.inserting_before(node):
        for sub_node in sub.graph.nodes:
            if sub_node.op == "call_function":
                env[sub_node] = graph.node_copy(sub_node, lambda a: env[a])
                if stack:
                    env[sub_node].meta["stack_trace"] = stack
            elif sub_node.op == "get_attr":
                raise AccelError(f"internal error: the rewrite of {_name(node)} has a "
                                 "tensor constant")
    result = sub.graph.output_node().args[0]
    if isinstance(result, tuple | list):
        for user in list(node.users):
            if user.op != "call_function" or user.target is not operator.getitem:
                raise AccelError(f"internal error: {_name(node)}'s result used whole")
            user.replace_all_uses_with(env[result[user.args[1]]])
            graph.erase_node(user)
    else:
        node.replace_all_uses_with(env[result])
    graph.erase_node(node)
    return start + count


def draw_key() -> Any:
    """A fresh key (an int64 0-d tensor): one draw from torch's default CPU generator, so
    `torch.manual_seed` makes a run's keys, and so its random numbers, repeatable."""
    import torch

    return torch.empty((), dtype=torch.int64).random_()

