"""`accel-opt`: a drop-in `mlir-opt` for upstream MLIR passes plus accel and plugin passes.

    accel-opt in.mlir --pass-pipeline='builtin.module(func.func(canonicalize),tag-funcs{attr=x})'
    accel-opt in.mlir -canonicalize -tag-funcs{attr=x} --load-pass-plugin=my_passes.py
    accel-opt in.mlir --split-input-file --verify-diagnostics -accel-emit-c-interface

The flow is `MlirOptMain`'s: options (`opt_flags`), the input split into chunks
(`opt_source.split`), and per chunk a fresh context, parse, pass manager setup, run and print;
diagnostics print as mlir-opt prints them or go to the `--verify-diagnostics` verifier.
"""

from __future__ import annotations

import os
import re
import sys
import time

from accel.cli import exit_with, read_input, tool_name, version_text
from accel.diagnostics import AccelError, Diagnostic, parse_location
from accel.tools import opt_flags, opt_print, opt_repro
from accel.tools.opt_setup import Setup, resolve_setup
from accel.tools.opt_source import DEFAULT_MARKER, Source, Verifier, render, split

SPLIT_MARKER = DEFAULT_MARKER
_GENERIC_FAILURE = "Failure while executing pass pipeline"
_CURRENT_OP = "see current operation: "


# -- passes: which names are passes, --list-passes, --help ----------------------------------
def _is_pass(name: str) -> bool:
    from accel.passes import lookup_pass
    from accel.upstream_passes import get_upstream_pass

    return lookup_pass(name) is not None or get_upstream_pass(name) is not None


# -- diagnostics ----------------------------------------------------------------------------
class Sink:
    """Where diagnostics go: printed as mlir-opt prints them, or to the verifier."""

    def __init__(self, source: Source, cl: opt_flags.CommandLine, verifier: Verifier | None):
        self.source, self.cl, self.verifier = source, cl, verifier
        #: While the bindings' output is captured, diagnostics go into it framed
        #: (`opt_print.DIAG_OPEN`), so they keep their place among the IR dumps.
        self.marking = False

    def emit(self, diag: Diagnostic) -> None:
        cl = self.cl
        level = cl.mlir_diagnostic_verbosity_level
        if (level == "errors" and diag.severity != "error") or \
                (level == "warnings" and diag.severity == "remark"):
            return
        if cl.mlir_disable_diagnostic_notes:
            diag.notes = []
        elif self.verifier is not None or not cl.mlir_print_op_on_diagnostic:
            # mlir-opt turns printOpOnDiagnostic off in verify mode: no "see current
            # operation" notes (the bindings' context cannot turn them off).
            diag.notes = [n for n in diag.notes if not n.message.startswith(_CURRENT_OP)]
        if self.verifier is not None:
            before = len(self.verifier.out)
            self.verifier.process(diag)
            self._print("\n".join(self.verifier.out[before:]))
        else:
            self._print(render(self.source, diag))

    def _print(self, text: str) -> None:
        if not text:
            return
        if self.marking:
            print(f"{opt_print.DIAG_OPEN}{text}\n{opt_print.DIAG_CLOSE}", end="", file=sys.stderr,
                  flush=True)
        else:
            print(text, file=sys.stderr, flush=True)


def _convert(info: object, name: str) -> Diagnostic:
    """A bindings `DiagnosticInfo` (with notes) at its place in the input file."""
    severity = str(getattr(info, "severity", "error")).rsplit(".", 1)[-1].lower()
    where = parse_location(getattr(info, "location", ""))
    file, line, col = where if where else (None, None, None)
    if file in ("-", ""):
        file = name
    notes = [_convert(n, name) for n in getattr(info, "notes", [])]
    return Diagnostic(severity, str(getattr(info, "message", "")), file, line, col, notes)


def _from_error(err: AccelError, name: str) -> list[Diagnostic]:
    """accel's errors as mlir-opt would show them: a pass that failed without a diagnostic
    prints nothing; an error without a place is at an unknown location."""
    out = []
    for d in err.diagnostics:
        if d.message == _GENERIC_FAILURE and d.line is None:
            continue
        if d.severity == "note" and out:
            if (d.file, d.line, d.col) == (None, None, None):  # as `attachNote()`: the
                d.file, d.line, d.col = out[-1].file, out[-1].line, out[-1].col  # error's place
            out[-1].notes.append(d)
            continue
        if d.file == "-":
            d.file = name
        out.append(d)
    return out


# -- one chunk ------------------------------------------------------------------------------
def process_chunk(text: str, cl: opt_flags.CommandLine, setup: Setup, sink: Sink) -> str | None:
    """Parse, run and print one chunk; its output, or None when it failed."""
    from accel.context import make_context

    ctx = make_context(allow_unregistered=cl.allow_unregistered_dialect,
                       multithreaded=not cl.mlir_disable_threading)
    name = sink.source.name

    def handler(info: object) -> bool:
        sink.emit(_convert(info, name))
        return True

    with ctx:
        ctx.attach_diagnostic_handler(handler)
        try:
            return _chunk(text, cl, setup, sink, ctx)
        except AccelError as err:
            for d in _from_error(err, name):
                sink.emit(d)
            return None


def _chunk(text: str, cl: opt_flags.CommandLine, setup: Setup, sink: Sink,
           ctx: object) -> str | None:
    from accel.pass_run import RunConfig, dialect_errors

    name = sink.source.name
    if cl.irdl_file:
        _load_irdl(cl.irdl_file)
    start = time.perf_counter()
    op = _parse(text, name, cl)
    parse_s = time.perf_counter() - start
    if op is None:
        return None
    errors = dialect_errors(op, name)
    if errors:
        for d in errors:
            sink.emit(d)
        return None
    if cl.verify_roundtrip and not _roundtrip(op, sink):
        return None
    if cl.mlir_pass_pipeline_local_reproducer and cl.mlir_pass_pipeline_crash_reproducer and \
            not cl.mlir_disable_threading:  # applyPassManagerCLOptions' check, per chunk
        sink.emit(Diagnostic("error", "Local crash reproduction may not be used without "
                                      "disabling mutli-threading first."))
        return None
    if setup.error is not None:
        sink.emit(Diagnostic(**{**setup.error.__dict__, "notes": list(setup.error.notes)}))
        return None
    op_name = _op_name(op)
    if setup.anchor not in (None, op_name, "any"):
        sink.emit(Diagnostic("error", f"can't run '{setup.anchor}' pass manager on "
                                      f"'{op_name}' op", *_op_place(op, name)))
        return None
    if cl.dump_pass_pipeline:
        print(opt_print.pretty_pipeline(setup.text), file=sys.stderr, flush=True)
    if cl.mlir_generate_reproducer:
        opt_repro.generate(cl.mlir_generate_reproducer, op, setup.text, cl)
    before, after = cl.mlir_print_ir_before, cl.mlir_print_ir_after
    cfg = RunConfig(
        print_ir_before_all=cl.mlir_print_ir_before_all or bool(before),
        print_ir_after_all=(cl.mlir_print_ir_after_all or bool(after)
                            or cl.mlir_print_ir_after_failure),
        print_generic=cl.mlir_print_op_generic, timing=cl.mlir_timing,
        verify_each=cl.verify_each, filename=name,
        reproducer=not sink.verifier and not cl.mlir_pass_pipeline_crash_reproducer,
        plugins=tuple(cl.load_pass_plugin),
        extra_flags=("--allow-unregistered-dialect",) if cl.allow_unregistered_dialect else ())
    cfg.print_options = {  # type: ignore[attr-defined]
        "print_module_scope": cl.mlir_print_ir_module_scope,
        "print_after_change": cl.mlir_print_ir_after_change,
        "print_after_failure": cl.mlir_print_ir_after_failure,
        "large_elements_limit": _uint(cl.mlir_elide_elementsattrs_if_larger),
        "enable_debug_info": cl.mlir_print_debuginfo,
        "tree_printing_dir_path": cl.mlir_print_ir_tree_dir,
    }
    cfg.statistics = cl.mlir_pass_statistics_display if cl.mlir_pass_statistics else None  # type: ignore[attr-defined]
    if cl.mlir_print_debuginfo or cl.emit_bytecode:
        op = _named(op, name, cl)
    report = ""
    if setup.steps:
        ok, report = _run(op, text, cl, setup, sink, cfg, parse_s)
        if not ok:
            return None
    start = time.perf_counter()
    out = _output(op, cl)
    if cl.mlir_timing:
        _print_timing(report, parse_s, time.perf_counter() - start, cl)
    return out


def _run(op: object, text: str, cl: opt_flags.CommandLine, setup: Setup, sink: Sink,
         cfg: object, parse_s: float) -> tuple[bool, str]:
    """Run the pipeline on `op`: (succeeded, the timing report). What the bindings print (IR
    dumps, the timing report) is captured, with diagnostics framed in it as they occur; dumps
    are then filtered (`--mlir-print-ir-before/after=PASS`) and the errors of a failed pass
    placed before its `IR Dump After ... Failed`, where mlir-opt prints them."""
    from accel.pass_run import run_steps

    name = sink.source.name
    before, after = cl.mlir_print_ir_before, cl.mlir_print_ir_after
    filtered = bool(before or after)
    printing = bool(cfg.print_ir_before_all or cfg.print_ir_after_all)  # type: ignore[attr-defined]
    capture = printing or cl.mlir_timing
    tree = cl.mlir_print_ir_tree_dir if filtered else None
    existing = opt_print.tree_files(tree)
    failure: list[Diagnostic] = []
    ok = True
    sink.marking = capture
    try:
        with opt_print.captured_fd2(capture) as said:
            try:
                run_steps(op, setup.steps, cfg)  # type: ignore[arg-type]
            except AccelError as err:
                ok = False
                failure = _from_error(err, name)
    finally:
        sink.marking = False
    stream, report = _split_timing("".join(said)) if cl.mlir_timing else ("".join(said), "")
    dumps = opt_print.DumpFilter(before, after, cl.mlir_print_ir_before_all,
                                 cl.mlir_print_ir_after_all or cl.mlir_print_ir_after_failure) \
        if filtered else None
    for is_diag, piece in opt_print.split_marked(stream):
        if not is_diag and failure:
            k = opt_print.failed_dump_at(piece)
            if k >= 0:
                sys.stderr.write(dumps.feed(piece[:k]) if dumps else piece[:k])
                for d in failure:
                    sink.emit(d)
                failure, piece = [], piece[k:]
        sys.stderr.write(dumps.feed(piece) if dumps and not is_diag else piece)
    sys.stderr.flush()
    for d in failure:
        sink.emit(d)
    if tree:
        opt_print.filter_tree_dir(tree, existing, before, after, cl.mlir_print_ir_before_all,
                                  cl.mlir_print_ir_after_all or cl.mlir_print_ir_after_failure)
    for d in cfg.emitted:  # type: ignore[attr-defined]
        sink.emit(d)
    if not ok:
        if cl.mlir_pass_pipeline_crash_reproducer:
            _crash_reproducer(cl.mlir_pass_pipeline_crash_reproducer, text, setup, cl, sink,
                              op)
        if report:
            _print_timing(report, parse_s, 0.0, cl)
    return ok, report


def _op_name(op: object) -> str:
    """The op's name (an `OpView`'s `.name` may be its symbol name)."""
    return str(getattr(getattr(op, "operation", op), "name", "builtin.module"))


def _op_place(op: object, name: str) -> tuple[str | None, int | None, int | None]:
    where = parse_location(getattr(op, "location", ""))
    if where is None:
        return None, None, None
    return (name if where[0] in ("-", "") else where[0]), where[1], where[2]


def _uint(value: object) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = int(str(value), 0)
    except ValueError:
        raise AccelError(f"invalid unsigned integer '{value}'") from None
    if number < 0:
        raise AccelError(f"invalid unsigned integer '{value}'")
    return number


def _parse(text: str, name: str, cl: opt_flags.CommandLine) -> object | None:
    """The chunk's top-level op (an implicit module unless --no-implicit-module)."""
    from accel.ir import MLIRError, Module, Operation
    from accel.safe_parse import precheck, probe_in_child

    if not precheck(text, name):
        probe_in_child(text, name)
    try:
        if cl.no_implicit_module:
            return Operation.parse(text, source_name=name)
        return Module.parse(text).operation
    except MLIRError as err:
        raise AccelError(diagnostics=[_convert(d, name) for d in err.error_diagnostics]
                         or [Diagnostic("error", str(err), name)]) from None


def _named(op: object, name: str, cl: opt_flags.CommandLine) -> object:
    """The module with its locations in the input file (`loc("in.mlir":3:5)`): the bindings
    parse text as the buffer `-`. Re-parsed from its generic form with the name put in."""
    from accel.ir import Module

    if cl.no_implicit_module:
        return op  # Operation.parse was given the name
    asm = op.get_asm(print_generic_op_form=True, enable_debug_info=True,  # type: ignore[attr-defined]
                     assume_verified=True)
    quoted = name.replace("\\", "\\\\").replace('"', '\\"')
    asm = re.sub(r'(?<=loc\()"-"(?=:\d)', f'"{quoted}"', asm)
    asm = re.sub(r'(?<=[\[( ,])"-"(?=:\d+:\d+)', f'"{quoted}"', asm)
    return Module.parse(asm).operation


def _roundtrip(op: object, sink: Sink) -> bool:
    """--verify-roundtrip: the generic and the custom form parse back to the same IR."""
    from accel.ir import MLIRError, Module

    reference = op.get_asm(print_generic_op_form=True, enable_debug_info=True)  # type: ignore[attr-defined]
    for generic in (True, False):
        asm = op.get_asm(print_generic_op_form=generic, enable_debug_info=True)  # type: ignore[attr-defined]
        try:
            again = Module.parse(asm).operation.get_asm(print_generic_op_form=True,
                                                        enable_debug_info=True)
        except MLIRError:
            again = None
        if again != reference:
            form = "generic" if generic else "custom"
            sink.emit(Diagnostic("error", f"roundTrip testing roundtripped module differs "
                                          f"from original (through the {form} form)"))
            return False
    return True


def _load_irdl(path: str) -> None:
    from accel.ir import Module, dialects

    module = Module.parse(read_input(path))
    dialects.irdl.load_dialects(module)


def _output(op: object, cl: opt_flags.CommandLine) -> str | bytes:
    if cl.emit_bytecode:
        import io

        buf = io.BytesIO()
        version = int(cl.emit_bytecode_version) if cl.emit_bytecode_version else None
        op.write_bytecode(buf, desired_version=version)  # type: ignore[attr-defined]
        return buf.getvalue()
    asm = op.get_asm(  # type: ignore[attr-defined]
        large_elements_limit=_uint(cl.mlir_elide_elementsattrs_if_larger),
        large_resource_limit=_uint(cl.mlir_elide_resource_strings_if_larger),
        enable_debug_info=cl.mlir_print_debuginfo, pretty_debug_info=cl.mlir_pretty_debuginfo,
        print_generic_op_form=cl.mlir_print_op_generic, use_local_scope=cl.mlir_print_local_scope,
        use_name_loc_as_prefix=cl.mlir_use_nameloc_as_prefix,
        assume_verified=cl.mlir_print_assume_verified, skip_regions=cl.mlir_print_skip_regions)
    return str(asm) + "\n"


def _split_timing(stderr: str) -> tuple[str, str]:
    k = stderr.find("===---")
    return (stderr, "") if k < 0 else (stderr[:k], stderr[k:])


def _print_timing(report: str, parse_s: float, output_s: float,
                  cl: opt_flags.CommandLine) -> None:
    sys.stderr.write(opt_print.timing_report(report, parse_s, output_s,
                                             cl.mlir_timing_display, cl.mlir_output_format))


def _crash_reproducer(path: str, text: str, setup: Setup, cl: opt_flags.CommandLine,
                      sink: Sink, op: object) -> None:
    """mlir-opt's crash reproducer (`opt_repro.crash`) and the error saying where it went."""
    name = sink.source.name
    note = opt_repro.crash(path, text, setup.steps, setup.text, cl,
                           lambda chunk: _parse(chunk, name, cl))
    sink.emit(Diagnostic("error", "Failures have been detected while processing an MLIR pass "
                                  "pipeline", *_op_place(op, name),
                         notes=[Diagnostic("note", note, *_op_place(op, name))]))


# -- main -------------------------------------------------------------------------------------
def _load_plugins(argv: list[str]) -> list[str]:
    """Plugins first: their passes are flags too."""
    from accel.passes import load_pass_plugin

    paths, i = [], 0
    while i < len(argv):
        arg = argv[i]
        body = arg.lstrip("-")
        if arg.startswith("-") and body.split("=", 1)[0] == "load-pass-plugin":
            value = body.split("=", 1)[1] if "=" in body else (argv[i + 1] if i + 1 < len(argv)
                                                               else "")
            i += 0 if "=" in body else 1
            for path in filter(None, value.split(",")):
                if path.endswith((".so", ".dylib", ".dll")):
                    raise AccelError(f"cannot load pass plugin '{path}': accel-opt loads Python "
                                     "pass plugins (.py), not C++ libraries")
                load_pass_plugin(path)
                paths.append(path)
        i += 1
    return paths


def main(argv: list[str]) -> int:
    # LLVM tools name themselves by argv[0] (a symlink `mlir-opt -> accel-opt` says mlir-opt);
    # run from Python (`python -c`, pytest, a worker process) there is no such name.
    name = tool_name()
    tool = "accel-opt" if (not name or name.startswith("-") or name.endswith(".py")
                           or name in ("accel", "pytest", "python", "python3")) else name
    _load_plugins(argv)
    try:
        cl = opt_flags.parse(argv, tool, _is_pass)
    except opt_flags.CommandLineError as err:
        print(f"{tool}: {err}", file=sys.stderr)
        return 1
    if cl.help or cl.h or cl.help_hidden or cl.help_list or cl.help_list_hidden:
        print(opt_flags.help_text(tool, opt_print.help_passes(),
                                  hidden=bool(cl.help_hidden or cl.help_list_hidden)))
        return 0
    if cl.version:
        print(version_text("accel-opt"))
        return 0
    if cl.print_options or cl.print_all_options:
        _print_options(cl, every=bool(cl.print_all_options))
    if cl.list_passes:
        print(opt_print.list_passes())
        return 0
    if cl.show_dialects:
        print(opt_print.show_dialects())
        return 0
    try:  # mlir-opt opens the input, then the output, before anything else
        text = _read_input(cl.input)
    except OSError as err:
        print(f"cannot open input file '{cl.input}': {err.strerror}", file=sys.stderr)
        return 1
    problem = _output_problem(cl.o or "-")
    if problem:
        print(f"cannot open output file '{cl.o}': {problem}", file=sys.stderr)
        return 1
    source = Source(display_name(cl.input), text)
    pipeline = cl.pass_pipeline if cl.pass_pipeline is not None else cl.p
    if cl.run_reproducer:
        found = opt_print.read_reproducer(text)
        if found is not None:
            source = Source(source.name, found[0])
            pipeline = str(found[1].get("pipeline", pipeline or ""))
            cl.values["mlir_disable_threading"] |= bool(found[1].get("disable_threading"))
            cl.values["verify_each"] = bool(found[1].get("verify_each", cl.verify_each))
    setup = resolve_setup(cl, pipeline)
    verifier = None
    if cl.verify_diagnostics is not None:  # expectations are read before the file is split
        verifier = Verifier(source, cl.verify_diagnostics == "only-expected", [])
        for line in verifier.out:
            print(line, file=sys.stderr)
        verifier.out.clear()
    marker = None if cl.split_input_file is None else (cl.split_input_file or DEFAULT_MARKER)
    chunks, warnings = split(source, marker)
    for w in warnings:
        print(w, file=sys.stderr)
    sink = Sink(source, cl, verifier)
    outputs: list[str | bytes] = []
    failed = False
    for chunk in chunks:
        out = process_chunk(chunk.text, cl, setup, sink)
        failed |= out is None
        outputs.append(out or "")
    if verifier is not None:
        before = len(verifier.out)
        failed = not verifier.finish()
        for line in verifier.out[before:]:
            print(line, file=sys.stderr)
    separator = (cl.output_split_marker if cl.output_split_marker is not None
                 else DEFAULT_MARKER) + "\n"
    if any(isinstance(o, bytes) for o in outputs):
        data: str | bytes = separator.encode().join(
            o if isinstance(o, bytes) else o.encode() for o in outputs)
    else:
        data = separator.join(outputs)  # type: ignore[arg-type]
    write_output(cl.o or "-", data, keep=not failed)
    return 1 if failed else 0


def _print_options(cl: opt_flags.CommandLine, every: bool) -> None:
    defaults = opt_flags.defaults()
    for flag in opt_flags.FLAGS:
        value = cl.values.get(flag.dest)
        if flag.unsupported or (not every and value == defaults[flag.dest]):
            continue
        shown = ",".join(value) if isinstance(value, list) else (
            str(value).lower() if isinstance(value, bool) else "" if value is None else value)
        print(f"  {opt_flags._dash(flag)} = {shown}", file=sys.stderr)


def _read_input(path: str) -> str:
    """The input file's text; OSError (its `strerror` is mlir-opt's wording) when it cannot be
    opened."""
    if path == "-":
        return read_input(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise AccelError(f"could not read input file: {err}", file=path) from None


def _output_problem(path: str) -> str | None:
    """Why `path` cannot be written (mlir-opt's words), or None. A file this creates is removed
    again: the output is written at the end, and a failed run leaves none."""
    if path == "-":
        return None
    existed = os.path.lexists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as err:
        return err.strerror or str(err)
    if not existed:
        os.remove(path)
    return None


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def write_output(path: str, data: str | bytes, keep: bool = True) -> None:
    """Write the output; like mlir-opt, a failed run leaves no output file behind."""
    if path == "-":
        if isinstance(data, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        return
    if not keep:
        if os.path.isfile(path):
            os.remove(path)
        return
    opt_repro.write(path, data)


def run() -> None:
    exit_with(main)


if __name__ == "__main__":
    run()
