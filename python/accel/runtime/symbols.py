"""Process symbols compiled code may call: libc, accel's fallbacks, runtime assertions.

`process_symbol` finds a C symbol in this process; `fallback_symbol` supplies accel's own
`memrefCopy` and the assertion hook `__accel_assert_fail`, whose message the call path
(`accel.runtime.call`) turns into `RuntimeAssertionError`.
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



# -- runtime assertions ---------------------------------------------------------------------
#: Called by compiled code for a failed `cf.assert` (see `accel-assert-to-error-return`).
ASSERT_FAIL_SYMBOL = "__accel_assert_fail"


class RuntimeAssertionError(RuntimeError):
    """A `cf.assert` in compiled code failed (e.g. torch-mlir's checks on input values)."""


#: The message of the failed assert of the current call, per thread (calls may run
#: concurrently: ctypes releases the GIL around them).
_ASSERTS = threading.local()


@ctypes.CFUNCTYPE(None, ctypes.c_char_p)
def _ASSERT_FAIL(message: bytes | None) -> None:  # noqa: N802 - a C symbol's stand-in
    if getattr(_ASSERTS, "failed", None) is None:  # the first failure is the one to report
        _ASSERTS.failed = (message or b"").decode(errors="replace")
