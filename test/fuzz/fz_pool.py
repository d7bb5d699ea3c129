"""Long-lived worker processes for the fuzz harness.

Each worker is forked from the harness after the heavy imports (torch, the MLIR bindings,
llvmlite), runs many cases one at a time and sends back each classification. Its stdout and
stderr go to files (a crash dump lands there, and CLI cases read native messages from it),
it runs under a memory limit, and it is replaced after `RECYCLE` cases (compiled code stays
mapped in a process) or when it dies. A worker that dies or hangs is charged to the case it
was running: a signal or a hang is a defect, except a hang while the input's own mutated code
runs (`phase == "execute"` of an `ir` case: a loop the mutation made long is not accel's).
"""

from __future__ import annotations

import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Cases a worker runs before it is replaced.
RECYCLE = 1000
#: Address-space limit of a worker (GiB): a runaway allocation fails instead of swapping.
MEMORY_GIB = float(os.environ.get("ACCEL_FUZZ_MEMORY_GIB", "8"))


def _frame(data: dict[str, Any]) -> bytes:
    body = json.dumps(data).encode()
    return struct.pack(">I", len(body)) + body


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks = b""
    while len(chunks) < n:
        chunk = os.read(fd, n - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return chunks


def _send(fd: int, data: dict[str, Any]) -> None:
    view = memoryview(_frame(data))
    while view:
        view = view[os.write(fd, view):]


def preload() -> None:
    """Import what the cases use, once, before forking workers (no threads started)."""
    import accel.api  # noqa: F401
    import accel.host.compile  # noqa: F401
    import accel.tools.accel_compile  # noqa: F401
    import accel.tools.accel_opt  # noqa: F401
    import accel.tools.accel_run  # noqa: F401
    import torch  # noqa: F401


# -- the worker -----------------------------------------------------------------------------
def _worker(fixtures: Path, folder: Path, rfd: int, wfd: int) -> None:
    """The child's loop: read a case, run it, send its result; never returns."""
    import faulthandler

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.chdir(folder)
    for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        target = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
        os.dup2(target, fd)
        os.close(target)
    faulthandler.enable(file=sys.__stderr__, all_threads=True)
    limit = int(MEMORY_GIB * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import fz_execute
    import fz_kinds
    from accel.host.jit import CompiledMLIR

    def notify(phase: str) -> None:
        _send(wfd, {"type": "phase", "phase": phase})

    invoke = CompiledMLIR.invoke

    def invoke_noting(self: Any, name: str, *args: Any) -> Any:
        notify("execute")  # accel-run calls this: the input's own code runs now
        return invoke(self, name, *args)

    CompiledMLIR.invoke = invoke_noting  # type: ignore[method-assign]

    def native() -> str:
        sys.stdout.flush()
        sys.stderr.flush()
        return (folder / "stderr.txt").read_text(errors="replace")[-8000:]

    env = fz_execute.Env(fixtures, folder / "case", notify)
    while True:
        header = _read_exact(rfd, 4)
        if header is None:
            os._exit(0)
        body = _read_exact(rfd, struct.unpack(">I", header)[0])
        if body is None:
            os._exit(0)
        case = json.loads(body)
        os.ftruncate(2, 0)
        shutil.rmtree(env.work, ignore_errors=True)
        env.work.mkdir()
        try:
            result = fz_kinds.run_case(case, env, native)
        except BaseException as err:  # noqa: BLE001 - a harness bug is reported, not fatal
            result = fz_execute.defect("harness error", repr(err))
            result["harness"] = True
        _send(wfd, {"type": "result", **result})


class Worker:
    """A forked worker and the case it runs."""

    def __init__(self, index: int, fixtures: Path, root: Path):
        self.folder = root / f"worker{index}-{time.monotonic_ns()}"
        self.folder.mkdir(parents=True)
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(to_child)
            os.close(from_child)
            try:
                _worker(fixtures, self.folder, from_parent, to_parent)
            finally:
                os._exit(70)
        os.close(from_parent)
        os.close(to_parent)
        self.pid, self.wfd, self.rfd = pid, to_child, from_child
        self.case: dict[str, Any] | None = None
        self.started = 0.0
        self.phase = ""
        self.handled = 0
        self.buffer = b""
        self.status: int | None = None

    def start(self, case: dict[str, Any]) -> None:
        self.case, self.started, self.phase = case, time.monotonic(), ""
        _send(self.wfd, case)

    def messages(self) -> list[dict[str, Any]] | None:
        """Complete messages read now; None when the worker has gone."""
        chunk = os.read(self.rfd, 1 << 16)
        if not chunk:
            return None
        self.buffer += chunk
        found = []
        while len(self.buffer) >= 4:
            size = struct.unpack(">I", self.buffer[:4])[0]
            if len(self.buffer) < 4 + size:
                break
            found.append(json.loads(self.buffer[4:4 + size]))
            self.buffer = self.buffer[4 + size:]
        return found

    def stop(self, sig: int | None = signal.SIGKILL) -> int:
        """End the worker (idempotent); its wait status."""
        if self.status is not None:
            return self.status
        if sig is not None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
        for fd in (self.wfd, self.rfd):
            try:
                os.close(fd)
            except OSError:
                pass
        _, self.status = os.waitpid(self.pid, 0)
        return self.status

    def crash_log(self) -> str:
        try:
            return (self.folder / "stderr.txt").read_text(errors="replace")[-6000:]
        except OSError:
            return ""


def _death(worker: Worker, status: int) -> dict[str, Any]:
    log = worker.crash_log()
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return {"outcome": "defect", "reason": f"killed by {name}", "message": log[-600:],
                "detail": log}
    return {"outcome": "defect", "reason": f"worker exited with status "
            f"{os.WEXITSTATUS(status)}", "message": log[-600:], "detail": log}


def _hang(worker: Worker, timeout: float) -> dict[str, Any]:
    case = worker.case or {}
    if worker.phase == "execute" and case.get("family") == "ir":
        return {"outcome": "clean", "reason": f"the input's own code ran past {timeout:g} s"}
    return {"outcome": "defect", "reason": f"hang: no result after {timeout:g} s"
            f"{' (running compiled code)' if worker.phase else ''}",
            "message": worker.crash_log()[-600:]}


def run_all(cases: Iterator[dict[str, Any]], fixtures: Path, root: Path, *, workers: int,
            timeout: float, deadline: float | None, verbose: bool = False,
            progress: int = 0) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Run every case (until `deadline`); (case, result) pairs in completion order.
    `progress`: print a line to stderr every that many cases (0: never)."""
    preload()
    began = time.monotonic()
    results: list[tuple[dict[str, Any], dict[str, Any]]] = []
    pool = [Worker(i, fixtures, root) for i in range(max(1, workers))]
    exhausted = False

    def finish(w: Worker, result: dict[str, Any], replace: bool) -> None:
        assert w.case is not None
        result["seconds"] = round(time.monotonic() - w.started, 3)
        results.append((w.case, result))
        if verbose and result["outcome"] != "ok" and result["outcome"] != "clean":
            print(f"  #{w.case['id']} {w.case['family']}/{w.case['kind']}: "
                  f"{result['reason']}", file=sys.stderr, flush=True)
        if progress and len(results) % progress == 0:
            spent = time.monotonic() - began
            defects = sum(r["outcome"] == "defect" for _, r in results)
            print(f"[fuzz] {len(results)} inputs, {spent:.0f} s ({len(results) / spent:.1f}/s), "
                  f"{defects} defects", file=sys.stderr, flush=True)
        w.case = None
        w.handled += 1
        if replace or w.handled >= RECYCLE:
            w.stop(signal.SIGKILL)
            shutil.rmtree(w.folder, ignore_errors=True)
            pool[pool.index(w)] = Worker(pool.index(w), fixtures, root)

    try:
        while True:
            for w in pool:
                if w.case is None and not exhausted:
                    if deadline is not None and time.monotonic() > deadline:
                        exhausted = True
                        break
                    case = next(cases, None)
                    if case is None:
                        exhausted = True
                        break
                    w.start(case)
            busy = [w for w in pool if w.case is not None]
            if not busy:
                break
            wait = min(w.started + timeout for w in busy) - time.monotonic()
            ready, _, _ = select.select([w.rfd for w in busy], [], [], max(wait, 0.0))
            for w in busy:
                if w.rfd not in ready:
                    continue
                found = w.messages()
                if found is None:
                    finish(w, _death(w, w.stop(None)), replace=True)
                    continue
                for msg in found:
                    if msg.pop("type") == "phase":
                        w.phase = msg["phase"]
                    else:
                        finish(w, msg, replace=bool(msg.get("harness")))
                        break
            now = time.monotonic()
            for w in pool:
                if w.case is not None and now - w.started > timeout:
                    result = _hang(w, timeout)
                    w.stop()
                    finish(w, result, replace=True)
    finally:
        for w in pool:
            w.stop()
    return results
