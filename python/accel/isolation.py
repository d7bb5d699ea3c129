"""Run an upstream pass pipeline where a crash cannot take the compiler down.

Some upstream passes still segfault on some inputs (`affine-loop-fusion`: llvm-project
issues 212046, 212048 and others). A crash inside the bindings kills the whole Python
process, which accel never allows, so passes known to be fragile run in a forked child:
it parses the IR text into a fresh single-threaded context, runs the pipeline and writes the
result back through a pipe. If the child dies, times out or reports an error, the caller
gets `IsolatedFailure` with the reason and keeps its unchanged IR.

Forking (rather than starting a new interpreter) costs milliseconds and needs nothing to be
imported again; the child touches only MLIR and exits with `os._exit`.
"""

from __future__ import annotations

import faulthandler
import os
import select
import signal
import time

from accel.ir import Context, Module, PassManager

#: Seconds an isolated pipeline may run.
DEFAULT_TIMEOUT = 120.0


class IsolatedFailure(Exception):
    """The isolated pipeline did not produce IR (crash, timeout or pass failure)."""


def run_pipeline_isolated(text: str, pipeline: str, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Parse `text`, run the textual `pipeline` on it in a child process; return the result.

    Raises `IsolatedFailure` saying why when no result came back.
    """
    if not hasattr(os, "fork"):  # pragma: no cover - every POSIX system has it
        raise IsolatedFailure("no fork() on this platform")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        # A crash here is expected and reported by the parent: no "Fatal Python error" dump
        # on the user's terminal (pytest and `python -X faulthandler` enable one).
        faulthandler.disable()
        os.close(read_fd)
        _child(text, pipeline, write_fd)
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
            ready, _, _ = select.select([read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    payload = b"".join(chunks).decode(errors="replace")
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise IsolatedFailure(f"the pass crashed ({name})")
    code = os.WEXITSTATUS(status)
    if code != 0:
        first = payload.strip().splitlines()[0] if payload.strip() else f"exit status {code}"
        raise IsolatedFailure(first)
    return payload


def _child(text: str, pipeline: str, write_fd: int) -> None:
    status = 1
    try:
        ctx = Context()
        ctx.enable_multithreading(False)  # the parent's thread pool does not exist here
        with ctx:
            module = Module.parse(text)
            PassManager.parse(pipeline).run(module.operation)
            out = module.operation.get_asm(enable_debug_info=True).encode()
        status = 0
    except Exception as err:  # noqa: BLE001 - report anything to the parent
        out = " ".join(str(err).split()).encode()
    try:
        view = memoryview(out)
        while view:
            view = view[os.write(write_fd, view):]
    finally:
        os._exit(status)
