"""Run JIT parallel loops on the process's OpenMP threads when PyTorch has loaded OpenMP.

Why: PyTorch's intra-op pool is OpenMP (GNU libgomp in the Linux wheels). After each
parallel region its threads spin for a while (libgomp: GOMP_SPINCOUNT, milliseconds) before
they sleep. A training loop alternates PyTorch work (the data, the loss's `.item()`, eager
ops) with compiled code, so accel's own pool and PyTorch's spinning threads fought for the
same cores: on 2 cores an accel MLP step interleaved with eager steps took 5.4 ms at 2
threads against 2.3 ms alone (and 3.2 ms at 1 thread); on a 16-core Xeon it took 10.2 ms at
16 threads against 4.9 ms at 1. Inductor's C++ kernels do not have that problem: they use
`#pragma omp parallel`, the same threads as eager. So does accel now: `accel_parallel_for`
calls `GOMP_parallel` of the OpenMP runtime already in the process, whose threads are the
ones spinning, and accel starts no threads of its own.

`bind()` looks for a loaded OpenMP runtime that exports the GNU entry points (libgomp;
LLVM's libomp and Intel's libiomp5 export them too) and stores three addresses in the
process-wide table `accel_omp` the JIT runtime reads on every parallel call:
`GOMP_parallel`, `omp_get_thread_num`, `omp_get_num_threads`. While the table is empty (no
OpenMP loaded yet: accel used without PyTorch), calls use accel's pool (`parallel_ir`).
`ACCEL_THREAD_POOL=accel` keeps accel's pool even with OpenMP loaded, `=0` fork-join.

A forked child (`os.fork`, multiprocessing's fork) empties the table: GNU OpenMP's threads do
not survive a fork and a region in the child could hang; the child uses accel's pool,
which restarts its workers after a fork. AOT libraries always use their own pool.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading

#: The JIT symbol of the table: [GOMP_parallel, omp_get_thread_num, omp_get_num_threads].
TABLE = "accel_omp"
_ENTRY_POINTS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")
_LIBRARY = re.compile(r"/lib(gomp|iomp5|omp)[-.][^/]*$")

_table = (ctypes.c_void_p * 3)()
_lock = threading.Lock()
_state = {"found": False, "library": "", "forked": False}
_warned: set[str] = set()  # ACCEL_THREAD_POOL values already warned about


def table_address() -> int:
    """Address of the table the JIT binds `accel_omp` to."""
    return ctypes.addressof(_table)


def mode() -> str:
    """`ACCEL_THREAD_POOL`: "openmp" (the default: OpenMP when loaded), "accel" or "0"; any
    other value warns once and counts as the default."""
    value = os.environ.get("ACCEL_THREAD_POOL", "").strip().lower()
    if value in ("accel", "0"):
        return value
    if value not in ("", "openmp") and value not in _warned:
        import warnings

        _warned.add(value)
        warnings.warn(f"ACCEL_THREAD_POOL={value!r} is not one of openmp, accel, 0; using "
                      "openmp", stacklevel=2)
    return "openmp"


def _loaded_libraries() -> list[str]:
    """Paths of the OpenMP runtimes mapped into this process (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split(None, 5)[5].strip() for line in maps
                     if line.count(" ") >= 5 and _LIBRARY.search(line.rstrip())}
    except (OSError, IndexError):
        return []
    return sorted(paths)


def bind() -> str:
    """Fill the table from a loaded OpenMP runtime if there is one (cheap once found);
    returns the library's path, or "" when parallel loops use accel's own pool."""
    if _state["found"] or _state["forked"] or mode() != "openmp":
        return _state["library"]
    with _lock:
        if _state["found"]:
            return _state["library"]
        for path in _loaded_libraries():
            try:
                lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
                addresses = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                             for name in _ENTRY_POINTS]
            except (OSError, AttributeError):
                continue
            if all(addresses):
                # GOMP_parallel's slot last: a parallel call that finds it set (the
                # runtime reads it first) finds the two queries set too.
                _table[1], _table[2] = addresses[1], addresses[2]
                _table[0] = addresses[0]
                _state.update(found=True, library=path)
                return path
    return ""


def unbind() -> None:
    """Back to accel's own pool (a forked child; tests)."""
    _table[0] = None
    _state.update(found=False, library="")


def library() -> str:
    """The OpenMP runtime parallel loops use now, "" for accel's pool."""
    return _state["library"] if _table[0] else ""


def _after_fork_in_child() -> None:
    unbind()
    _state["forked"] = True


os.register_at_fork(after_in_child=_after_fork_in_child)
