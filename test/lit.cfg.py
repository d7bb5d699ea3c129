"""lit configuration for accel's IR and tool suites (`lit test/` or `make lit`)."""

# ruff: noqa: F821 - `config` and `lit_config` are injected by lit
from __future__ import annotations

import os
import shutil
import sys

import lit.formats

config.name = "accel"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
# pytest suites and helper inputs are not lit tests.
config.excludes = ["unit", "Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

root = os.path.dirname(config.test_source_root)
venv_bin = os.path.join(root, ".venv", "bin")


# Tools come from the repo's .venv when present, else from the environment (an install).
path: list[str] = []
if os.path.isdir(venv_bin):
    path.append(venv_bin)
path.append(os.path.dirname(sys.executable))
path.append(config.environment.get("PATH", os.environ.get("PATH", "")))
config.environment["PATH"] = os.pathsep.join(path)
# A private compile cache: lit runs never touch the user's ~/.cache/accel.
config.environment["ACCEL_CACHE_DIR"] = os.path.join(config.test_exec_root, "accel-cache")
for var in ("HOME", "TMPDIR", "ACCEL_NUM_THREADS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]


def _which(name: str) -> str | None:
    return shutil.which(name, path=config.environment["PATH"])


for tool in ("accel-opt", "accel-run", "accel-compile"):
    if _which(tool) is None:
        lit_config.fatal(f"'{tool}' not found: run `make check`, or `pip install -e .[test]`")

# FileCheck: LLVM's if installed, else the pip `filecheck` port (same CHECK syntax).
filecheck = _which("FileCheck") or _which("filecheck")
if filecheck is None:
    lit_config.fatal("neither LLVM FileCheck nor the pip 'filecheck' package is on PATH")
config.substitutions.append(("FileCheck", filecheck))
config.substitutions.append(("%python", sys.executable))
config.available_features.add("accel")


def _nvgpu_features() -> list[str]:
    """`ptxas` (NVIDIA's assembler, from the nvidia-cuda-nvcc wheel) and `no-nvidia-gpu`
    (no CUDA driver here) for the nvgpu target's tool tests."""
    import ctypes
    import glob

    wheels = glob.glob(os.path.join(root, ".venv", "lib", "python*", "site-packages",
                                    "nvidia", "*", "bin", "ptxas"))
    found = ["ptxas"] if wheels or _which("ptxas") else []
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        found.append("no-nvidia-gpu")
    return found


for feature in _nvgpu_features():
    config.available_features.add(feature)
