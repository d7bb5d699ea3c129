"""Build accel's wheel from a copy of the tree and check it: no build warnings, every file.

Used by test/unit/test_packaging.py and test/install/matrix.py (`make matrix`). The build
runs on a copy of the source folders so that it neither writes build/ or egg-info into the
checkout nor sees stray files there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What the wheel is built from: pyproject.toml's package-dir folders and the readme.
SOURCES = ("pyproject.toml", "README.md", "python", "dialects", "passes", "tools")
#: Source folder -> where its files land in the wheel (pyproject.toml's package-dir).
PACKAGE_DIR = {"python/accel": "accel", "dialects": "accel/dialects",
               "passes": "accel/passes", "tools": "accel/tools"}


def copy_sources(dest: Path) -> Path:
    """Copy the files the wheel is built from into `dest` (no caches); returns `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)
    return dest


def build_wheel(python: str, src: Path, out: Path, *, isolated: bool = False) -> tuple[Path, str]:
    """Build the wheel of `src` into `out` with `python -m pip wheel`; returns (wheel, log).

    Not isolated (the default), the build uses the setuptools `python` already has, so
    nothing is downloaded. Raises RuntimeError with the log when the build fails.
    """
    cmd = [python, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(src)]
    if not isolated:
        cmd.insert(4, "--no-build-isolation")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    log = result.stdout + result.stderr
    wheels = sorted(out.glob("accel-*.whl"))
    if result.returncode != 0 or not wheels:
        raise RuntimeError(f"pip wheel failed ({result.returncode}):\n{log}")
    return wheels[-1], log


def warnings_in(log: str) -> list[str]:
    """The lines of a build log that warn (setuptools' deprecations, missing packages)."""
    return [line.strip() for line in log.splitlines() if "warning" in line.lower()]


def expected_files() -> set[str]:
    """Every file of the source folders, as its path inside the wheel."""
    files: set[str] = set()
    for folder, target in PACKAGE_DIR.items():
        base = ROOT / folder
        for path in base.rglob("*"):
            rel = path.relative_to(base)
            if path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc":
                files.add(f"{target}/{rel.as_posix()}")
    return files


def missing_from(wheel: Path) -> list[str]:
    """Files of the tree that the wheel lacks (sorted; empty when it holds everything)."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    return sorted(expected_files() - names)


def main() -> int:
    """Build into a temporary folder and print the wheel, its warnings and missing files."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        wheel, log = build_wheel(sys.executable, copy_sources(Path(tmp) / "src"), Path(tmp))
        print(wheel.name)
        for line in warnings_in(log) + [f"missing: {f}" for f in missing_from(wheel)]:
            print(line)
        return 1 if warnings_in(log) or missing_from(wheel) else 0


if __name__ == "__main__":
    raise SystemExit(main())
