"""A test-only planned target: registered by name, a clean error when used."""

from accel.targets.base import PlannedTarget


class FutureTarget(PlannedTarget):
    name = "future"
    summary = "a target whose back end has not landed"


TARGET = FutureTarget()
