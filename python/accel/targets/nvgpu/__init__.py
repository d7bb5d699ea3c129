"""The `nvgpu` target: NVIDIA GPUs through MLIR's gpu/nvvm dialects, PTX and the CUDA driver.

linalg on tensors -> fusion -> bufferize -> one kernel per loop nest (blocks x threads,
`passes/nvgpu_map_loops.py`) -> NVVM -> LLVM IR -> PTX with llvmlite's NVPTX backend and
libdevice (`compile.py`, `pipelines.py`, `ptx.py`). The host side of each function is a
kernel sequence (`program.py`) the runtime (`runtime.py`, cuda-bindings) replays as a CUDA
graph. `device` = sm_80, sm_90, sm_90a cross-compiles without a GPU; "host" means the
present GPU and, without one, is refused at compile time. docs/nvgpu.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.targets.base import Executable, Target
from accel.targets.nvgpu.toolkit import ARCHS

#: The host fallback's input (the model's linalg), compiled on the host again by `load`.
HOST_MODULE = "host_module.mlir"


class NvgpuTarget(Target):
    name = "nvgpu"
    summary = "NVIDIA GPUs through PTX and the CUDA driver"

    def devices(self) -> tuple[str, ...]:
        return ("host", *ARCHS)

    def check(self, options: Mapping[str, Any]) -> None:
        from accel.targets.nvgpu import toolkit

        if options.get("device", "host") == "host":
            toolkit.require_gpu("target nvgpu")

    def compile(self, module: Any, options: Mapping[str, Any], *,
                weights: Mapping[str, np.ndarray] | None = None) -> Executable:
        from accel.targets.nvgpu.compile import compile_gpu, verify_ptx

        self.check(options)
        text = module if isinstance(module, str) else \
            module.operation.get_asm(enable_debug_info=True)
        exe = compile_gpu(text, options, weights=weights)
        if options.get("verify_ptx"):
            verify_ptx(exe)
        return exe

    def cache_key(self, module_text: str, options: Mapping[str, Any]) -> str | None:
        from accel.targets.nvgpu.compile import cache_key

        return cache_key(module_text, options)

    def from_cache(self, key: str, options: Mapping[str, Any],
                   weights: Mapping[str, np.ndarray]) -> Executable | None:
        from accel.targets.nvgpu.compile import from_cache

        return from_cache(key, options, weights)

    def build_aot(self, executable: Any, entry: str, options: Mapping[str, Any]) -> Any:
        from accel.targets.nvgpu.aot import build_library

        return build_library(executable, entry, options["aot_name"],
                             options["output_folder"] or ".",
                             user_device_memory=options["user_device_memory"],
                             on_gpu_tensors=options["on_gpu_tensors"])

    def save(self, executable: Any, folder: Path) -> dict[str, Any]:
        from accel.artifact import sha256
        from accel.cache import atomic_write

        files: dict[str, Any] = {"arch": executable.arch, "ptx": {}, "kernels": {},
                                 "programs": [p.to_json() for p in
                                              executable.programs.values()]}
        for module, ptx in executable.ptx_modules().items():
            data = ptx.encode()
            atomic_write(folder / f"{module}.ptx", data)
            files["ptx"][f"{module}.ptx"] = sha256(data)
        for name, k in executable.kernels.items():
            files["kernels"][name] = {"file": f"{k.module}.ptx", "entry": k.entry}
        if executable.host is not None:
            data = executable.host_module.encode()
            atomic_write(folder / HOST_MODULE, data)
            files[HOST_MODULE] = sha256(data)
            files["host_reason"] = executable.host_reason
        return files

    def load(self, folder: Path, manifest: Mapping[str, Any],
             weights: Mapping[str, np.ndarray]) -> Executable:
        from accel.artifact import checked_file
        from accel.runtime.signature import signature_from_json
        from accel.targets.nvgpu.executable import GpuExecutable, Kernel
        from accel.targets.nvgpu.program import Program

        files = manifest.get("target_files")
        options = dict(manifest.get("options", {}))
        try:
            sigs = {s["name"]: signature_from_json(s) for s in manifest["signatures"]}
            if HOST_MODULE in files:
                from accel.host.compile import compile_mlir

                text = checked_file(folder, HOST_MODULE, files).decode()
                from accel.settings import host_settings

                host = compile_mlir(text, host_settings(options, "opt_level",
                                                        "mm_conv_precision_mode"),
                                    weights=weights)
                return GpuExecutable(sigs, {}, {}, files["arch"], dict(weights), options,
                                     host=host, host_module=text,
                                     host_reason=files.get("host_reason", ""))
            ptx = {name: checked_file(folder, name, files["ptx"]).decode()
                   for name in files["ptx"]}
            kernels = {name: Kernel(k["file"][:-len(".ptx")], k["entry"], ptx[k["file"]])
                       for name, k in files["kernels"].items()}
            programs = {p["name"]: Program.from_json(p) for p in files["programs"]}
            for program in programs.values():
                missing = set(program.kernels()) - set(kernels)
                if missing:
                    raise ValueError(f"kernels {sorted(missing)} have no PTX")
            if files["arch"] not in ARCHS:
                raise ValueError(f"unknown arch {files['arch']!r}")
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise AccelError(f"artifact '{folder}': malformed manifest (target_files: "
                             f"{err})") from None
        return GpuExecutable(sigs, programs, kernels, files["arch"], dict(weights), options)

    def report(self, executable: Any) -> str:
        lines = [f"nvgpu {executable.arch}: {len(executable.kernels)} kernels"]
        if executable.host is not None:
            lines.append(f"runs on the host CPU: {executable.host_reason}")
        for name, program in executable.programs.items():
            lines.append(f"@{name}: {executable.functions[name]}")
            for step in program.steps:
                if step.op == "launch":
                    lines.append(f"  {step.kernel} grid={step.grid} block={step.block} "
                                 f"args={step.args}")
                else:
                    lines.append(f"  copy {step.nbytes} bytes {step.src} -> {step.dst}")
        return "\n".join(lines)


TARGET = NvgpuTarget()
__all__ = ["TARGET", "NvgpuTarget"]
