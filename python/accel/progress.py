"""Progress and logs of long compiles.

On a terminal, once a compile has run `delay` seconds, one line is redrawn in place:
`[accel-compile] 3/8 bufferize [#####.....] 4.2s`, erased at the end. Off a terminal, or
quiet, nothing. Verbose: one line per finished phase with its time.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

#: Seconds a compile runs before the progress line appears on a terminal.
PROGRESS_DELAY = 2.0


# -- progress -------------------------------------------------------------------------------
class Progress:
    """Shows what the compile is doing on `stream`.

    `steps` are the phase names expected, in order (`accel.targets.base.Target.phases`), so
    the live line can say `3/8` and draw a bar; an unexpected phase still shows, unnumbered.
    Verbose: one line per finished phase with its time. Live (a terminal, not quiet): once
    the compile has run `delay` seconds, one line redrawn in place until it ends, then
    erased. Otherwise silent.
    """

    def __init__(self, stream: TextIO, *, verbose: bool = False, live: bool | None = None,
                 quiet: bool = False, delay: float = PROGRESS_DELAY, interval: float = 0.1,
                 prog: str = "accel-compile", steps: list[str] | None = None):
        self.stream = stream
        self.verbose = verbose and not quiet
        if live is None:
            isatty = getattr(stream, "isatty", None)
            live = bool(isatty and isatty())
        self.live = live and not quiet
        self.delay = delay
        self.interval = interval
        self.prog = prog
        self.steps = list(steps or [])
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
            self._thread = threading.Thread(target=self._run, name="accel-progress",
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
        """One `[prog] text` line (the live line is redrawn after it)."""
        with self._lock:
            self._erase()
            print(f"[{self.prog}] {text}", file=self.stream, flush=True)

    def line(self, elapsed: float) -> str:
        """The live line: `[prog] i/n phase [####......] 3.2s` (no step count for a phase
        the plan did not list)."""
        if self.current in self.steps:
            done = self.steps.index(self.current)
            total = len(self.steps)
            bar = "#" * (10 * done // total) + "." * (10 - 10 * done // total)
            return (f"[{self.prog}] {done + 1}/{total} {self.current} [{bar}] "
                    f"{elapsed:.1f}s")
        return f"[{self.prog}] {self.current} ... {elapsed:.1f}s"

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
                self.stream.write(f"\r{self.line(elapsed)}\x1b[K")
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


