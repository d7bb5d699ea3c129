"""The package list in pyproject.toml matches the folders that hold Python packages."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages_on_disk(package_dir: dict[str, str]) -> set[str]:
    found: set[str] = set()
    for pkg, folder in package_dir.items():
        base = ROOT / folder
        # A package: a folder with __init__.py, or a data folder (presets, rules, the
        # dashboard's static files), listed too so that setuptools ships it without a warning.
        for path in base.rglob("*"):
            if not path.is_file() or (path.suffix == ".py" and path.name != "__init__.py"):
                continue
            rel = path.parent.relative_to(base)
            if "__pycache__" in rel.parts:
                continue
            found.add(".".join([pkg, *rel.parts]) if rel.parts else pkg)
    # A sub-folder mapped on its own (accel.dialects -> dialects/) is not under python/accel.
    return found


def test_package_list_matches_folders() -> None:
    cfg = _config()
    assert set(cfg["packages"]) == _packages_on_disk(cfg["package-dir"])


def test_required_folders_are_mapped() -> None:
    assert _config()["package-dir"] == {
        "accel": "python/accel",
        "accel.dialects": "dialects",
        "accel.passes": "passes",
        "accel.tools": "tools",
    }


def test_only_ir_module_imports_torch_mlir() -> None:
    offenders = []
    for folder in ("python", "dialects", "passes", "tools", "benchmarks", "examples"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            if any(line.lstrip().startswith(("import torch_mlir", "from torch_mlir"))
                   for line in text.splitlines()):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == ["python/accel/ir.py"]


def test_installed_package_resolves_to_this_tree() -> None:
    import accel
    import accel.dialects
    import accel.passes
    import accel.tools

    assert Path(accel.__file__).parent == ROOT / "python" / "accel"
    assert Path(accel.passes.__file__).parent == ROOT / "passes"
    assert Path(accel.dialects.__file__).parent == ROOT / "dialects"
    assert Path(accel.tools.__file__).parent == ROOT / "tools"
