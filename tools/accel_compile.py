"""`accel-compile`: compile a model ahead of time into an artifact folder, SambaFlow style.

    accel-compile model.py --pef-name mlp --inference -b 8 -o3      # -> out/mlp/
    accel-compile model.py --option-json out/mlp/option.json        # the same build again
    accel-compile add.mlir --output-folder out/add --entry add -o0

The folder holds what `accel.load(folder)` reloads (manifest.json, module.ll, model.mlir,
weights/), the input IR, the IR after every phase, the host object file, `option.json` (the
exact settings: `--option-json` reproduces the build) and `compile.log` (per-phase timings).
docs/accel-compile.md is the user documentation.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import logging
import re
import shlex
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TextIO

from accel.cli import exit_with, version_text
from accel.diagnostics import AccelError

PROG = "accel-compile"
#: Version of option.json's layout.
OPTION_JSON_FORMAT = 1
OPTION_JSON = "option.json"
COMPILE_LOG = "compile.log"
INPUT_MLIR = "input.mlir"
IR_FOLDER = "ir"
#: Top-level keys of option.json besides "options" (the accel.compile options).
SETTINGS = ("pef_name", "entry", "batch_size", "inference")
#: accel options that apply to .mlir input (the rest belong to accel.compile).
def mlir_options() -> tuple[str, ...]:
    """accel options that apply to .mlir input: not the call/AOT ones, not verify_numerics
    (there is no eager model)."""
    from accel.options import OPTIONS

    return tuple(n for n, o in OPTIONS.items()
                 if o.scope not in ("call", "aot") and n != "verify_numerics")


#: Seconds a compile runs before the progress line appears on a terminal.
PROGRESS_DELAY = 1.0
#: AOT library settings (the "aot" object of option.json, present only with --aot).
AOT_DEFAULT_NAME = "accel_artifact"
#: accel.aot.TARGET_CPUS, host (the default) first; spelled out to keep `--help` fast.
AOT_CPUS = ("host", "generic", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")

DESCRIPTION = """\
Compile a model for the host CPU (arguments after SambaFlow's `compile`) and write an
artifact folder, by default ./out/<pef-name>: what accel.load(FOLDER) reloads (manifest.json,
module.ll, model.mlir, weights/), input.mlir, ir/NN-<phase>.mlir|.ll (the IR after each
phase), <pef-name>.o (the host object), option.json (every setting used: pass it back with
--option-json to reproduce the build) and compile.log (per-phase timings, versions).

MODEL is either
  a .py file      defining get_model() (or --entry NAME) that returns
                  (torch.nn.Module, example_inputs tuple); with -b N it is called as
                  get_model(batch_size=N). It is compiled with accel.compile at those
                  inputs' shapes and dtypes. accel compiles inference only: --inference
                  puts the model in eval mode and compiles under torch.no_grad().
  an .mlir file   (any level from linalg on tensors down to the LLVM dialect; the artifact
                  calls --entry, by default the only or first callable public function).

-o0/-o1/-o3 (default -o3) are LLVM optimisation levels 0, 1 and 3 (--opt-level N for 2).
--option key=value sets any accel.compile option (values: true/false, none, ints, else
strings); .mlir input takes only target, opt_level and cache. accel-compile compiles with
the compile cache off (cache=false) so that every phase runs and its IR is written; pass
--option cache=true to allow cache hits. Settings given on the command line override those
from --option-json. Errors print as `accel-compile: error: ...` or FILE:LINE:COL: error: ...
and exit 1. Documentation: docs/accel-compile.md.
"""


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one `accel-compile: error: ...` line, exit 1."""

    def error(self, message: str) -> NoReturn:
        raise AccelError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    from accel.targets import names

    p = _Parser(prog=PROG, description=DESCRIPTION, allow_abbrev=False,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="model.py or model.mlir")
    p.add_argument("--pef-name", metavar="NAME",
                   help="name of the build: the object file NAME.o and the default output "
                        "folder (default: the model file's name without its suffix)")
    p.add_argument("--output-folder", metavar="DIR",
                   help="artifact folder to write, created if missing (default: "
                        "./out/<pef-name>)")
    p.add_argument("--inference", action=argparse.BooleanOptionalAction, default=None,
                   help="compile for inference: model.eval() and torch.no_grad() (.py models)")
    p.add_argument("-b", "--batch-size", type=int, metavar="N",
                   help="pass batch_size=N to the model factory (.py models)")
    levels = p.add_mutually_exclusive_group()
    for level in (0, 1, 3):
        levels.add_argument(f"-o{level}", dest="preset", action="store_const", const=f"o{level}",
                            help=f"the target's preset o{level} (cpu: LLVM optimisation level "
                                 f"{level})" + (" (default)" if level == 3 else ""))
    levels.add_argument("--preset", metavar="NAME",
                        help="a named option set of the target (listed below)")
    p.add_argument("--opt-level", type=int, choices=range(4), metavar="N",
                   help="optimisation level 0-3 (overrides the preset's)")
    p.add_argument("--target", choices=names(),
                   help="target to compile for (default cpu; listed below)")
    p.add_argument("--entry", metavar="NAME",
                   help="model factory (.py, default get_model) or function to call (.mlir)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an accel.compile option; repeatable")
    p.add_argument("--option-json", metavar="FILE",
                   help="settings from an earlier build's option.json (command-line flags "
                        "override them)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each phase with its time as it finishes")
    p.add_argument("--debug", action="store_true",
                   help="--verbose, plus Python tracebacks for errors")
    p.add_argument("--log-dir", metavar="DIR",
                   help="also write the warnings of the compile to DIR/<pef-name>.warnings.log")
    aot = p.add_argument_group("ahead-of-time library (docs/aot.md)")
    aot.add_argument("--aot", action="store_true", default=None,
                     help="also write a C library of the entry function into the output "
                          "folder: lib<NAME>.so, <NAME>.o, <NAME>.h and README.txt")
    aot.add_argument("--aot-name", metavar="NAME",
                     help=f"name of the C function and prefix of the library files (default "
                          f"{AOT_DEFAULT_NAME})")
    aot.add_argument("--target-cpu", metavar="CPU", choices=AOT_CPUS,
                     help="CPU the library is compiled for: host (default), generic (any "
                          "x86-64), x86-64-v2, x86-64-v3")
    aot.add_argument("--user-memory", action="store_true", default=None,
                     help="the library takes a trailing scratch pool (and its size) and "
                          "makes no heap allocation")
    aot.add_argument("--num-iters", type=int, metavar="N",
                     help="after compiling, run the function N times on the example inputs "
                          "(the library's with --aot) and print the mean time")
    p.add_argument("--version", action="version", version=version_text(PROG))
    return p


def check_short_options(argv: list[str]) -> None:
    """Clear errors for the `-o` spellings that are not optimisation levels."""
    for arg in argv:
        if arg == "--":
            return
        if arg == "-o" or arg.startswith("-o="):
            raise AccelError("-o DIR is not an option: use --output-folder DIR (-o0, -o1 and "
                             "-o3 set the optimisation level)")
        if re.fullmatch(r"-o\d+", arg) and arg not in ("-o0", "-o1", "-o3"):
            raise AccelError(f"no optimisation level {arg}: use -o0, -o1, -o3 or "
                             "--opt-level N (0-3)")


# -- settings -------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """`true`/`false` -> bool, `none` -> None, an int literal -> int, else the string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        return text


def parse_options(items: list[str]) -> dict[str, Any]:
    """`--option key=value` items (and an optimisation level) as an options dict."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AccelError(f"--option expects KEY=VALUE, got '{item}'")
        options[key.strip()] = parse_value(value)
    return options


@dataclass
class Settings:
    """Everything that determines a build: what option.json holds."""

    pef_name: str
    entry: str | None = None
    batch_size: int | None = None
    inference: bool = False
    #: accel options, all of them once resolved.
    options: dict[str, Any] = field(default_factory=dict)
    #: AOT library settings (name, target_cpu, user_memory), None without --aot.
    aot: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"format": OPTION_JSON_FORMAT, "tool": PROG, "pef_name": self.pef_name,
                "entry": self.entry, "batch_size": self.batch_size,
                "inference": self.inference, "options": dict(self.options)}
        if self.aot is not None:
            data["aot"] = dict(self.aot)
        return data


def read_option_json(path: Path) -> dict[str, Any]:
    """The settings in an option.json, checked; keys missing from it are left out."""
    text = _read(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise AccelError(f"invalid JSON: {err.msg}", file=str(path), line=err.lineno,
                         col=err.colno) from None
    if not isinstance(data, dict):
        raise AccelError(f"expected a JSON object, got {type(data).__name__}", file=str(path))
    known = ("format", "tool", *SETTINGS, "options", "aot")
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise AccelError(f"unknown key '{unknown[0]}' (valid: {', '.join(known)})",
                         file=str(path))
    if data.get("format", OPTION_JSON_FORMAT) != OPTION_JSON_FORMAT:
        raise AccelError(f"format {data['format']!r} is not supported (this "
                         f"accel-compile reads format {OPTION_JSON_FORMAT})", file=str(path))
    checks: dict[str, tuple[tuple[type, ...], str]] = {
        "pef_name": ((str,), "a string"), "entry": ((str, type(None)), "a string or null"),
        "batch_size": ((int, type(None)), "an int or null"), "inference": ((bool,), "a bool"),
        "options": ((dict,), "an object"), "aot": ((dict, type(None)), "an object or null"),
    }
    for key, (types, what) in checks.items():
        if key not in data:
            continue
        value = data[key]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise AccelError(f"'{key}' must be {what}, got {json.dumps(value)}", file=str(path))
    return {k: data[k] for k in (*SETTINGS, "options", "aot") if k in data}


def resolve_settings(a: argparse.Namespace, path: Path, is_mlir: bool) -> Settings:
    """Defaults, then --option-json, then the command line; options validated."""
    from accel.api import resolve_options

    base = read_option_json(Path(a.option_json)) if a.option_json else {}
    flags = {k: v for k, v in (("target", a.target), ("preset", a.preset),
                                ("opt_level", a.opt_level)) if v is not None}
    options = {**base.get("options", {}), **parse_options(a.option), **flags}
    if a.preset is not None:  # a preset asked for now wins over option.json's values of it
        from accel import targets

        try:
            preset = targets.get(options.get("target", "cpu")).presets().get(a.preset, {})
        except AccelError:
            preset = {}
        given = {**parse_options(a.option), **flags}
        options = {k: v for k, v in options.items() if k not in preset or k in given}
    options.setdefault("cache", False)  # every phase runs (and leaves its IR) unless asked
    if is_mlir:
        if base.get("options"):  # a .py build's option.json: its defaults do not matter here
            defaults = resolve_options({})
            options = {k: v for k, v in options.items()
                       if k in mlir_options() or k not in defaults or v != defaults[k]}
        unknown = sorted(set(options) - set(mlir_options()))
        if unknown:
            raise AccelError(f"option '{unknown[0]}' does not apply to .mlir input (valid: "
                             f"{', '.join(sorted(mlir_options()))})")
    try:
        resolved = resolve_options(options)
    except (ValueError, NotImplementedError) as err:
        raise AccelError(str(err)) from None
    if is_mlir:
        resolved = {k: resolved[k] for k in mlir_options() if k in resolved}
    pef_name = a.pef_name if a.pef_name is not None else base.get("pef_name", path.stem)
    if not pef_name or pef_name in (".", "..") or "/" in pef_name or "\\" in pef_name:
        raise AccelError(f"--pef-name must be a plain file name, got '{pef_name}'")
    batch_size = a.batch_size if a.batch_size is not None else base.get("batch_size")
    if batch_size is not None and batch_size < 1:
        raise AccelError(f"--batch-size must be at least 1, got {batch_size}")
    if batch_size is not None and is_mlir:
        raise AccelError("-b/--batch-size applies to .py models only (an .mlir file has "
                         "fixed shapes)")
    inference = a.inference if a.inference is not None else base.get("inference", False)
    entry = a.entry if a.entry is not None else base.get("entry")
    return Settings(pef_name, entry, batch_size, bool(inference), resolved,
                    resolve_aot(a, base.get("aot")))


def resolve_aot(a: argparse.Namespace, base: dict[str, Any] | None) -> dict[str, Any] | None:
    """The AOT settings: option.json's "aot" object, then --aot/--aot-name/... (None: off)."""
    given = {"name": a.aot_name, "target_cpu": a.target_cpu, "user_memory": a.user_memory}
    if not a.aot and base is None:
        used = [flag for flag, v in (("--aot-name", a.aot_name), ("--target-cpu", a.target_cpu),
                                     ("--user-memory", a.user_memory)) if v is not None]
        if used:
            raise AccelError(f"{used[0]} applies to AOT libraries: add --aot")
        return None
    aot = {"name": AOT_DEFAULT_NAME, "target_cpu": "host", "user_memory": False}
    for key, value in (base or {}).items():
        if key not in aot:
            raise AccelError(f"unknown key '{key}' in option.json's \"aot\" (valid: "
                             f"{', '.join(aot)})")
        aot[key] = value
    aot.update({k: v for k, v in given.items() if v is not None})
    if not isinstance(aot["name"], str) or not re.fullmatch(r"[A-Za-z_]\w*", aot["name"]):
        raise AccelError(f"--aot-name must be a C identifier, got '{aot['name']}'")
    if aot["target_cpu"] not in AOT_CPUS:
        raise AccelError(f"--target-cpu must be one of {', '.join(AOT_CPUS)}, got "
                         f"'{aot['target_cpu']}'")
    aot["user_memory"] = bool(aot["user_memory"])
    return aot


# -- models ---------------------------------------------------------------------------------
def _takes_batch_size(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD or (
        p.name == "batch_size" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in params)


def load_model_file(path: Path, factory: str,
                    batch_size: int | None = None) -> tuple[Any, tuple[Any, ...]]:
    """Import `path` and call its `factory()` (with `batch_size=`); (model, example_inputs)."""
    _read(path)  # a clear error for a missing/unreadable file
    spec = importlib.util.spec_from_file_location(f"_accel_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise AccelError("cannot be imported as a Python module", file=str(path))
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
        fn = getattr(module, factory, None)
        if not callable(fn):
            raise AccelError(f"defines no function {factory}() returning "
                             "(model, example_inputs)", file=str(path))
        if batch_size is None:
            result = fn()
        elif _takes_batch_size(fn):
            result = fn(batch_size=batch_size)
        else:
            raise AccelError(f"-b/--batch-size needs {factory}() to take a batch_size "
                             f"keyword argument, e.g. def {factory}(batch_size=1)",
                             file=str(path))
    except AccelError:
        raise
    except Exception as err:  # noqa: BLE001 - user code: report it in one line
        raise AccelError(f"{factory}() failed: {type(err).__name__}: {err}",
                         file=str(path)) from None
    finally:
        sys.path.remove(folder)
    if not (isinstance(result, tuple | list) and len(result) == 2
            and isinstance(result[1], tuple | list)):
        raise AccelError(f"{factory}() must return (model, example_inputs tuple), got "
                         f"{type(result).__name__}", file=str(path))
    return result[0], tuple(result[1])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AccelError(f"no such file: '{path}'") from None
    except IsADirectoryError:
        raise AccelError(f"'{path}' is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise AccelError(f"could not read '{path}': {err}") from None


# -- progress -------------------------------------------------------------------------------
class Progress:
    """Shows what the compile is doing on `stream`.

    Verbose: one line per finished phase with its time. Live (a terminal): once the compile
    has run `delay` seconds, a line `[accel-compile] PHASE ... 3.2s` redrawn in place until it
    ends, then erased. Neither: silent.
    """

    def __init__(self, stream: TextIO, *, verbose: bool = False, live: bool | None = None,
                 delay: float = PROGRESS_DELAY, interval: float = 0.1):
        self.stream = stream
        self.verbose = verbose
        if live is None:
            isatty = getattr(stream, "isatty", None)
            live = bool(isatty and isatty())
        self.live = live
        self.delay = delay
        self.interval = interval
        self.rec: Any = None
        self.current = "starting"
        self._printed = 0
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = time.perf_counter()

    def __enter__(self) -> Progress:
        self._start = time.perf_counter()
        if self.live:
            self._thread = threading.Thread(target=self._run, name="accel-compile-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.flush()
        with self._lock:
            self._erase()

    def phase_start(self, name: str) -> None:
        """`on_phase_start` callback; also for steps outside the compiler (loading the model)."""
        self.flush()
        self.current = name

    def flush(self) -> None:
        """Print the phases that finished since the last call (verbose only)."""
        phases = self.rec.phases if self.rec is not None else []
        new, self._printed = phases[self._printed:], len(phases)
        if self.verbose:
            for p in new:
                self.say(f"{p.name} {p.seconds:.3f}s")

    def say(self, text: str) -> None:
        """One `[accel-compile] text` line (the live line is redrawn after it)."""
        with self._lock:
            self._erase()
            print(f"[{PROG}] {text}", file=self.stream, flush=True)

    def _erase(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            elapsed = time.perf_counter() - self._start
            if elapsed < self.delay:
                continue
            with self._lock:
                if self._stop.is_set():
                    return
                self.stream.write(f"\r[{PROG}] {self.current} ... {elapsed:.1f}s\x1b[K")
                self.stream.flush()
                self._shown = True


# -- warnings -------------------------------------------------------------------------------
class _Collect(logging.Handler):
    def __init__(self, sink: list[str]):
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(f"{record.name}: {record.getMessage()}")


@contextmanager
def collecting_warnings(sink: list[str]) -> Iterator[None]:
    """Python warnings and accel's logged warnings inside the block, appended to `sink`."""
    handler = _Collect(sink)
    logger = logging.getLogger("accel")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            try:
                yield
            finally:
                sink.extend(f"{w.category.__name__}: {w.message}" for w in caught)
    finally:
        logger.removeHandler(handler)


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


def compile_py(path: Path, s: Settings, progress: Progress, sink: list[str]) -> Build:
    import accel
    from accel import phases

    start = time.perf_counter()
    factory = s.entry or "get_model"
    progress.phase_start(f"{factory}()")
    model, inputs = load_model_file(path, factory, s.batch_size)
    model_seconds = time.perf_counter() - start
    if progress.verbose:
        progress.say(f"{factory}() {model_seconds:.3f}s")
    grad: Any = nullcontext()
    if s.inference:
        import torch

        if callable(getattr(model, "eval", None)):
            model.eval()
        grad = torch.no_grad()
    elif getattr(model, "training", False):
        message = ("the model is in training mode: accel compiles the forward pass for "
                   "inference only (no backward pass, no optimizer), with dropout and batch "
                   "norm as in training; pass --inference to compile it in eval mode")
        sink.append(message)
    with phases.recording(keep_ir=True, want_object=True,
                          on_phase_start=progress.phase_start) as rec:
        progress.rec = rec
        with grad:
            try:
                compiled = accel.compile(model, inputs, options=s.options)
            except (ValueError, NotImplementedError, TypeError) as err:
                raise AccelError(str(err)) from None
    s.entry = factory
    first = next((p.ir for p in rec.phases if p.ir is not None), None)
    return Build(compiled.compiled, compiled.func_name, first,
                 None if compiled.module is None else str(compiled.module), rec,
                 time.perf_counter() - start, model_seconds,
                 inputs=tuple(_to_numpy(x) for x in inputs))


def _to_numpy(value: Any) -> Any:
    detach = getattr(value, "detach", None)
    return detach().cpu().numpy() if callable(detach) else value


def compile_mlir_file(path: Path, s: Settings, progress: Progress) -> Build:
    from accel import phases, targets

    start = time.perf_counter()
    text = _read(path)
    options = dict(s.options) | {"filename": str(path)}
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
def write_artifact(out: Path, s: Settings, b: Build, command: list[str], model: Path) -> None:
    """The artifact folder: accel.load's files, then the IR, object, option.json and log."""
    from accel.artifact import save
    from accel.cache import atomic_write
    from accel.compiled_module import CompiledModule

    if hasattr(b.compiled, "artifact_name"):  # targets that name files after the build
        b.compiled.artifact_name = s.pef_name
    module = CompiledModule(None, b.compiled, None, b.entry, s.options)
    module.set_module_text(b.model_mlir)
    save(out, module)
    ir_dir = out / IR_FOLDER
    written: list[tuple[Any, str | None]] = []
    try:
        if ir_dir.is_dir():  # IR of an earlier build into this folder would mislead
            for old in ir_dir.iterdir():
                if re.fullmatch(r"\d\d-[\w.-]+\.(mlir|ll)", old.name):
                    old.unlink()
        if b.input_ir is not None:
            atomic_write(out / INPUT_MLIR, b.input_ir.encode())
        for index, p in enumerate(b.rec.phases, 1):
            name = None
            if p.ir is not None:
                name = f"{IR_FOLDER}/{index:02d}-{p.name}{p.ir_suffix}"
                atomic_write(out / name, p.ir.encode())
            written.append((p, name))
        obj = b.rec.object_code or getattr(b.compiled, "object_code", None) or None
        if obj:
            atomic_write(out / f"{s.pef_name}.o", bytes(obj))
        atomic_write(out / OPTION_JSON,
                     (json.dumps(s.to_json(), indent=2) + "\n").encode())
        atomic_write(out / COMPILE_LOG,
                     compile_log(s, b, written, command, model, bool(obj)).encode())
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None


def compile_log(s: Settings, b: Build, written: list[tuple[Any, str | None]],
                command: list[str], model: Path, has_object: bool) -> str:
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
    if has_object:
        lines.append(f"object: {s.pef_name}.o")
    lines.append(f"total {b.seconds:.3f}s")
    lines += [f"warning: {w}" for w in b.warnings]
    lines += _target_summary(s.options.get("target", "cpu"), b.compiled)
    return "\n".join(lines) + "\n"


def _target_summary(name: str, compiled: Any) -> list[str]:
    """The target's own summary of the program (e.g. the RDU's sections), when it has one."""
    from accel import targets
    from accel.targets.base import Target

    target = targets.get(name)
    if type(target).report is Target.report:
        return []
    return target.report(compiled).splitlines()


def write_aot_library(out: Path, s: Settings, b: Build) -> Any:
    """lib<NAME>.so, <NAME>.o, <NAME>.h and README.txt in the artifact folder."""
    from accel.targets.cpu.aot import build_library

    assert s.aot is not None
    try:
        lib = build_library(b.compiled, s.aot["name"], out, entry=b.entry,
                            target_cpu=s.aot["target_cpu"], user_memory=s.aot["user_memory"],
                            opt_level=s.options.get("opt_level", 3))
    except ValueError as err:
        raise AccelError(str(err)) from None
    try:
        with (out / COMPILE_LOG).open("a", encoding="utf-8") as log:
            log.write(f"aot: lib{lib.name}.so {lib.name}.o {lib.name}.h README.txt (target "
                      f"cpu {lib.target_cpu}" + (f", scratch {lib.scratch_bytes} bytes"
                                                 if lib.user_memory else "") + ")\n")
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None
    print(f"{PROG}: wrote {out}/lib{lib.name}.so, {lib.name}.o, {lib.name}.h", file=sys.stderr)
    return lib


def run_iterations(out: Path, b: Build, library: Any, num_iters: int) -> None:
    """--num-iters: run the function (the AOT library's if built) N times, print the mean."""
    import numpy as np

    if num_iters < 1:
        raise AccelError(f"--num-iters must be at least 1, got {num_iters}")
    sig = b.compiled.functions[b.entry]
    inputs = b.inputs
    if inputs is None:
        if any(a.kind == "memref" and None in a.shape for a in sig.args):
            raise AccelError("--num-iters needs static shapes for an .mlir input")
        inputs = tuple(np.ones(a.shape if a.kind == "memref" else (),
                               a.dtype.user_dtype) for a in sig.args)
    if library is not None and not library.static_shapes:
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


def main(argv: list[str]) -> int:
    """Parse `argv`, compile MODEL, write the artifact folder; 0 on success."""
    check_short_options(argv)
    a = build_parser().parse_args(argv)
    path = Path(a.model)
    if path.suffix not in (".py", ".mlir"):
        raise AccelError(f"MODEL must be a .py or .mlir file, got '{path}'")
    _read(path)
    s = resolve_settings(a, path, path.suffix == ".mlir")
    out = Path(a.output_folder) if a.output_folder else Path("out") / s.pef_name
    verbose = a.verbose or a.debug
    found: list[str] = []
    try:
        with collecting_warnings(found), Progress(sys.stderr, verbose=verbose) as progress:
            if verbose:
                progress.say(f"compiling {path} -> {out} (" + " ".join(
                    f"{k}={json.dumps(v)}" for k, v in s.options.items()) + ")")
            if path.suffix == ".py":
                build = compile_py(path, s, progress, found)
            else:
                build = compile_mlir_file(path, s, progress)
    finally:
        for w in found:
            print(f"{PROG}: warning: {w}", file=sys.stderr)
        if a.log_dir:
            write_warnings_log(Path(a.log_dir), s.pef_name, found)
    build.warnings = found
    write_artifact(out, s, build, argv, path)
    library = write_aot_library(out, s, build) if s.aot is not None else None
    if a.num_iters is not None:
        run_iterations(out, build, library, a.num_iters)
    if verbose:
        total = f"{build.seconds:.3f}s" + (", cache hit" if build.rec.cache_hit else "")
        print(f"[{PROG}] total {total}", file=sys.stderr)
    print(f"{PROG}: wrote {out} (entry @{build.entry})", file=sys.stderr)
    return 0


def run() -> None:
    """Console-script entry point."""
    exit_with(main)


if __name__ == "__main__":
    sys.argv[0] = PROG  # `python -m accel.tools.accel_compile` names itself like the script
    run()
