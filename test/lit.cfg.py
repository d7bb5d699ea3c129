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
