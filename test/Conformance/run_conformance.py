"""Run upstream MLIR test files' RUN lines with `mlir-opt` mapped to accel-opt, and the same
lines with a bare-bindings stand-in (`bare_opt.py`) as the reference.

    python test/Conformance/run_conformance.py [FILE ...] [--json OUT] [-v]

Each RUN line is executed in this process (a small shell: `|`, `&&`, `not`, `2>&1`, `>`,
`<`, `-o`; commands `mlir-opt`, `FileCheck`, `cat`), so a file costs its passes, not tool
start-ups. A RUN line *regresses* when the bare bindings pass it and accel-opt does not: the
exit status is 1 if any does. Lines with other tools are skipped for both.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "upstream"
sys.path.insert(0, str(HERE))


IMPLS = ("accel", "bare", "bundled")


class Skip(Exception):
    """A RUN line that uses a tool this runner does not have."""


def run_lines(path: Path) -> list[str]:
    out, pending = [], ""
    for line in path.read_text().splitlines():
        m = re.search(r"(?://|#)\s*RUN:\s?(.*)$", line)
        if not m:
            continue
        body = m.group(1).rstrip()
        if body.endswith("\\"):
            pending += body[:-1] + " "
            continue
        out.append(pending + body)
        pending = ""
    return out


def substitute(line: str, path: Path, tmp: str) -> str:
    subs = {"%s": str(path), "%/s": str(path), "%t": tmp, "%/t": tmp, "%S": str(path.parent),
            "%/S": str(path.parent), "%p": str(path.parent), "%/p": str(path.parent)}
    return re.sub(r"%/?[stSp]", lambda m: subs.get(m.group(0), m.group(0)), line)


# -- a tiny shell ---------------------------------------------------------------------------
def _capture(fn: Callable[[], int], stdin: str) -> tuple[int, str, str]:
    """Run `fn` with fds 1 and 2 (C++ and Python writes alike) captured and `stdin` fed."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    old = sys.stdin, sys.stdout, sys.stderr
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
        # Python's streams on the fds too (pytest replaces sys.stdout with its own object).
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        try:
            code = fn()
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None
                                                                   else 1)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout.close()
            sys.stderr.close()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sys.stdin, sys.stdout, sys.stderr = old
        out.seek(0)
        err.seek(0)
        return code or 0, out.read().decode(errors="replace"), err.read().decode(
            errors="replace")


def _bundled(argv: list[str]) -> int:
    """The real mlir-opt driver of the bundled MLIR (`torch-mlir-opt`, torch-mlir's dialects
    and a few upstream passes only): shows which lines the bundled version itself passes."""
    import subprocess

    from accel.ir import bindings_opt_tool

    done = subprocess.run([bindings_opt_tool(), *argv], input=sys.stdin.read().encode(),
                          capture_output=True, timeout=120)
    sys.stdout.buffer.write(done.stdout)
    sys.stderr.buffer.write(done.stderr)
    return done.returncode


def _tool(name: str, impl: str) -> Callable[[list[str]], int]:
    if name == "mlir-opt":
        if impl == "bundled":
            return _bundled
        if impl == "accel":
            from accel.cli import run_main
            from accel.tools.accel_opt import main

            def accel(argv: list[str]) -> int:
                saved, sys.argv[0] = sys.argv[0], "accel-opt"  # the name in its messages
                try:
                    return run_main(main, argv)
                finally:
                    sys.argv[0] = saved
            return accel
        import bare_opt

        return bare_opt.main
    if name == "FileCheck":
        from filecheck.main import main as filecheck

        return lambda argv: filecheck(["FileCheck", *argv]) or 0
    if name in _SHELL:
        return _SHELL[name]
    raise Skip(name)


def _cat(argv: list[str]) -> int:
    for a in argv:
        sys.stdout.write(sys.stdin.read() if a == "-" else Path(a).read_text())
    if not argv:
        sys.stdout.write(sys.stdin.read())
    return 0


def _rm(argv: list[str]) -> int:
    for a in (a for a in argv if not a.startswith("-")):
        p = Path(a)
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    return 0


def _test(argv: list[str]) -> int:
    checks = {"-f": Path.is_file, "-d": Path.is_dir, "-e": Path.exists}
    if len(argv) == 2 and argv[0] in checks:
        return 0 if checks[argv[0]](Path(argv[1])) else 1
    raise Skip("test " + " ".join(argv))


_SHELL: dict[str, Callable[[list[str]], int]] = {
    "cat": _cat, "rm": _rm, "test": _test, "true": lambda argv: 0, "false": lambda argv: 1}


def _run_stage(words: list[str], impl: str, data: str, log: list[str]) -> tuple[int, str]:
    """One pipeline stage: redirections, `not`, then the tool; (exit code, stdout)."""
    invert = False
    while words and words[0] == "not":
        invert, words = not invert, words[1:]
    merge, out_file, err_file, in_file, argv = False, None, None, None, []
    it = iter(words[1:])
    for w in it:
        if w == "2>&1":
            merge = True
        elif w in (">", "1>"):
            out_file = next(it)
        elif w == "2>":
            err_file = next(it)
        elif w == "<":
            in_file = next(it)
        elif w.startswith("<") and len(w) > 1:
            in_file = w[1:]
        elif w.startswith("2>") and len(w) > 2:
            err_file = w[2:]
        elif w.startswith(">") and len(w) > 1:
            out_file = w[1:]
        else:
            argv.append(w)
    tool = _tool(words[0], impl)
    stdin = Path(in_file).read_text() if in_file else data
    code, out, err = _capture(lambda t=tool, a=argv: t(list(a)), stdin)
    log.append(f"$ {' '.join(words)}  -> {code}\n{err[-2000:]}")
    if words[0] == "mlir-opt":  # what the driver printed, to compare the implementations
        _TRACE.append((code, out, _normalized(err)))
    data = out + err if merge else out
    if err_file and err_file != "/dev/null":
        Path(err_file).write_text(err)
    if out_file:
        if out_file != "/dev/null":
            Path(out_file).write_text(data)
        data = ""
    if invert:
        code = 0 if code else 1
    return code, data


_TRACE: list[tuple[int, str, str]] = []


def _normalized(err: str) -> str:
    """stderr without the driver's own name (its messages start with it)."""
    from accel.ir import bindings_opt_tool

    err = err.replace(f"Try: '{bindings_opt_tool()} --help'", "Try: 'accel-opt --help'")
    return re.sub(r"^(torch-mlir-opt|accel-opt): ", "TOOL: ", err, flags=re.M)


def _run_pipeline(pipeline: str, impl: str, log: list[str]) -> int:
    data, code = "", 0
    for stage in pipeline.split(" | "):
        code, data = _run_stage(shlex.split(stage), impl, data, log)
    return code


def execute(line: str, impl: str) -> tuple[bool, str]:
    """Run one RUN line (`a && b`, `a || b`, pipelines); (passed, log)."""
    log: list[str] = []
    code = 0
    for conj in re.split(r"\s&&\s", line):
        alternatives = re.split(r"\s\|\|\s", conj)
        for alt in alternatives:
            code = _run_pipeline(alt, impl, log)
            if not code:
                break
        if code:
            return False, "\n".join(log)
    return True, "\n".join(log)


def run_file(path: Path, verbose: bool = False) -> list[dict]:
    """Every RUN line of `path`, in order, once per implementation; as lit does, the lines of
    one file share `%t` (a line may read what an earlier one wrote)."""
    lines = run_lines(path)
    rows = [{"file": str(path.relative_to(UPSTREAM)), "run": k + 1, "line": raw}
            for k, raw in enumerate(lines)]
    for impl in IMPLS:
        with tempfile.TemporaryDirectory() as tmp:
            for row, raw in zip(rows, lines, strict=True):
                line = substitute(raw, path, os.path.join(tmp, "out"))
                start = time.perf_counter()
                _TRACE.clear()
                try:
                    ok, log = execute(line, impl)
                except Skip as why:
                    row["skipped"] = str(why)
                    ok, log = None, ""
                except Exception as err:  # noqa: BLE001 - a runner bug must not hide rows
                    ok, log = False, f"runner error: {type(err).__name__}: {err}"
                row[impl] = ok
                row[f"{impl}_s"] = round(time.perf_counter() - start, 3)
                row[f"{impl}_log"] = log
                row[f"{impl}_trace"] = [(c, o.replace(tmp, "%t"), e.replace(tmp, "%t"))
                                        for c, o, e in _TRACE]
    for row in rows:
        row["regression"] = bool(row.get("bare")) and not row.get("accel")
        # accel-opt printed exactly what the bundled mlir-opt printed (exit codes too).
        row["same_as_bundled"] = bool(row.get("accel_trace")) and \
            row.get("accel_trace") == row.get("bundled_trace")
        if verbose and row["regression"]:
            print(row["accel_log"], file=sys.stderr)
    return rows


def report(rows: list[dict]) -> str:
    """The table: per RUN line the three results, and `=` where accel-opt printed exactly
    what torch-mlir-opt printed; then the totals."""
    width = max((len(r["file"]) for r in rows), default=10)
    mark = {True: "pass", False: "FAIL", None: "skip"}
    lines = [f"{'file':<{width}}  run  accel-opt  bare  torch-mlir-opt  same"]
    for r in rows:
        flag = "  <-- regression" if r["regression"] else ""
        lines.append(f"{r['file']:<{width}}  {r['run']:>3}  {mark[r['accel']]:<9}  "
                     f"{mark[r['bare']]:<4}  {mark[r.get('bundled')]:<14}  "
                     f"{'=' if r['same_as_bundled'] else ' '}{flag}")
    count = {k: sum(1 for r in rows if r.get(k)) for k in ("accel", "bare", "bundled",
                                                           "same_as_bundled", "regression")}
    files = len({r["file"] for r in rows})
    lines.append(f"\n{files} files, {len(rows)} RUN lines: accel-opt passes {count['accel']}, "
                 f"bare bindings {count['bare']}, torch-mlir-opt {count['bundled']}; "
                 f"accel-opt's output identical to torch-mlir-opt's on {count['same_as_bundled']}; "
                 f"regressions {count['regression']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    files = args.files or sorted(UPSTREAM.rglob("*.mlir"))
    rows = [r for f in files for r in run_file(f.resolve(), args.verbose)]
    print(report(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if any(r["regression"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
