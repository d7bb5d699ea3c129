"""docs/architecture.md describes what is: every path, module and module member it names
exists (a table row's files are relative to the row's folder)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
#: Package prefix -> source folder (pyproject's package-dir).
FOLDERS = {"accel.passes": ROOT / "passes", "accel.dialects": ROOT / "dialects",
           "accel.tools": ROOT / "tools", "accel": ROOT / "python" / "accel"}


def _expand(token: str) -> list[str]:
    """`a/{x,y}/` -> `a/x/`, `a/y/`."""
    found = re.search(r"\{([^}]*)\}", token)
    if not found:
        return [token]
    return [t for part in found.group(1).split(",")
            for t in _expand(token[:found.start()] + part + token[found.end():])]


def _module_file(name: str) -> Path | None:
    for prefix, folder in FOLDERS.items():
        if name == prefix or name.startswith(prefix + "."):
            rest = name[len(prefix):].lstrip(".").split(".") if name != prefix else []
            base = folder.joinpath(*rest) if rest else folder
            for path in (base / "__init__.py", base.with_suffix(".py")):
                if path.is_file():
                    return path
            return None
    return None


def _dotted_problem(token: str) -> str | None:
    """None when `accel.x.y` (a module, or a module and a member it defines) exists."""
    name = token.split("(")[0].rstrip(".")
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        path = _module_file(".".join(parts[:cut]))
        if path is None:
            continue
        members = parts[cut:]
        if not members:
            return None
        if len(members) == 1 and re.search(rf"\b{re.escape(members[0])}\b",
                                           path.read_text(encoding="utf-8")):
            return None
        return f"{token}: {'.'.join(members)} is not in {path.relative_to(ROOT)}"
    return f"{token}: no such module"


def _path_problem(token: str, base: Path | None) -> str | None:
    for candidate in _expand(token):
        places = [ROOT / candidate] + ([base / candidate] if base is not None else [])
        if not any(p.exists() for p in places):
            return f"{candidate}: no such file or folder"
    return None


def _problems() -> tuple[list[str], int]:
    problems: list[str] = []
    checked = 0
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] \
            if line.startswith("|") else [line]
        base = None
        if len(cells) >= 3:  # a table row: column 2 names the folder of column 3's files
            first = re.findall(r"`([^`]+)`", cells[1])
            folder = ROOT / first[0] if first else None
            base = folder if folder is not None and folder.is_dir() else None
        for index, cell in enumerate(cells):
            for token in re.findall(r"`([^`\s]+)`", cell):
                if "<" in token or "*" in token or token.startswith(("-", "http")):
                    continue  # placeholders, flags
                problem = None
                if re.fullmatch(r"accel(\.\w+)+(\(.*\))?", token):
                    problem = _dotted_problem(token)
                elif "/" in token and re.fullmatch(r"[\w./{},-]+", token):
                    problem = _path_problem(token, base)
                elif index == 2 and base is not None and re.fullmatch(r"[a-z_]+", token) \
                        and ((base / f"{token}.py").exists() or (base / token).is_dir()):
                    pass  # a module of the row's folder: exists
                elif index == 2 and base is not None and re.fullmatch(r"\w+\.py", token):
                    problem = _path_problem(token, base)
                else:
                    continue
                checked += 1
                if problem:
                    problems.append(problem)
    return problems, checked


def test_every_module_the_architecture_names_exists() -> None:
    problems, checked = _problems()
    assert checked > 60  # the check reads the doc's tables and prose
    assert problems == []


def test_the_check_can_fail() -> None:
    assert _dotted_problem("accel.targets.no_such_thing") is not None
    assert _dotted_problem("accel.no_such_module.x") is not None
    assert _path_problem("python/accel/no_such.py", None) is not None
    assert _path_problem("python/accel/targets/{cpu,nope}/", None) is not None
    assert _dotted_problem("accel.host.jit") is None


@pytest.mark.parametrize("target", ["cpu", "nvgpu", "rdu", "mncore"])
def test_every_target_has_its_row(target: str) -> None:
    assert f"`python/accel/targets/{target}/`" in DOC.read_text(encoding="utf-8")
