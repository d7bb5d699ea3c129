"""Parsing and running mixed upstream/Python pass pipelines.

The bindings' `PassManager` parses upstream pipelines and accepts Python passes with
`pm.add(callable)`, but has no `nest()`. accel parses the textual pipeline itself:

    builtin.module(func.func(canonicalize,cse),tag-funcs{attr=x},lower-affine)

Upstream elements are handed back to the bindings as text (merged per nesting path, so the
bindings nest them); each Python pass becomes one `ExternalPass` on the module that visits
the ops at its nesting path (`func.func(my-func-pass)` visits every `func.func`).

Every pipeline run goes through `run_pipeline`: on failure it writes the input IR to a file
and the error carries a note with the exact `accel-opt` command that reproduces it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from accel.diagnostics import AccelError
from accel.ir import Context, Module, Operation, PassManager
from accel.pass_run import (  # noqa: F401 - the pipeline API re-exports the run layer
    Element,
    PythonStep,
    RunConfig,
    Step,
    UpstreamStep,
    dialect_errors,
    pipeline_text,
    run_steps,
)

PIPELINE_FILE = "<pass-pipeline>"
#: Deepest nesting of `(` and `{` in a textual pipeline: real ones nest a handful of levels
#: (builtin.module(gpu.module(func.func(...)))); parsing and planning recurse per level.
MAX_PIPELINE_DEPTH = 64
#: An op anchor of a nested pipeline: an op name with its dialect (`func.func`), or `any`.
_OP_NAME = re.compile(r"[A-Za-z_][\w$]*\.[\w$.]+|any")


class PipelineSyntaxError(AccelError):
    def __init__(self, message: str, col: int, source: str = PIPELINE_FILE):
        super().__init__(message, file=source, line=1, col=col)


def parse_pipeline(text: str, *, source: str = PIPELINE_FILE) -> list[Element]:
    """Parse `a,b{x=1},func.func(c)` into elements (no implicit anchor added)."""
    _check_depth(text, source)
    elements, pos = _parse_list(text, 0, source)
    if pos != len(text):
        raise PipelineSyntaxError(f"unexpected '{text[pos]}' in pass pipeline", pos + 1, source)
    return elements


def _check_depth(text: str, source: str) -> None:
    depth, deepest, where = 0, 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_PIPELINE_DEPTH and not where:
                where = i + 1
        elif ch in ")}":
            depth -= 1
    if deepest > MAX_PIPELINE_DEPTH:
        raise PipelineSyntaxError(f"pass pipeline nests too deeply ({deepest} levels, max "
                                  f"{MAX_PIPELINE_DEPTH})", where, source)


def _parse_list(text: str, pos: int, source: str) -> tuple[list[Element], int]:
    out: list[Element] = []
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ")" and not out:
            return out, pos  # empty nest: `func.func()`
        element, pos = _parse_element(text, pos, source)
        out.append(element)
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        return out, pos


def _parse_element(text: str, pos: int, source: str) -> tuple[Element, int]:
    start = pos
    while pos < len(text) and (text[pos].isalnum() or text[pos] in "-_."):
        pos += 1
    name = text[start:pos]
    if not name:
        what = f"'{text[pos]}'" if pos < len(text) else "end of pipeline"
        raise PipelineSyntaxError(f"expected a pass or op name, found {what}", pos + 1, source)
    element = Element(name, col=start + 1)
    if pos < len(text) and text[pos] == "{":
        end = _matching(text, pos, "{", "}", source)
        element.options = text[pos + 1 : end]
        pos = end + 1
    if pos < len(text) and text[pos] == "(":
        children, pos = _parse_list(text, pos + 1, source)
        if pos >= len(text) or text[pos] != ")":
            raise PipelineSyntaxError(f"missing ')' to close '{name}('", pos + 1, source)
        element.children = children
        pos += 1
    return element, pos


def find_matching(text: str, pos: int, open_: str, close: str) -> int:
    """Index of the `close` that balances the `open_` at or after `pos` (quotes skipped),
    or -1 when there is none."""
    depth, quote = 0, ""
    for i in range(pos, len(text)):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _matching(text: str, pos: int, open_: str, close: str, source: str) -> int:
    end = find_matching(text, pos, open_, close)
    if end < 0:
        raise PipelineSyntaxError(f"unbalanced '{open_}' in pass pipeline", pos + 1, source)
    return end


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def anchored(elements: list[Element]) -> list[Element]:
    """Drop an explicit `builtin.module(...)` root so elements are relative to the module."""
    if len(elements) == 1 and elements[0].name == "builtin.module" and elements[0].is_nest:
        return elements[0].children or []
    return elements



def plan(elements: Sequence[Element], *, source: str = PIPELINE_FILE) -> list[Step]:
    """Resolve names: Python passes become `PythonStep`s, the rest stays upstream text."""
    from accel.passes import lookup_pass
    from accel.passes.base import instantiate

    steps: list[Step] = []

    def visit(items: Sequence[Element], path: tuple[str, ...]) -> None:
        for element in items:
            if element.is_nest:
                _check_anchor(element, source)
                visit(element.children or [], (*path, element.name))
                continue
            cls = lookup_pass(element.name)
            if cls is None:
                _check_upstream(element, path, source)
                last = steps[-1] if steps else None
                if isinstance(last, UpstreamStep) and last.path == path:
                    last.elements.append(element)
                else:
                    steps.append(UpstreamStep(path, [element]))
                continue
            nest = path[-1] if path else "builtin.module"
            if cls.anchor == "builtin.module" and path:
                raise PipelineSyntaxError(
                    f"pass '{cls.name}' runs on 'builtin.module' and cannot be nested under "
                    f"'{nest}'", element.col, source)
            if cls.anchor not in ("builtin.module", "any") and path and nest != cls.anchor:
                raise PipelineSyntaxError(
                    f"pass '{cls.name}' runs on '{cls.anchor}', not on '{nest}'",
                    element.col, source)
            try:
                inst = instantiate(cls, element.options or "")
            except AccelError as err:
                raise PipelineSyntaxError(str(err), element.col, source) from None
            steps.append(PythonStep(path, inst, element.col))

    visit(anchored(list(elements)), ())
    return steps


def _check_anchor(element: Element, source: str) -> None:
    """`name(...)` nests a pipeline under ops called `name`: that must be an op name, not a
    pass (MLIR would take any word as an op name and the passes inside would never run)."""
    if _OP_NAME.fullmatch(element.name):
        return
    if element.name in all_pass_names():
        raise PipelineSyntaxError(
            f"pass '{element.name}' takes no nested pipeline: '{element.name}(...)' nests "
            "passes under an op; anchors are op names such as 'func.func' or "
            "'builtin.module'", element.col, source)
    raise PipelineSyntaxError(
        f"unknown pass or pipeline '{element.name}'{_did_you_mean(element.name)}; "
        "'name(...)' nests passes under an op, and an op name has a dialect prefix "
        "('func.func')", element.col, source)


def _check_upstream(element: Element, path: tuple[str, ...], source: str) -> None:
    """Validate an upstream pass name and options at its nesting path, for a located error."""
    from accel.upstream_checks import OptionValueError, check_options
    from accel.upstream_passes import get_upstream_pass, holds_pipeline

    info = get_upstream_pass(element.name)
    nest = path[-1] if path else "builtin.module"
    if info is not None and info.anchor not in (None, nest) and nest != "any":
        # The bindings abort the process (LLVM ERROR) for a pipeline nested on the wrong op.
        raise PipelineSyntaxError(
            f"pass '{element.name}' runs on '{info.anchor}', not on '{nest}'"
            + (f": nest it as '{info.anchor}({element.name})'" if not path else ""),
            element.col, source)
    try:
        check_options(element.name, element.options)
    except OptionValueError as err:
        raise PipelineSyntaxError(str(err), element.col, source) from None
    if holds_pipeline(element.name, element.options):
        _check_option_pipelines(element, source)
    text = element.text()
    for op in reversed(path):
        text = f"{op}({text})"
    # A pipeline inside an option is built while parsing: nested on the wrong op it makes
    # LLVM abort the process, so such elements are parsed in a child process.
    verdict = _isolated_verdict if holds_pipeline(element.name, element.options) \
        else _bindings_verdict
    message, llvm_says = verdict(f"builtin.module({text})")
    if message is None:
        return
    if "does not refer to a registered pass" in message:
        raise PipelineSyntaxError(
            f"unknown pass or pipeline '{element.name}'{_did_you_mean(element.name)}",
            element.col, source)
    detail = next((line.strip() for line in message.splitlines() if line.strip()), message)
    detail = detail.replace("<Pass-Options-Parser>: ", "")
    fatal = re.search(r"LLVM ERROR: (.*)", llvm_says)
    if fatal:
        detail = f"{detail}: {fatal.group(1).strip()}"
    said = re.search(r"for the -+([\w-]+) option: (.*)", llvm_says)
    if said:  # LLVM's own words name the option and the value; the bindings' do not
        what = said.group(2).strip()
        enum = re.fullmatch(r"Cannot find option named '(.*)'!", what)
        what = f"'{enum.group(1)}' is not one of its values" if enum else what
        detail = f"option '{said.group(1)}': {what}"
    valid = _upstream_option_list(element.name) if "option" in detail else ""
    suffix = f"; valid options: {valid}" if valid else ""
    raise PipelineSyntaxError(f"pass '{element.name}': {detail}{suffix}", element.col, source)


def _check_option_pipelines(element: Element, source: str) -> None:
    """The pipelines held in options (`inline{default-pipeline=...}`): accel's checks, on
    whatever op the pass hands them (`any`); upstream passes only."""
    from accel.passes.base import split_options
    from accel.upstream_passes import PIPELINE_OPTIONS

    for key, value in split_options(element.options or ""):
        if key not in PIPELINE_OPTIONS.get(element.name, ()) or not value:
            continue
        where = f"option '{key}' of pass '{element.name}'"
        try:
            steps = plan([Element("any", children=parse_pipeline(value, source=source))],
                         source=source)
        except PipelineSyntaxError as err:
            raise PipelineSyntaxError(f"{where}: {err}", element.col, source) from None
        python = [s for s in steps if isinstance(s, PythonStep)]
        if python:
            raise PipelineSyntaxError(
                f"{where}: accel pass '{python[0].instance.name}' cannot run inside an "  # type: ignore[attr-defined]
                "upstream pass", element.col, source)


def _bindings_verdict(pipeline: str) -> tuple[str | None, str]:
    """(the bindings' error for `pipeline` or None, what LLVM printed to stderr meanwhile).

    LLVM's option parser prints its complaint straight to file descriptor 2, so that is
    captured around the parse (accel's error says it once, in one line). Pipelines that
    parse are remembered: the same ones are planned again and again (every compile).
    """
    from accel.isolation import captured_stderr

    if pipeline in _PARSED:
        return None, ""
    with captured_stderr() as said:
        try:
            with _validation_context():
                PassManager.parse(pipeline)
            message = None
        except ValueError as err:
            message = str(err)
    if message is None and len(_PARSED) < 4096:
        _PARSED.add(pipeline)
    return message, said()


_PARSED: set[str] = set()


def _isolated_verdict(pipeline: str) -> tuple[str | None, str]:
    """`_bindings_verdict` in a forked child, for pipelines whose parse may abort."""
    import os
    import tempfile

    from accel.isolation import IsolatedFailure, run_isolated

    if pipeline in _PARSED:
        return None, ""
    with tempfile.TemporaryFile() as log:
        def work() -> bytes:
            os.dup2(log.fileno(), 2)
            with Context():
                try:
                    PassManager.parse(pipeline)
                except ValueError as err:
                    return str(err).encode() or b"?"
            return b""

        try:
            message = run_isolated(work, timeout=60).decode(errors="replace") or None
        except IsolatedFailure as why:
            message = f"MLIR aborted while building the pipeline ({why.signal or why})"
        log.seek(0)
        said = log.read().decode(errors="replace")
    if message is None:
        _PARSED.add(pipeline)
    return message, said


_VALIDATION_CONTEXT: list[Context] = []


def _validation_context() -> Context:
    """A context kept for parsing pipelines only (creating one registers every dialect)."""
    if not _VALIDATION_CONTEXT:
        _VALIDATION_CONTEXT.append(Context())
    return _VALIDATION_CONTEXT[0]


def _did_you_mean(name: str) -> str:
    names = list(all_pass_names())
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


def all_pass_names() -> list[str]:
    """Every pass name accel knows: accel and plugin passes, then upstream ones."""
    from accel.passes import registered_passes

    names = list(registered_passes())
    try:
        from accel.upstream_passes import upstream_passes
    except ImportError:  # catalogue not generated: upstream names still parse
        return names
    return names + [p.name for p in upstream_passes()]


def _upstream_option_list(name: str) -> str:
    try:
        from accel.upstream_passes import upstream_passes
    except ImportError:
        return ""
    for info in upstream_passes():
        if info.name == name:
            return "; ".join(
                f"{o.name}" + (f": {o.type}" if o.type else "")
                + (f" = {o.default}" if o.default not in (None, "") else "")
                for o in info.options
            ) or "none"
    return ""



def run_pipeline(module: Module | Operation, pipeline: str, *, filename: str = "<input>",
                 label: str = "pipeline", cfg: RunConfig | None = None) -> None:
    """Parse and run a textual pipeline (upstream and accel passes mixed) on `module`."""
    cfg = cfg or RunConfig(filename=filename)
    try:
        steps = plan(parse_pipeline(pipeline), source=f"<{label}>")
    except AccelError:
        raise
    run_steps(module, steps, cfg)


def run_passes(module: Module | Operation, passes: Sequence[object],
               cfg: RunConfig | None = None) -> None:
    """Run Python pass instances (and upstream pipeline strings) in order."""
    steps: list[Step] = []
    for p in passes:
        if isinstance(p, str):
            steps += plan(parse_pipeline(p))
        else:
            steps.append(PythonStep((), p))
    run_steps(module, steps, cfg)
