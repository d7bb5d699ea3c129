"""accel-compile's job: compile a model file, write the artifact folder, its IR and logs.

The folder holds what `accel.load(folder)` reloads (accel.artifact), the input IR, the IR
after every phase (ir/NN-<phase>.mlir|.ll), the host object, option.json (the exact
settings: `--option-json` reproduces the build) and compile.log (per-phase timings).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accel.build import PROG
from accel.build.model_file import (
    INFERENCE_FACTORY,
    TRAINING_FACTORY,
    load_model_file,
    load_training_file,
)
from accel.build.settings import OPTION_JSON, BuildSettings, _read
from accel.diagnostics import AccelError
from accel.llvm.archive import is_archive
from accel.progress import Progress

COMPILE_LOG = "compile.log"
INPUT_MLIR = "input.mlir"
IR_FOLDER = "ir"


# -- compile --------------------------------------------------------------------------------
@dataclass
class Build:
    """What one compile produced, before it is written out."""

    compiled: Any  # CompiledMLIR
    entry: str
    input_ir: str | None
    model_mlir: str | None
    rec: Any  # accel.phases.Recorder
    seconds: float
    model_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    #: Example inputs (numpy) for --num-iters; None: zeros of the signature's shapes.
    inputs: tuple[Any, ...] | None = None
    #: A training build: the `TrainStep` (its phases' executables, the state to save).
    train_step: Any = None
    #: The model's output structure (accel.frontend.outputs), saved with the artifact.
    outputs: Any = None
    #: The model's input structure (accel.frontend.inputs: keywords, caches), likewise.
    input_structure: Any = None


def compile_py(path: Path, s: BuildSettings, progress: Progress) -> Build:
    """A .py model: inference with --inference (get_model), else training (get_training)."""
    if not s.inference:
        return compile_training(path, s, progress)
    import accel
    from accel import phases

    start = time.perf_counter()
    factory = s.entry or INFERENCE_FACTORY
    progress.phase_start(f"{factory}()")
    model, inputs, kwargs = load_model_file(path, factory, s.batch_size)
    model_seconds = time.perf_counter() - start
    if progress.verbose:
        progress.say(f"{factory}() {model_seconds:.3f}s")
    import torch

    if callable(getattr(model, "eval", None)):
        model.eval()
    grad = torch.no_grad()
    with phases.recording(keep_ir=True, want_object=True,
                          on_phase_start=progress.phase_start) as rec:
        progress.rec = rec
        with grad:
            try:
                # The AOT library is built into the artifact folder once it is written.
                compiled = accel.compile(model, inputs, options=s.settings.replace(aot=False),
                                         example_kwargs=kwargs or None)
            except (ValueError, NotImplementedError, TypeError) as err:
                raise AccelError(str(err)) from None
    s.entry = factory
    first = next((p.ir for p in rec.phases if p.ir is not None), None)
    if compiled.inputs is not None:  # the function's flat arguments (--num-iters)
        inputs = tuple(compiled.inputs.flatten(inputs, kwargs))
    return Build(compiled.compiled, compiled.func_name, first,
                 None if compiled.module is None else str(compiled.module), rec,
                 time.perf_counter() - start, model_seconds,
                 inputs=tuple(_to_numpy(x) for x in inputs), outputs=compiled.outputs,
                 input_structure=compiled.inputs)


def compile_training(path: Path, s: BuildSettings, progress: Progress) -> Build:
    """A training build: `get_training()`'s model, loss, optimizer and batch compiled with
    `accel.compile_train_step` (phases forward-*, backward-*, optimizer-*)."""
    import accel
    from accel import phases

    start = time.perf_counter()
    factory = s.entry or TRAINING_FACTORY
    progress.phase_start(f"{factory}()")
    model, loss_fn, optimizer, batch = load_training_file(path, factory, s.batch_size)
    model_seconds = time.perf_counter() - start
    if progress.verbose:
        progress.say(f"{factory}() {model_seconds:.3f}s")
    with phases.recording(keep_ir=True, want_object=True,
                          on_phase_start=progress.phase_start) as rec:
        progress.rec = rec
        try:
            step = accel.compile_train_step(model, loss_fn, optimizer, batch,
                                            options=s.settings)
        except (ValueError, NotImplementedError, TypeError) as err:
            raise AccelError(str(err)) from None
    s.entry = factory
    first = next((p.ir for p in rec.phases if p.ir is not None), None)
    return Build(step.compiled["forward"].compiled, "train_step", first, None, rec,
                 time.perf_counter() - start, model_seconds,
                 inputs=tuple(batch), train_step=step)


def _to_numpy(value: Any) -> Any:
    detach = getattr(value, "detach", None)
    return detach().cpu().numpy() if callable(detach) else value


def compile_mlir_file(path: Path, s: BuildSettings, progress: Progress) -> Build:
    from accel import phases, targets

    start = time.perf_counter()
    text = _read(path)
    options = s.settings.replace(filename=str(path), aot=False)
    with phases.recording(keep_ir=True, want_object=True,
                          on_phase_start=progress.phase_start) as rec:
        progress.rec = rec
        try:
            compiled = targets.get(options["target"]).compile(text, options)
        except ValueError as err:
            raise AccelError(str(err)) from None
    callable_fns = [n for n, sig in compiled.functions.items() if not sig.unsupported]
    entry = s.entry
    if entry is None:
        if not callable_fns:
            raise AccelError("no public function callable from Python", file=str(path))
        entry = callable_fns[0]
    elif entry not in compiled.functions:
        raise AccelError(f"no public function @{entry}; available: "
                         f"{', '.join('@' + n for n in compiled.functions) or 'none'}",
                         file=str(path))
    s.entry = entry
    return Build(compiled, entry, text, text, rec, time.perf_counter() - start)


# -- artifact -------------------------------------------------------------------------------
def write_artifact(out: Path, s: BuildSettings, b: Build, command: list[str], model: Path) -> None:
    """The artifact folder: accel.load's files, then the IR, object, option.json and log.
    `out` is a stage (`accel.artifact.staged_folder`): moved into place once complete."""
    from accel.artifact import save_executable
    from accel.cache import atomic_write

    if b.train_step is not None:
        from accel.training.artifact import save_step

        for name, module in b.train_step.compiled.items():
            if hasattr(module.compiled, "artifact_name"):
                module.compiled.artifact_name = f"{s.pef_name}-{name}"
        save_step(b.train_step, out, s.pef_name)
    else:
        if hasattr(b.compiled, "artifact_name"):  # targets that name files after the build
            b.compiled.artifact_name = s.pef_name
        from accel import targets

        save_executable(out, b.compiled, target=targets.get(s.options["target"]),
                        entry=b.entry, options=s.options,
                        model_mlir=b.model_mlir, outputs=b.outputs,
                        inputs=b.input_structure, staged=False)
    ir_dir = out / IR_FOLDER
    written: list[tuple[Any, str | None]] = []
    try:
        # Always there, if empty: it replaces the IR of an earlier build into the folder,
        # which would mislead.
        ir_dir.mkdir(exist_ok=True)
        if b.input_ir is not None:
            atomic_write(out / INPUT_MLIR, b.input_ir.encode())
        for index, p in enumerate(b.rec.phases, 1):
            name = None
            if p.ir is not None:
                name = f"{IR_FOLDER}/{index:02d}-{p.name}{p.ir_suffix}"
                atomic_write(out / name, p.ir.encode())
            written.append((p, name))
        objects = _objects(s, b)
        for name, obj in objects.items():
            atomic_write(out / name, obj)
        atomic_write(out / OPTION_JSON,
                     (json.dumps(s.to_json(), indent=2) + "\n").encode())
        atomic_write(out / COMPILE_LOG,
                     compile_log(s, b, written, command, model, list(objects)).encode())
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None


def _objects(s: BuildSettings, b: Build) -> dict[str, bytes]:
    """The host object files: `<pef-name>.o`, or for training one per phase graph
    (`<pef-name>-forward.o`, ...); `.a` where the code is an archive of parts."""
    if b.train_step is not None:
        found = {f"{s.pef_name}-{name}.o": getattr(m.compiled, "object_code", None)
                 for name, m in b.train_step.compiled.items()}
    else:
        found = {f"{s.pef_name}.o": b.rec.object_code
                 or getattr(b.compiled, "object_code", None)}
    # A module compiled in parts (accel.host.codegen) is an archive of their objects.
    return {name.removesuffix(".o") + ".a" if is_archive(obj) else name: bytes(obj)
            for name, obj in found.items() if obj}


def compile_log(s: BuildSettings, b: Build, written: list[tuple[Any, str | None]],
                command: list[str], model: Path, objects: list[str]) -> str:
    """compile.log: versions, the command, one line per phase, cache hit, total, warnings."""
    import platform

    from accel.cache import environment

    env = environment()
    lines = [
        f"{PROG} compile log",
        f"versions: accel {env.get('accel')}, MLIR bindings {env.get('bindings')}, llvmlite "
        f"{env.get('llvmlite')}, Python {platform.python_version()}",
        f"host: {env.get('triple')} {env.get('cpu')}",
        f"command: {shlex.join([PROG, *command])}",
        f"model: {model}",
        f"entry: {b.entry}",
        "options: " + " ".join(f"{k}={json.dumps(v)}" for k, v in s.options.items()),
    ]
    if b.model_seconds:
        lines.append(f"phase {s.entry}() {b.model_seconds:.3f}s (model factory)")
    for p, name in written:
        lines.append(f"phase {p.name} {p.seconds:.3f}s" + (f" -> {name}" if name else ""))
    hit = bool(b.rec.cache_hit or getattr(b.compiled, "cache_hit", False))
    lines.append("cache hit: " + ("yes (the MLIR phases did not run: no IR for them)" if hit
                                  else "no"))
    if objects:
        lines.append(f"object{'s' if len(objects) > 1 else ''}: {' '.join(objects)}")
    if b.train_step is not None:
        lines.append("train step: " + ", ".join(
            f"{g.name} ({len(g.inputs)} inputs, {len(g.outputs)} outputs)"
            for g in b.train_step.graphs.graphs))
    lines.append(f"total {b.seconds:.3f}s")
    lines += [f"warning: {w}" for w in b.warnings]
    target = s.options["target"]
    if b.train_step is None:
        lines += _target_summary(target, b.compiled)
    else:
        from accel import targets

        whole = targets.get(target).report_train(b.train_step)
        if whole is not None:  # the target's view of the whole step (the RDU's schedule)
            lines += whole.splitlines()
        else:
            for name, module in b.train_step.compiled.items():
                lines += [f"{name}: {line}" for line in _target_summary(target,
                                                                         module.compiled)]
    return "\n".join(lines) + "\n"


def _target_summary(name: str, compiled: Any) -> list[str]:
    """The target's own summary of the program (e.g. the RDU's sections), when it has one."""
    from accel import targets
    from accel.targets.base import Target

    target = targets.get(name)
    if type(target).report is Target.report:
        return []
    return target.report(compiled).splitlines()


def write_aot_library(out: Path, s: BuildSettings, b: Build, shown: Path | None = None) -> Any:
    """The target's AOT library (`Target.build_aot`: cpu lib<NAME>.so, <NAME>.o, <NAME>.h,
    README.txt; nvgpu the same with <NAME>.c) in the artifact folder (`shown`: the folder's
    name in the message, when `out` is its stage)."""
    from accel import targets

    target = s.options["target"]
    try:
        lib = targets.get(target).build_aot(b.compiled, b.entry,
                                            {**s.options, "output_folder": str(out)})
    except ValueError as err:
        raise AccelError(str(err)) from None
    files = " ".join(sorted(p.name for p in lib.files.values()))
    scratch = getattr(lib, "scratch_bytes", 0) if getattr(lib, "user_memory", False) else 0
    try:
        with (out / COMPILE_LOG).open("a", encoding="utf-8") as log:
            log.write(f"aot: {files} (target {target} {s.options.get('device', 'host')}"
                      + (f", scratch {scratch} bytes" if scratch else "") + ")\n")
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None
    print(f"{PROG}: wrote {', '.join(f'{shown or out}/{name}' for name in files.split())}",
          file=sys.stderr)
    return lib


def run_iterations(out: Path, b: Build, library: Any, num_iters: int) -> None:
    """--num-iters: run the function (the AOT library's if built) N times, print the mean."""
    import numpy as np

    if num_iters < 1:
        raise AccelError(f"--num-iters must be at least 1, got {num_iters}")
    if b.train_step is not None:
        _time_train_step(out, b, num_iters)
        return
    sig = b.compiled.functions[b.entry]
    inputs = b.inputs
    if inputs is None:
        if any(a.kind == "memref" and None in a.shape for a in sig.args):
            raise AccelError("--num-iters needs static shapes for an .mlir input")
        inputs = tuple(np.ones(a.shape if a.kind == "memref" else (),
                               a.dtype.user_dtype) for a in sig.args)
    if library is not None and not getattr(library, "static_shapes", False):
        library = None  # the descriptor interface: time the same code through the JIT
    try:
        if library is not None:
            _, seconds = library.benchmark(*inputs, num_iters=num_iters)
            what = f"lib{library.name}.so"
        else:
            fn = b.compiled[b.entry]
            fn(*inputs)
            start = time.perf_counter()
            for _ in range(num_iters):
                fn(*inputs)
            seconds = (time.perf_counter() - start) / num_iters
            what = "the JIT-compiled code"
    except (RuntimeError, ValueError, TypeError) as err:
        raise AccelError(f"--num-iters: @{b.entry} failed on the "
                         f"{'example' if b.inputs is not None else 'all-ones'} inputs: "
                         f"{err}") from None
    line = (f"ran @{b.entry} ({what}) {num_iters} time{'s' if num_iters > 1 else ''}: "
            f"mean {seconds * 1e3:.3f} ms")
    _report_timing(out, line)


def _time_train_step(out: Path, b: Build, num_iters: int) -> None:
    """--num-iters of a training build: that many steps on the example batch (after the
    folder was written: the saved state is the untrained one)."""
    assert b.inputs is not None
    try:
        b.train_step(*b.inputs)
        start = time.perf_counter()
        for _ in range(num_iters):
            b.train_step(*b.inputs)
        seconds = (time.perf_counter() - start) / num_iters
    except (RuntimeError, ValueError, TypeError) as err:
        raise AccelError(f"--num-iters: the train step failed on the example batch: "
                         f"{err}") from None
    line = (f"ran the train step {num_iters} time{'s' if num_iters > 1 else ''}: mean "
            f"{seconds * 1e3:.3f} ms")
    _report_timing(out, line)


def _report_timing(out: Path, line: str) -> None:
    """A --num-iters result: appended to compile.log (best effort) and printed."""
    try:
        with (out / COMPILE_LOG).open("a", encoding="utf-8") as log:
            log.write(line + "\n")
    except OSError:
        pass
    print(f"{PROG}: {line}", file=sys.stderr)


def write_warnings_log(log_dir: Path, pef_name: str, found: list[str]) -> Path:
    """DIR/<pef-name>.warnings.log: one warning per line (empty when there were none)."""
    from accel.cache import atomic_write

    target = log_dir / f"{pef_name}.warnings.log"
    try:
        atomic_write(target, "".join(f"warning: {w}\n" for w in found).encode())
    except OSError as err:
        raise AccelError(f"could not write log folder '{log_dir}': {err}") from None
    return target


