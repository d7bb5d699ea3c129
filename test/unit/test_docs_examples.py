"""Every example of docs/rdu.md and docs/mncore.md runs as written.

The code blocks of a page run in order in one namespace, in a fresh folder: a block whose
info string names a file (```python model.py, ```json decisions.json, ```yaml rules.yaml)
is written to that file; a ```python block is executed; each `accel-compile`, `accel-opt`
or `accel-smi` line of a ```sh block is run (exit status 0 expected). ```text blocks
(formats, output) are not run. Models are built from configs with random weights: nothing
is downloaded.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from conftest import ROOT, run_tool

_BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.M | re.S)
TOOLS = ("accel-compile", "accel-opt", "accel-smi")


def blocks(page: str) -> list[tuple[str, str, str]]:
    """(language, file name or "", code) of each fenced block, in order."""
    text = (ROOT / "docs" / page).read_text()
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in _BLOCK.finditer(text)]


def _run_page(page: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    namespace: dict[str, object] = {"__name__": f"docs_{page.replace('.', '_')}"}
    ran = 0
    for lang, name, code in blocks(page):
        if name:
            (folder / name).write_text(code)
            continue
        if lang == "python":
            exec(compile(code, f"docs/{page}:block{ran}", "exec"), namespace)  # noqa: S102
            ran += 1
        elif lang == "sh":
            for line in code.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if not words or words[0] not in TOOLS:
                    continue
                result = run_tool(words[0], *words[1:])
                assert result.returncode == 0, (line, result.stderr[-2000:])
                ran += 1
    return ran


@pytest.mark.long  # ~1 minute a page on 2 cores: `make zoo` runs it
@pytest.mark.parametrize("page", ["rdu.md", "mncore.md"])
def test_every_example_runs_as_written(page: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    assert _run_page(page, tmp_path, monkeypatch) >= 5


@pytest.mark.parametrize("page", ["rdu.md", "mncore.md"])
def test_pages_have_runnable_examples(page: str) -> None:
    langs = {lang for lang, _, _ in blocks(page)}
    assert "python" in langs and "sh" in langs
    # a block that is neither run nor written must say it is output or a format (```text)
    assert langs <= {"python", "sh", "json", "yaml", "text"}
    assert all(name for lang, name, _ in blocks(page) if lang in ("json", "yaml"))
