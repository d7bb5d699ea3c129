"""What the nvgpu target compiles to: PTX kernels plus, per function, its kernel sequence.

A `GpuExecutable` needs no GPU to exist (cross-compiling, artifacts); calling one of its
functions loads the runtime (`runtime.py`, the CUDA driver through cuda-bindings) and
raises `AccelError` where there is no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accel.runtime.call import _as_memref_array as as_memref_array
from accel.runtime.dtypes import DTYPES, bf16_bits_to_float32
from accel.runtime.signature import Signature
from accel.targets.nvgpu.program import Program


@dataclass(frozen=True)
class Kernel:
    """One kernel: its gpu.module (one PTX text each), entry point and PTX."""

    module: str
    entry: str
    ptx: str


@dataclass
class GpuExecutable:
    functions: dict[str, Signature]
    programs: dict[str, Program]
    kernels: dict[str, Kernel]
    arch: str
    weights: Mapping[str, np.ndarray]
    options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    #: Host fallback: the cpu target's executable and why the GPU could not run the module.
    host: Any = field(default=None, repr=False)
    host_module: str = field(default="", repr=False)
    host_reason: str = ""

    def ptx_modules(self) -> dict[str, str]:
        """gpu.module name -> PTX text (one .ptx file each in an artifact)."""
        return {k.module: k.ptx for k in self.kernels.values()}

    def __getitem__(self, name: str) -> Any:
        if self.host is not None:
            return self.host[name]
        if name not in self.programs:
            raise ValueError(f"no public function @{name} in the module; available: "
                             f"{', '.join('@' + n for n in self.programs) or 'none'}")
        return GpuFunction(self, name)

    def invoke(self, name: str, *args: Any) -> Any:
        return self[name](*args)


class GpuFunction:
    """A compiled function: numpy arrays (or torch tensors) in, numpy arrays out."""

    def __init__(self, exe: GpuExecutable, name: str):
        self.exe, self.name = exe, name
        self.program = exe.programs[name]
        self.signature = exe.functions[name]

    def host_inputs(self, args: tuple[Any, ...]) -> list[np.ndarray]:
        """The arguments as C-contiguous arrays of the buffers' storage dtypes."""
        params = [b for b in self.program.buffers if b.kind == "arg"]
        if len(args) != len(params):
            raise ValueError(f"@{self.name} takes {len(params)} arguments, got {len(args)}")
        # The cpu target's checks: dtype (no silent casts), rank, static dims; bf16 as
        # float32 values or uint16 bits.
        return [as_memref_array(value, spec, f"@{self.name} argument {buf.index}")
                for buf, spec, value in zip(params, self.signature.args, args, strict=True)]

    def __call__(self, *args: Any) -> Any:
        from accel.targets.nvgpu import runtime

        outs = runtime.session(self.exe, self.name).run_numpy(self.host_inputs(args))
        # bf16 results come back as float32 (exact), as from the cpu target.
        outs = [bf16_bits_to_float32(o) if DTYPES[self.program.buffers[r].dtype].is_bf16
                else o for o, r in zip(outs, self.program.results, strict=True)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_torch(self, *tensors: Any) -> Any:
        """Call with torch CUDA tensors, used in place (no copies; `on_gpu_tensors`); the
        results are new torch CUDA tensors on torch's current stream."""
        from accel.targets.nvgpu import runtime

        outs = runtime.session(self.exe, self.name).run_torch(tensors)
        return outs[0] if len(outs) == 1 else tuple(outs)
