"""`accel-compile`: compile a model ahead of time into an artifact folder for `accel.load`.

    accel-compile model.mlir -o out/ [--entry NAME] [--opt-level N] [--option key=value ...]
    accel-compile model.py   -o out/ [--entry get_model] [--option verify_numerics=true]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any, NoReturn

from accel.cli import exit_with, version_text
from accel.diagnostics import AccelError

PROG = "accel-compile"

DESCRIPTION = """\
Compile a model for the host CPU and write an artifact folder (manifest.json, module.ll,
model.mlir) that accel.load(FOLDER) reloads without compiling again.

MODEL is either
  an .mlir file   (any level from linalg on tensors down to the LLVM dialect; the artifact
                   calls --entry, by default the only or first callable public function), or
  a .py file      defining a function (--entry, default get_model) that takes no arguments
                   and returns (torch.nn.Module, example_inputs tuple); it is compiled with
                   accel.compile at those inputs' shapes and dtypes.

--option key=value sets a compile option (values: true/false, none, ints, else strings);
for .py models every accel.compile option (docs/python-api.md), for .mlir files opt_level
and cache. Errors print as `accel-compile: error: ...` or FILE:LINE:COL: error: ... and
exit 1.
"""


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one `accel-compile: error: ...` line, exit 1."""

    def error(self, message: str) -> NoReturn:
        raise AccelError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    p = _Parser(prog=PROG, description=DESCRIPTION, allow_abbrev=False,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="model.mlir or model.py")
    p.add_argument("-o", "--output-folder", required=True, metavar="DIR",
                   help="artifact folder to write (created if missing)")
    p.add_argument("--entry", metavar="NAME",
                   help="function to call (.mlir) or model factory (.py, default get_model)")
    p.add_argument("--opt-level", type=int, choices=range(4), metavar="N",
                   help="LLVM optimisation level 0-3 (default 3)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a compile option; repeatable")
    p.add_argument("--version", action="version", version=version_text(PROG))
    p.add_argument("--debug", action="store_true",
                   help="show Python tracebacks for internal errors")
    return p


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


def parse_options(items: list[str], opt_level: int | None) -> dict[str, Any]:
    """`--option key=value` items (and `--opt-level`) as an options dict."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AccelError(f"--option expects KEY=VALUE, got '{item}'")
        options[key.strip()] = parse_value(value)
    if opt_level is not None:
        options["opt_level"] = opt_level
    return options


def compile_mlir_file(path: Path, entry: str | None, options: dict[str, Any]) -> Any:
    """Compile an .mlir file; returns (compiled, entry, options, source text)."""
    from accel.backend.cpu import compile_mlir

    allowed = {"opt_level", "cache"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise AccelError(f"option '{unknown[0]}' does not apply to .mlir input (valid: "
                         f"{', '.join(sorted(allowed))})")
    text = _read(path)
    try:
        compiled = compile_mlir(text, {**options, "filename": str(path)})
    except ValueError as err:
        raise AccelError(str(err)) from None
    callable_fns = [n for n, s in compiled.functions.items() if not s.unsupported]
    if entry is None:
        if not callable_fns:
            raise AccelError(f"{path}: no public function callable from Python")
        entry = callable_fns[0]
    elif entry not in compiled.functions:
        raise AccelError(f"{path}: no public function @{entry}; available: "
                         f"{', '.join('@' + n for n in compiled.functions) or 'none'}")
    return compiled, entry, {"opt_level": 3, "cache": True, **options}, text


def load_model_file(path: Path, factory: str) -> tuple[Any, tuple[Any, ...]]:
    """Import `path` and call its `factory()`; returns (model, example_inputs)."""
    _read(path)  # a clear error for a missing/unreadable file
    spec = importlib.util.spec_from_file_location(f"_accel_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise AccelError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
        fn = getattr(module, factory, None)
        if not callable(fn):
            raise AccelError(f"{path}: defines no function {factory}() returning "
                             "(model, example_inputs)")
        result = fn()
    except AccelError:
        raise
    except Exception as err:  # noqa: BLE001 - user code: report it in one line
        raise AccelError(f"{path}: {factory}() failed: {type(err).__name__}: {err}") from None
    finally:
        sys.path.remove(str(path.resolve().parent))
    if not (isinstance(result, tuple | list) and len(result) == 2
            and isinstance(result[1], tuple | list)):
        raise AccelError(f"{path}: {factory}() must return (model, example_inputs tuple), got "
                         f"{type(result).__name__}")
    return result[0], tuple(result[1])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AccelError(f"no such file: '{path}'") from None
    except (OSError, UnicodeDecodeError) as err:
        raise AccelError(f"could not read '{path}': {err}") from None


def main(argv: list[str]) -> int:
    """Parse `argv`, compile MODEL, write the artifact folder; 0 on success."""
    a = build_parser().parse_args(argv)
    path = Path(a.model)
    options = parse_options(a.option, a.opt_level)
    out = Path(a.output_folder)
    if path.suffix == ".py":
        import accel

        model, inputs = load_model_file(path, a.entry or "get_model")
        try:
            compiled = accel.compile(model, inputs, options=options)
        except (ValueError, NotImplementedError, TypeError) as err:
            raise AccelError(str(err)) from None
        compiled.save(out)
        entry = compiled.func_name
    elif path.suffix == ".mlir":
        from accel.cache import save_artifact

        compiled, entry, opts, text = compile_mlir_file(path, a.entry, options)
        save_artifact(out, compiled, entry=entry, options=opts, model_mlir=text)
    else:
        raise AccelError(f"MODEL must be a .mlir or .py file, got '{path}'")
    print(f"{PROG}: wrote {out} (entry @{entry})", file=sys.stderr)
    return 0


def run() -> None:
    """Console-script entry point."""
    exit_with(main)


if __name__ == "__main__":
    sys.argv[0] = PROG  # `python -m accel.tools.accel_compile` names itself like the script
    run()
