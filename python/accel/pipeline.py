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
import os
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from accel.diagnostics import AccelError, Diagnostic, from_mlir_error
from accel.ir import Context, ExternalPass, MLIRError, Module, Operation, PassManager

PIPELINE_FILE = "<pass-pipeline>"


# -- textual pipeline model ---------------------------------------------------------------
@dataclass
class Element:
    """One pipeline element: a pass (`name{opts}`) or an op nest (`func.func(...)`)."""

    name: str
    options: str | None = None  # text between braces, None when absent
    children: list[Element] | None = None  # set for an op nest
    col: int = 1  # 1-based column in the pipeline text

    @property
    def is_nest(self) -> bool:
        return self.children is not None

    def text(self) -> str:
        opts = "" if self.options is None else "{" + self.options + "}"
        if self.children is None:
            return self.name + opts
        return f"{self.name}({','.join(c.text() for c in self.children)})"


class PipelineSyntaxError(AccelError):
    def __init__(self, message: str, col: int, source: str = PIPELINE_FILE):
        super().__init__(message, file=source, line=1, col=col)


def parse_pipeline(text: str, *, source: str = PIPELINE_FILE) -> list[Element]:
    """Parse `a,b{x=1},func.func(c)` into elements (no implicit anchor added)."""
    elements, pos = _parse_list(text, 0, source)
    if pos != len(text):
        raise PipelineSyntaxError(f"unexpected '{text[pos]}' in pass pipeline", pos + 1, source)
    return elements


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


def _matching(text: str, pos: int, open_: str, close: str, source: str) -> int:
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
    raise PipelineSyntaxError(f"unbalanced '{open_}' in pass pipeline", pos + 1, source)


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def anchored(elements: list[Element]) -> list[Element]:
    """Drop an explicit `builtin.module(...)` root so elements are relative to the module."""
    if len(elements) == 1 and elements[0].name == "builtin.module" and elements[0].is_nest:
        return elements[0].children or []
    return elements


# -- pipeline plan ------------------------------------------------------------------------
@dataclass
class UpstreamStep:
    """Consecutive upstream elements sharing a nesting path, handed to the bindings as text."""

    path: tuple[str, ...]
    elements: list[Element] = field(default_factory=list)

    def text(self) -> str:
        inner = ",".join(e.text() for e in self.elements)
        for op in reversed(self.path):
            inner = f"{op}({inner})"
        return inner


@dataclass
class PythonStep:
    """One Python pass instance and the nesting path of the ops it runs on."""

    path: tuple[str, ...]
    instance: object  # accel.passes.Pass
    col: int = 1

    def text(self) -> str:
        inner = self.instance.pipeline_text()  # type: ignore[attr-defined]
        for op in reversed(self.path):
            inner = f"{op}({inner})"
        return inner


Step = UpstreamStep | PythonStep


def plan(elements: Sequence[Element], *, source: str = PIPELINE_FILE) -> list[Step]:
    """Resolve names: Python passes become `PythonStep`s, the rest stays upstream text."""
    from accel.passes.base import instantiate, lookup_pass

    steps: list[Step] = []

    def visit(items: Sequence[Element], path: tuple[str, ...]) -> None:
        for element in items:
            if element.is_nest:
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


def _check_upstream(element: Element, path: tuple[str, ...], source: str) -> None:
    """Validate an upstream pass name and options at its nesting path, for a located error."""
    text = element.text()
    for op in reversed(path):
        text = f"{op}({text})"
    try:
        with _validation_context():
            PassManager.parse(f"builtin.module({text})")
        return
    except ValueError as err:
        message = str(err)
    if "does not refer to a registered pass" in message:
        raise PipelineSyntaxError(
            f"unknown pass or pipeline '{element.name}'{_did_you_mean(element.name)}",
            element.col, source)
    detail = next((line.strip() for line in message.splitlines() if line.strip()), message)
    detail = detail.replace("<Pass-Options-Parser>: ", "")
    valid = _upstream_option_list(element.name) if "option" in detail else ""
    suffix = f"; valid options: {valid}" if valid else ""
    raise PipelineSyntaxError(f"pass '{element.name}': {detail}{suffix}", element.col, source)


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
    from accel.passes.base import registered_passes

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


# -- running ------------------------------------------------------------------------------
@dataclass
class RunConfig:
    """Instrumentation for a pipeline run (accel-opt's `--mlir-*` flags)."""

    print_ir_before_all: bool = False
    print_ir_after_all: bool = False
    print_ir_after_failure: bool = False
    print_generic: bool = False
    timing: bool = False
    verify_each: bool = True
    filename: str = "<input>"
    line_offset: int = 0
    reproducer: bool = True
    plugins: tuple[str, ...] = ()
    #: Extra `accel-opt` flags that the reproducer command must carry.
    extra_flags: tuple[str, ...] = ()


def build_pass_manager(steps: Sequence[Step], cfg: RunConfig,
                       failures: list[Diagnostic]) -> PassManager:
    pm = PassManager("builtin.module")
    for step in steps:
        if isinstance(step, UpstreamStep):
            pm.add(step.text())
        else:
            inst = step.instance
            pm.add(_external(inst, step.path, cfg, failures), name=inst.name,  # type: ignore[attr-defined]
                   argument=inst.name, description=inst.summary())  # type: ignore[attr-defined]
    if not cfg.verify_each:
        pm.enable_verifier(False)
    # After-failure printing is done by `run_steps`: the C API only prints on failure when it
    # also prints after every pass.
    if cfg.print_ir_before_all or cfg.print_ir_after_all:
        pm.enable_ir_printing(
            print_before_all=cfg.print_ir_before_all,
            print_after_all=cfg.print_ir_after_all,
            print_module_scope=True,
            print_generic_op_form=cfg.print_generic,
        )
    if cfg.timing:
        pm.enable_timing()
    return pm


def _external(inst: object, path: tuple[str, ...], cfg: RunConfig,
              failures: list[Diagnostic]) -> Callable[[Operation, ExternalPass], None]:
    """Wrap a pass instance as a module-level ExternalPass callback."""
    from accel.diagnostics import relocate
    from accel.passes.base import PassFailure

    anchor = getattr(inst, "anchor", "builtin.module")
    name = getattr(inst, "name", "?")

    def run(module: Operation, ext: ExternalPass) -> None:
        targets = _ops_at(module, path, anchor)
        for target in targets:
            try:
                inst.apply(target)  # type: ignore[attr-defined]
            except PassFailure as err:
                loc = err.location or target.location
                file, line, col = relocate(loc, cfg.filename, cfg.line_offset)
                failures.append(Diagnostic("error", str(err), file, line, col))
                ext.signal_pass_failure()
                return
            except Exception as err:  # noqa: BLE001 - a plugin bug becomes a located error
                file, line, col = relocate(target.location, cfg.filename, cfg.line_offset)
                frame = traceback.extract_tb(err.__traceback__)[-1]
                failures.append(Diagnostic(
                    "error", f"pass '{name}' raised {type(err).__name__}: {err}", file, line, col,
                    [Diagnostic("note", "raised here", frame.filename, frame.lineno, 1)]))
                ext.signal_pass_failure()
                return

    return run


def _ops_at(module: Operation, path: tuple[str, ...], anchor: str) -> list[Operation]:
    """The ops a Python pass at `path` runs on (fresh handles: IR may have been rewritten)."""
    module = getattr(module, "operation", module)
    if anchor in ("builtin.module", "any") and not path:
        return [module]
    wanted = list(path) or [anchor]
    ops = [module]
    for kind in wanted:
        ops = [child.operation for op in ops for region in op.regions for block in region.blocks
               for child in block.operations if child.operation.name == kind]
    return ops


def pipeline_text(steps: Sequence[Step]) -> str:
    return "builtin.module(" + ",".join(s.text() for s in steps) + ")"


def run_steps(module: Module | Operation, steps: Sequence[Step], cfg: RunConfig | None = None,
              timings: list[tuple[str, float]] | None = None) -> None:
    """Run planned steps on `module`; raise `AccelError` (with a reproducer note) on failure."""
    cfg = cfg or RunConfig()
    op = getattr(module, "operation", module)
    original = op.get_asm(print_generic_op_form=True, assume_verified=True) if cfg.reproducer \
        else ""
    failures: list[Diagnostic] = []
    pm = build_pass_manager(steps, cfg, failures)
    start = time.perf_counter()
    try:
        pm.run(op)
    except MLIRError as err:
        error = from_mlir_error(err, cfg.filename, cfg.line_offset)
        if failures:
            error = AccelError(failures[0].message, diagnostics=failures)
        if cfg.print_ir_after_failure:
            _print_ir_after_failure(op, cfg)
        raise _with_reproducer(error, original, steps, cfg) from None
    finally:
        del pm  # flushes the timing report now, not at interpreter exit
    errors = dialect_errors(op, cfg.filename, cfg.line_offset)
    if errors:
        raise _with_reproducer(AccelError(errors[0].message, diagnostics=errors), original,
                               steps, cfg)
    if timings is not None:
        timings.append((pipeline_text(steps), time.perf_counter() - start))


def dialect_errors(op: Operation, filename: str, line_offset: int = 0) -> list[Diagnostic]:
    """Errors from the accel dialects' Python verifiers (invariants IRDL cannot express)."""
    from accel.diagnostics import relocate
    from accel.dialects import verify_module

    out = []
    for loc, message in verify_module(op):
        file, line, col = relocate(loc, filename, line_offset)
        out.append(Diagnostic("error", message, file, line, col))
    return out


def _print_ir_after_failure(op: Operation, cfg: RunConfig) -> None:
    import sys

    asm = op.get_asm(print_generic_op_form=cfg.print_generic, assume_verified=True)
    print(f"// -----// IR Dump After Failure //----- //\n{asm}", file=sys.stderr, flush=True)


def _with_reproducer(error: AccelError, original: str, steps: Sequence[Step],
                     cfg: RunConfig) -> AccelError:
    if not cfg.reproducer:
        return error
    fd, path = tempfile.mkstemp(prefix="accel-repro-", suffix=".mlir")
    with os.fdopen(fd, "w") as f:
        f.write(original)
    flags = [f"--load-pass-plugin={os.path.abspath(p)}" for p in cfg.plugins]
    flags += cfg.extra_flags
    command = " ".join(["accel-opt", path, *flags, f"--pass-pipeline='{pipeline_text(steps)}'"])
    error.diagnostics.append(Diagnostic("note", f"input IR of the failed pipeline: {path}"))
    error.diagnostics.append(Diagnostic("note", f"reproduce with: {command}"))
    return error


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
