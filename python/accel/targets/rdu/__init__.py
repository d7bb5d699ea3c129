"""The `rdu` target: a SambaNova-style Reconfigurable Dataflow Unit, emulated on the host.

A model is cut into sections the way SambaFlow's graph compiler does (`-o0` one PyTorch
operator per section, `-o1` fusion rule lists from `rules/*.yaml`, `-o3` the fewest
sections that fit the chip), repeated layers become hypersections (compiled once, run per
instance), the schedule is placed on `--n-chips` chips (`placement.py`), SambaFlow's
support arguments apply (`config.py`), each section gets PCU,
PMU and time estimates from the resource model (`accel.passes.rdu.cost`, arch table in
`accel.dialects.rdu_arch`), and the sectioned program runs on the host, each section
through the CPU target. The passes live in `accel.passes.rdu`, the compile steps in
`program.py`, the artifact files (`<NAME>.pef`, `sections.json`) in `pef.py`;
docs/rdu.md is the user documentation.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.targets.base import Executable, Target


class RduTarget(Target):
    name = "rdu"
    summary = "a SambaNova-style RDU: sections, hypersections, emulated on the host"
    torch_provenance = True

    def check(self, options: Mapping[str, Any]) -> None:
        """Refuse bad rule lists, configs and decision files before the model is exported
        (and warn about arguments without effect)."""
        from accel.targets.rdu import config

        config.check(config.effective(options))

    def compile(self, module: Any, options: Mapping[str, Any], *,
                weights: Mapping[str, np.ndarray] | None = None) -> Executable:
        from accel.targets.rdu import config
        from accel.targets.rdu.program import compile_program

        options = config.effective(options)
        config.check(options, warn=False)
        text = module if isinstance(module, str) else \
            module.operation.get_asm(enable_debug_info=True)
        return compile_program(text, options, weights)

    def save(self, executable: Any, folder: Path) -> dict[str, Any]:
        from accel.targets.rdu import pef

        return pef.save(executable, folder)

    def load(self, folder: Path, manifest: Mapping[str, Any],
             weights: Mapping[str, np.ndarray]) -> Executable:
        from accel.targets.rdu import pef

        return pef.load(folder, manifest, weights)

    def report(self, executable: Any) -> str:
        from accel.targets.rdu.report import summary

        if not hasattr(executable, "sections"):
            raise AccelError("rdu: report needs an RDU program")
        return summary(executable)

    def save_train(self, step: Any, folder: Path, name: str) -> None:
        from accel.targets.rdu import training

        training.save(step, folder, name)

    def report_train(self, step: Any) -> str | None:
        from accel.targets.rdu import training

        return training.summary(step)


TARGET = RduTarget()
