"""Which PyTorch operator each MLIR op comes from, carried in the ops' locations.

Targets that cut a graph by PyTorch operator (the RDU's sections: `linear`, `softmax`,
`layer_norm`, ...) need, for each linalg op, the torch-level operator it was lowered from.
Lowering keeps locations, so `annotate` puts that fact into the location the FX importer
builds for each node: it prepends one synthetic frame to the node's stack trace,

    File "torch.op:aten.addmm.default|addmm_2|model.h.0.mlp.c_fc=transformers...Conv1D", line 1,

which the importer turns into the outermost caller of the node's call-site location. The
innermost frame (what diagnostics report) stays the user's source line. `parse` reads it back
from any op's location: the original aten operator (before decompositions), the name of the
original FX node (one per torch operator: all ops decomposed from it share it) and the stack
of enclosing modules (path, class, annotations such as `hypersection`).

Opt-in (`import_program(..., provenance=True)`): other targets keep their plain locations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: The synthetic file name's prefix (what `parse` looks for).
PREFIX = "torch.op:"
#: Attribute of an `nn.Module` (instance or class) naming its annotations, e.g.
#: ("hypersection",) from `accel.rdu.hypersection`.
ANNOTATIONS = "accel_annotations"
#: Key of `node.meta["custom"]` set by `torch.fx.traceback.annotate` (context managers).
CUSTOM_KEY = "accel_annotations"
_FRAME = re.compile(r'"' + re.escape(PREFIX) + r'([^"]*)"')


@dataclass(frozen=True)
class Module:
    """One enclosing `nn.Module`: its path in the model, class name and annotations."""

    path: str
    cls: str
    annotations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Provenance:
    """The torch operator an op comes from."""

    aten: str               # e.g. "aten.addmm.default" (the op before decompositions)
    origin: str             # the original FX node's name, unique per torch operator call
    modules: tuple[Module, ...] = ()
    annotations: tuple[str, ...] = ()  # from `annotate` context managers around the call

    @property
    def module(self) -> Module | None:
        """The innermost enclosing module."""
        return self.modules[-1] if self.modules else None


def _clean(text: str) -> str:
    return re.sub(r'["|=;,\s]', "_", text)


def _encode(aten: str, origin: str, modules: list[Module], annotations: tuple[str, ...]) -> str:
    parts = [_clean(aten), _clean(origin), ",".join(_clean(a) for a in annotations)]
    parts += [f"{_clean(m.path)}={_clean(m.cls)}" +
              "".join(f";{_clean(a)}" for a in m.annotations) for m in modules]
    return PREFIX + "|".join(parts)


def _annotations(obj: Any) -> tuple[str, ...]:
    value = getattr(obj, ANNOTATIONS, ())
    return tuple(str(a) for a in value) if isinstance(value, tuple | list) else ()


def annotate(graph: Any, root: Any) -> None:
    """Prepend the provenance frame to every `call_function` node's stack trace.

    `graph` is the (decomposed) exported FX graph; `root` the exported `nn.Module`, whose
    submodules' annotations (`accel_annotations`) are recorded with the module stack.
    """
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        sources = node.meta.get("from_node") or []
        first = sources[0] if sources else None
        origin = getattr(first, "name", None) or node.name
        aten = str(getattr(first, "target", None) or node.target)
        modules = []
        for path, cls in (node.meta.get("nn_module_stack") or {}).values():
            try:
                sub = root.get_submodule(path) if path else root
            except AttributeError:
                sub = None
            name = cls if isinstance(cls, str) else getattr(cls, "__qualname__", str(cls))
            modules.append(Module(path, name, _annotations(sub)))
        custom = node.meta.get("custom") or {}
        marks = custom.get(CUSTOM_KEY, ()) if isinstance(custom, dict) else ()
        marks = (marks,) if isinstance(marks, str) else tuple(str(m) for m in marks)
        frame = f'  File "{_encode(aten, origin, modules, marks)}", line 1, in <torch op>\n'
        node.meta["stack_trace"] = frame + (node.meta.get("stack_trace") or "")


def parse(location: Any) -> Provenance | None:
    """The provenance in `location` (an MLIR Location or its text), or None."""
    found = _FRAME.search(str(location))
    if found is None:
        return None
    parts = found.group(1).split("|")
    if len(parts) < 3:
        return None
    modules = []
    for item in parts[3:]:
        head, *marks = item.split(";")
        path, _, cls = head.partition("=")
        modules.append(Module(path, cls, tuple(marks)))
    marks = tuple(a for a in parts[2].split(",") if a)
    return Provenance(parts[0], parts[1], tuple(modules), marks)


__all__ = ["ANNOTATIONS", "CUSTOM_KEY", "Module", "Provenance", "annotate", "parse"]
