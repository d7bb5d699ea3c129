"""One compile per cache key at a time, across processes: the others wait and then hit.

Under `torchrun` every rank calls `compile_train_step` (or `accel.compile`) on the same
model at the same moment. Without coordination each process misses the cache and compiles
the same code: N times the CPU and memory on one machine, for one result. `compiling(key)`
is held from a cache miss until the entry is stored: a second process missing the same key
waits on the lock, looks the key up again when it is released, and links the stored code
(a train step: ~0.3-1 s instead of the whole compile).

The lock is `flock` on `<cache folder>/<key>.lock` (released by the kernel if the holder
dies, so a crashed compile never blocks the others). The holder removes the file before
releasing it: a waiter then holds a lock on a removed file, which is fine, as it only looks
the stored entry up; a process arriving later finds the entry before it would lock. Nested
holds are ordered (a train step's key, then its phases' code keys) and keys of one kind
never nest, so processes cannot deadlock; a thread taking a key it already holds passes
through.
After `ACCEL_COMPILE_LOCK_WAIT` seconds (default 1800) a waiter compiles on its own (a
warning says which lock), so a hung holder delays the others but does not stop them.
Without `fcntl` (Windows) or with the cache off there is no lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from accel import cache

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("accel.cache")

#: Seconds between tries while another process holds the lock.
_POLL_S = 0.05
_HELD = threading.local()


def wait_limit() -> float:
    """Seconds a process waits for another's compile before compiling itself."""
    raw = os.environ.get("ACCEL_COMPILE_LOCK_WAIT", "")
    try:
        return float(raw) if raw.strip() else 1800.0
    except ValueError:
        log.warning("accel cache: ACCEL_COMPILE_LOCK_WAIT=%r is not a number of seconds; "
                    "using 1800", raw)
        return 1800.0


@contextlib.contextmanager
def compiling(key: str | None) -> Iterator[bool]:
    """Hold the compile lock of `key` (None: no lock). Yields whether another process held
    it first (then look the key up again: it has probably just been stored)."""
    held: set[str] = getattr(_HELD, "keys", None) or set()
    _HELD.keys = held
    if key is None or fcntl is None or key in held or not cache.usable():
        yield False
        return
    fd = _open(key)
    if fd is None:
        yield False
        return
    try:
        waited, locked = _acquire(fd, key)
        held.add(key)
        try:
            yield waited
        finally:
            held.discard(key)
            if locked:  # not a file another process still holds
                with contextlib.suppress(OSError):
                    os.unlink(_path(key))
    finally:
        os.close(fd)  # releases the flock


def _path(key: str) -> Path:
    return cache.cache_dir() / f"{key}.lock"


def _open(key: str) -> int | None:
    try:
        cache.cache_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(_path(key), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as err:  # a read-only cache: compile without the lock
        log.debug("accel cache: no compile lock for %s: %s", key, err)
        return None


def _acquire(fd: int, key: str) -> tuple[bool, bool]:
    """Take the lock on `fd`: (whether another process had it, whether this one has it
    now). Past the wait limit: (True, False), with a warning."""
    if _try_lock(fd):
        return False, True
    log.info("accel cache: another process is compiling the same program (key %s); "
             "waiting for it", key[:16])
    deadline = time.monotonic() + wait_limit()
    while time.monotonic() < deadline:
        time.sleep(_POLL_S)
        if _try_lock(fd):
            return True, True
    log.warning("accel cache: waited %.0f s for another process compiling key %s "
                "(ACCEL_COMPILE_LOCK_WAIT); compiling here too", wait_limit(), key[:16])
    return True, False


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:  # held by another open file (process or thread)
        return False
