"""Result buffers compiled code allocated: numpy arrays that own them and free them."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from accel.runtime.symbols import _free

#: The allocated pointer `memref.get_global` puts in descriptors of constant globals.
DEAD_BEEF = 0xDEADBEEF


class HeapAllocation:
    """A `malloc`ed block from compiled code; freed with libc `free` when unreferenced."""

    __slots__ = ("address",)

    def __init__(self, address: int):
        self.address = address

    def __del__(self) -> None:
        # At interpreter exit module globals may already be gone: the process frees all.
        if _free is not None:
            _free(self.address)


class _HeapView:
    """numpy's base object for a result array: exposes the memory, keeps the owner alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner: HeapAllocation, data: int, shape: tuple[int, ...],
                 strides: tuple[int, ...], typestr: str):
        self.owner = owner
        self.__array_interface__ = {"version": 3, "data": (data, False), "shape": shape,
                                    "strides": strides, "typestr": typestr}




#: glibc's mallopt parameters and the largest mmap threshold it accepts (64-bit).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX = 32 << 20
_TRIM_THRESHOLD = 1 << 30
_tuned = False


def reuse_large_blocks() -> bool:
    """Have glibc's malloc keep freed blocks of up to 32 MiB for reuse (once per process).

    Results of compiled code are fresh `malloc` blocks. glibc serves large ones (above a
    threshold that starts at 128 KiB) with a new `mmap` each time and unmaps them on `free`,
    so a loop that allocates the same large results call after call (a train step: new
    parameters, optimizer state, activations) page-faults its way through every byte again:
    measured on the MLP of benchmarks/training.py (Adam, 670K parameters), 1900 page faults
    and 7.1 ms per optimizer call, against 0 and 1.4 ms with blocks reused. Raising the mmap
    threshold (and the trim threshold, so that freed heap memory is kept) makes such blocks
    come from, and return to, malloc's heap. Process-wide (PyTorch's CPU tensors use the same
    malloc); the cost is that memory freed below the thresholds stays with the process for
    reuse instead of going back to the OS. False where the C library is not glibc.
    """
    global _tuned
    if _tuned:
        return True
    import ctypes
    import platform

    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _tuned = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
    return _tuned


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused inside the block (if it was enabled): a
    call that wraps many short-lived results lets them die by reference counting before a
    collection sees them, instead of promoting them to older generations (which triggers
    full collections of the whole heap). Collections due meanwhile run after the block."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
