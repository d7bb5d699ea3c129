"""The `cpu` target: the host CPU through MLIR's LLVM lowering and llvmlite's JIT.

Pipelines in `pipelines.py` (data, a why per entry), the function boundary in `abi.py`,
the JIT and the compile cache's CPU entries in `jit.py`, the fork-join runtime in
`parallel.py`, vector math in `vecmath.py`, C libraries in `aot/`. Presets o0/o1/o3
(`presets.json`) are LLVM optimisation levels, as SambaFlow's `-o0/-o1/-o3` spellings.
Emulated targets (rdu, mncore) run their programs through this target.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.targets.base import Executable, Target

#: `device` values: where the code runs or, for AOT libraries, which x86-64 level it
#: targets (accel.targets.cpu.aot.TARGET_CPUS; a test keeps the two equal).
DEVICES = ("host", "generic", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")
MODULE_LL = "module.ll"
#: The host object code: reused by `load` on the host that built it (same environment()).
MODULE_O = "module.o"


class CpuTarget(Target):
    name = "cpu"
    summary = "the host CPU (LLVM JIT; AOT C libraries)"

    def devices(self) -> tuple[str, ...]:
        return DEVICES

    def phases(self, options: Mapping[str, Any]) -> list[str]:
        fuse = ["fuse"] if options["opt_level"] else []
        return [*fuse, "bufferize", "llvm-dialect", "llvm-ir", "codegen"]

    def check(self, options: Mapping[str, Any]) -> None:
        from accel.host.pipelines import check

        check(options)

    def compile(self, module: Any, options: Mapping[str, Any], *,
                weights: Mapping[str, np.ndarray] | None = None) -> Executable:
        from accel.host.compile import compile_mlir
        from accel.options import INTERNAL_SETTINGS
        from accel.settings import Settings

        if isinstance(options, Settings):  # resolved at the entry: passed on, not again
            return compile_mlir(module, options, weights=weights)
        return compile_mlir(module, {k: v for k, v in options.items()
                                     if k not in INTERNAL_SETTINGS}, weights=weights)

    def cache_key(self, module_text: str, options: Mapping[str, Any]) -> str | None:
        from accel import cache
        from accel.options import code_options

        return cache.cache_key(module_text, code_options(options))

    def from_cache(self, key: str, options: Mapping[str, Any],
                   weights: Mapping[str, np.ndarray]) -> Executable | None:
        from accel.host.jit import from_cache

        return from_cache(key, options["opt_level"], weights)

    def build_aot(self, executable: Any, entry: str, options: Mapping[str, Any]) -> Any:
        from accel.targets.cpu.aot import build_library

        return build_library(executable, options["aot_name"], options["output_folder"] or ".",
                             entry=entry, target_cpu=options["device"],
                             user_memory=options["user_memory"], opt_level=options["opt_level"])

    def save(self, executable: Any, folder: Path) -> dict[str, Any]:
        from accel.artifact import sha256
        from accel.cache import atomic_write
        from accel.targets.cpu.saved import with_header

        ll = with_header(executable.llvm_ir, executable.functions, executable.weights).encode()
        atomic_write(folder / MODULE_LL, ll)
        files = {MODULE_LL: sha256(ll), "opt_level": executable.opt_level}
        if executable.object_code:
            atomic_write(folder / MODULE_O, executable.object_code)
            files[MODULE_O] = sha256(executable.object_code)
        return files

    def load(self, folder: Path, manifest: Mapping[str, Any],
             weights: Mapping[str, np.ndarray]) -> Executable:
        from accel.artifact import checked_file
        from accel.host.jit import CompiledMLIR
        from accel.targets.cpu.saved import checked

        files = manifest.get("target_files")
        if not isinstance(files, Mapping):
            raise AccelError(f"artifact '{folder}': malformed manifest (target_files)")
        opt_level = files.get("opt_level", 3)
        if not isinstance(opt_level, int) or isinstance(opt_level, bool) or \
                not 0 <= opt_level <= 3:
            raise AccelError(f"artifact '{folder}': malformed manifest (opt_level)")
        # The manifest and the weights must fit the code, or it would read out of bounds.
        ll, sigs, sizes = checked(folder, checked_file(folder, MODULE_LL, files), manifest,
                                  weights)
        return CompiledMLIR.from_llvm_ir(ll, sigs, opt_level, weights=weights,
                                         weight_specs=sizes,
                                         object_code=_reusable_object(folder, manifest, files))


def _reusable_object(root: Path, manifest: Mapping[str, Any],
                     files: Mapping[str, Any]) -> bytes | None:
    """The artifact's object code if it was built here (same versions, CPU and features)
    and is intact; otherwise None and `load` compiles module.ll again."""
    from accel.artifact import checked_file
    from accel.cache import environment, log

    if manifest.get("versions") != environment() or MODULE_O not in files:
        return None
    from accel.llvm.elf import object_problem

    try:
        data = checked_file(root, MODULE_O, files)
    except AccelError as err:
        log.warning("accel: %s; compiling %s instead", err, MODULE_LL)
        return None
    problem = object_problem(data)
    if problem:  # LLVM's loader would crash on it
        log.warning("accel: artifact '%s': %s is damaged (%s); compiling %s instead", root,
                    MODULE_O, problem, MODULE_LL)
        return None
    return data


TARGET = CpuTarget()
__all__ = ["DEVICES", "TARGET", "CpuTarget"]
