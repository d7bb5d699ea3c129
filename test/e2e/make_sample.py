"""Writes test/e2e/suite_sample: the part of torch-mlir's e2e suite that sample.txt needs.

    python test/e2e/make_sample.py --suite $E2E_SUITE_DIR [--choose [RESULTS.json ...]]

`make check` runs a fixed sample of 100 tests (docs/e2e.md) without the suite, which is not
on PyPI. This keeps, from each `test_suite/*.py` file, the sampled tests, the module classes
their factories build, the top-level helpers and constants those use (transitively) and the
imports of what is kept; the framework files (framework.py, registry.py, reporting.py,
annotations.py, configs/utils.py, configs/fx_importer_backend.py, the RefBackend's
linalg_on_tensors_backends) are copied whole. Every file keeps its path and its licence
header (Apache-2.0 WITH LLVM-exception, LICENSE copied too); a changed file says so under
the header.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from e2e_setup import PACKAGE, SAMPLE_SUITE, find_package  # noqa: E402

#: Copied unchanged.
WHOLE = ("__init__.py", "framework.py", "registry.py", "reporting.py", "annotations.py",
         "configs/utils.py", "configs/fx_importer_backend.py",
         # The RefBackend, so the sample can be compared with it too (`--config refbackend`).
         "linalg_on_tensors_backends/__init__.py", "linalg_on_tensors_backends/abc.py",
         "linalg_on_tensors_backends/refbackend.py")
NOTICE = ("# Modified for accel's e2e sample (test/e2e/make_sample.py): only what the sampled\n"
          "# tests need is kept.\n")


def _header(text: str) -> str:
    """The leading comment block (the licence)."""
    lines = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
        {n.value.id for n in ast.walk(node)
         if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()


def _is_test(node: ast.stmt) -> bool:
    """A function registered with `@register_test_case(...)`."""
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Name)
        and d.func.id == "register_test_case" for d in node.decorator_list)


def trim(source: str, tests: set[str]) -> tuple[str, set[str]]:
    """`source` cut down to `tests` and what they use; also returns the tests found."""
    tree = ast.parse(source)
    body = tree.body
    defines: dict[str, list[int]] = {}
    for i, node in enumerate(body):
        for name in _defined(node):
            defines.setdefault(name, []).append(i)
    found = {n.name for n in body if _is_test(n) and n.name in tests}
    keep: set[int] = set()
    todo = [i for i, n in enumerate(body) if _is_test(n) and n.name in found]
    while todo:
        i = todo.pop()
        if i in keep:
            continue
        keep.add(i)
        for name in _names(body[i]):
            todo += [j for j in defines.get(name, []) if j not in keep and
                     not (_is_test(body[j]) and body[j].name not in found)]
    lines = source.splitlines(keepends=True)
    out, previous = "", None
    for i in sorted(keep):
        node = body[i]
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        imports = isinstance(node, ast.Import | ast.ImportFrom)
        out += "" if previous is None or imports and previous else "\n\n"
        out += "".join(lines[start - 1:node.end_lineno]).rstrip("\n") + "\n"
        previous = imports
    return _header(source) + NOTICE + "\n" + out, found


def choose(names: list[str], results: list[dict[str, list[dict]]], count: int = 100,
           max_seconds: float = 6.0) -> list[str]:
    """`count` tests spread evenly over the suite's `names` in name order (test
    `i * n // count`), each replaced by the next name when a run in `results` (run_e2e.py
    --json outputs) saw it fail eagerly (torchvision, the timeout test) or take over
    `max_seconds` in some config, so the sample stays fast and exercises the backends.
    A test no run has seen is taken as it comes: run the sample, choose again with that
    run's results added, until the choice stops changing (docs/e2e.md)."""
    names = sorted(names)
    slow = {r["test"] for run in results for records in run.values() for r in records
            if r["stage"] == "eager" or (r["seconds"] or 1e9) > max_seconds}
    picked: list[str] = []
    for i in range(count):
        j = i * len(names) // count
        while names[j] in slow or names[j] in picked:
            j = (j + 1) % len(names)
        picked.append(names[j])
    return picked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--tests", type=Path, default=HERE / "sample.txt")
    parser.add_argument("--out", type=Path, default=SAMPLE_SUITE)
    parser.add_argument("--choose", type=Path, nargs="*", metavar="RESULTS_JSON",
                        help="first write --tests: 100 tests of the suite, avoiding those "
                        "these runs' results (run_e2e.py --json) saw fail eagerly or run slowly")
    args = parser.parse_args(argv)

    if args.choose is not None:
        import json

        from e2e_setup import all_tests, setup

        setup(args.suite)
        runs = [json.loads(path.read_text()) for path in args.choose]
        src = find_package(args.suite) / PACKAGE
        # Only tests registered at a file's top level can be cut out by `trim` (a few are
        # registered inside a class body).
        top = {n.name for path in (src / "test_suite").glob("*.py")
               for n in ast.parse(path.read_text()).body if _is_test(n)}
        names = [n for n in all_tests() if n in top]
        args.tests.write_text("\n".join(choose(names, runs)) + "\n")
    src = find_package(args.suite) / PACKAGE
    tests = set(args.tests.read_text().split())
    dst = args.out / PACKAGE
    if args.out.exists():
        shutil.rmtree(args.out)
    for rel in WHOLE:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, dst / rel)
    for up in (src.parent, *src.parents):  # the licence at the checkout's root
        if (up / "LICENSE").is_file():
            shutil.copyfile(up / "LICENSE", args.out / "LICENSE")
            break
    configs_init = (src / "configs/__init__.py").read_text()
    (dst / "configs/__init__.py").write_text(
        _header(configs_init) + NOTICE + "\nfrom .native_torch import NativeTorchTestConfig\n"
        "from .fx_importer_backend import FxImporterTestConfig\n")
    shutil.copyfile(src / "configs/native_torch.py", dst / "configs/native_torch.py")
    modules, seen = [], set()
    (dst / "test_suite").mkdir(parents=True, exist_ok=True)
    for path in sorted((src / "test_suite").glob("*.py")):
        if path.name == "__init__.py":
            continue
        text, found = trim(path.read_text(), tests)
        if found:
            (dst / "test_suite" / path.name).write_text(text)
            modules.append(path.stem)
            seen |= found
    init = (src / "test_suite/__init__.py").read_text()
    (dst / "test_suite/__init__.py").write_text(
        _header(init) + NOTICE + "\n\ndef register_all_tests():\n"
        '    """Registers the sampled tests."""\n    # Side-effecting import statements.\n'
        + "".join(f"    from . import {m}  # noqa: F401\n" for m in modules))
    missing = tests - seen
    if missing:
        print(f"make_sample.py: not found in the suite: {', '.join(sorted(missing))}",
              file=sys.stderr)
        return 1
    print(f"wrote {args.out}: {len(seen)} tests from {len(modules)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
