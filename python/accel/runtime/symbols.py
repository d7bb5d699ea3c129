"""Process symbols compiled code may call: libc, accel's fallbacks, runtime failures.

`process_symbol` finds a C symbol in this process; `fallback_symbol` supplies accel's own
`memrefCopy` and the failure hooks of compiled code: `__accel_assert_fail(message)` (a
failed `cf.assert`, an integer division by zero) and `__accel_alloc_fail(bytes)` (malloc
returned NULL). The call path (`accel.runtime.call`) turns the recorded failure into an
exception with `take_failure`: `RuntimeAssertionError`, `DivisionByZeroError` or
`MemoryError`.

Failures on worker threads. Generated code may run on the threads of `accel_parallel_for`
(`accel.host.parallel`), which are not the caller's thread. Each worker stores the
address of a failure cell `{i64 kind, i64 payload}` on the caller's stack under the pthread
key `failure_key()`; a hook called on such a thread fills the cell (first failure wins)
instead of the thread's own record, and `accel_parallel_for` re-reports the cell's failure
on the calling thread after joining its workers.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from accel.runtime.signature import descriptor_type

_LIBC = ctypes.CDLL(None)
_free = _LIBC.free
_free.argtypes = [ctypes.c_void_p]
_free.restype = None


def process_symbol(name: str) -> int:
    """Address of a C symbol visible in this process (dlsym(RTLD_DEFAULT)), 0 if none."""
    try:
        return ctypes.cast(getattr(_LIBC, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def fallback_symbol(name: str) -> int:
    """accel's own implementation of a runtime-library symbol compiled code may call, or 0."""
    if name == "memrefCopy":
        return ctypes.cast(_MEMREF_COPY, ctypes.c_void_p).value or 0
    if name == ASSERT_FAIL_SYMBOL:
        return ctypes.cast(_ASSERT_FAIL, ctypes.c_void_p).value or 0
    if name == ALLOC_FAIL_SYMBOL:
        return ctypes.cast(_ALLOC_FAIL, ctypes.c_void_p).value or 0
    if name == "accel_failure_key":  # the AOT runtime's accessor, when JIT-ed in tests
        return ctypes.cast(_FAILURE_KEY, ctypes.c_void_p).value or 0
    return 0


class _UnrankedMemRef(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int64), ("descriptor", ctypes.c_void_p)]


class _Interface:
    """A numpy array interface over foreign memory (owned elsewhere)."""

    def __init__(self, data: int, shape: tuple[int, ...], strides: tuple[int, ...],
                 typestr: str):
        self.__array_interface__ = {"version": 3, "data": (data, False), "shape": shape,
                                    "strides": strides, "typestr": typestr}


def _strided_bytes(unranked: _UnrankedMemRef, elem_size: int) -> np.ndarray:
    """A numpy view (bytes as void items) of the memory an unranked descriptor describes."""
    rank = unranked.rank
    desc = descriptor_type(rank).from_address(unranked.descriptor)
    shape = tuple(desc.sizes) if rank else ()
    strides = tuple(s * elem_size for s in desc.strides) if rank else ()
    data = (desc.aligned or 0) + desc.offset * elem_size
    return np.asarray(_Interface(data, shape, strides, f"|V{elem_size}"))


def _memref_copy(elem_size: int, src: Any, dst: Any) -> None:
    """MLIR C runner's `memrefCopy` for copies between non-contiguous layouts."""
    source = _strided_bytes(src.contents, elem_size)
    target = _strided_bytes(dst.contents, elem_size)
    np.copyto(target, source)


_MEMREF_COPY = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(_UnrankedMemRef),
                                ctypes.POINTER(_UnrankedMemRef))(_memref_copy)


def libc_free_address() -> int:
    """Address of the `free` the finalizers call (tests compare it with the JIT's)."""
    return ctypes.cast(_free, ctypes.c_void_p).value or 0



# -- runtime failures -----------------------------------------------------------------------
#: Called by compiled code for a failed `cf.assert` (see `accel-assert-to-error-return`).
ASSERT_FAIL_SYMBOL = "__accel_assert_fail"
#: Called by compiled code when `malloc` returned NULL (see `accel-check-allocations`).
ALLOC_FAIL_SYMBOL = "__accel_alloc_fail"
#: The message `accel-guard-division` asserts with (the end of the recorded text).
DIVISION_BY_ZERO = "integer division by zero"
#: Kinds of a forwarded failure in a worker's failure cell (0: none).
FAIL_ASSERT, FAIL_ALLOC = 1, 2


class RuntimeAssertionError(RuntimeError):
    """A `cf.assert` in compiled code failed (e.g. torch-mlir's checks on input values)."""


class DivisionByZeroError(RuntimeAssertionError, ZeroDivisionError):
    """Compiled code divided an integer by zero (eager PyTorch raises `RuntimeError:
    ZeroDivisionError` there): both a `RuntimeAssertionError` and a `ZeroDivisionError`."""


#: The failure of the current call, per thread (calls may run concurrently: ctypes releases
#: the GIL around them): None, or (kind, text).
_ASSERTS = threading.local()

_getspecific = _LIBC.pthread_getspecific
_getspecific.argtypes = [ctypes.c_uint]
_getspecific.restype = ctypes.c_void_p
#: The pthread key under which a worker thread of `accel_parallel_for` keeps its failure
#: cell (created once per process; the JIT binds `accel_failure_key_value` to it).
_KEY = ctypes.c_uint(0)
if _LIBC.pthread_key_create(ctypes.byref(_KEY), None) != 0:  # pragma: no cover - EAGAIN
    raise ImportError("accel: pthread_key_create failed (too many thread keys)")


@ctypes.CFUNCTYPE(ctypes.c_uint)
def _FAILURE_KEY() -> int:  # noqa: N802 - a C symbol's stand-in
    return _KEY.value


def failure_key_address() -> int:
    """Address of the process-wide failure-cell key (an `unsigned int`)."""
    return ctypes.addressof(_KEY)


def _forward(kind: int, payload: int) -> bool:
    """On a worker thread: put the failure into the caller's cell (first wins); True if so.
    Hooks run with the GIL held, so two workers never fill one cell at once."""
    cell = _getspecific(_KEY.value)
    if not cell:
        return False
    words = (ctypes.c_int64 * 2).from_address(cell)
    if words[0] == 0:
        words[1] = payload
        words[0] = kind
    return True


def _record(kind: int, text: str) -> None:
    if getattr(_ASSERTS, "failed", None) is None:  # the first failure is the one to report
        _ASSERTS.failed = (kind, text)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _ASSERT_FAIL(message: int | None) -> None:  # noqa: N802 - a C symbol's stand-in
    if message and _forward(FAIL_ASSERT, message):
        return
    text = ctypes.string_at(message).decode(errors="replace") if message else ""
    _record(FAIL_ASSERT, text)


@ctypes.CFUNCTYPE(None, ctypes.c_int64)
def _ALLOC_FAIL(nbytes: int) -> None:  # noqa: N802 - a C symbol's stand-in
    if not _forward(FAIL_ALLOC, nbytes):
        _record(FAIL_ALLOC, str(nbytes))


def _size_text(nbytes: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes} bytes ({nbytes / scale:.1f} {unit})"
    return f"{nbytes} bytes"


def begin_call() -> None:
    """Clear this thread's failure record before calling compiled code."""
    _ASSERTS.failed = None


def take_failure(function: str) -> Exception | None:
    """The exception for the failure compiled code recorded in this thread's last call of
    `@function` (None if it succeeded); clears the record. Its results are poison then:
    callers must not read them."""
    failed = getattr(_ASSERTS, "failed", None)
    if failed is None:
        return None
    _ASSERTS.failed = None
    kind, text = failed
    if kind == FAIL_ALLOC:
        nbytes = int(text) & ((1 << 64) - 1)  # the size as compiled code computed it
        return MemoryError(f"@{function}: out of memory: could not allocate "
                           f"{_size_text(nbytes)}")
    if text.endswith(DIVISION_BY_ZERO):
        return DivisionByZeroError(f"@{function}: {text}")
    return RuntimeAssertionError(f"@{function}: runtime assertion failed: {text}")
