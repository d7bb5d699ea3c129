"""accel-opt's pass-pipeline reproducers as mlir-opt writes them (`PassCrashRecovery.cpp`):
`--mlir-generate-reproducer`, `--mlir-pass-pipeline-crash-reproducer` and its local form.

The bindings run a pipeline and report that it failed, not which pass failed: on failure the
pipeline is run again one pass at a time, in a context of its own, with IR printing before
each pass; the pass that fails is the last one dumped, and the dump's header and first line
name the pass and the op it ran on, as mlir-opt's note does.
"""

from __future__ import annotations

from collections.abc import Callable

from accel.diagnostics import AccelError
from accel.tools import opt_flags, opt_print


def write(path: str, text: str | bytes) -> None:
    """Write a file accel-opt produces; `AccelError` naming it when that fails."""
    try:
        with open(path, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
    except OSError as err:
        raise AccelError(f"could not write output file '{path}': {err.strerror}") from None


def generate(path: str, op: object, pipeline: str, cl: opt_flags.CommandLine) -> None:
    """`--mlir-generate-reproducer`: the input op and the pipeline, before running it."""
    ir = op.get_asm(enable_debug_info=True, assume_verified=True)  # type: ignore[attr-defined]
    write(path, opt_print.reproducer_text(str(ir), pipeline, cl.mlir_disable_threading,
                                          cl.verify_each))


def crash(path: str, text: str, steps: list, pipeline: str, cl: opt_flags.CommandLine,
          parse: Callable[[str], object]) -> str:
    """Write the crash reproducer of a failed chunk `text`; the note for the error. Global:
    the chunk and the whole `pipeline`. Local (`--mlir-pass-pipeline-local-reproducer`): the
    IR just before the pass that failed and that pass alone, nested under its ops."""
    found = failing_pass(text, steps, cl, parse)
    if cl.mlir_pass_pipeline_local_reproducer and found is not None:
        ir, alone, where = found
        write(path, opt_print.reproducer_text(ir, alone, cl.mlir_disable_threading,
                                              cl.verify_each))
        return f"Pipeline failed while executing {where}: reproducer generated at `{path}`"
    write(path, opt_print.reproducer_text(text.lstrip("\n"), pipeline,
                                          cl.mlir_disable_threading, cl.verify_each))
    where = found[2] if found else f"`{pipeline}`"
    return f"Pipeline failed while executing [{where}]: reproducer generated at `{path}`"


def failing_pass(text: str, steps: list, cl: opt_flags.CommandLine,
                 parse: Callable[[str], object]) -> tuple[str, str, str] | None:
    """(IR just before the pass that fails, that pass's pipeline, "`PassName` on 'op'
    operation: @sym") or None when no pass fails when run again one at a time."""
    from accel.context import make_context
    from accel.pass_run import RunConfig, UpstreamStep, run_steps

    leaves = []
    for step in steps:
        if isinstance(step, UpstreamStep):
            leaves += [UpstreamStep(step.path, [e]) for e in step.elements]
        else:
            leaves.append(step)
    cfg = RunConfig(verify_each=cl.verify_each, reproducer=False,
                    plugins=tuple(cl.load_pass_plugin), print_ir_before_all=True)
    cfg.print_options = {"print_module_scope": False}
    ctx = make_context(allow_unregistered=cl.allow_unregistered_dialect, multithreaded=False)
    with ctx:
        ctx.attach_diagnostic_handler(lambda _d: True)
        try:
            op = parse(text)
        except AccelError:
            return None
        for leaf in leaves:
            ir = str(op.get_asm(assume_verified=True))  # type: ignore[attr-defined]
            with opt_print.captured_fd2(True) as said:
                try:
                    run_steps(op, [leaf], cfg)  # type: ignore[arg-type]
                    continue
                except AccelError:
                    pass
            subject = opt_print.last_dump_subject("".join(said))
            if subject is None:
                arg = leaf.elements[0].name if isinstance(leaf, UpstreamStep) else \
                    leaf.instance.pipeline_text().split("{")[0]  # type: ignore[attr-defined]
                anchor = leaf.path[-1] if leaf.path else str(getattr(
                    getattr(op, "operation", op), "name", "builtin.module"))
                subject = (arg, anchor, None)
            where = f"`{subject[0]}` on '{subject[1]}' operation" + \
                (f": @{subject[2]}" if subject[2] else "")
            return ir, opt_print.expanded_pipeline([leaf]), where
    return None
