"""accel-opt's pass pipeline, resolved once per run as `MlirOptMain` does: `--pass-pipeline`
/ `-p` or one flag per pass, the `op-name(...)` anchor rule, mlir-opt's wording of pipeline
errors (asked from the bindings' own parser), and the global printing flags that reach
printing passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from accel.diagnostics import AccelError, Diagnostic
from accel.tools import opt_flags, opt_print


@dataclass
class Setup:
    """The pass pipeline, resolved once: steps, or the error mlir-opt reports per chunk."""

    steps: list
    error: Diagnostic | None
    text: str  # the expanded pipeline, for reproducers and -dump-pass-pipeline
    anchor: str | None = None  # the op --pass-pipeline runs on (None: the input's top op)


def resolve_setup(cl: opt_flags.CommandLine, pipeline: str | None) -> Setup:
    """Plan the pipeline once; an error becomes the diagnostic each chunk reports."""
    from accel.pipeline import PIPELINE_FILE, parse_pipeline, pipeline_text, plan

    if pipeline is not None:
        pipeline = _with_print_flags(pipeline, cl)
    try:
        if pipeline is not None and cl.passes:
            raise AccelError("'-pass-pipeline' option can't be used with individual pass "
                             "options")
        if pipeline is not None:
            _check_anchor(pipeline)
            elements = parse_pipeline(pipeline) if pipeline.strip() else []
            steps = plan(elements)
            if not _names_a_pass(elements):
                raise AccelError(f"empty pass pipeline '{pipeline}': it names no pass (to only "
                                 "parse, verify and print the input, leave out "
                                 "--pass-pipeline)", file=PIPELINE_FILE, line=1, col=1)
        else:
            steps = []
            for name, options, arg in cl.passes:
                element = _with_print_flags(name if options is None else
                                            f"{name}{{{options}}}", cl)
                steps += plan(parse_pipeline(_nest_short_form(element)), source=f"<{arg}>")
    except AccelError as err:
        first = err.diagnostics[0]
        message = _upstream_wording(pipeline, first.message) if pipeline else first.message
        return Setup([], Diagnostic("error", message, first.file, first.line, first.col),
                     "")
    try:
        text = opt_print.expanded_pipeline(steps)
    except Exception:  # noqa: BLE001 - the plain text still describes the pipeline
        text = pipeline_text(steps)
    anchor = None
    if pipeline is not None and pipeline.strip():
        anchor = re.split(r"[\s({]", pipeline.strip(), maxsplit=1)[0]
    return Setup(steps, None, text, anchor)


#: Passes that print IR with the global printing flags in mlir-opt (OpPrintingFlags reads
#: the `--mlir-print-*` options): the bindings have no global flags, so the pass's own
#: options are set from them.
_PRINTING_PASSES = ("snapshot-op-locations",)
_PRINT_OPTIONS = (("mlir_print_local_scope", "print-local-scope"),
                  ("mlir_print_debuginfo", "print-debuginfo"),
                  ("mlir_pretty_debuginfo", "pretty-debuginfo"),
                  ("mlir_print_op_generic", "print-op-generic"))


def _with_print_flags(text: str, cl: opt_flags.CommandLine) -> str:
    extra = [opt for dest, opt in _PRINT_OPTIONS if cl.values.get(dest)]
    if not extra:
        return text

    def add(m: re.Match[str]) -> str:
        body = m.group(2) or ""
        more = [o for o in extra if o not in body]
        return f"{m.group(1)}{{{' '.join(filter(None, [body.strip(), *more]))}}}"

    names = "|".join(map(re.escape, _PRINTING_PASSES))
    return re.sub(rf"(?<![\w-])({names})(?:\{{([^{{}}]*)\}})?", add, text)


def _check_anchor(pipeline: str) -> None:
    """mlir-opt's rule: --pass-pipeline is `op-name(...)`."""
    stripped = pipeline.strip()
    if stripped and not re.fullmatch(r"[\w.$-]+\s*\(.*\)\s*", stripped, re.S):
        raise AccelError("expected pass pipeline to be wrapped with the anchor operation type, "
                         "e.g. 'builtin.module(...)'")


def _upstream_wording(pipeline: str, accel_message: str) -> str:
    """mlir-opt's words for a pipeline the bindings refuse too (asked in a child process:
    some pipelines abort the parser), with accel's hint after them."""
    from accel.pipeline import _isolated_verdict

    unknown = re.match(r"unknown pass or pipeline '([^']+)'", accel_message)
    syntax = re.match(r"missing '\)'|unbalanced|unexpected '|expected a pass", accel_message)
    if not (unknown or syntax):
        return accel_message
    message, _ = _isolated_verdict(pipeline)
    if not message or "aborted" in message:
        return accel_message
    first = next((ln for ln in message.splitlines() if ln.strip()), message)
    first = re.sub(r"^MLIR Textual PassPipeline Parser:\d+:\d+: error: ", "", first)
    agrees = (f"'{unknown.group(1)}' does not refer" in first) if unknown else \
        ("parenthes" in first or "expected" in first)
    if not agrees:
        return accel_message
    hint = re.search(r"\(did you mean '[^']+'\?\)", accel_message)
    return f"{first} {hint.group(0)}" if hint else first


def _names_a_pass(elements: list) -> bool:
    return any(_names_a_pass(e.children) if e.is_nest else True for e in elements)


def _nest_short_form(element: str) -> str:
    """Like mlir-opt, nest a short-form upstream pass restricted to one op kind under it."""
    from accel.upstream_passes import get_upstream_pass

    info = get_upstream_pass(re.split(r"[{(]", element, maxsplit=1)[0])
    if info is None or info.anchor in (None, "builtin.module"):
        return element
    return f"{info.anchor}({element})"
