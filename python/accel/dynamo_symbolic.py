"""Dynamo graphs with symbolic shapes, compiled once for every size.

When a size changes between calls (a KV cache growing by one token per step in
`generate()`), dynamo recompiles the frame with that size symbolic ("automatic dynamic
shapes"), or from the start with `torch.compile(dynamic=True)`. The graph it hands the
backend then takes tensors whose fake values have symbolic sizes (`s0`) and, often, the
sizes themselves as SymInt inputs. `plan(gm, example_inputs)` turns such a graph into what
`accel.compile` exports with `dynamic_shapes`:

- a callable on the graph's tensor inputs only, which passes each SymInt input as the size
  of a tensor input that has it (`tensors[3].shape[2]`): under torch.export that is the
  same symbol, at run time the real size;
- the example tensors (real ones; fake ones materialised at their hinted sizes);
- one `torch.export.Dim.DYNAMIC` per symbolic tensor dimension, so torch.export finds the
  relations between them itself (two cache tensors of one length share a size).

A graph whose SymInt inputs are not tensor sizes (a symbolic Python int argument) gets a
reason instead, and runs eagerly. After compiling, `still_dynamic` checks that torch.export
did not specialise a dimension dynamo had made symbolic (the code would refuse the next
size); such a graph runs eagerly too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class SymbolicPlan:
    """A symbolic dynamo graph as `accel.compile` takes it (see the module docstring)."""

    call: Callable[..., Any]
    tensors: tuple[torch.Tensor, ...]
    dynamic_shapes: tuple[dict[int, Any] | None, ...]
    #: Positions of the tensor inputs among the graph's inputs.
    positions: tuple[int, ...]


def is_symbolic(example_inputs: list[Any]) -> bool:
    """Whether dynamo gave the graph symbolic sizes (SymInt inputs, symbolic shapes)."""
    for x in example_inputs:
        if isinstance(x, torch.SymInt):
            return True
        if isinstance(x, torch.Tensor) and not all(isinstance(d, int) for d in x.shape):
            return True
    return False


def _expr(value: Any) -> Any:
    return value.node.expr if isinstance(value, torch.SymInt) else None


def plan(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> SymbolicPlan | str:
    """The plan for a graph with symbolic sizes, or the reason it cannot be compiled."""
    import sympy

    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    if len(placeholders) != len(example_inputs):
        return "the graph's inputs do not match its example inputs"
    sizes: dict[Any, tuple[int, int]] = {}  # symbol -> (tensor number, dim)
    tensors: list[torch.Tensor] = []
    dynamic: list[dict[int, Any] | None] = []
    positions: list[int] = []
    for i, (node, x) in enumerate(zip(placeholders, example_inputs, strict=True)):
        if not isinstance(x, torch.Tensor):
            continue
        fake = node.meta.get("example_value", x)
        if not isinstance(fake, torch.Tensor):
            return f"input {node.name} is a tensor without a traced value"
        dims = {}
        for d, size in enumerate(fake.shape):
            expr = _expr(size)
            if expr is None:
                continue
            dims[d] = torch.export.Dim.DYNAMIC
            if isinstance(expr, sympy.Symbol):
                sizes.setdefault(expr, (len(tensors), d))
        tensors.append(_real(x))
        dynamic.append(dims or None)
        positions.append(i)
    steps: list[tuple[bool, int, int]] = []  # (is a size, tensor number, dim)
    tensor_number = {p: n for n, p in enumerate(positions)}
    for i, (node, x) in enumerate(zip(placeholders, example_inputs, strict=True)):
        if i in tensor_number:
            steps.append((False, tensor_number[i], 0))
            continue
        expr = _expr(x) if isinstance(x, torch.SymInt) else _expr(node.meta.get("example_value"))
        if expr is None or expr not in sizes:
            return (f"input {node.name} is a symbolic integer ({expr if expr is not None else x}) "
                    "that is not the size of a tensor input")
        steps.append((True, *sizes[expr]))

    def call(*args: torch.Tensor) -> Any:
        return gm(*[args[n].shape[d] if size else args[n] for size, n, d in steps])

    return SymbolicPlan(call, tuple(tensors), tuple(dynamic), tuple(positions))


def _real(x: torch.Tensor) -> torch.Tensor:
    """A real tensor for `x`: itself, or zeros at the hinted sizes of a fake one."""
    if not isinstance(x, torch._subclasses.FakeTensor) and \
            all(isinstance(d, int) for d in x.shape):
        return x
    shape = [d if isinstance(d, int) else d.node.hint for d in x.shape]
    return torch.zeros(shape, dtype=x.dtype)


def still_dynamic(compiled: Any, symbolic: SymbolicPlan) -> str | None:
    """None when every dimension dynamo made symbolic is dynamic in the compiled code; else
    which one torch.export fixed (then the code would refuse the next size)."""
    args = compiled.compiled.functions[compiled.func_name].args
    for n, dims in enumerate(symbolic.dynamic_shapes):
        for d in dims or ():
            if n < len(args) and d < len(args[n].shape) and args[n].shape[d] is not None:
                return (f"torch.export fixed dimension {d} of tensor input {n} at "
                        f"{args[n].shape[d]}, which dynamo made symbolic")
    return None


__all__ = ["SymbolicPlan", "is_symbolic", "plan", "still_dynamic"]
