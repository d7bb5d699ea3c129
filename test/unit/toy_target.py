"""A test-only target: the whole plug-in interface in a few lines, running on the CPU target.

It proves that a target needs nothing but `accel.targets.base.Target` and a registry entry:
`accel.targets.register("toy", "toy_target")`. Its executables count their calls, so a test
can tell that calls went through this target and not straight to the CPU one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from accel import targets
from accel.targets.base import Target


class ToyExecutable:
    """Wraps a CPU executable; `calls` counts calls through `[name]`."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.functions = inner.functions
        self.weights = inner.weights
        self.calls = 0

    def __getitem__(self, name: str) -> Any:
        fn = self.inner[name]

        def call(*args: Any) -> Any:
            self.calls += 1
            return fn(*args)

        return call


class ToyTarget(Target):
    name = "toy"
    summary = "a test-only target that runs on the CPU target"

    def presets(self) -> dict[str, dict[str, Any]]:
        return {"fast": {"opt_level": 1}, "slow": {"opt_level": 0}}

    @property
    def default_preset(self) -> str | None:
        return "fast"

    def compile(self, module: Any, options: Mapping[str, Any], *,
                weights: Mapping[str, np.ndarray] | None = None) -> ToyExecutable:
        cpu_options = {**options, "target": "cpu", "preset": None}
        return ToyExecutable(targets.get("cpu").compile(module, cpu_options, weights=weights))

    def save(self, executable: Any, folder: Path) -> dict[str, Any]:
        files = targets.get("cpu").save(executable.inner, folder)
        (folder / "toy.json").write_text(json.dumps({"calls": executable.calls}))
        return files

    def load(self, folder: Path, manifest: Mapping[str, Any],
             weights: Mapping[str, np.ndarray]) -> ToyExecutable:
        return ToyExecutable(targets.get("cpu").load(folder, manifest, weights))

    def report(self, executable: Any) -> str:
        return f"toy: {len(executable.functions)} function(s), {executable.calls} call(s)"


TARGET = ToyTarget()
