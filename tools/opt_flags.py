"""accel-opt's command line: every option of the bundled mlir-opt, parsed as LLVM's `cl` does.

The table below is mlir-opt's option set for the MLIR inside the torch-mlir wheel (LLVM
24.0.0git, 10dbfc4863c9; the reference is that build's `mlir-opt --help-hidden`, of which
`torch-mlir-opt` in the wheel is a copy). Each option is either taken with mlir-opt's meaning
or refused in one line that names it and says why (`unsupported=`); an argument that is
neither an option nor a pass is an unknown argument, worded as LLVM words it, and is never
taken as a pass name.

LLVM's rules: `-name` and `--name` are the same; `-name=value`; an option that requires a
value also takes the next argument (`-o out.mlir`, `-p 'builtin.module(cse)'`); a boolean
takes `=true/false/1/0` only in the `=` form; a list option (`--mlir-print-ir-after=cse,inline`)
splits at commas and may repeat; `--` ends the options.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

BOOL, VALUE, OPTIONAL, ENUM, LIST = "bool", "value", "optional", "enum", "list"
GENERAL, GENERIC, COLOR, REMARK = ("General options", "Generic Options", "Color Options",
                                   "Remark Options")

_NO_ACTIONS = "MLIR's action framework (tracing, debug counters, the debugger hook) is not " \
              "reachable through the Python bindings"
_LLVM_IR = "an option of LLVM's IR/code-generation libraries linked into mlir-opt; accel-opt " \
           "runs MLIR passes only"
_REMARKS = "MLIR's remark engine is not reachable through the Python bindings"
_NO_FLAG = "the bindings' printer has no such flag (OpPrintingFlags is only partly exposed)"


@dataclass(frozen=True)
class Flag:
    """One option: how it is spelled and parsed, and what accel-opt does with it."""

    name: str
    kind: str
    help: str
    group: str = GENERAL
    value_desc: str = ""
    choices: tuple[tuple[str, str], ...] = ()
    default: object = None
    hidden: bool = False
    #: Why accel-opt refuses it; None where it is supported.
    unsupported: str | None = None
    #: Values that are accepted although the option is unsupported (they change nothing).
    harmless: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


def _b(name: str, text: str, **kw: object) -> Flag:
    return Flag(name, BOOL, text, default=kw.pop("default", False), **kw)  # type: ignore[arg-type]


def _v(name: str, text: str, desc: str = "<string>", **kw: object) -> Flag:
    return Flag(name, VALUE, text, value_desc=desc, **kw)  # type: ignore[arg-type]


def _e(name: str, text: str, choices: tuple[tuple[str, str], ...], default: str,
       **kw: object) -> Flag:
    return Flag(name, ENUM, text, value_desc="<value>", choices=choices, default=default,
                **kw)  # type: ignore[arg-type]


FLAGS: tuple[Flag, ...] = (
    _b("color", "Use colors in output (default=autodetect)", group=COLOR,
       unsupported="accel-opt prints diagnostics without colors", harmless=("false", "0")),
    # -- MlirOptMain ----------------------------------------------------------------------
    _b("allow-unregistered-dialect", "Allow operation with no registered dialects"),
    _b("dump-pass-pipeline", "Print the pipeline that will be run"),
    _b("elide-resource-data-from-bytecode", "Elide resources when generating bytecode",
       unsupported="the bindings' bytecode writer has no such option", harmless=("false", "0")),
    _b("emit-bytecode", "Emit bytecode when generating output"),
    _v("emit-bytecode-producer", "Use specified producer when generating bytecode output",
       unsupported="the bindings' bytecode writer takes no producer string"),
    _v("emit-bytecode-version", "Use specified bytecode when generating output", "<value>"),
    _v("irdl-file", "IRDL file to register before processing the input", "<filename>"),
    _b("list-passes", "Print the list of registered passes and exit"),
    Flag("load-dialect-plugin", LIST, "Load dialects from plugin library", value_desc="<string>",
         unsupported="C++ dialect plugins cannot be loaded into the Python bindings"),
    Flag("load-pass-plugin", LIST, "Load passes from plugin library (accel-opt: a Python file "
         "whose @register_pass passes become available)", value_desc="<string>"),
    _v("log-actions-to", "Log action execution to a file, or stderr if  '-' is passed",
       unsupported=_NO_ACTIONS),
    _v("log-mlir-actions-filter", "Comma separated list of locations to filter actions from "
       "logging", unsupported=_NO_ACTIONS),
    _v("mlir-debug-counter", "Comma separated list of debug counter skip and count arguments",
       unsupported=_NO_ACTIONS),
    _e("mlir-diagnostic-verbosity-level", "Choose level of diagnostic information",
       (("errors", "Errors only"), ("warnings", "Errors and warnings"),
        ("remarks", "Errors, warnings and remarks")), "remarks"),
    _b("mlir-disable-diagnostic-notes", "Disable diagnostic notes."),
    _b("mlir-disable-threading", "Disable multi-threading within MLIR, overrides any further "
       "call to MLIRContext::enableMultiThreading()"),
    _v("mlir-elide-elementsattrs-if-larger", "Elide ElementsAttrs with \"...\" that have more "
       "elements than the given upper limit", "<uint>"),
    _v("mlir-elide-resource-strings-if-larger", "Elide printing value of resources if string "
       "is too long in chars.", "<uint>"),
    _b("mlir-enable-debugger-hook", "Enable Debugger hook for debugging MLIR Actions",
       unsupported=_NO_ACTIONS, harmless=("false", "0")),
    _v("mlir-generate-reproducer", "Generate an mlir reproducer at the provided filename (no "
       "crash required)", "<filename>"),
    _e("mlir-output-format", "Output format for timing data",
       (("text", "display the results in text format"),
        ("json", "display the results in JSON format")), "text"),
    _v("mlir-pass-pipeline-crash-reproducer", "Generate a .mlir reproducer file at the given "
       "output path if the pass manager crashes or fails"),
    _b("mlir-pass-pipeline-local-reproducer", "When generating a crash reproducer, attempt to "
       "generated a reproducer with the smallest pipeline."),
    _b("mlir-pass-statistics", "Display the statistics of each pass"),
    _e("mlir-pass-statistics-display", "Display method for pass statistics",
       (("list", "display the results in a merged list sorted by pass name"),
        ("pipeline", "display the results with a nested pipeline view")), "pipeline"),
    _b("mlir-pretty-debuginfo", "Print pretty debug info in MLIR output"),
    _b("mlir-print-assume-verified", "Skip op verification when using custom printers",
       hidden=True),
    _b("mlir-print-debug-counter", "Print out debug counter information after all counters "
       "have been accumulated", unsupported=_NO_ACTIONS, harmless=("false", "0")),
    _b("mlir-print-debuginfo", "Print debug info in MLIR output"),
    _v("mlir-print-elementsattrs-with-hex-if-larger", "Print DenseElementsAttrs with a hex "
       "string that have more elements than the given upper limit (use -1 to disable)",
       "<long>", unsupported=_NO_FLAG + "; accel-opt always prints elements in decimal "
       "(as with -1)", harmless=("-1",)),
    Flag("mlir-print-ir-after", LIST, "Print IR after specified passes",
         value_desc="<pass-arg>"),
    _b("mlir-print-ir-after-all", "Print IR after each pass"),
    _b("mlir-print-ir-after-change", "When printing the IR after a pass, only print if the IR "
       "changed"),
    _b("mlir-print-ir-after-failure", "When printing the IR after a pass, only print if the "
       "pass failed"),
    Flag("mlir-print-ir-before", LIST, "Print IR before specified passes",
         value_desc="<pass-arg>"),
    _b("mlir-print-ir-before-all", "Print IR before each pass"),
    _b("mlir-print-ir-module-scope", "When printing IR for print-ir-[before|after]{-all} "
       "always print the top-level operation"),
    _v("mlir-print-ir-tree-dir", "When printing the IR before/after a pass, print file tree "
       "rooted at this directory. Use in conjunction with mlir-print-ir-* flags"),
    _b("mlir-print-local-scope", "Print with local scope and inline information (eliding "
       "aliases for attributes, types, and locations)"),
    _b("mlir-print-op-generic", "Print the generic op form", hidden=True),
    _b("mlir-print-op-on-diagnostic", "When a diagnostic is emitted on an operation, also "
       "print the operation as an attached note", default=True),
    _b("mlir-print-skip-regions", "Skip regions when printing ops."),
    _b("mlir-print-stacktrace-on-diagnostic", "When a diagnostic is emitted, also print the "
       "stack trace as an attached note", unsupported="the bindings cannot attach C++ stack "
       "traces to diagnostics", harmless=("false", "0")),
    _b("mlir-print-unique-ssa-ids", "Print unique SSA ID numbers for values, block arguments "
       "and naming conflicts across all regions", unsupported=_NO_FLAG,
       harmless=("false", "0")),
    _b("mlir-print-value-users", "Print users of operation results and block arguments as a "
       "comment", unsupported=_NO_FLAG, harmless=("false", "0")),
    _b("mlir-timing", "Display execution times"),
    _e("mlir-timing-display", "Display method for timing data",
       (("list", "display the results in a list sorted by total time"),
        ("tree", "display the results ina with a nested tree view")), "tree"),
    _b("mlir-use-nameloc-as-prefix", "Print SSA IDs using NameLocs as prefixes"),
    _b("mlir-very-unsafe-disable-verifier-on-parsing", "Disable the verifier on parsing (very "
       "unsafe)", unsupported="the bindings always verify what they parse",
       harmless=("false", "0")),
    _b("no-implicit-module", "Disable implicit addition of a top-level module op during "
       "parsing"),
    _v("o", "Output filename", "<filename>"),
    _v("output-split-marker", "Split marker to use for merging the ouput"),
    _v("p", "Alias for --pass-pipeline", hidden=True),
    _v("pass-pipeline", "Textual description of the pass pipeline to run"),
    _v("profile-actions-to", "Profile action execution to a file, or stderr if  '-' is passed",
       unsupported=_NO_ACTIONS),
    _b("run-reproducer", "Run the pipeline stored in the reproducer"),
    _b("show-dialects", "Print the list of registered dialects and exit"),
    Flag("split-input-file", OPTIONAL, "Split the input file into chunks using the given or "
         "default marker and process each chunk independently", value_desc="[=<string>]"),
    Flag("verify-diagnostics", OPTIONAL, "Check that emitted diagnostics match expected-* "
         "lines on the corresponding line",
         choices=(("all", "Check all diagnostics (expected, unexpected, near-misses)"),
                  ("", "Check all diagnostics (expected, unexpected, near-misses)"),
                  ("only-expected", "Check only expected diagnostics"))),
    _b("verify-each", "Run the verifier after each transformation pass", default=True),
    _b("verify-roundtrip", "Round-trip the IR after parsing and ensure it succeeds"),
    # -- accel-opt's own ------------------------------------------------------------------
    _b("debug", "accel-opt: show Python tracebacks for internal errors"),
    # -- generic (LLVM's cl) --------------------------------------------------------------
    _b("help", "Display available options (--help-hidden for more)", group=GENERIC),
    _b("h", "Alias for --help", group=GENERIC),
    _b("help-hidden", "Display all available options", group=GENERIC),
    _b("help-list", "Display list of available options (--help-list-hidden for more)",
       group=GENERIC),
    _b("help-list-hidden", "Display list of all available options", group=GENERIC),
    _b("print-all-options", "Print all option values after command line parsing",
       group=GENERIC),
    _b("print-options", "Print non-default options after command line parsing",
       group=GENERIC),
    _b("version", "Display the version of this program", group=GENERIC),
    # -- MLIR remarks -----------------------------------------------------------------------
    *(_v(n, t, group=REMARK, unsupported=_REMARKS) for n, t in (
        ("remark-format", "Specify the format for remark output."),
        ("remark-policy", "Specify the policy for remark output."),
        ("remarks-filter", "Show all remarks: passed, missed, failed, analysis"),
        ("remarks-filter-analyse", "Show analysis remarks"),
        ("remarks-filter-failed", "Show failed remarks"),
        ("remarks-filter-missed", "Show missed remarks"),
        ("remarks-filter-passed", "Show passed remarks"),
        ("remarks-output-file", "Output file for yaml and bitstream remark formats."))),
)

#: LLVM library options linked into mlir-opt: (name, kind, hidden). All refused.
_LLVM_OPTIONS = (
    ("disable-i2p-p2i-opt", BOOL, False), ("elide-all-zero-branch-weights", BOOL, False),
    ("always-rename-promoted-locals", BOOL, True), ("crash-diagnostics-dir", VALUE, True),
    ("debug-counter", VALUE, True), ("debug-counter-break-on-last", BOOL, True),
    ("disable-symbolication", BOOL, True), ("enable-fs-discriminator", BOOL, True),
    ("import-constants-with-refs", BOOL, True), ("info-output-file", VALUE, True),
    ("non-global-value-max-name-size", VALUE, True), ("opt-bisect", VALUE, True),
    ("opt-bisect-limit", VALUE, True), ("opt-bisect-verbose", BOOL, True),
    ("opt-disable", VALUE, True), ("pass-remarks", VALUE, True),
    ("pass-remarks-analysis", VALUE, True), ("pass-remarks-missed", VALUE, True),
    ("pick-merged-source-locations", BOOL, True), ("preserve-ll-uselistorder", BOOL, True),
    ("print-addrspace-name", BOOL, True), ("print-debug-counter", BOOL, True),
    ("print-debug-counter-queries", BOOL, True), ("print-inst-addrs", BOOL, True),
    ("print-inst-debug-locs", BOOL, True), ("print-prof-data", BOOL, True),
    ("profcheck-disable-metadata-fixes", BOOL, True), ("propagate-attrs", BOOL, True),
    ("remarks-section", BOOL, True), ("rng-seed", VALUE, True), ("sort-timers", BOOL, True),
    ("stats", BOOL, True), ("stats-json", BOOL, True), ("track-memory", BOOL, True),
    ("use-constant-int-for-fixed-length-splat", BOOL, True),
    ("use-constant-int-for-scalable-splat", BOOL, True),
    ("use-dereferenceable-at-point-semantics", BOOL, True),
)
FLAGS += tuple(Flag(n, k, "LLVM library option", value_desc="<value>" if k == VALUE else "",
                    hidden=h, unsupported=_LLVM_IR, harmless=("false", "0") if k == BOOL else ())
               for n, k, h in _LLVM_OPTIONS)
BY_NAME = {f.name: f for f in FLAGS}
_TRUE, _FALSE = ("", "true", "TRUE", "True", "1"), ("false", "FALSE", "False", "0")


class CommandLineError(Exception):
    """A command-line problem, printed as LLVM prints it (`tool: message`), exit 1."""


@dataclass
class CommandLine:
    """Parsed options: `values[dest]` for every flag, passes in order, the input file."""

    values: dict[str, object]
    passes: list[tuple[str, str | None, str]] = field(default_factory=list)  # name, opts, arg
    input: str = "-"
    given: list[str] = field(default_factory=list)  # flag names given, in order

    def __getattr__(self, name: str) -> object:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None


def defaults() -> dict[str, object]:
    out: dict[str, object] = {}
    for f in FLAGS:
        out[f.dest] = [] if f.kind == LIST else f.default
    return out


def parse(argv: list[str], tool: str, is_pass: object) -> CommandLine:
    """Parse `argv`; `is_pass(name)` tells whether `-name` is a pass. Raises
    `CommandLineError` with LLVM's wording for unknown arguments and bad values."""
    cl = CommandLine(defaults())
    positional: list[str] = []
    i = 0
    only_positional = False
    while i < len(argv):
        arg = argv[i]
        i += 1
        if only_positional or arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            continue
        if arg == "--":
            only_positional = True
            continue
        body = arg[2:] if arg.startswith("--") else arg[1:]
        name, eq, value = body.partition("=")
        flag = BY_NAME.get(name)
        if flag is None:
            pass_name = _pass_name(body)
            if pass_name and is_pass(pass_name):  # type: ignore[operator]
                cl.passes.append(_pass_element(body, pass_name, arg))
                continue
            raise CommandLineError(_unknown(arg, tool, is_pass))
        if flag.kind in (VALUE, ENUM, LIST) and not eq:
            if i >= len(argv):
                raise CommandLineError(f"for the {_dash(flag)} option: requires a value!")
            value, eq = argv[i], "="
            i += 1
        _store(cl, flag, value if eq else None)
    if len(positional) > 1:
        raise CommandLineError(f"Too many positional arguments specified!\nCan specify at most "
                               f"1 positional arguments: See: {tool} --help")
    if positional:
        cl.input = positional[0]
    return cl


def _store(cl: CommandLine, flag: Flag, value: str | None) -> None:
    cl.given.append(flag.name)
    if flag.unsupported and (value is None and flag.kind == BOOL or value not in flag.harmless):
        raise CommandLineError(f"option '{_dash(flag)}' is not supported by accel-opt: "
                               f"{flag.unsupported}")
    if flag.unsupported:
        return
    if flag.kind == BOOL:
        if value is None or value in _TRUE:
            cl.values[flag.dest] = True
        elif value in _FALSE:
            cl.values[flag.dest] = False
        else:
            raise CommandLineError(f"for the {_dash(flag)} option: '{value}' is invalid value "
                                   "for boolean argument! Try 0 or 1")
    elif flag.kind == ENUM or (flag.kind == OPTIONAL and flag.choices):
        value = value or ""
        if value not in (c for c, _ in flag.choices) and not (flag.kind == OPTIONAL and
                                                              value == ""):
            raise CommandLineError(f"for the {_dash(flag)} option: Cannot find option named "
                                   f"'{value}'!")
        cl.values[flag.dest] = value if flag.kind == ENUM else (value or "all")
    elif flag.kind == LIST:
        cl.values[flag.dest] = [*cl.values[flag.dest], *(v for v in value.split(",") if v)]  # type: ignore[misc]
    elif flag.kind == OPTIONAL:
        cl.values[flag.dest] = value if value is not None else ""
    else:
        cl.values[flag.dest] = value


def _dash(flag: Flag) -> str:
    return ("-" if len(flag.name) == 1 else "--") + flag.name


def _pass_name(body: str) -> str:
    """`canonicalize` of `canonicalize`, `canonicalize=opts` and `canonicalize{opts}`."""
    for k, ch in enumerate(body):
        if ch in "={":
            return body[:k]
    return body


def _pass_element(body: str, name: str, arg: str) -> tuple[str, str | None, str]:
    rest = body[len(name):]
    if rest.startswith("="):  # mlir-opt: --pass="opt=v opt2=w"
        return name, rest[1:], arg
    if rest.startswith("{") and rest.endswith("}") and len(rest) > 1:  # -pass{opt=v}
        return name, rest[1:-1], arg
    if rest:  # `-canonicalize{` (no closing brace) ran canonicalize without options
        raise CommandLineError(f"for the -{name} option: options must be written "
                               f"-{name}{{opt=value ...}} or --{name}=\"opt=value ...\"; "
                               f"got '{arg}'")
    return name, None, arg


def _unknown(arg: str, tool: str, is_pass: object) -> str:
    text = f"Unknown command line argument '{arg}'.  Try: '{tool} --help'"
    name = _pass_name(arg.lstrip("-"))
    names = [f.name for f in FLAGS]
    try:
        from accel.pipeline import all_pass_names

        names += all_pass_names()
    except Exception:  # noqa: BLE001 - suggestions are a nicety
        pass
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    if close:
        text += f"\n{tool}: Did you mean '{'-' if len(close[0]) == 1 else '--'}{close[0]}'?"
    return text


# -- --help ---------------------------------------------------------------------------------
def help_text(tool: str, passes: list[tuple[str, str, list[tuple[str, str]]]], *,
              hidden: bool) -> str:
    """mlir-opt's `--help` layout: option groups, passes under "Compiler passes to run"."""
    lines = ["OVERVIEW: accel-opt: MLIR modular optimizer driver (mlir-opt compatible), with "
             "accel's dialects and passes", "",
             f"USAGE: {tool} [options] <input file>", "", "OPTIONS:"]

    rows: list[tuple[str, str] | str] = []  # (text with its indent, help) or a plain line

    def row(text: str, help_: str, indent: int = 2) -> tuple[str, str]:
        return " " * indent + text, help_

    for group in (COLOR, GENERAL, GENERIC, REMARK):
        flags = [f for f in FLAGS if f.group == group and (hidden or not f.hidden)]
        if not flags:
            continue
        rows += ["", f"{group}:", ""]
        for f in sorted(flags, key=lambda f: f.name):
            alias = f.help.startswith("Alias for ")  # LLVM shows an alias without its value
            spelled = _dash(f) + ("" if alias else
                                  f.value_desc if f.kind == OPTIONAL else
                                  f"={f.value_desc}" if f.value_desc and len(f.name) > 1 else
                                  f" {f.value_desc}" if f.value_desc else "")
            note = f" [unsupported: {f.unsupported}]" if f.unsupported else ""
            rows.append(row(spelled, f.help + note))
            for value, text in f.choices if f.kind == ENUM else ():
                rows.append(row(f"  ={value}", f"  {text}", 2))
        if group == GENERAL:
            rows += ["  Compiler passes to run", "    Passes:"]
            for name, summary, options in passes:
                rows.append(row(f"--{name}", f"  {summary}", 6))
                for opt, text in options:
                    rows.append(row(f"--{opt}", text, 8))
    # As LLVM's `cl` does: every description starts two columns after the longest option.
    width = max(len(r[0]) for r in rows if isinstance(r, tuple)) + 2
    lines += [r if isinstance(r, str) else f"{r[0]:<{width}} - {r[1]}" for r in rows]
    return "\n".join(lines)
