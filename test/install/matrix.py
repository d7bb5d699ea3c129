"""`make matrix`: build accel's wheel and smoke-test it on every supported interpreter here.

For each of python3.11, python3.12 and python3.13 that is present (on PATH, or pyenv's
versions; `--python EXE` names others): a fresh venv in a temporary folder; the wheel built
there by that interpreter's pip (isolated build: setuptools comes from the index) with no
warning and every file of the tree; the wheel installed with its dependencies (torch,
torch-mlir, llvmlite, ... from the configured indexes: PyPI's torch is the CUDA build, pass
`--pip-args "--index-url https://download.pytorch.org/whl/cpu --extra-index-url
https://pypi.org/simple"` for the CPU one); then test/install/smoke.py in an empty folder.

One line per interpreter: PASS, FAIL (the wheel, its metadata or accel is wrong) or SKIP
(the interpreter is absent, or its dependencies could not be installed: no network, no
wheel for it; the reason is printed). Exit status 1 when any interpreter FAILs, else 0;
`--strict` also fails on SKIP.
"""

from __future__ import annotations

import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import wheel as wheel_check  # noqa: E402  (test/install/wheel.py)

VERSIONS = ("3.11", "3.12", "3.13")
SMOKE = Path(__file__).resolve().parent / "smoke.py"


def find_python(version: str) -> str | None:
    """An interpreter for `version` that runs: pythonX.Y on PATH, else pyenv's install."""
    candidates = [shutil.which(f"python{version}")]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
    for exe in candidates:
        if exe and subprocess.run([exe, "-c", "import venv, ensurepip"],
                                  capture_output=True).returncode == 0:
            return exe
    return None  # e.g. a pyenv shim for a version not selected answers "command not found"


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def check(python: str, folder: Path, pip_args: list[str]) -> tuple[str, str]:
    """Build, install and smoke-test with `python` in `folder`: (PASS|FAIL|SKIP, detail)."""
    venv = folder / "venv"
    made = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        return "SKIP", f"cannot make a venv: {_tail(made.stderr)}"
    vpy = str(venv / "bin" / "python")
    try:
        wheel, log = wheel_check.build_wheel(vpy, wheel_check.copy_sources(folder / "src"),
                                             folder / "dist", isolated=True)
    except RuntimeError as err:
        if "setuptools" in str(err) and ("network" in str(err).lower()
                                         or "No matching distribution" in str(err)):
            return "SKIP", f"could not install the build backend: {_tail(str(err))}"
        return "FAIL", f"build: {_tail(str(err), 6)}"
    problems = wheel_check.warnings_in(log) + [f"missing {f}"
                                               for f in wheel_check.missing_from(wheel)]
    if problems:
        return "FAIL", "wheel: " + "; ".join(problems[:5])
    pip = [vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", *pip_args]
    # accel itself first: its metadata (requires-python, entry points) must accept this
    # interpreter; a failure here is accel's.
    own = subprocess.run([*pip, "--no-deps", str(wheel)], capture_output=True, text=True)
    if own.returncode != 0:
        return "FAIL", f"install --no-deps: {_tail(own.stderr)}"
    deps = subprocess.run([*pip, str(wheel)], capture_output=True, text=True)
    if deps.returncode != 0:
        return "SKIP", f"could not install the dependencies: {_tail(deps.stderr)}"
    work = folder / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["ACCEL_CACHE_DIR"] = str(folder / "cache")
    smoke = subprocess.run([vpy, str(SMOKE)], cwd=work, env=env, capture_output=True,
                           text=True)
    if smoke.returncode != 0:
        return "FAIL", f"smoke: {_tail(smoke.stdout + smoke.stderr, 8)}"
    return "PASS", _tail(smoke.stdout, 6).split(" | ")[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", action="append", default=[], metavar="EXE",
                   help="an interpreter to test (repeatable); default: 3.11, 3.12, 3.13")
    p.add_argument("--pip-args", default=os.environ.get("MATRIX_PIP_ARGS", ""),
                   help="extra arguments of every `pip install` (e.g. an --index-url)")
    p.add_argument("--keep", action="store_true", help="keep the venvs (printed)")
    p.add_argument("--strict", action="store_true", help="exit 1 on SKIP too")
    args = p.parse_args(argv)
    pythons = [(exe, exe) for exe in args.python] or [(f"python{v}", find_python(v))
                                                      for v in VERSIONS]
    results = []
    for label, exe in pythons:
        start = time.monotonic()
        if exe is None:
            status, detail = "SKIP", "not found (PATH, pyenv)"
        else:
            folder = Path(tempfile.mkdtemp(prefix="accel-matrix-"))
            try:
                status, detail = check(exe, folder, shlex.split(args.pip_args))
            finally:
                if args.keep:
                    detail += f" (kept: {folder})"
                else:
                    shutil.rmtree(folder, ignore_errors=True)
        results.append(status)
        print(f"{status:4} {label:12} {time.monotonic() - start:6.0f} s  {detail}", flush=True)
    failed = "FAIL" in results or (args.strict and "SKIP" in results)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
