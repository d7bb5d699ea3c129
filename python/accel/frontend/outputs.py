"""The structure of a model's outputs, rebuilt around the compiled code's flat results.

torch.export flattens what `forward` returns (tensors in tuples, lists, dicts, namedtuples,
HF `ModelOutput`s, Python numbers) into leaves, and the compiled function returns the leaves
in that order (a number as a 0-d array). `describe(exported)` records the pytree structure
and the constant leaves; `CompiledModule` calls `rebuild` so a compiled model returns what
eager returns: `(y,)` stays a 1-tuple, `{"logits": y}` a dict, a `ModelOutput` a
`ModelOutput`, a constant `3` the int 3.

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


@dataclass(frozen=True)
class OutputStructure:
    """A pytree spec of the outputs and its constant leaves (leaf index -> value)."""

    spec: Any                      # torch.utils._pytree.TreeSpec
    constants: dict[int, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any] | None:
        """The JSON form, or None when the spec cannot be written as text."""
        from torch.utils._pytree import treespec_dumps

        try:
            text = treespec_dumps(self.spec)
        except Exception:  # noqa: BLE001 - NotImplementedError, TypeError for unknown types
            return None
        return {"spec": text, "constants": [[i, v] for i, v in sorted(self.constants.items())]}

    @staticmethod
    def from_json(value: Any) -> OutputStructure | None:
        """The structure `to_json` wrote; None for None or anything malformed (flat)."""
        if not isinstance(value, dict) or not isinstance(value.get("spec"), str):
            return None
        from torch.utils._pytree import treespec_loads

        try:
            spec = treespec_loads(value["spec"])
            constants = {int(i): v for i, v in value.get("constants", [])
                         if isinstance(v, _SCALARS)}
        except Exception:  # noqa: BLE001 - a damaged or foreign spec: the flat results
            return None
        return OutputStructure(spec, constants)


def describe(exported: Any) -> OutputStructure | None:
    """The output structure of an exported program, or None when the flat results already
    are what eager returns (one tensor; a tuple of 2+ tensors) or it cannot be described."""
    from torch.export.graph_signature import ConstantArgument, OutputKind, TensorArgument

    spec = exported.call_spec.out_spec
    if spec is None:
        return None
    user = [s for s in exported.graph_signature.output_specs
            if s.kind == OutputKind.USER_OUTPUT]
    if spec.num_leaves != len(user):
        return None
    constants: dict[int, Any] = {}
    for i, s in enumerate(user):
        if isinstance(s.arg, ConstantArgument):
            if not isinstance(s.arg.value, _SCALARS):
                return None
            constants[i] = s.arg.value
        elif not isinstance(s.arg, TensorArgument):
            return None  # symbolic sizes and the like: left flat
    if not constants and (spec.is_leaf() or (
            spec.type is tuple and spec.num_leaves >= 2
            and all(c.is_leaf() for c in spec.children()))):
        return None
    return OutputStructure(spec, constants)


def rebuilder(structure: OutputStructure | None, count: int
              ) -> Callable[[list[Any]], Any] | None:
    """A function from the `count` flat results to the structured outputs, or None (the
    flat default: one result as itself, several as a tuple)."""
    if structure is None or structure.spec.num_leaves != count:
        return None
    from torch.utils._pytree import tree_unflatten

    spec, constants = structure.spec, structure.constants

    def rebuild(flat: list[Any]) -> Any:
        leaves = [constants[i] if i in constants else v for i, v in enumerate(flat)]
        return tree_unflatten(leaves, spec)

    return rebuild


__all__ = ["OutputStructure", "describe", "rebuilder"]
