"""Shared plumbing for accel's command-line tools: errors as diagnostics, never tracebacks."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

from accel.diagnostics import AccelError, out_of_memory, too_deep


def tool_name() -> str:
    return os.path.basename(sys.argv[0]) or "accel"


def version_text(tool: str) -> str:
    """`--version` output shared by accel's tools: accel, bindings, llvmlite and Python."""
    import platform

    import llvmlite

    import accel
    from accel.versions import PROVIDER, provider_version

    return (f"{tool} (accel {accel.__version__})\n"
            f"  MLIR bindings: {PROVIDER} {provider_version()}\n"
            f"  llvmlite {llvmlite.__version__}\n"
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
