"""Shared plumbing for accel's command-line tools: errors as diagnostics, never tracebacks."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from accel.diagnostics import AccelError, out_of_memory, too_deep


def tool_name() -> str:
    return os.path.basename(sys.argv[0]) or "accel"


def version_text(tool: str) -> str:
    """`--version` output shared by accel's tools: accel, bindings, llvmlite and Python."""
    import platform

    import accel
    from accel.llvm.engine import llvmlite_version
    from accel.versions import PROVIDER, provider_version

    return (f"{tool} (accel {accel.__version__})\n"
            f"  MLIR bindings: {PROVIDER} {provider_version()}\n"
            f"  llvmlite {llvmlite_version()}\n"
            f"  Python {platform.python_version()}")


def run_main(main: Callable[[list[str]], int], argv: list[str] | None = None) -> int:
    """Run a tool's `main(argv)`; print `AccelError`s as diagnostics and exit 1.

    Any other exception is an accel bug: one line naming it (with `--debug` for the traceback).
    """
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        return main(args)
    except AccelError as err:
        if debug:
            traceback.print_exc()
        first = err.diagnostics[0] if err.diagnostics else None
        if first is not None and first.file is None:
            first.file = tool_name()  # `accel-opt: error: ...` for errors with no source
        print(err.format(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C (accel.interrupts): one line, the shell's status
        print(f"{tool_name()}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except RecursionError:
        if debug:
            traceback.print_exc()
        print(f"{tool_name()}: error: {too_deep('the input')}", file=sys.stderr)
        return 1
    except MemoryError as err:
        if debug:
            traceback.print_exc()
        print(f"{tool_name()}: error: the input {out_of_memory(err)}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - last line of defence: no tracebacks for users
        if debug:
            traceback.print_exc()
        print(f"{tool_name()}: error: internal error: {type(err).__name__}: {err} "
              "(run with --debug for a traceback)", file=sys.stderr)
        return 1


def exit_with(main: Callable[[list[str]], int]) -> None:
    """Console-script entry: `sys.exit(run_main(main))`; after Ctrl-C (status 130) at once,
    without the seconds CPython's shutdown spends collecting torch's objects."""
    from accel.interrupts import exit_on_interrupt

    exit_on_interrupt()
    code = run_main(main)
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def read_input(path: str) -> str:
    """A tool's input file (`-`: stdin), as text; `AccelError` located at the file when it
    cannot be read."""
    import sys

    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise AccelError("could not open input file: no such file", file=path) from None
    except (OSError, UnicodeDecodeError) as err:
        raise AccelError(f"could not read input file: {err}", file=path) from None


# -- options table flags (accel-compile, accel-run) ---------------------------------------
def add_option_flags(p: Any, names: Iterable[str], *, debug: bool = False,
                     into: Mapping[str, Any] | None = None, helping: bool = True) -> None:
    """A flag for each option in `names`, generated from the options table
    (`accel.options`): `Option.flags` spells it, its doc and allowed values are the help,
    grouped by scope; the table parses (`parse_text`) and validates each value later.
    Spellings the tool already uses are skipped; `into` places an option's flag in a given
    group (e.g. a mutually exclusive one). Experimental options are shown only with
    `debug` (SambaFlow's rule), accepted always. `helping` False (no --help asked for):
    the defaults under each target's preset are not worked out (that resolves options)."""
    import argparse

    from accel.options import OPTIONS, _show
    from accel.settings import shown_default

    taken = {s for action in p._actions for s in action.option_strings}
    groups: dict[str, Any] = {}
    for name in names:
        o = OPTIONS[name]
        spellings = [s for s in o.flags if s not in taken]
        if not spellings:
            continue
        scope = o.scope if o.scope in ("common", "call", "aot", "train") \
            else f"target {o.scope}"
        group = (into or {}).get(name) or groups.get(scope) or groups.setdefault(
            scope, p.add_argument_group(f"options ({scope})"))
        shown = shown_default(o) if helping else _show(o.default)
        help_text = f"{o.doc} (default {shown}; {o.allowed()})".replace("%", "%%")
        if o.experimental:
            help_text = ("[experimental] " + help_text) if debug else argparse.SUPPRESS
        dest = f"opt_{name}"
        # The option's own spelling in --help; the aliases' are accepted and listed once.
        first, rest = spellings[:1], spellings[1:]
        if rest and help_text is not argparse.SUPPRESS:
            help_text += f" [also {', '.join(rest)}]"
        for flags, text in ((first, help_text), (rest, argparse.SUPPRESS)):
            if not flags:
                continue
            if o.types == (bool,):
                group.add_argument(*flags, dest=dest, action=argparse.BooleanOptionalAction,
                                   default=None, help=text)
            elif list in o.types:  # SambaFlow's spelling: --resources-scaling-factors 1 0.8
                group.add_argument(*flags, dest=dest, metavar="VALUE", nargs="+",
                                   default=None, help=text)
            else:
                metavar = "N" if int in o.types else "X" if float in o.types else name.upper()
                group.add_argument(*flags, dest=dest, metavar=metavar, default=None,
                                   help=text)
        taken.update(spellings)


def option_flag_values(a: Any) -> dict[str, Any]:
    """The options given through `add_option_flags`' flags, parsed by the table."""
    from accel.options import OPTIONS, parse_text

    found = {}
    for name, opt in OPTIONS.items():
        value = getattr(a, f"opt_{name}", None)
        if isinstance(value, list):  # nargs="+": the words as one value ("1 0.8 0.8")
            value = " ".join(value)
        if value is not None:
            found[name] = value if isinstance(value, bool) else parse_text(opt, value)
    return found


def parse_option_items(items: Iterable[str]) -> dict[str, Any]:
    """`--option KEY=VALUE` items as an options dict: names as given (`accel.settings.merge`
    renames aliases and refuses unknown ones), values parsed by the option's types."""
    from accel.options import OPTIONS, canonical, parse_text

    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AccelError(f"--option expects KEY=VALUE, got '{item}'")
        name = canonical(key.strip(), hyphens=True)
        options[name or key.strip()] = parse_text(OPTIONS[name] if name else None, value)
    return options
