"""The interface every target implements, and what a compiled program looks like.

A target turns a linalg-on-tensors module (what `accel.frontend` imports from PyTorch, or
MLIR text) into an `Executable`: something with `functions` (name -> `Signature`) whose
items are callables on numpy arrays. `accel.api.CompiledModule` wraps any executable with
the torch/numpy call conventions, so a target never sees torch.

    class MyTarget(Target):
        name = "mine"
        def compile(self, module_text, options, *, weights=None): ...

Each target keeps its presets as data (`presets.json` beside its module: {"default": NAME,
"presets": {NAME: {option: value}}}), saves and loads its part of an artifact folder, and
can describe a compiled program (`report`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from accel.diagnostics import AccelError, NotSupportedYet


class Executable(Protocol):
    """A compiled program: `functions` and, per function, a callable on numpy arrays."""

    functions: Mapping[str, Any]
    weights: Mapping[str, np.ndarray]

    def __getitem__(self, name: str) -> Any: ...


class Target:
    """Base class of targets. Subclasses set `name`, `summary` and implement `compile`,
    `save` and `load`; presets come from `presets.json` in the subclass's package."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    #: Package holding presets.json (default: the subclass's module's package).
    data_package: ClassVar[str | None] = None
    #: Whether `compile` needs each op's torch operator in its location (sectioning by
    #: operator: `accel.frontend.provenance`).
    torch_provenance: ClassVar[bool] = False

    # -- presets and devices --------------------------------------------------------------
    @cached_property
    def _preset_file(self) -> dict[str, Any]:
        package = self.data_package or type(self).__module__
        try:
            text = resources.files(package).joinpath("presets.json").read_text("utf-8")
        # TypeError: a plain module, not a package (test and plug-in targets)
        except (FileNotFoundError, ModuleNotFoundError, OSError, TypeError):
            return {"default": None, "presets": {}}
        data = json.loads(text)
        return {"default": data.get("default"), "presets": dict(data.get("presets", {}))}

    def presets(self) -> dict[str, dict[str, Any]]:
        """Named option sets (data in the target's folder), in the order they are listed."""
        return self._preset_file["presets"]

    @property
    def default_preset(self) -> str | None:
        return self._preset_file["default"]

    def file_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Options the target reads from a file that `options` (preset applied, then what
        was given) names; `accel.settings.merge` applies them over the preset and under
        what was given, so an explicit option always wins (mncore: option_json's args)."""
        return {}

    def phases(self, options: Mapping[str, Any]) -> list[str]:
        """The phases `compile` records (accel.phases), in order: the progress line's steps."""
        return []

    def devices(self) -> tuple[str, ...]:
        """Allowed values of the `device` option for this target."""
        return ("host",)

    # -- compile, artifacts ---------------------------------------------------------------
    def check(self, options: Mapping[str, Any]) -> None:
        """Refuse, before any work, what this target cannot do with these options."""

    def compile(self, module: Any, options: Mapping[str, Any], *,
                weights: Mapping[str, np.ndarray] | None = None) -> Executable:
        """Compile a linalg-on-tensors module (text or `Module`) with resolved `options`
        (an `accel.settings.Settings`, resolved once at the entry point: read it, never
        resolve it again; a host program's settings come from `options.for_host(...)`);
        `weights` binds the module's external weights (name -> array) by name."""
        raise NotImplementedError

    def from_cache(self, key: str, options: Mapping[str, Any],
                   weights: Mapping[str, np.ndarray]) -> Executable | None:
        """The executable a compile with cache key `key` stored, or None (front cache)."""
        return None

    def cache_key(self, module_text: str, options: Mapping[str, Any]) -> str | None:
        """The compile-cache key `compile` uses for this module, or None (no cache)."""
        return None

    def save(self, executable: Executable, folder: Path) -> dict[str, Any]:
        """Write the target's files of an artifact into `folder`; returns the manifest's
        "target_files" entry (file names and checksums)."""
        raise NotImplementedError(f"target {self.name} cannot save artifacts yet")

    def load(self, folder: Path, manifest: Mapping[str, Any],
             weights: Mapping[str, np.ndarray]) -> Executable:
        """The executable an artifact folder holds (`save`'s files, validated)."""
        raise NotImplementedError(f"target {self.name} cannot load artifacts yet")

    def build_aot(self, executable: Executable, entry: str, options: Mapping[str, Any]) -> Any:
        """Build an ahead-of-time library of function `entry` of `executable` into
        `options["output_folder"]` (options of scope `aot` and the target's own); returns
        the library (its `files`: kind -> path). A target without one refuses in one line."""
        raise NotSupportedYet(f"target '{self.name}' has no AOT libraries yet (option 'aot')")

    @property
    def has_aot(self) -> bool:
        """Whether `build_aot` builds libraries (checked with the options, before work)."""
        return type(self).build_aot is not Target.build_aot

    def report(self, executable: Executable) -> str:
        """A human-readable summary of a compiled program (compile.log)."""
        return "\n".join(f"@{n}: {s}" for n, s in executable.functions.items())

    # -- compiled training (accel.training) -------------------------------------------------
    def save_train(self, step: Any, folder: Path, name: str) -> None:
        """Write the target's files describing a whole train step into its folder (each
        phase graph's artifact is already in `folder/<phase>/`); most targets have none."""

    def report_train(self, step: Any) -> str | None:
        """A summary of a whole train step for compile.log, or None: one `report` per
        phase graph."""
        return None


class PlannedTarget(Target):
    """A target whose issue has not landed: known by name, a clean error when used."""

    def check(self, options: Mapping[str, Any]) -> None:
        raise NotSupportedYet(f"target '{self.name}' is not implemented yet ({self.summary}); "
                              "use target 'cpu'")

    def compile(self, module: Any, options: Mapping[str, Any], *,
                weights: Mapping[str, np.ndarray] | None = None) -> Executable:
        self.check(options)
        raise AssertionError("unreachable")

    def load(self, folder: Path, manifest: Mapping[str, Any],
             weights: Mapping[str, np.ndarray]) -> Executable:
        raise AccelError(f"artifact '{folder}' is for target '{self.name}', which is not "
                         "implemented yet")
