"""The structure of a model's outputs, rebuilt around the compiled code's flat results.

torch.export flattens what `forward` returns (tensors in tuples, lists, dicts, namedtuples,
HF `ModelOutput`s, Python numbers) into leaves, and the compiled function returns the leaves
in that order (a number as a 0-d array). `describe(exported)` records the pytree structure
and the constant leaves; `CompiledModule` calls `rebuild` so a compiled model returns what
eager returns: `(y,)` stays a 1-tuple, `{"logits": y}` a dict, a `ModelOutput` a
`ModelOutput`, a constant `3` the int 3, a computed `int(x)` an int.

The two shapes the flat results already have are left alone (no per-call cost): one
tensor, and a plain tuple of two or more tensors. The structure is saved with the front
cache entry and the artifact as `torch.utils._pytree.treespec_dumps` text; a structure that
text cannot hold (a namedtuple, a container type registered without a serialized name)
still applies in this process, but the front cache does not keep such a model and its
artifact returns the flat results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Constant leaves kept as themselves (anything else makes the structure unknown: flat).
_SCALARS = (bool, int, float, str, type(None))
#: What a computed Python-number output becomes (`OutputStructure.numbers`).
_NUMBER_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool}


@dataclass(frozen=True)
class OutputStructure:
    """A pytree spec of the outputs and its constant leaves (leaf index -> value)."""

    spec: Any                      # torch.utils._pytree.TreeSpec
    constants: dict[int, Any] = field(default_factory=dict)
    #: Output leaf -> the user input (leaf index) it is, after that input's in-place update
    #: (a `StaticCache`'s keys: updated with `index_copy_` and returned). The call returns
    #: the input itself, as eager does, not a copy.
    aliases: dict[int, int] = field(default_factory=dict)
    #: Output leaf -> "int" / "float" / "bool": a Python number the model computes
    #: (`int(x)`, `x.item()`: a SymInt/SymFloat/SymBool output of the exported program),
    #: which the code returns as a 0-d array and the call as that Python number, as eager.
    numbers: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any] | None:
        """The JSON form, or None when the spec cannot be written as text."""
        from torch.utils._pytree import treespec_dumps

        try:
            text = treespec_dumps(self.spec)
        except Exception:  # noqa: BLE001 - NotImplementedError, TypeError for unknown types
            return None
        return {"spec": text, "constants": [[i, v] for i, v in sorted(self.constants.items())],
                "aliases": sorted(self.aliases.items()),
                "numbers": sorted(self.numbers.items())}

    @staticmethod
    def from_json(value: Any) -> OutputStructure | None:
        """The structure `to_json` wrote; None for None or anything malformed (flat)."""
        if not isinstance(value, dict) or not isinstance(value.get("spec"), str):
            return None
        from torch.utils._pytree import treespec_loads

        from accel.frontend import hf_cache

        hf_cache.register(value["spec"])  # an HF cache in the outputs
        try:
            spec = treespec_loads(value["spec"])
            constants = {int(i): v for i, v in value.get("constants", [])
                         if isinstance(v, _SCALARS)}
            aliases = {int(i): int(k) for i, k in value.get("aliases", [])}
            numbers = {int(i): str(t) for i, t in value.get("numbers", [])}
        except Exception:  # noqa: BLE001 - a damaged or foreign spec: the flat results
            return None
        if any(not 0 <= i < spec.num_leaves or k < 0 for i, k in aliases.items()) or \
                any(t not in _NUMBER_TYPES for t in numbers.values()):
            return None
        return OutputStructure(spec, constants, aliases, numbers)


def describe(exported: Any) -> OutputStructure | None:
    """The output structure of an exported program, or None when the flat results already
    are what eager returns (one tensor; a tuple of 2+ tensors) or it cannot be described."""
    from torch.export.graph_signature import (
        ConstantArgument,
        InputKind,
        OutputKind,
        SymBoolArgument,
        SymFloatArgument,
        SymIntArgument,
        TensorArgument,
    )

    spec = exported.call_spec.out_spec
    user = user_leaves(spec, exported.graph_signature.output_specs, OutputKind.USER_OUTPUT)
    if user is None:
        return None
    constants: dict[int, Any] = {}
    numbers: dict[int, str] = {}
    kinds = {SymIntArgument: "int", SymFloatArgument: "float", SymBoolArgument: "bool"}
    for i, s in enumerate(user):
        if isinstance(s.arg, ConstantArgument):
            if not isinstance(s.arg.value, _SCALARS):
                return None
            constants[i] = s.arg.value
        elif type(s.arg) in kinds:
            numbers[i] = kinds[type(s.arg)]
        elif not isinstance(s.arg, TensorArgument):
            return None  # anything else: left flat
    aliases = _aliases(exported, user, InputKind, OutputKind)
    if not constants and not aliases and not numbers and (spec.is_leaf() or (
            spec.type is tuple and spec.num_leaves >= 2
            and all(c.is_leaf() for c in spec.children()))):
        return None
    return OutputStructure(spec, constants, aliases, numbers)


def user_leaves(spec: Any, specs: list[Any], kind: Any) -> list[Any] | None:
    """The signature's `specs` of `kind` (the user's inputs or outputs), one per leaf of
    the pytree `spec`; None when there is no spec or its leaves are not those specs."""
    if spec is None:
        return None
    user = [s for s in specs if s.kind == kind]
    return user if spec.num_leaves == len(user) else None


def _aliases(exported: Any, user: list[Any], input_kind: Any, output_kind: Any
             ) -> dict[int, int]:
    """Output leaf -> user input leaf, for outputs that are an input's updated value."""
    inputs = [s.arg.name for s in exported.graph_signature.input_specs
              if s.kind == input_kind.USER_INPUT]
    updated = {s.arg.name: inputs.index(s.target)
               for s in exported.graph_signature.output_specs
               if s.kind == output_kind.USER_INPUT_MUTATION and s.target in inputs}
    return {i: updated[s.arg.name] for i, s in enumerate(user)
            if getattr(s.arg, "name", None) in updated}


def rebuilder(structure: OutputStructure | None, count: int
              ) -> Callable[[list[Any]], Any] | None:
    """A function from the `count` flat results to the structured outputs, or None (the
    flat default: one result as itself, several as a tuple)."""
    if structure is None or structure.spec.num_leaves != count:
        return None
    from torch.utils._pytree import tree_unflatten

    spec, constants = structure.spec, structure.constants
    numbers = {i: _NUMBER_TYPES[t] for i, t in structure.numbers.items()}

    def rebuild(flat: list[Any]) -> Any:
        leaves = [constants[i] if i in constants else
                  numbers[i](v.item()) if i in numbers else v for i, v in enumerate(flat)]
        return tree_unflatten(leaves, spec)

    return rebuild


__all__ = ["OutputStructure", "describe", "rebuilder"]
