"""Shared pytest fixtures for accel's unit tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fpenv import fp_environment, reset_fp_environment

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True, scope="session")
def _private_accel_cache(tmp_path_factory: pytest.TempPathFactory):
    """Tests never read or write the user's real compile cache (~/.cache/accel).

    Session-scoped so that module-scoped fixtures, set up before any function-scoped
    fixture, compile into the private cache too.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "accel-cache"))
        yield


@pytest.fixture(autouse=True)
def _fp_environment_kept() -> Iterator[None]:
    """A test that leaves the rounding mode or FTZ/DAZ changed gets a warning naming it and
    the default back: later tests' libmvec results depend on it (test_vecmath.py)."""
    before = fp_environment()
    yield
    after = fp_environment()
    if after != before:
        import warnings

        reset_fp_environment()
        warnings.warn(f"the test changed this thread's FP environment (x87 cw {before[0]:#x} "
                      f"-> {after[0]:#x}, mxcsr {before[1]:#x} -> {after[1]:#x}); reset",
                      stacklevel=1)


@pytest.fixture
def ctx():
    from accel.context import make_context

    with make_context() as c:
        yield c


@pytest.fixture
def threads():
    """Sets the JIT's thread count for a test and restores it after."""
    from accel.host import parallel

    before = parallel.num_threads()
    yield parallel.set_num_threads
    parallel.set_num_threads(before)


@pytest.fixture
def fresh_dynamo() -> Iterator[None]:
    """Dynamo's compiled graphs dropped before and after the test, and the accel backend's
    once-per-reason warnings re-armed (a test sees its own warnings)."""
    import accel.dynamo
    import torch

    torch._dynamo.reset()
    accel.dynamo._WARNED.clear()
    yield
    torch._dynamo.reset()


def run_tool(tool: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    """Run an installed console script and capture its output."""
    exe = BIN / tool
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(exe), *args], input=input, capture_output=True, text=True,
                          env=env, timeout=120)
