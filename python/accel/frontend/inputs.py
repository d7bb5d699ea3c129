"""The structure of a model's inputs: what a compiled call flattens into the flat tensors.

`accel.compile(model, args, example_kwargs=kwargs)` exports `model(*args, **kwargs)`;
torch.export flattens `(args, kwargs)` into leaves (tensors inside tuples, lists, dicts, HF
caches, ...) and the compiled function takes the tensor leaves, in that order. A leaf that
is not a tensor (`use_cache=True`, a `None`) was fixed at compile time: a call must pass the
same value. `describe(exported)` records this; `InputStructure.flatten(args, kwargs)` turns
a call's arguments into the compiled function's arguments (every leaf: torch-mlir's importer
keeps a fixed bool as an `i1` argument), with a one-line error when their structure or a
fixed value differs from the example's.

Plain calls (positional tensors only, no kwargs) have no structure (`describe` gives None)
and keep the flat call path at no cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from accel.diagnostics import AccelError
from accel.frontend.outputs import _SCALARS, user_leaves


@dataclass(frozen=True)
class InputStructure:
    """The pytree spec of `(args, kwargs)`, which leaves are tensor inputs, the values of
    the others, and each leaf's name for messages (`cache.key_cache[0]`)."""

    spec: Any                              # torch.utils._pytree.TreeSpec
    tensors: tuple[int, ...]               # the leaves that are tensors
    constants: dict[int, Any] = field(default_factory=dict)  # the others, fixed
    names: tuple[str, ...] = ()

    def flatten(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The compiled function's arguments for a call `(*args, **kwargs)`: every leaf
        (the fixed values too: the function takes them as scalars)."""
        from torch.utils._pytree import tree_flatten

        kwargs = self._ordered(kwargs)
        leaves, spec = tree_flatten((tuple(args), kwargs))
        if spec != self.spec:
            raise AccelError(f"compiled call: {self._difference(args, kwargs)}; call it "
                             "with arguments of the example inputs' structure, or compile "
                             "again for this one")
        for i, value in self.constants.items():
            if not _same(leaves[i], value):
                raise AccelError(f"compiled call: argument {self.names[i]} is "
                                 f"{_short(leaves[i])}, but it was {_short(value)} when "
                                 "compiled (non-tensor arguments are fixed at compile time; "
                                 "compile again for this value)")
        return leaves

    def _ordered(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """`kwargs` in the example's key order (a dict's order is part of its spec)."""
        order = self.spec.child(1).context if self.spec.num_children == 2 else None
        if not isinstance(order, list) or set(order) != set(kwargs):
            return kwargs
        return {k: kwargs[k] for k in order}

    def _difference(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        """The first place where a call's structure leaves the example's, in words."""
        from torch.utils._pytree import keystr, tree_flatten_with_path

        try:
            got = [keystr(p) for p, _ in tree_flatten_with_path((tuple(args), kwargs))[0]]
        except Exception as err:  # noqa: BLE001 - an unknown container type, say
            return f"its arguments cannot be flattened ({type(err).__name__}: {err})"
        want = list(self.names)
        got = [_pretty(n) for n in got]
        missing = [n for n in want if n not in got]
        extra = [n for n in got if n not in want]
        if missing:
            return f"argument {missing[0]} is missing ({len(got)} values given, " \
                   f"{len(want)} when compiled)"
        if extra:
            return f"argument {extra[0]} was not there when compiled"
        return "an argument's container differs from the example's (e.g. another cache " \
               "class or layout, or a different number of layers)"

    def to_json(self) -> dict[str, Any] | None:
        """The JSON form, or None when the spec cannot be written as text."""
        from torch.utils._pytree import treespec_dumps

        try:
            text = treespec_dumps(self.spec)
        except Exception:  # noqa: BLE001 - NotImplementedError, TypeError for unknown types
            return None
        return {"spec": text, "tensors": list(self.tensors),
                "constants": [[i, v] for i, v in sorted(self.constants.items())],
                "names": list(self.names)}

    @staticmethod
    def from_json(value: Any) -> InputStructure | None:
        """The structure `to_json` wrote; None for None or anything malformed."""
        if not isinstance(value, dict) or not isinstance(value.get("spec"), str):
            return None
        from torch.utils._pytree import treespec_loads

        from accel.frontend import hf_cache

        hf_cache.register(value["spec"])
        try:
            spec = treespec_loads(value["spec"])
            tensors = tuple(int(i) for i in value["tensors"])
            constants = {int(i): v for i, v in value.get("constants", [])
                         if isinstance(v, _SCALARS)}
            names = tuple(str(n) for n in value.get("names", []))
        except Exception:  # noqa: BLE001 - a damaged or foreign spec
            return None
        if len(names) != spec.num_leaves or \
                sorted((*tensors, *constants)) != list(range(spec.num_leaves)):
            return None
        return InputStructure(spec, tensors, constants, names)


def describe(exported: Any) -> InputStructure | None:
    """The input structure of an exported program; None for plain positional tensors."""
    import torch
    from torch.export.graph_signature import ConstantArgument, InputKind, TensorArgument
    from torch.utils._pytree import keystr, tree_flatten_with_path, tree_unflatten

    spec = exported.call_spec.in_spec
    user = user_leaves(spec, exported.graph_signature.input_specs, InputKind.USER_INPUT)
    if user is None:
        return None
    tensors, constants = [], {}
    for i, s in enumerate(user):
        if isinstance(s.arg, TensorArgument):
            tensors.append(i)
        elif isinstance(s.arg, ConstantArgument) and isinstance(s.arg.value, _SCALARS):
            constants[i] = s.arg.value
        else:
            raise AccelError(f"input {i} of the exported program is a "
                             f"{type(s.arg).__name__}: accel takes tensors and fixed "
                             "bool/int/float/str/None values")
    # Placeholder tensors: containers that keep tensors apart from other values (HF caches)
    # rebuild with the same leaves.
    blanks = [torch.empty(0) for _ in range(spec.num_leaves)]
    paths = tree_flatten_with_path(tree_unflatten(blanks, spec))[0]
    names = tuple(_pretty(keystr(p)) for p, _ in paths)
    plain = not constants and spec.num_children == 2 and spec.child(1).num_leaves == 0 and \
        all(c.is_leaf() for c in spec.child(0).children())
    if plain:
        return None
    return InputStructure(spec, tuple(tensors), constants, names)


def _pretty(path: str) -> str:
    """`[0][1]` -> `args[1]`, `[1]['cache']...` -> `cache...`: names as the user wrote them."""
    if path.startswith("[0]"):
        return "args" + path[3:]
    if path.startswith("[1]['"):
        key, _, rest = path[5:].partition("']")
        return key + rest
    return path


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


__all__ = ["InputStructure", "describe"]
