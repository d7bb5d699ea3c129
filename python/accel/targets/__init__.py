"""Targets: one plug-in per device behind one interface (`accel.targets.base.Target`).

The registry maps a name to the module that defines the target, and imports it only when
the target is asked for, so `import accel` and `--help` stay cheap and a target's heavy
dependencies (the CUDA driver, YAML rule lists) load only when used.

    from accel import targets
    cpu = targets.get("cpu")            # the Target instance
    targets.names()                     # ('cpu', 'mncore', 'nvgpu', 'rdu')

Adding a target: a package `accel/targets/<name>/` with a `TARGET` instance of a `Target`
subclass, and one line in `_REGISTRY` (docs/architecture.md, "adding a target").
Tests and plug-ins may `register(name, "module.path")` more.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from accel.diagnostics import AccelError

if TYPE_CHECKING:
    from accel.targets.base import Target

#: name -> module defining `TARGET` (imported on first use).
_REGISTRY: dict[str, str] = {
    "cpu": "accel.targets.cpu",
    "mncore": "accel.targets.mncore",
    "nvgpu": "accel.targets.nvgpu",
    "rdu": "accel.targets.rdu",
}
_LOADED: dict[str, Target] = {}


class UnknownTarget(AccelError, ValueError):
    """A target name nobody registered."""


def names() -> tuple[str, ...]:
    """Every registered target name, sorted."""
    return tuple(sorted(_REGISTRY))


def register(name: str, module: str) -> None:
    """Register (or replace) target `name`, defined as `TARGET` in `module`."""
    _REGISTRY[name] = module
    _LOADED.pop(name, None)


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)
    _LOADED.pop(name, None)


def get(name: str) -> Target:
    """The target called `name`; `UnknownTarget` lists the valid names."""
    found = _LOADED.get(name)
    if found is not None:
        return found
    module = _REGISTRY.get(name) if isinstance(name, str) else None
    if module is None:
        raise UnknownTarget(f"unknown target {name!r} (choose from {', '.join(names())})")
    target = importlib.import_module(module).TARGET
    if target.name != name:
        raise AccelError(f"internal error: {module}.TARGET is named {target.name!r}, "
                         f"registered as {name!r}")
    _LOADED[name] = target
    return target


def no_aot(name: str) -> str:
    """The one line that refuses `aot=True` on target `name`, which has no AOT libraries
    (here, not in `base`: the interface imports no registry)."""
    have = [n for n in names() if get(n).has_aot]
    return (f"target '{name}' has no AOT libraries yet (option 'aot'; targets with them: "
            f"{', '.join(have)})")
