"""The `mncore` target: MN-Core 2, emulated on the host.

Planned: registered by name, a clean error until its issue lands."""

from accel.targets.base import PlannedTarget


class MncoreTarget(PlannedTarget):
    name = "mncore"
    summary = "MN-Core 2, emulated on the host"


TARGET = MncoreTarget()
