"""Every example of the pages in RUN_PAGES runs as written; every block of every page is
run, written, output, or marked as not runnable with a reason.

The code blocks of a page run in order in one namespace, in a fresh folder (holding the
page's SETUP files first): a block whose info string names a file (```python model.py,
```json decisions.json, ```yaml rules.yaml) is written to that file before any block runs;
a ```python block is executed; each line of a ```sh block is run (it must start with a
command of RUNNABLE; exit status 0 expected; a comment `# prints ..., e.g. TEXT` after it
says TEXT is in its output); an ```mlir block must pass `accel-opt` (parse and verify). ```text
blocks (formats, output) are not run. A block right after a line `<!-- not run: REASON -->`
is skipped (a GPU, the network, an excerpt of generated output). What a page's snippets use
without showing it (`model`, `x`, input files) comes from its prelude (docs_preludes.py).
Models are built from configs with random weights: nothing is downloaded.

Pages not in RUN_PAGES are listed in NOT_YET (their examples are not all runnable here yet);
`test_every_block_is_run_or_says_why` keeps both lists honest.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BIN, ROOT, run_tool
from docs_preludes import CLEANUP, PRELUDE

_BLOCK = re.compile(r"^(?:<!-- not run: (?P<why>[^\n]*?) -->\n)?```(?P<lang>\w*)"
                    r"(?P<name>[^\n]*)\n(?P<code>.*?)^```\s*$", re.M | re.S)
TOOLS = ("accel-compile", "accel-opt", "accel-smi", "accel-run")
#: Commands of a ```sh line that are run: accel's tools, the C compiler, built programs.
RUNNABLE = (*TOOLS, "gcc", "python")
_PRINTS = re.compile(r"\s*# prints .*?e\.g\. (?P<text>.+)$")
#: Pages whose examples all run (the long test); the others' python/sh blocks are not run yet.
RUN_PAGES = ["README.md", "accel-compile.md", "accel-opt.md", "aot.md", "architecture.md",
             "benchmarks.md", "cache.md", "compile-time.md", "cpu-jit.md", "dashboard.md",
             "dialects/mncore.md",
             "dialects/rdu.md", "fusion.md", "fuzzing.md", "install.md", "mncore.md",
             "model-zoo.md", "nvgpu.md", "passes.md", "precision.md", "python-api.md", "rdu.md",
             "training.md"]
NOT_YET: list[str] = []
#: Files a page's examples use without showing them (the page says where they come from).
SETUP = {"aot.md": {"model.py": "examples/aot/mlp.py", "main.c": "examples/aot/main.c"},
         "nvgpu.md": {"model.py": "examples/aot/mlp.py"}}


@dataclass
class Block:
    lang: str
    name: str  # the file the block is written to, or ""
    code: str
    why_not_run: str | None


def _path(page: str) -> Path:
    return ROOT / page if page == "README.md" else ROOT / "docs" / page


def all_pages() -> list[str]:
    """README.md and every page of docs/ that has a code block."""
    docs = ROOT / "docs"
    pages = ["README.md", *sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md"))]
    return [page for page in pages if page_blocks(page)]


def page_blocks(page: str) -> list[Block]:
    """Each fenced block of `page`, in order."""
    return [Block(m["lang"], m["name"].strip(), m["code"], m["why"])
            for m in _BLOCK.finditer(_path(page).read_text())]


def blocks(page: str) -> list[tuple[str, str, str]]:
    """(language, file name or "", code) of each fenced block, in order."""
    return [(b.lang, b.name, b.code) for b in page_blocks(page)]


def _run_sh_line(line: str, folder: Path) -> str | None:
    """Run one command line of a ```sh block; its stdout (None: not a command)."""
    words = shlex.split(line, comments=True)
    if not words:
        return None
    if words[0] in TOOLS:
        result = run_tool(words[0], *words[1:])
    elif words[0] in RUNNABLE or words[0].startswith(("build/", "./")):
        # `a && b`, `$ORIGIN` in quotes: as the shell runs it; `python` is this venv's
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        result = subprocess.run(["bash", "-c", line], cwd=folder, capture_output=True,
                                text=True, timeout=600, env=env)
    else:
        raise AssertionError(f"{line!r}: not a command the doc test runs (RUNNABLE)")
    assert result.returncode == 0, (line, result.stderr[-2000:])
    return result.stdout


def _run_sh_block(code: str, folder: Path) -> int:
    """Run each command line; a comment line `# prints ..., e.g. TEXT` after a command
    says what that command prints: its output must contain TEXT."""
    ran, last = 0, ""
    for line in code.replace("\\\n", " ").splitlines():
        said = _PRINTS.match(line)
        if said:
            assert said["text"].strip() in last, (line, last[-2000:])
            continue
        out = _run_sh_line(line, folder)
        if out is not None:
            ran, last = ran + 1, out
    return ran


def _exec(code: str, name: str, namespace: dict[str, object]) -> None:
    """Run `code` as a user's script would: without this file's `from __future__` imports."""
    exec(compile(code, name, "exec", dont_inherit=True), namespace)  # noqa: S102


def _run_page(page: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    for name, source in SETUP.get(page, {}).items():
        shutil.copy(ROOT / source, folder / name)
    # files first: a command may use a file the page shows further down (my_passes.py)
    for block in page_blocks(page):
        if block.name and block.why_not_run is None:
            (folder / block.name).write_text(block.code)
    namespace: dict[str, object] = {"__name__": f"docs_{page.replace('.', '_')}"}
    if page in PRELUDE:
        _exec(PRELUDE[page], f"prelude of {page}", namespace)
    try:
        return _run_blocks(page, folder, namespace)
    finally:
        if page in CLEANUP:
            _exec(CLEANUP[page], f"cleanup of {page}", namespace)


def _run_blocks(page: str, folder: Path, namespace: dict[str, object]) -> int:
    ran = 0
    for number, block in enumerate(page_blocks(page)):
        if block.why_not_run is not None or block.name:
            continue
        if block.lang == "python":
            _exec(block.code, f"docs/{page}:block{ran}", namespace)
            ran += 1
        elif block.lang == "sh":
            ran += _run_sh_block(block.code, folder)
        elif block.lang == "mlir":  # IR shown as an example parses and verifies
            path = folder / f"block{number}.mlir"
            path.write_text(block.code)
            result = run_tool("accel-opt", str(path))
            assert result.returncode == 0, (page, result.stderr[-2000:])
            ran += 1
    return ran


@pytest.mark.long  # ~1 minute a page on 2 cores: `make zoo` runs it
@pytest.mark.parametrize("page", RUN_PAGES)
def test_every_example_runs_as_written(page: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    # every block not marked ran (a page may have only output and marked blocks)
    assert _run_page(page, tmp_path, monkeypatch) == _runnable(page)


def _runnable(page: str) -> int:
    """How many python and mlir blocks and sh lines of `page` are to be run."""
    count = 0
    for block in page_blocks(page):
        if block.why_not_run is not None or block.name:
            continue
        if block.lang in ("python", "mlir"):
            count += 1
        elif block.lang == "sh":
            count += sum(bool(shlex.split(line, comments=True))
                         for line in block.code.replace("\\\n", " ").splitlines())
    return count


def test_every_block_is_run_or_says_why() -> None:
    """On a RUN_PAGES page every block is run, written to a file, output (```text) or marked
    `<!-- not run: REASON -->`; every page is in RUN_PAGES or NOT_YET (and no other)."""
    assert sorted(RUN_PAGES + NOT_YET) == sorted(all_pages())
    assert not set(RUN_PAGES) & set(NOT_YET)
    for page in RUN_PAGES:
        for block in page_blocks(page):
            if block.why_not_run is not None:
                assert block.why_not_run.strip(), (page, block.code[:80])
                continue
            assert block.name or block.lang in ("python", "sh", "mlir", "text"), \
                (page, block.code[:80])
            if block.lang == "sh" and not block.name:
                lines = [w for w in (shlex.split(line, comments=True)
                                     for line in block.code.replace("\\\n", " ").splitlines())
                         if w]
                assert all(w[0] in RUNNABLE or w[0].startswith(("build/", "./"))
                           for w in lines), (page, block.code)


def coverage() -> tuple[int, int]:
    """(blocks run, written, output or marked with a reason; all blocks) over every page."""
    found = [(page, b) for page in all_pages() for b in page_blocks(page)]
    done = sum(page in RUN_PAGES or b.why_not_run is not None or b.lang == "text"
               for page, b in found)
    return done, len(found)


def test_coverage_of_doc_blocks_does_not_drop() -> None:
    done, total = coverage()
    assert done / total >= 0.97, f"{done} of {total} doc blocks run or marked"


@pytest.mark.parametrize("page", ["rdu.md", "mncore.md"])
def test_pages_have_runnable_examples(page: str) -> None:
    langs = {lang for lang, _, _ in blocks(page)}
    assert "python" in langs and "sh" in langs
    # a block that is neither run nor written must say it is output or a format (```text)
    assert langs <= {"python", "sh", "json", "yaml", "text"}
    assert all(name for lang, name, _ in blocks(page) if lang in ("json", "yaml"))
