"""Result buffers compiled code allocated: numpy arrays that own them and free them."""

from __future__ import annotations

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


