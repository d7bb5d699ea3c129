"""The `mncore` target: MN-Core 2 (Preferred Networks), compiled as MLSDK does and emulated.

    fn = accel.compile(model, (x,), options={"target": "mncore", "float_dtype": "mixed",
                                              "codegen_dir": "/tmp/cg"})

Steps (each a phase with its own log in codegen_dir/logs/): `option_json` and CODEGEN_*
variables (`option_json.py`) -> the layer graph (`graph.py`) -> layout planning with
relayouts (`layouts.py`) -> scheduling with the SRAM model and cost model (`schedule.py`)
-> one host function per layer (`layered.py`) -> the precision of `float_dtype` applied
(`precision.py`) -> the host program JIT-compiled through the CPU target; a call runs the
layers one by one in the schedule's order, so results are checkable against eager.
The arch table with sources is `arch.py`; the reports (l3ir.txt, layout.html, ...) are
`reports.py`; docs/mncore.md has the options, the cost model and the codegen_dir format.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.targets.base import Executable, Target
from accel.targets.mncore.executable import (  # noqa: F401 - the package's API
    LAYERS,
    PLANNED_FILES,
    PROGRAM,
    MncoreExecutable,
)


class MncoreTarget(Target):
    name = "mncore"
    summary = "MN-Core 2, emulated on the host"

    def devices(self) -> tuple[str, ...]:
        from accel.targets.mncore.arch import EMULATED_DEVICES

        return ("host", *EMULATED_DEVICES)

    def check(self, options: Mapping[str, Any]) -> None:
        from accel.diagnostics import NotSupportedYet

        if options.get("mm_conv_precision_mode", "default") != "default":
            # MN-Core's precision is float_dtype's (the layer compiler's, per tensor).
            raise NotSupportedYet(f"option 'mm_conv_precision_mode' is not supported yet with "
                                  f"value {options['mm_conv_precision_mode']!r} on target "
                                  "mncore (supported: the default, 'default'; use "
                                  "float_dtype)")
        # A bad option_json, env or spec file fails here, before the model is imported.
        from accel.targets.mncore.layouts import load_specs

        opts, envs, _ = self._effective(options)
        load_specs(opts.get("layout_spec"), opts.get("gemm_layout_spec"), envs)

    def file_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        from accel.targets.mncore import option_json

        return option_json.file_args(options)

    def _effective(self, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str],
                                                               str]:
        from accel.targets.mncore import option_json

        opts, envs, name = option_json.effective(options)
        return opts, envs, name or "accel"

    def compile(self, module: Any, options: Mapping[str, Any], *,
                weights: Mapping[str, np.ndarray] | None = None) -> Executable:
        from accel.targets.mncore.compiler import compile_module

        text = module if isinstance(module, str) else \
            module.operation.get_asm(enable_debug_info=True)
        opts, envs, name = self._effective(options)
        return compile_module(text, opts, envs, name, weights or {})

    def save(self, executable: Any, folder: Path) -> dict[str, Any]:
        from accel.artifact import sha256
        from accel.cache import atomic_write

        files: dict[str, Any] = {}
        for fname, text in [(PROGRAM, executable.program), *executable.files.items()]:
            if fname not in (PROGRAM, LAYERS, *PLANNED_FILES):
                continue
            data = text.encode()
            atomic_write(folder / fname, data)
            files[fname] = sha256(data)
        files["float_dtype"] = executable.float_dtype
        files["estimated_us"] = executable.estimated_us
        return files

    def load(self, folder: Path, manifest: Mapping[str, Any],
             weights: Mapping[str, np.ndarray]) -> Executable:
        from accel.artifact import checked_file
        from accel.targets.mncore.compiler import host_compile

        files = manifest.get("target_files")
        if not isinstance(files, Mapping) or files.get("float_dtype") not in (
                None, "mixed", "half", "float", "double"):
            raise AccelError(f"artifact '{folder}': malformed manifest (target_files)")
        program = checked_file(folder, PROGRAM, files).decode()
        kept = {n: checked_file(folder, n, files).decode() for n in PLANNED_FILES}
        if LAYERS in files:
            kept[LAYERS] = checked_file(folder, LAYERS, files).decode()
        host, functions = host_compile(program, files["float_dtype"], weights,
                                       cache=False, filename=str(folder / PROGRAM))
        functions = {n: sig for n, sig in functions.items() if not n.startswith("layer_")}
        return MncoreExecutable(host, functions, weights, files["float_dtype"], program, kept,
                                float(files.get("estimated_us", 0.0)))

    def report(self, executable: Executable) -> str:
        lines = [f"@{n}: {s}" for n, s in executable.functions.items()]
        lines.append(f"mncore: estimated {executable.estimated_us:.1f} us per run "
                     f"(float_dtype={executable.float_dtype})")
        return "\n".join(lines)


def load_codegen_dir(folder: Any) -> Any:
    """MLSDK's Context.load_codegen_dir: the compiled function of a codegen_dir, without
    tracing the model again (a codegen_dir is also an accel artifact folder)."""
    from accel import targets
    from accel.artifact import load

    return load(folder, targets.get)


TARGET = MncoreTarget()
__all__ = ["TARGET", "MncoreExecutable", "MncoreTarget", "load_codegen_dir"]

