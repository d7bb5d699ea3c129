"""Running MLIR work where a crash cannot take the compiler down.

Some upstream code still crashes on some inputs: passes (`affine-loop-fusion`: llvm-project
issues 212046, 212048 and others; `affine-loop-unroll-jam{unroll-jam-factor=0}`) and op
parsers (`accel.safe_parse`). A crash inside the bindings kills the whole Python process,
which accel never allows, so such work runs in a forked child: it builds a fresh
single-threaded context with the caller's dialects, does the work and writes the result back
through a pipe. If the child dies, times out or reports an error, the caller gets
`IsolatedFailure` with the reason and keeps its unchanged IR.

Forking (rather than starting a new interpreter) costs tens of milliseconds and needs nothing
to be imported again; the child touches only MLIR, writes nothing to the terminal (a crash
dump of its own would look like the caller's) and exits with `os._exit`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from accel.interrupts import pending
from accel.ir import Context, Module, PassManager

#: Seconds an isolated pipeline may run.
DEFAULT_TIMEOUT = 120.0


class IsolatedFailure(Exception):
    """The isolated work did not produce a result (crash, timeout or error).

    `signal` is the name of the signal that killed the child ("SIGSEGV"), None otherwise.
    """

    def __init__(self, reason: str, signal_name: str | None = None):
        super().__init__(reason)
        self.signal = signal_name


def run_isolated(work: Callable[[], bytes], timeout: float = DEFAULT_TIMEOUT) -> bytes:
    """Call `work()` in a forked child; return the bytes it returned.

    An exception in `work` becomes `IsolatedFailure` with its message, as do a crash (with
    `signal` set) and running past `timeout` seconds.
    """
    if not hasattr(os, "fork"):  # pragma: no cover - every POSIX system has it
        raise IsolatedFailure("no fork() on this platform")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(work, write_fd)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise IsolatedFailure(f"timed out after {timeout:g} s")
            ready, _, _ = select.select([read_fd], [], [], min(left, 0.05))
            if pending():  # Ctrl-C held off by accel.interrupts.deferred: stop the child
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise IsolatedFailure("interrupted (Ctrl-C)")
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except KeyboardInterrupt:  # Ctrl-C while waiting: the child must not run on
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    payload = b"".join(chunks)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise IsolatedFailure(f"crashed ({name})", name)
    code = os.WEXITSTATUS(status)
    if code != 0:
        text = payload.decode(errors="replace").strip()
        raise IsolatedFailure(text.splitlines()[0] if text else f"exit status {code}")
    return payload


def _child(work: Callable[[], bytes], write_fd: int) -> None:
    status = 1
    try:
        import faulthandler

        faulthandler.disable()  # pytest's handler would print a "Fatal Python error" dump
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)  # LLVM's own messages and crash reports stay out of the output
        out = work()
        status = 0
    except BaseException as err:  # noqa: BLE001 - report anything to the parent
        out = " ".join(str(err).split()).encode() or type(err).__name__.encode()
    try:
        view = memoryview(out)
        while view:
            view = view[os.write(write_fd, view):]
    finally:
        os._exit(status)


@contextlib.contextmanager
def captured_stderr() -> Iterator[Callable[[], str]]:
    """Send what native code writes to file descriptor 2 into a buffer for the block; yields
    a function returning that text once the block has ended. (Python's `sys.stderr` is
    flushed first; another thread's writes during the block are captured too. Blocks of
    different threads take turns: interleaved, one could restore the other's buffer as fd 2.)
    """
    import sys
    import tempfile

    text: list[str] = []
    with _STDERR_LOCK, tempfile.TemporaryFile() as buffer:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(buffer.fileno(), 2)
        try:
            yield lambda: text[0] if text else ""
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            buffer.seek(0)
            text.append(buffer.read().decode(errors="replace"))


_STDERR_LOCK = threading.Lock()


@contextlib.contextmanager
def child_context(like: Context | None = None, *,
                  threads: bool = False) -> Iterator[Context]:
    """A fresh context for a forked child: single-threaded, or with a thread pool of its own
    (`threads`; the parent's contexts may own thread pools whose threads do not exist
    there, so it never shares theirs). With `like`, it has accel's and
    torch-mlir's dialects (a superset of what `like` can have loaded, which costs about
    50 ms) and accepts unregistered dialects when `like` does; without, only upstream ones.
    """
    if like is None:
        ctx = Context()
        ctx.enable_multithreading(threads)
    else:
        from accel.context import make_context
        from accel.ir import load_torch_dialects

        ctx = make_context(allow_unregistered=like.allow_unregistered_dialects,
                           multithreaded=threads)
        load_torch_dialects(ctx)
    with ctx:
        yield ctx


def run_pipeline_isolated(text: str, pipeline: str, timeout: float = DEFAULT_TIMEOUT,
                          like: Context | None = None, threads: bool = False) -> str:
    """Parse `text`, run the textual `pipeline` on it in a child process; return the result.

    The child's context has the dialects of `child_context(like)`; with `threads`, MLIR
    runs the pipeline's function passes on several functions at once (the same result).
    Raises `IsolatedFailure` saying why when no result came back.
    """
    def work() -> bytes:
        with child_context(like, threads=threads):
            module = Module.parse(text)
            PassManager.parse(pipeline).run(module.operation)
            return module.operation.get_asm(enable_debug_info=True).encode()

    return run_isolated(work, timeout).decode(errors="replace")


def run_diagnosed_isolated(text: str, pipeline: str, timeout: float = DEFAULT_TIMEOUT,
                           like: Context | None = None) -> dict[str, Any]:
    """Like `run_pipeline_isolated`, but a pass failure comes back as data:
    `{"ir": text or None, "diagnostics": [[severity, message, location], ...]}` (every
    diagnostic the pipeline emitted, notes flattened after their error)."""
    from accel.ir import MLIRError

    def work() -> bytes:
        with child_context(like) as ctx:
            seen: list[list[str]] = []

            def handler(diag: Any) -> bool:
                seen.append(_flat(diag))
                return True

            ctx.attach_diagnostic_handler(handler)
            module = Module.parse(text)
            ir = None
            try:
                PassManager.parse(pipeline).run(module.operation)
                ir = module.operation.get_asm(enable_debug_info=True, print_generic_op_form=True)
            except MLIRError as err:
                seen += [_flat(d) for d in err.error_diagnostics]
            return json.dumps({"ir": ir, "diagnostics": seen}).encode()

    return json.loads(run_isolated(work, timeout))


def _flat(diag: Any) -> list[str]:
    severity = str(getattr(diag, "severity", "error")).rsplit(".", 1)[-1].lower()
    notes = [_flat(n) for n in getattr(diag, "notes", [])]
    return [severity, str(diag.message), str(diag.location), notes]  # type: ignore[list-item]
