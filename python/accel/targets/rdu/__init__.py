"""The `rdu` target: a SambaNova-style RDU, emulated on the host.

Planned: registered by name, a clean error until its issue lands."""

from accel.targets.base import PlannedTarget


class RduTarget(PlannedTarget):
    name = "rdu"
    summary = "a SambaNova-style RDU, emulated on the host"


TARGET = RduTarget()
