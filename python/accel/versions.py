"""Versions of what compiled code depends on, read without importing the packages."""

from __future__ import annotations

#: The wheel that provides the MLIR Python bindings.
PROVIDER = "torch-mlir"


def provider_version() -> str:
    """Version of the wheel that provides the bindings."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PROVIDER)
    except PackageNotFoundError:
        return "unknown"
