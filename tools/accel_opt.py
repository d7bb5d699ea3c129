"""`accel-opt`: an mlir-opt-compatible driver for upstream MLIR passes plus accel and plugin passes.

    accel-opt in.mlir --pass-pipeline='builtin.module(func.func(canonicalize),tag-funcs{attr=x})'
    accel-opt in.mlir -canonicalize -tag-funcs{attr=x} --load-pass-plugin=my_passes.py
    accel-opt in.mlir --split-input-file --verify-diagnostics -accel-emit-c-interface
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field

from accel.cli import exit_with, read_input, version_text
from accel.diagnostics import AccelError, Diagnostic, relocate

SPLIT_MARKER = "// -----"
_SPLIT_LINE = re.compile(r"^\s*//\s*-----\s*$")
_EXPECTED = re.compile(
    r"expected-(?P<sev>error|warning|note|remark)(?P<re>-re)?"
    r" *(?:@(?P<where>above|below|unknown|[+-]?\d+))?\s*(?P<count>\d+)?\s*\{\{(?P<msg>.*)\}\}"
)

DESCRIPTION = """\
mlir-opt-compatible driver: parses MLIR, runs a pass pipeline mixing every upstream MLIR pass
(through the bindings) with accel and plugin passes, and prints the result.

Passes are given either as --pass-pipeline='builtin.module(func.func(cse),tag-funcs{attr=x})'
or in short form as separate flags: -canonicalize -tag-funcs{attr=x} (also --cse="opt=val").
All accel dialects are loaded. Errors print as FILE:LINE:COL: error: ... and exit 1.
"""


@dataclass
class Options:
    args: argparse.Namespace
    passes: list[str] = field(default_factory=list)  # short-form elements, in order


#: On/off flags: (flag, destination, help).
_SWITCHES = (
    ("--list-passes", "list_passes",
     "print every pass (accel, plugin, upstream) with summary and options"),
    ("--dump-pass-pipeline", "dump_pass_pipeline",
     "print the resolved pipeline to stderr before running it"),
    ("--allow-unregistered-dialect", "allow_unregistered_dialect",
     "accept ops of dialects that are not registered"),
    ("--mlir-print-ir-before-all", "mlir_print_ir_before_all",
     "print the IR before every pass (stderr)"),
    ("--mlir-print-ir-after-all", "mlir_print_ir_after_all",
     "print the IR after every pass (stderr)"),
    ("--mlir-print-ir-after-failure", "mlir_print_ir_after_failure",
     "print the IR after a pass fails (stderr)"),
    ("--mlir-print-op-generic", "mlir_print_op_generic", "print ops in generic form"),
    ("--mlir-print-debuginfo", "mlir_print_debuginfo", "print locations in the output"),
    ("--mlir-timing", "mlir_timing", "report per-pass wall times (stderr)"),
    ("--no-verify-each", "verify_each", "do not run the verifier after each pass"),
    ("--version", "version", "print versions and exit"),
    ("--debug", "debug", "show Python tracebacks for internal errors"),
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="accel-opt", description=DESCRIPTION, allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `accel-opt --list-passes` for every pass with its summary and options.")
    p.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin")
    p.add_argument("-o", dest="output", default="-", metavar="FILE",
                   help="output file (- = stdout)")
    p.add_argument("--pass-pipeline", metavar="PIPELINE",
                   help="textual pipeline, e.g. 'builtin.module(func.func(cse),canonicalize)'")
    p.add_argument("--split-input-file", action="store_true",
                   help=f"split the input at '{SPLIT_MARKER}' lines and process each chunk alone")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="check diagnostics against // expected-error@+1 {{...}} comments")
    p.add_argument("--load-pass-plugin", action="append", default=[], metavar="FILE.py",
                   help="import a Python file whose @register_pass passes become available")
    for flag, dest, text in _SWITCHES:
        p.add_argument(flag, dest=dest, action="store_false" if dest == "verify_each"
                       else "store_true", help=text)
    return p


_SHORT_LONG_FLAGS = {"-split-input-file", "-verify-diagnostics", "-allow-unregistered-dialect",
                     "-list-passes", "-pass-pipeline", "-load-pass-plugin", "-mlir-timing",
                     "-mlir-print-ir-after-all", "-mlir-print-ir-before-all",
                     "-mlir-print-ir-after-failure", "-mlir-print-op-generic",
                     "-mlir-print-debuginfo", "-dump-pass-pipeline", "-version", "-help"}


def parse_args(argv: list[str]) -> Options:
    """mlir-opt style: single-dash long flags, and any other `-name[{opts}|=opts]` is a pass."""
    known, passes = [], []
    flag_names = {a for action in build_parser()._actions for a in action.option_strings}
    takes_value = {"-o", "--pass-pipeline", "--load-pass-plugin"}
    it = iter(argv)
    for arg in it:
        if arg == "-" or not arg.startswith("-"):
            known.append(arg)
            continue
        norm = "-" + arg if arg.split("=", 1)[0] in _SHORT_LONG_FLAGS else arg
        head = norm.split("=", 1)[0]
        if head in flag_names or head in ("-h",):
            known.append(norm)
            if head in takes_value and "=" not in norm:
                known.append(next(it, ""))
            continue
        passes.append(_short_form_element(arg))
    args = build_parser().parse_args(known)
    return Options(args, passes)


def _short_form_element(arg: str) -> str:
    """`-cse` -> `cse`; `--canonicalize=max-iterations=3 top-down=0` -> `canonicalize{...}`."""
    body = arg.lstrip("-")
    name, sep, opts = body.partition("=")
    if sep and "{" not in name:
        return f"{name}{{{opts.strip(chr(34)).strip(chr(39))}}}"
    return body


# -- --list-passes, --version -------------------------------------------------------------
def list_passes() -> str:
    from accel.passes import registered_passes
    from accel.passes.base import type_name

    lines = ["Available passes (accel and plugins):"]
    for name, cls in registered_passes().items():
        lines.append(f"  {name:<40} - {cls.summary()}")
        for o in cls.options():
            default = "" if repr(o.default) == "<required>" else f" (default: {_fmt(o.default)})"
            helptext = f"  {o.help}" if o.help else ""
            flag = o.name.replace("_", "-")
            lines.append(f"    --{flag}=<{type_name(o.type)}>{default}{helptext}")
    try:
        from accel.upstream_passes import upstream_passes
    except ImportError:
        return "\n".join(lines)
    lines += ["", "Upstream MLIR passes (from the bindings):"]
    for info in upstream_passes():
        lines.append(f"  {info.name:<40} - {info.summary}")
        for o in info.options:
            typ = f"<{o.type}>" if o.type else "<value>"
            default = f" (default: {o.default})" if o.default not in (None, "") else ""
            lines.append(f"    --{o.name}={typ}{default}")
    return "\n".join(lines)


def _fmt(value: object) -> str:
    from accel.passes.base import format_value

    return format_value(value)


# -- one input chunk ----------------------------------------------------------------------
@dataclass
class ChunkResult:
    output: str | None
    diagnostics: list[Diagnostic]
    ok: bool


def process_chunk(text: str, line_offset: int, opts: Options, steps: list) -> ChunkResult:
    from accel.context import make_context
    from accel.pipeline import RunConfig, dialect_errors, run_steps
    from accel.safe_parse import parse_module

    a = opts.args
    filename = display_name(a.input)
    ctx = make_context(allow_unregistered=a.allow_unregistered_dialect)
    collected: list[Diagnostic] = []

    def handler(diag: object) -> bool:
        severity = str(getattr(diag, "severity", "")).rsplit(".", 1)[-1].lower()
        file, line, col = relocate(diag.location, filename, line_offset)  # type: ignore[attr-defined]
        collected.append(Diagnostic(severity, str(diag.message), file, line, col))  # type: ignore[attr-defined]
        return True

    with ctx:
        ctx.attach_diagnostic_handler(handler)
        try:
            module = parse_module(text, filename, line_offset)
        except AccelError as err:
            return ChunkResult(None, collected + err.diagnostics, False)
        errors = dialect_errors(module.operation, filename, line_offset)
        if errors:
            return ChunkResult(None, collected + errors, False)
        cfg = RunConfig(
            print_ir_before_all=a.mlir_print_ir_before_all,
            print_ir_after_all=a.mlir_print_ir_after_all,
            print_ir_after_failure=a.mlir_print_ir_after_failure,
            print_generic=a.mlir_print_op_generic, timing=a.mlir_timing,
            verify_each=a.verify_each, filename=filename, line_offset=line_offset,
            reproducer=not a.verify_diagnostics, plugins=tuple(a.load_pass_plugin),
            extra_flags=("--allow-unregistered-dialect",) if a.allow_unregistered_dialect else (),
        )
        if steps:
            try:
                run_steps(module, steps, cfg)
            except AccelError as err:
                return ChunkResult(None, collected + cfg.emitted + err.diagnostics, False)
            collected += cfg.emitted  # warnings of steps that ran in a child process
        out = module.operation.get_asm(print_generic_op_form=a.mlir_print_op_generic,
                                       enable_debug_info=a.mlir_print_debuginfo)
        return ChunkResult(str(out), collected, True)


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def split_chunks(text: str, split: bool) -> list[tuple[str, int]]:
    """(chunk, line offset) pairs; chunks keep their lines so locations stay right."""
    if not split:
        return [(text, 0)]
    chunks: list[tuple[str, int]] = []
    current: list[str] = []
    start = 0
    for i, line in enumerate(text.splitlines(keepends=True)):
        if _SPLIT_LINE.match(line):
            chunks.append(("".join(current), start))
            current, start = [], i + 1
            continue
        current.append(line)
    chunks.append(("".join(current), start))
    return chunks


# -- --verify-diagnostics -----------------------------------------------------------------
@dataclass
class Expected:
    severity: str
    line: int | None  # None: @unknown
    message: str
    regex: bool
    at: tuple[int, int]  # where the comment is (line, col), for "not produced" errors
    count: int = 1


def parse_expectations(text: str, line_offset: int, filename: str) -> list[Expected]:
    out: list[Expected] = []
    for i, line in enumerate(text.splitlines(), start=1):
        m = _EXPECTED.search(line)
        if not m:
            continue
        where, lineno = m.group("where"), i
        if where is None:
            target: int | None = lineno
        elif where == "above":
            target = lineno - 1
        elif where == "below":
            target = lineno + 1
        elif where == "unknown":
            target = None
        elif where[0] in "+-":
            target = lineno + int(where)
        else:
            target = int(where)
        out.append(Expected(m.group("sev"), None if target is None else target + line_offset,
                            m.group("msg"), bool(m.group("re")), (lineno + line_offset,
                                                                  m.start() + 1),
                            int(m.group("count") or 1)))
        if out[-1].regex:
            try:
                re.compile(_pattern(out[-1].message))
            except re.error as err:  # the test file's mistake: located, not "internal"
                raise AccelError(f"invalid regular expression in expected-{out[-1].severity}: "
                                 f"{err}", file=filename, line=lineno + line_offset,
                                 col=m.start() + 1) from None
    return out


def _pattern(message: str) -> str:
    """An expectation's message as a regex: `{{...}}` parts as written, the rest literal."""
    return "".join(part if k % 2 else re.escape(part)
                   for k, part in enumerate(re.split(r"\{\{(.*?)\}\}", message)))


def _matches(exp: Expected, diag: Diagnostic, filename: str) -> bool:
    if exp.severity != diag.severity:
        return False
    if exp.line is None:
        if diag.line is not None:
            return False
    elif diag.line != exp.line or diag.file != filename:
        return False
    if exp.regex:
        return re.search(_pattern(exp.message), diag.message) is not None
    return exp.message in diag.message


def verify(expected: list[Expected], diags: list[Diagnostic], filename: str) -> list[Diagnostic]:
    """Errors for unmatched expectations and unexpected diagnostics."""
    flat: list[Diagnostic] = []
    for d in diags:
        flat.append(d)
        flat.extend(d.notes)
    unmatched = list(flat)
    problems: list[Diagnostic] = []
    for exp in expected:
        for _ in range(exp.count):
            hit = next((d for d in unmatched if _matches(exp, d, filename)), None)
            if hit is None:
                problems.append(Diagnostic(
                    "error", f"expected {exp.severity} \"{exp.message}\" was not produced",
                    filename, exp.at[0], exp.at[1]))
                break
            unmatched.remove(hit)
    for d in unmatched:
        if d.severity == "note" and not any(e.severity == "note" for e in expected):
            continue  # like mlir-opt: notes need no expectation unless some are expected
        problems.append(Diagnostic("error", f"unexpected {d.severity}: {d.message}",
                                   d.file, d.line, d.col))
    return problems


# -- main ---------------------------------------------------------------------------------
def resolve_steps(opts: Options) -> list:
    from accel.pipeline import PIPELINE_FILE, parse_pipeline, pipeline_text, plan

    a = opts.args
    if a.pass_pipeline is not None and opts.passes:
        raise AccelError("--pass-pipeline cannot be combined with short-form "
                         f"passes ({' '.join(opts.passes)})")
    if a.pass_pipeline is not None:
        elements = parse_pipeline(a.pass_pipeline) if a.pass_pipeline.strip() else []
        steps = plan(elements)
        if not _names_a_pass(elements):
            raise AccelError(f"empty pass pipeline '{a.pass_pipeline}': it names no pass "
                             "(to only parse, verify and print the input, leave out "
                             "--pass-pipeline)", file=PIPELINE_FILE, line=1, col=1)
    else:
        steps = []
        for element in opts.passes:
            steps += plan(parse_pipeline(_nest_short_form(element)), source=f"<-{element}>")
    if a.dump_pass_pipeline:
        print(pipeline_text(steps), file=sys.stderr)
    return steps


def _names_a_pass(elements: list) -> bool:
    return any(_names_a_pass(e.children) if e.is_nest else True for e in elements)


def _nest_short_form(element: str) -> str:
    """Like mlir-opt, nest a short-form upstream pass restricted to one op kind under it."""
    from accel.upstream_passes import get_upstream_pass

    info = get_upstream_pass(re.split(r"[{(]", element, maxsplit=1)[0])
    if info is None or info.anchor in (None, "builtin.module"):
        return element
    return f"{info.anchor}({element})"


def main(argv: list[str]) -> int:
    opts = parse_args(argv)
    a = opts.args
    if a.version:
        print(version_text("accel-opt"))
        return 0
    from accel.passes import load_pass_plugin

    for plugin in a.load_pass_plugin:
        load_pass_plugin(plugin)
    if a.list_passes:
        print(list_passes())
        return 0
    steps = resolve_steps(opts)
    text = read_input(a.input)
    filename = display_name(a.input)
    outputs: list[str] = []
    failed = False
    for chunk, offset in split_chunks(text, a.split_input_file):
        result = process_chunk(chunk, offset, opts, steps)
        if a.verify_diagnostics:
            problems = verify(parse_expectations(chunk, offset, filename), result.diagnostics,
                              filename)
            for p in problems:
                print(p.format(), file=sys.stderr)
            failed |= bool(problems)
        else:
            for d in result.diagnostics:
                print(d.format(), file=sys.stderr)
            failed |= not result.ok
        if result.output is not None:
            outputs.append(result.output)
    write_output(a.output, f"\n{SPLIT_MARKER}\n".join(o.rstrip("\n") for o in outputs) + "\n"
                 if outputs else "")
    return 1 if failed else 0


def write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as err:
        raise AccelError(f"could not write output file '{path}': {err.strerror}") from None


def run() -> None:
    exit_with(main)


if __name__ == "__main__":
    run()
