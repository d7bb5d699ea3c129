"""accel-opt's printing as mlir-opt prints: `-dump-pass-pipeline`, `--list-passes`,
`--show-dialects`, IR dumps for chosen passes (and the diagnostics among them), timing reports
(tree, list, JSON) and the text of pass-pipeline reproducers.

The bindings expose `PassManager.enable_ir_printing` (every pass, module scope, after change,
after failure) and `enable_timing()` (a tree of wall times), but not mlir-opt's
`--mlir-print-ir-before=PASS`, `--mlir-timing-display=list` or `--mlir-output-format=json`:
those are rebuilt here from what the bindings print (captured from file descriptor 2).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

_HEADER = re.compile(r"^// -----// IR Dump (Before|After) (\S+?)(?: Failed)?: (.*?) //----- //$")


# -- -dump-pass-pipeline ----------------------------------------------------------------------
def pretty_pipeline(text: str) -> str:
    """`builtin.module(func.func(cse),inline{...})` as `OpPassManager::dump` prints it."""
    root = _parse(text)
    count = len(root[2]) if root[2] is not None else 0
    return f"Pass Manager with {count} passes:\n{_show(root, 0)}\n"


def _parse(text: str) -> tuple[str, str, list | None]:
    elements, pos = _parse_list(text, 0)
    return elements[0] if len(elements) == 1 else ("builtin.module", "", elements)


def _parse_list(text: str, pos: int) -> tuple[list, int]:
    out: list = []
    while pos < len(text) and text[pos] != ")":
        start = pos
        while pos < len(text) and text[pos] not in "{(,)":
            pos += 1
        name, opts, children = text[start:pos].strip(), "", None
        if pos < len(text) and text[pos] == "{":
            end = _close_brace(text, pos)
            opts, pos = text[pos:end + 1], end + 1
        if pos < len(text) and text[pos] == "(":
            children, pos = _parse_list(text, pos + 1)
            pos += 1  # ')'
        out.append((name, opts, children))
        if pos < len(text) and text[pos] == ",":
            pos += 1
    return out, pos


def _close_brace(text: str, pos: int) -> int:
    from accel.pipeline import find_matching

    end = find_matching(text, pos, "{", "}")
    return end if end >= 0 else len(text) - 1


def _show(node: tuple[str, str, list | None], indent: int) -> str:
    name, opts, children = node
    pad = " " * indent
    if children is None:
        return f"{pad}{name}{opts}"
    inner = ",\n".join(_show(c, indent + 2) for c in children)
    return f"{pad}{name}(\n{inner}\n{pad})" if inner else f"{pad}{name}()"


def expanded_pipeline(steps: list) -> str:
    """The pipeline with every option of every pass spelled out, as the bindings' pass
    manager prints it (accel passes with their own options)."""
    from accel.ir import PassManager
    from accel.pass_run import UpstreamStep, pipeline_text
    from accel.pipeline import _validation_context

    parts = []
    for step in steps:
        if isinstance(step, UpstreamStep):
            with _validation_context():
                text = str(PassManager.parse(f"builtin.module({step.text()})"))
            parts.append(text[len("builtin.module("):-1])
        else:
            parts.append(step.text())
    return "builtin.module(" + ",".join(p for p in parts if p) + ")" if parts else \
        pipeline_text([])


# -- --list-passes, --help's pass list, --show-dialects ---------------------------------------
def list_passes() -> str:
    from accel.passes import registered_passes
    from accel.passes.base import format_value, type_name

    lines = ["Available passes (accel and plugins):"]
    for name, cls in registered_passes().items():
        lines.append(f"  {name:<40} - {cls.summary()}")
        for o in cls.options():
            default = "" if repr(o.default) == "<required>" else \
                f" (default: {format_value(o.default)})"
            helptext = f"  {o.help}" if o.help else ""
            lines.append(f"    --{o.name.replace('_', '-')}=<{type_name(o.type)}>{default}"
                         f"{helptext}")
    from accel.upstream_passes import upstream_passes

    lines += ["", "Upstream MLIR passes (from the bindings):"]
    for info in upstream_passes():
        lines.append(f"  {info.name:<40} - {info.summary}")
        for o in info.options:
            typ = f"<{o.type}>" if o.type else "<value>"
            default = f" (default: {o.default})" if o.default not in (None, "") else ""
            lines.append(f"    --{o.name}={typ}{default}")
    return "\n".join(lines)


def help_passes() -> list[tuple[str, str, list[tuple[str, str]]]]:
    from accel.passes import registered_passes
    from accel.upstream_passes import upstream_passes

    out = [(n, c.summary(), [(o.name.replace("_", "-"), o.help or "") for o in c.options()])
           for n, c in registered_passes().items()]
    out += [(p.name, p.summary, [(o.name, o.type or "") for o in p.options])
            for p in upstream_passes()]
    return sorted(out)


#: Upstream dialect namespaces probed for --show-dialects (the bindings list no names).
_DIALECTS = ("acc affine amdgpu amx arith arm_neon arm_sme arm_sve async bufferization builtin "
             "cf complex dlti emitc func gpu index irdl linalg llvm math memref mesh ml_program "
             "mpi nvgpu nvvm omp pdl pdl_interp polynomial ptr quant rocdl scf shape shard smt "
             "sparse_tensor spirv tensor tosa transform ub vector wasmssa x86vector xegpu "
             "xevm").split()


def show_dialects() -> str:
    from accel.context import make_context

    names = []
    with make_context() as ctx:
        for name in _DIALECTS:
            try:
                ctx.get_dialect_descriptor(name)
            except Exception:  # noqa: BLE001 - not registered in this build
                continue
            names.append(name)
        names += [d for d in _accel_dialects() if d not in names]
    return "Available Dialects:\n" + "\n".join(sorted(names))


def _accel_dialects() -> list[str]:
    try:
        from accel.dialects import DIALECTS  # type: ignore[attr-defined]

        return list(DIALECTS)
    except Exception:  # noqa: BLE001 - optional listing
        return ["accel", "mncore", "rdu"]


# -- capturing what the bindings print to stderr ----------------------------------------------
@contextmanager
def captured_fd2(active: bool) -> Iterator[list[str]]:
    """While active, what is written to file descriptor 2 (C++ and Python) goes to a list."""
    import sys

    box: list[str] = []
    if not active:
        yield box
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box.append(tmp.read().decode(errors="replace"))


class DumpFilter:
    """Keeps the IR dumps of the passes named (by argument) in `--mlir-print-ir-before/after`;
    fed the captured stream piece by piece (a dump may straddle two pieces)."""

    def __init__(self, before: list[str], after: list[str], before_all: bool,
                 after_all: bool):
        self.before, self.after = before, after
        self.before_all, self.after_all = before_all, after_all
        self.keep = True

    def feed(self, text: str) -> str:
        out: list[str] = []
        for line in text.splitlines(keepends=True):
            m = _HEADER.match(line.rstrip("\n"))
            if m:
                self.keep = _wanted(m, self.before, self.after, self.before_all,
                                    self.after_all)
            if self.keep:
                out.append(line)
        return "".join(out)


def filter_dumps(text: str, before: list[str], after: list[str], before_all: bool,
                 after_all: bool) -> str:
    """Keep the IR dumps of the passes named (by argument) in `--mlir-print-ir-before/after`."""
    return DumpFilter(before, after, before_all, after_all).feed(text)


def failed_dump_at(text: str) -> int:
    """Where the first `IR Dump After ... Failed` header starts in `text` (-1: none): the
    errors of the failed pass print before it in mlir-opt."""
    m = re.search(r"^// -----// IR Dump After \S+? Failed", text, re.M)
    return m.start() if m else -1


def last_dump_subject(text: str) -> tuple[str, str, str | None] | None:
    """(pass name, op name, symbol) of the last IR dump in `text`: the header names the pass
    (`IR Dump Before CSEPass: cse`), the first line printed names the op (`func.func @f(`)."""
    heads = list(re.finditer(r"^// -----// IR Dump \S+ (\S+?)(?: Failed)?: .*? //----- //\n"
                             r"(.*)$", text, re.M))
    if not heads:
        return None
    first = heads[-1].group(2).strip()
    generic = re.match(r'(?:%\S+ = )?"([\w.$-]+)"', first)
    custom = re.match(r"(?:%\S+ = )?([\w.$-]+)(?:\s+(?:private|public|nested))?"
                      r"(?:\s+@([\w.$-]+|\"[^\"]*\"))?", first)
    if generic:
        return heads[-1].group(1), generic.group(1), None
    if custom is None:
        return None
    name = "builtin.module" if custom.group(1) == "module" else custom.group(1)
    if "." not in name:
        name = "func." + name if name == "func" else name
    return heads[-1].group(1), name, (custom.group(2) or "").strip('"') or None


# -- --mlir-timing ----------------------------------------------------------------------------
_ROW = re.compile(r"^(\s+)(\d+\.\d+) \(\s*([\d.]+)%\)  (\s*)(.*)$")
_BAR = "===" + "-" * 73 + "==="


def timing_report(text: str, parser_s: float, output_s: float, display: str, fmt: str) -> str:
    """The bindings' timing tree, with mlir-opt's `Parser` and `Output` rows, in the display
    (`tree`, `list`) and format (`text`, `json`) asked for."""
    rows: list[tuple[int, str, float]] = []  # depth, name, seconds
    for line in text.splitlines():
        m = _ROW.match(line)
        if m and m.group(5) not in ("Rest", "Total"):
            rows.append((len(m.group(4)) // 2, m.group(5), float(m.group(2))))
    passes = sum(s for d, _, s in rows if d == 0)
    total_m = re.search(r"Total Execution Time: ([\d.]+) seconds", text)
    total = (float(total_m.group(1)) if total_m else passes) + parser_s + output_s
    rows = [(0, "Parser", parser_s), *rows, (0, "Output", output_s)]
    rest = max(total - sum(s for d, _, s in rows if d == 0), 0.0)
    if display == "list":
        merged: dict[str, float] = {}
        for _, name, s in rows:
            merged[name] = merged.get(name, 0.0) + s
        rows = [(0, n, s) for n, s in sorted(merged.items(), key=lambda kv: -kv[1])]
    if fmt == "json":
        return _json(rows, rest, total)
    pct = (lambda s: 100.0 * s / total) if total else (lambda s: 0.0)
    lines = [_BAR, " " * 25 + "... Execution time report ...", _BAR,
             f"  Total Execution Time: {total:.4f} seconds", "",
             "  ----Wall Time----  ----Name----"]
    lines += [f"  {s:8.4f} ({pct(s):5.1f}%)  {'  ' * d}{n}" for d, n, s in rows]
    lines += [f"  {rest:8.4f} ({pct(rest):5.1f}%)  Rest",
              f"  {total:8.4f} ({100.0 if total else 0.0:5.1f}%)  Total"]
    return "\n".join(lines) + "\n"


def _json(rows: list[tuple[int, str, float]], rest: float, total: float) -> str:
    """mlir-opt's JSON layout: one timer a line, children under "passes"."""
    def head(name: str, s: float) -> str:
        p = 100.0 * s / total if total else 0.0
        t = f'{{"duration": {s:8.4f}, "percentage": {p:5.1f}}}'
        return f'{{"user": {t}, "wall": {t}, "name": {json.dumps(name)}'

    lines = ["["]
    open_depths: list[int] = []
    for depth, name, s in rows:
        while open_depths and open_depths[-1] >= depth:
            d = open_depths.pop()
            lines.append(f"{'  ' * d}{{}}]}},")
        lines.append(f"{'  ' * depth}{head(name, s)}, \"passes\": [")
        open_depths.append(depth)
    while open_depths:
        d = open_depths.pop()
        lines.append(f"{'  ' * d}{{}}]}},")
    lines += [f"{head('Rest', rest)}}},", f"{head('Total', total)}}}", "]"]
    return "\n".join(lines) + "\n"


# -- reproducers --------------------------------------------------------------------------------
def reproducer_text(ir: str, pipeline: str, disable_threading: bool, verify_each: bool) -> str:
    """IR plus the `mlir_reproducer` resource that `--run-reproducer` reads back."""
    quoted = json.dumps(pipeline)
    return (f"{ir.rstrip()}\n\n{{-#\n  external_resources: {{\n    mlir_reproducer: {{\n"
            f"      pipeline: {quoted},\n"
            f"      disable_threading: {str(disable_threading).lower()},\n"
            f"      verify_each: {str(verify_each).lower()}\n    }}\n  }}\n#-}}\n")


_TOKEN = re.compile(r'\s+|//[^\n]*|"(?:[^"\\]|\\.)*"|[\w.-]+|.', re.S)


def read_reproducer(text: str) -> tuple[str, dict[str, object]] | None:
    """(the text without its `{-# ... #-}` resource section, the `mlir_reproducer` fields)
    or None when it has none. The section is read token by token: comments (`// ...`) and
    strings holding braces (`canonicalize{...}`) do not end it."""
    start = text.find("{-#")
    while start >= 0:
        end = text.find("#-}", start)
        if end < 0:
            return None
        body = text[start + 3:end]
        fields = _reproducer_fields(body)
        if fields is not None:
            # Keep the line count: locations stay those of the file.
            blank = re.sub(r"[^\n]", " ", text[start:end + 3])
            return text[:start] + blank + text[end + 3:], fields
        start = text.find("{-#", end)
    return None


def _reproducer_fields(body: str) -> dict[str, object] | None:
    tokens = [t for t in _TOKEN.findall(body) if t.strip() and not t.startswith("//")]
    for i, tok in enumerate(tokens):
        if tok == "mlir_reproducer" and tokens[i + 1: i + 3] == [":", "{"]:
            break
    else:
        return None
    fields: dict[str, object] = {}
    k = i + 3
    while k + 2 < len(tokens) and tokens[k] != "}":
        key, colon, value = tokens[k], tokens[k + 1], tokens[k + 2]
        if colon != ":":
            break
        fields[key] = json.loads(value) if value.startswith('"') else value == "true"
        k += 4 if k + 3 < len(tokens) and tokens[k + 3] == "," else 3
    return fields


# -- --mlir-print-ir-tree-dir with --mlir-print-ir-before/after=PASS --------------------------
def filter_tree_dir(root: str, existing: set[str], before: list[str], after: list[str],
                    before_all: bool, after_all: bool) -> None:
    """The bindings wrote a file per dump of every pass; keep those of the passes named, and
    number them as mlir-opt does (its counter counts the files written in each directory)."""
    by_dir: dict[str, list[tuple[int, str, str]]] = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            m = re.fullmatch(r"((?:\d+_)*)(\d+)_(.+\.mlir)", name)
            if path in existing or m is None:
                continue
            by_dir.setdefault(folder, []).append((int(m.group(2)), m.group(1), m.group(3)))
    for folder, entries in by_dir.items():
        counter = None
        for number, prefix, rest in sorted(entries):
            path = os.path.join(folder, f"{prefix}{number}_{rest}")
            with open(path, encoding="utf-8", errors="replace") as f:
                head = _HEADER.match(f.readline().rstrip("\n"))
            if head is not None and not _wanted(head, before, after, before_all, after_all):
                os.remove(path)
                continue
            counter = number if counter is None else counter + 1
            if counter != number:
                os.rename(path, os.path.join(folder, f"{prefix}{counter}_{rest}"))


def tree_files(root: str | None) -> set[str]:
    """The files under `root` now (those a run must leave alone)."""
    if not root or not os.path.isdir(root):
        return set()
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


def _wanted(head: re.Match[str], before: list[str], after: list[str], before_all: bool,
            after_all: bool) -> bool:
    arg = re.split(r"[{ ]", head.group(3), maxsplit=1)[0]
    if head.group(1) == "Before":
        return before_all or arg in before
    return after_all or arg in after


# -- diagnostics in the captured stream ----------------------------------------------------------
#: Diagnostics printed while the bindings' output is captured are framed with these, so that
#: they keep their place among the IR dumps and filtering leaves them alone.
DIAG_OPEN, DIAG_CLOSE = "\x00accel-diag\x00", "\x00/accel-diag\x00"


def split_marked(text: str) -> list[tuple[bool, str]]:
    """The captured stream as (is_diagnostic, text) pieces, in order."""
    out: list[tuple[bool, str]] = []
    pos = 0
    while True:
        start = text.find(DIAG_OPEN, pos)
        if start < 0:
            break
        end = text.find(DIAG_CLOSE, start)
        if end < 0:
            break
        out.append((False, text[pos:start]))
        out.append((True, text[start + len(DIAG_OPEN):end]))
        pos = end + len(DIAG_CLOSE)
    out.append((False, text[pos:]))
    return [(d, t) for d, t in out if t]
