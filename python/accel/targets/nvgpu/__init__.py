"""The `nvgpu` target: NVIDIA GPUs through PTX and the CUDA driver.

Planned: registered by name, a clean error until its issue lands."""

from accel.targets.base import PlannedTarget


class NvgpuTarget(PlannedTarget):
    name = "nvgpu"
    summary = "NVIDIA GPUs through PTX and the CUDA driver"


TARGET = NvgpuTarget()
