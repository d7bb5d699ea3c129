"""`accel-compile`: compile a model ahead of time into an artifact folder, SambaFlow style.

    accel-compile model.py --pef-name mlp --inference -b 8 -o3      # -> out/mlp/
    accel-compile model.py --pef-name mlp-train -b 8                # a train step
    accel-compile model.py --option-json out/mlp/option.json        # the same build again
    accel-compile add.mlir --output-folder out/add --entry add -o0

The folder holds what `accel.load(folder)` reloads (manifest.json, module.ll, model.mlir,
weights/), the input IR, the IR after every phase, the host object file, `option.json` (the
exact settings: `--option-json` reproduces the build) and `compile.log` (per-phase timings).
docs/accel-compile.md is the user documentation.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn

from accel.build import PROG
from accel.build.folder import (
    compile_mlir_file,
    compile_py,
    run_iterations,
    write_aot_library,
    write_artifact,
    write_warnings_log,
)
from accel.build.settings import _read, mlir_options, resolve_settings
from accel.cli import add_option_flags, exit_with, option_flag_values, version_text
from accel.diagnostics import AccelError
from accel.options import folder_problem
from accel.progress import Progress, collecting_warnings

DESCRIPTION = """\
Compile a model for a target (arguments after SambaFlow's `compile`) and write an artifact
folder, by default ./out/<pef-name>: what accel.load(FOLDER) reloads (manifest.json, the
target's files, model.mlir, weights/), input.mlir, ir/NN-<phase>.mlir|.ll (the IR after each
phase), <pef-name>.o (the host object), option.json (every setting used: pass it back with
--option-json to reproduce the build) and compile.log (per-phase timings, versions).

MODEL is either
  a .py file      for training (the default, as in SambaFlow): defining get_training()
                  (or --entry NAME) that returns (model, loss_fn, optimizer,
                  example_batch); the folder holds the compiled train step (forward,
                  backward and optimizer graphs) and the state it starts from, and
                  accel.load(FOLDER) returns a step callable (docs/training.md).
                  With --inference: defining get_model() that returns (torch.nn.Module,
                  example_inputs tuple), compiled with accel.compile in eval mode under
                  torch.no_grad(). With -b N the factory is called with batch_size=N.
                  accel-compile runs the file's Python code: only compile files you trust.
  an .mlir file   (any level from linalg on tensors down to the LLVM dialect; the artifact
                  calls --entry, by default the only or first callable public function).

-o0/-o1/-o3 pick the target's presets of those names (default: the target's default
preset; cpu: LLVM optimisation levels 0, 1, 3); --preset NAME any preset. Every option of
the options table has a flag below or is set with --option NAME=VALUE (true/false, none,
numbers, else strings); --num-iters N runs the compiled function (the library's with
--aot) N times after compiling and prints the mean time. accel-compile compiles with the
compile cache off (cache=false) so that every phase runs and its IR is written; pass
--cache to allow cache hits.
Settings given on the command line override those from --option-json. Errors print as
`accel-compile: error: ...` or FILE:LINE:COL: error: ... and exit 1. Progress shows on a
terminal for compiles over 2 s (-q: never; -v: each phase with its time).
Documentation: docs/accel-compile.md, docs/architecture.md.
"""


#: Options whose flag spelling accel-compile uses for its own argument (SambaFlow's).
OWN_SPELLINGS = ("option_json", "output_folder")


def epilog(debug: bool = False) -> str:
    """Each target's presets and options (from the targets and the options table);
    experimental options only with `debug`."""
    from accel import options, targets

    lines = ["targets, their presets and options:"]
    for name in targets.names():
        target = targets.get(name)
        lines.append(f"  {name}: {target.summary}")
        presets = target.presets()
        if presets:
            shown = ", ".join(
                f"{p} ({' '.join(f'{k}={options._show(v)}' for k, v in values.items())})"
                + (" default" if p == target.default_preset else "")
                for p, values in presets.items())
            lines.append(f"    presets: {shown}")
        own = [o.flags[0] if o.name not in OWN_SPELLINGS else f"--option {o.name}=..."
               for o in options.OPTIONS.values()
               if (o.scope == name or name in o.also) and (debug or not o.experimental)]
        if own:
            lines.append(f"    options: {' '.join(own)} (below)")
    lines.append("options without a flag here (--option NAME=VALUE): mncore's option_json "
                 "(--option-json is accel-compile's own option.json); output_folder (the AOT "
                 "files go into the artifact folder)")
    lines.append("every option also takes its PolyBlocks/SambaFlow/MLSDK alias names "
                 "(docs/python-api.md, \"Aliases\"); --option accepts NAME or name-with-hyphens")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one `accel-compile: error: ...` line, exit 1."""

    def error(self, message: str) -> NoReturn:
        raise AccelError(message)


def build_parser(debug: bool = False, helping: bool = True) -> argparse.ArgumentParser:
    """The command-line parser; `debug` (--debug given): --help also lists the experimental
    options (SambaFlow's rule)."""
    p = _Parser(prog=PROG, description=DESCRIPTION, epilog=epilog(debug), allow_abbrev=False,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="model.py or model.mlir")
    p.add_argument("--pef-name", metavar="NAME",
                   help="name of the build: the object file NAME.o and the default output "
                        "folder (default: the model file's name without its suffix)")
    p.add_argument("--output-folder", metavar="DIR",
                   help="artifact folder to write, created if missing (default: "
                        "./out/<pef-name>)")
    p.add_argument("--inference", action=argparse.BooleanOptionalAction, default=None,
                   help="compile get_model() for inference: model.eval() and torch.no_grad() "
                        "(.py models; without it a .py model file compiles get_training())")
    p.add_argument("-b", "--batch-size", type=int, metavar="N",
                   help="pass batch_size=N to the model factory (.py models)")
    levels = p.add_mutually_exclusive_group()
    for level in (0, 1, 3):  # SambaFlow's spellings of the presets (the option `preset`)
        levels.add_argument(f"-o{level}", dest="opt_preset", action="store_const",
                            const=f"o{level}",
                            help=f"the target's preset o{level} (cpu: LLVM optimisation level "
                                 f"{level})" + (" (default)" if level == 3 else ""))
    p.add_argument("--entry", metavar="NAME",
                   help="model factory (.py: default get_training, with --inference "
                        "get_model) or function to call (.mlir)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an accel.compile option; repeatable")
    p.add_argument("--option-json", metavar="FILE",
                   help="settings from an earlier build's option.json (command-line flags "
                        "override them)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each phase with its time as it finishes")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line, even on a terminal")
    p.add_argument("--debug", action="store_true",
                   help="--verbose, plus Python tracebacks for errors; with --help, also "
                        "the experimental arguments (supported, subject to change)")
    p.add_argument("--log-dir", metavar="DIR",
                   help="also write the warnings of the compile to DIR/<pef-name>.warnings.log")
    p.add_argument("--version", action="version", version=version_text(PROG))
    # Every option of the table that a model file or .mlir build takes: --target,
    # --preset (with -o0/-o1/-o3), --opt-level, --aot, --aot-name, --num-iters (run the
    # function N times after compiling, the library's with --aot), ...
    add_option_flags(p, compile_options(), debug=debug, into={"preset": levels},
                     helping=helping)
    return p


def compile_options() -> list[str]:
    """The options accel-compile has flags for: .mlir input's, the call and training ones
    (num_iters: run after compiling) and verify_numerics; not the torch.compile ones."""
    from accel.options import OPTIONS

    return [*mlir_options(), *(n for n, o in OPTIONS.items() if n not in mlir_options()
                               and o.scope != "torch_compile")]


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


def planned_phases(s: Any, path: Path) -> list[str]:
    """The phases this compile will run, for the progress line's step count."""
    from accel import targets

    back = targets.get(s.options["target"]).phases(s.options)
    if path.suffix != ".py":
        return back
    front = ["export", "torch-backend", "linalg"]
    if s.inference:
        return [f"{s.entry or 'get_model'}()", *front, *back]
    return [f"{s.entry or 'get_training'}()", "trace",
            *(f"{graph}-{p}" for graph in ("forward", "backward", "optimizer")
              for p in (*front, *back))]


def _print_warnings(found: list[str]) -> None:
    for w in found:
        print(f"{PROG}: warning: {w}", file=sys.stderr)


def main(argv: list[str]) -> int:
    """Parse `argv`, compile MODEL, write the artifact folder; 0 on success."""
    check_short_options(argv)
    before = argv[:argv.index("--")] if "--" in argv else argv
    a = build_parser(debug="--debug" in before,
                     helping=bool({"-h", "--help"} & set(before))).parse_args(argv)
    path = Path(a.model)
    if path.suffix not in (".py", ".mlir"):
        raise AccelError(f"MODEL must be a .py or .mlir file, got '{path}'")
    _read(path)
    found: list[str] = []
    try:  # a target's check warns about options without effect: as accel-compile's warnings
        with collecting_warnings(found):
            s = resolve_settings(a, path, path.suffix == ".mlir", option_flag_values(a))
        if path.suffix == ".py" and not s.inference and s.aot:
            raise AccelError("--aot builds a C library of an inference function: add "
                             "--inference (a train step is not a C library yet)")
        out = Path(a.output_folder) if a.output_folder else Path("out") / s.pef_name
        problem = folder_problem(str(out))
        if problem:  # before compiling, not after
            raise AccelError(f"--output-folder {problem}, got '{out}'")
    except AccelError:
        _print_warnings(found)
        raise
    verbose = a.verbose or a.debug
    try:
        with collecting_warnings(found), Progress(sys.stderr, verbose=verbose, quiet=a.quiet,
                                                  steps=planned_phases(s, path)) as progress:
            if verbose:
                progress.say(f"compiling {path} -> {out} (" + " ".join(
                    f"{k}={json.dumps(v)}" for k, v in s.options.items()) + ")")
            if path.suffix == ".py":
                build = compile_py(path, s, progress)
            else:
                build = compile_mlir_file(path, s, progress)
    finally:
        _print_warnings(found)
        if a.log_dir:
            write_warnings_log(Path(a.log_dir), s.pef_name, found)
    build.warnings = found
    from accel.artifact import staged_folder

    # Written beside `out` and moved in whole: Ctrl-C or an error leaves no half folder.
    with staged_folder(out) as stage:
        write_artifact(stage, s, build, argv, path)
        library = write_aot_library(stage, s, build, out) if s.aot else None
    if library is not None:
        library = _relocated(library, stage, out)
    if s.num_iters is not None:
        run_iterations(out, build, library, s.num_iters)
    if verbose:
        total = f"{build.seconds:.3f}s" + (", cache hit" if build.rec.cache_hit else "")
        print(f"[{PROG}] total {total}", file=sys.stderr)
    if verbose or sys.stderr.isatty():  # docs/dashboard.md
        print(f"{PROG}: to inspect it in a browser: accel-dashboard serve "
              f"{shlex.quote(str(out))}", file=sys.stderr)
    print(f"{PROG}: wrote {out} (entry @{build.entry})", file=sys.stderr)
    return 0


def _relocated(library: Any, stage: Path, out: Path) -> Any:
    """An AOT library written into `stage`, with its paths in `out` where it now lies."""
    import dataclasses

    return dataclasses.replace(library, out_dir=out, files={
        key: out / path.relative_to(stage) for key, path in library.files.items()})


def run() -> None:
    """Console-script entry point."""
    exit_with(main)


if __name__ == "__main__":
    sys.argv[0] = PROG  # `python -m accel.tools.accel_compile` names itself like the script
    run()
