"""Running planned pass steps: one `PassManager` per run, Python passes as `ExternalPass`es.

The layer under `accel.pipeline` (which parses and plans textual pipelines) and under the
pass API (`Pass.__call__` runs one pass through here): it needs no pass registry. On
failure the error carries a note with the input IR file and the exact `accel-opt` command
that reproduces it.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from accel.diagnostics import AccelError, Diagnostic, PassFailure, from_mlir_error
from accel.ir import ExternalPass, MLIRError, Module, Operation, PassManager


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
    #: Warnings and remarks of steps run in a child process (`isolated`), which the
    #: context's diagnostic handler never sees.
    emitted: list[Diagnostic] = field(default_factory=list)
    #: More `PassManager.enable_ir_printing` arguments (accel-opt's mlir-opt flags:
    #: print_module_scope, print_after_change, print_after_failure, ...); module scope is
    #: the default unless given.
    print_options: dict[str, object] = field(default_factory=dict)
    #: `--mlir-pass-statistics-display` mode ("list" or "pipeline"); None: no statistics.
    statistics: str | None = None
    #: Whether `run_steps` ends with the accel dialects' Python verifiers (each walks every
    #: op: 0.15 s over a 12-layer GPT-2's pipelines). Off only where the IR has already been
    #: verified and the pipeline neither takes nor makes accel-dialect ops (the frontend's
    #: torch-mlir pipelines, the cpu and nvgpu pipelines after their first).
    verify_dialects: bool = True


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
        extra = {k: v for k, v in cfg.print_options.items() if v is not None}
        extra.setdefault("print_module_scope", True)
        pm.enable_ir_printing(
            print_before_all=cfg.print_ir_before_all,
            print_after_all=cfg.print_ir_after_all,
            print_generic_op_form=cfg.print_generic,
            **extra,  # type: ignore[arg-type]
        )
    if cfg.timing:
        pm.enable_timing()
    if cfg.statistics:
        from accel.ir import PassDisplayMode

        pm.enable_statistics(PassDisplayMode.LIST if cfg.statistics == "list"
                             else PassDisplayMode.PIPELINE)
    return pm


def _external(inst: object, path: tuple[str, ...], cfg: RunConfig,
              failures: list[Diagnostic]) -> Callable[[Operation, ExternalPass], None]:
    """Wrap a pass instance as a module-level ExternalPass callback."""
    from accel.diagnostics import relocate

    anchor = getattr(inst, "anchor", "builtin.module")
    name = getattr(inst, "name", "?")

    def run(module: Operation, ext: ExternalPass) -> None:
        from accel.interrupts import pending

        targets = _ops_at(module, path, anchor)
        for target in targets:
            if pending():  # Ctrl-C: stop here, `_run_in_process` raises it
                ext.signal_pass_failure()
                return
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
    start = time.perf_counter()
    for segment in _segments(steps):
        try:
            if isolated(segment[0]):
                _run_isolated(op, segment[0], cfg)  # type: ignore[arg-type]
            else:
                _run_in_process(op, segment, cfg)
        except AccelError as error:
            if cfg.print_ir_after_failure:
                _print_ir_after_failure(op, cfg)
            raise _with_reproducer(error, original, steps, cfg) from None
    errors = dialect_errors(op, cfg.filename, cfg.line_offset) if cfg.verify_dialects else []
    if errors:
        raise _with_reproducer(AccelError(errors[0].message, diagnostics=errors), original,
                               steps, cfg)
    if timings is not None:
        timings.append((pipeline_text(steps), time.perf_counter() - start))


#: A pass manager run of passes that together took less than this (seconds) is followed by
#: one of twice as many (up to `_MOST_PER_RUN`): each run costs a walk of the module (the
#: bindings invalidate their op handles), a few ms for a model, while a Ctrl-C waits for the
#: run to end (`accel.interrupts`).
_QUICK_RUN = 0.2
_MOST_PER_RUN = 16


def _run_in_process(op: Operation, steps: Sequence[Step], cfg: RunConfig) -> None:
    """Run `steps` with pass managers in this process. Ctrl-C (`accel.interrupts`) stops
    the run between two pass manager runs: a few passes each (one after a slow run, more
    after quick ones), unless one report must cover them all (`--mlir-timing`,
    statistics, IR printing)."""
    from accel import interrupts

    whole = cfg.timing or cfg.statistics or cfg.print_ir_before_all or cfg.print_ir_after_all
    todo = list(steps) if whole else _one_element_steps(steps)
    size = len(todo) if whole else 1
    while todo:
        part, todo = todo[:size], todo[size:]
        interrupts.check()
        failures: list[Diagnostic] = []
        pm = build_pass_manager(part, cfg, failures)
        start = time.perf_counter()
        # Python passes run inside: Ctrl-C must not raise in them, only stop the run.
        with interrupts.deferred():
            try:
                pm.run(op)
            except MLIRError as err:  # after Ctrl-C, `deferred` raises that instead
                if failures:
                    raise AccelError(failures[0].message, diagnostics=failures) from None
                if not err.error_diagnostics:  # a pass's signalPassFailure() alone: say which
                    raise AccelError(_silent_failure(part), file=cfg.filename) from None
                raise from_mlir_error(err, cfg.filename, cfg.line_offset) from None
            finally:
                del pm  # flushes the timing report now, not at interpreter exit
        if not whole:
            quick = time.perf_counter() - start < _QUICK_RUN
            size = min(2 * size, _MOST_PER_RUN) if quick else 1


def _silent_failure(part: Sequence[Step]) -> str:
    """The error for a pass manager run that failed without a diagnostic (upstream's
    `sparse-vectorization` without `vl`, `spirv-attach-target` with bad options): mlir-opt
    prints nothing at all there, which reads as a crash."""
    def leaves(e: Element) -> list[str]:
        return [e.name] if e.children is None else [n for c in e.children for n in leaves(c)]

    names = [n for step in part for n in (
        [getattr(step.instance, "name", "?")] if isinstance(step, PythonStep)
        else [n for e in step.elements for n in leaves(e)])]
    if len(names) == 1:
        return f"pass '{names[0]}' failed without a diagnostic"
    return f"one of the passes {', '.join(repr(n) for n in names)} failed without a " \
        "diagnostic"


def _one_element_steps(steps: Sequence[Step]) -> list[Step]:
    """`steps` with each upstream step cut into one step per pipeline element."""
    out: list[Step] = []
    for step in steps:
        if isinstance(step, UpstreamStep) and len(step.elements) > 1:
            out += [UpstreamStep(step.path, [element]) for element in step.elements]
        else:
            out.append(step)
    return out


def isolated(step: Step) -> bool:
    """Whether `step` runs in a child process: upstream passes that may crash
    (`accel.upstream_passes.is_fragile`)."""
    from accel.upstream_passes import is_fragile

    return isinstance(step, UpstreamStep) and any(is_fragile(e.name, e.options)
                                                  for e in step.elements)


def _segments(steps: Sequence[Step]) -> list[list[Step]]:
    """Runs of steps sharing one pass manager; an isolated step is a segment of its own."""
    out: list[list[Step]] = []
    for step in steps:
        if isolated(step) or not out or isolated(out[-1][0]):
            out.append([step])
        else:
            out[-1].append(step)
    return out


def _run_isolated(op: Operation, step: UpstreamStep, cfg: RunConfig) -> None:
    """Run `step` on a copy of `op` in a forked child and take over its result."""
    from accel.diagnostics import relocate
    from accel.isolation import IsolatedFailure, run_diagnosed_isolated

    text = pipeline_text([step])
    asm = op.get_asm(enable_debug_info=True, print_generic_op_form=True, assume_verified=True)
    try:
        result = run_diagnosed_isolated(asm, text, like=op.context)
    except IsolatedFailure as why:
        raise AccelError(f"upstream pass pipeline '{text}' {why} on this input",
                         file=cfg.filename) from None

    def convert(d: list) -> Diagnostic:  # [severity, message, location, notes]
        file, line, col = relocate(d[2], cfg.filename, cfg.line_offset)
        return Diagnostic(d[0], d[1], file, line, col, [convert(n) for n in d[3]])

    diags = [convert(d) for d in result["diagnostics"]]
    errors = [d for d in diags if d.severity == "error"]
    cfg.emitted.extend(d for d in diags if d.severity != "error")
    if result["ir"] is None or errors:
        errors = errors or [Diagnostic("error", f"upstream pass pipeline '{text}' failed",
                                       cfg.filename)]
        raise AccelError(errors[0].message, diagnostics=errors)
    _replace_module(op, Module.parse(result["ir"], op.context).operation)


def _replace_module(op: Operation, new: Operation) -> None:
    """Make module `op` hold `new`'s attributes and body (ops are moved, not copied)."""
    body = op.regions[0].blocks[0]
    for child in list(body.operations):
        child.operation.erase()
    for child in list(new.regions[0].blocks[0].operations):
        body.append(child.operation)
    for name in list(op.attributes):  # iterating attributes yields their names
        del op.attributes[name]
    for name in list(new.attributes):
        op.attributes[name] = new.attributes[name]


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

