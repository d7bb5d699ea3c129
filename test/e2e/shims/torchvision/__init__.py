"""A stand-in for torchvision, which the e2e suite imports at top level (accel's e2e harness,
docs/e2e.md). torchvision is not installed (its wheels pin another torch build): the five
tests that call it fail while running eagerly, and every other test runs."""

from . import models, ops  # noqa: F401


def __getattr__(name: str):
    raise ModuleNotFoundError(f"torchvision.{name}: torchvision is not installed "
                              "(accel's e2e harness uses a stub)")
