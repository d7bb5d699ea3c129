"""The wheel: built without warnings, holds every file, and works installed outside the tree.

The wheel is built from a copy of the tree with this venv's setuptools (no download) and
installed with --no-deps into a fresh venv in a temporary folder; that venv reaches the
heavy dependencies (torch, torch-mlir, llvmlite) through a .pth line naming this venv's
site-packages, which does not make the checkout's editable `accel` importable (.pth files of
a folder named by a .pth line are not processed). test/install/smoke.py then runs there, in
a folder outside the tree. `make matrix` does the same with real installs per interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "test" / "install"))
import wheel as wheel_check  # noqa: E402  (test/install/wheel.py)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("wheel")
    return wheel_check.build_wheel(sys.executable, wheel_check.copy_sources(tmp / "src"),
                                   tmp / "dist")


def test_build_prints_no_warning(built: tuple[Path, str]) -> None:
    wheel, log = built
    assert wheel.name == "accel-0.1.0-py3-none-any.whl"
    assert wheel_check.warnings_in(log) == [], log


def test_wheel_holds_every_file(built: tuple[Path, str]) -> None:
    wheel, _ = built
    assert wheel_check.missing_from(wheel) == []
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta = zf.read("accel-0.1.0.dist-info/METADATA").decode()
    # the data folders the issue named, and the dashboard's vendored d3
    for data in ("accel/targets/mncore/preset_options/O3.json",
                 "accel/targets/rdu/rules/gpt2.yaml",
                 "accel/dashboard/static/vendor/d3.min.js",
                 "accel/__main__.py", "accel/py.typed"):
        assert data in names
    assert "License-Expression: Apache-2.0 WITH LLVM-exception" in meta
    assert "Requires-Python: <3.14,>=3.11" in meta
    assert "Requires-Dist: torch<2.15,>=2.13" in meta
    assert "Requires-Dist: nvidia-cuda-nvcc>=13; extra == \"gpu\"" in meta
    assert "Requires-Dist: cuda-bindings>=13; extra == \"gpu\"" in meta


@pytest.mark.slow  # ~25 s on 2 cores: a venv, an install, two small compiles
def test_installed_wheel_runs_outside_the_tree(built: tuple[Path, str], tmp_path: Path) -> None:
    wheel, _ = built
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    Path(site.stdout.strip(), "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run([str(python), str(ROOT / "test" / "install" / "smoke.py")],
                            cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.count("ok ") == 6, result.stdout
    assert str(ROOT) not in result.stdout.splitlines()[0]


def test_python_m_accel_says_version_targets_devices_and_cache(tmp_path: Path) -> None:
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_path / "c")}
    result = subprocess.run([sys.executable, "-m", "accel"], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"accel 0.1.0 ({ROOT / 'python' / 'accel'})"
    assert lines[1].startswith(f"python {sysconfig.get_python_version()}.")
    assert "torch 2." in lines[1] and "torch-mlir 20261001" in lines[1]
    assert lines[2] == "targets: cpu, mncore, nvgpu, rdu"
    assert lines[3] == "devices:" and lines[4].startswith("  0: cpu ")
    assert "  1: mncore mnc2emu0 (emulated)" in lines
    assert lines[-1].startswith(f"cache: {tmp_path / 'c'} ($ACCEL_CACHE_DIR")
    # it answers without importing torch or the MLIR bindings
    probe = subprocess.run([sys.executable, "-c", "import runpy, sys, io, contextlib\n"
                            "with contextlib.redirect_stdout(io.StringIO()):\n"
                            "    try:\n"
                            "        runpy.run_module('accel', run_name='__main__')\n"
                            "    except SystemExit:\n"
                            "        pass\n"
                            "print('torch' in sys.modules, 'torch_mlir' in sys.modules)"],
                           capture_output=True, text=True, env=env, timeout=120)
    assert probe.stdout.split() == ["False", "False"], probe.stderr
