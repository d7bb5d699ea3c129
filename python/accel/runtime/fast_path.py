"""The fast call path: one signature's call prepared once (`FastPlan`).

Slots, descriptors and result storage live in reusable frames; a call only writes data
pointers (and dynamic sizes) into them. `accel.runtime.call.CompiledFunction` builds a plan
when its signature allows one; `accel.compiled_module.CompiledModule` uses it for plain
dense tensors and arrays.
"""

from __future__ import annotations

import bisect
import ctypes
import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from accel.runtime.heap import DEAD_BEEF, HeapAllocation
from accel.runtime.signature import Signature, ValueSpec, descriptor_type
from accel.runtime.symbols import begin_call, take_failure

#: Turns one result's storage into a numpy array or scalar (`accel.runtime.call`).
Unpacker = Callable[[Any, dict, list], Any]


@lru_cache(maxsize=512)
def _bytes_type(nbytes: int) -> type:
    return ctypes.c_char * nbytes


def _inside(ranges: list[tuple[int, int]]) -> Any:
    """`inside(address)`: whether `address` lies in one of the byte ranges [lo, hi).

    Sorted starts and the running maximum of the ends make each query a binary search, so
    checking every result of a function with many arguments and results (a train step's
    optimizer graph: ~100 of each) costs O((n + m) log n), not O(n * m)."""
    if len(ranges) <= 8:
        return lambda address: any(lo <= address < hi for lo, hi in ranges)
    ordered = sorted(ranges)
    starts = [lo for lo, _ in ordered]
    reach, top = [], 0
    for _, hi in ordered:
        top = max(top, hi)
        reach.append(top)

    def inside(address: int) -> bool:
        i = bisect.bisect_right(starts, address) - 1
        return i >= 0 and reach[i] > address

    return inside


def _row_major(shape: Sequence[int]) -> list[int]:
    """Element strides of a dense row-major array of `shape`."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


class FastPlan:
    """The call of one signature with every argument and result an identity-layout memref
    (not bf16), prepared once: the slots, descriptors and result storage of a call live in
    reusable frames (a pool, so concurrent calls from threads never share one), and a call
    only writes the data pointers (and the sizes of dynamic dimensions) into them.

    `run(pointers, shapes, arrays)` calls with already checked arguments: each one's data
    address and shape (dense row-major data of the argument's dtype); `arrays` are kept
    alive by the caller. `numpy_pointers(args)` checks numpy arguments the cheap way and
    returns None whenever the general path (`CompiledFunction.__call__`) must decide.
    """

    def __init__(self, sig: Signature, trampoline: Any, unpackers: list[Unpacker]):
        self.sig = sig
        self.trampoline = trampoline
        self.n_args = len(sig.args)
        self.args = [(a.dtype.numpy, a.rank,  # type: ignore[union-attr]
                      tuple(a.shape) if None not in a.shape else None, a.shape)
                     for a in sig.args]
        self.itemsizes = [a.dtype.numpy.itemsize for a in sig.args]  # type: ignore[union-attr]
        self.static_nbytes = [None if st is None else math.prod(st) * size
                              for (_, _, st, _), size in zip(self.args, self.itemsizes,
                                                             strict=True)]
        self.results = []
        offset = 0
        for r in sig.results:
            dt = r.dtype.numpy  # type: ignore[union-attr]
            static = tuple(r.shape) if None not in r.shape else None
            nbytes = math.prod(static) * dt.itemsize if static is not None else None
            self.results.append((offset, r.rank, dt, static, nbytes,
                                 _bytes_type(nbytes) if nbytes else None))
            offset += 3 + 2 * r.rank
        self.storage_words = max(offset, 1)
        self.unpackers = unpackers
        self.single = len(sig.results) == 1
        self.all_static = all(static is not None for _, _, static, _ in self.args)
        self._frames: list[tuple[Any, ...]] = []

    @staticmethod
    def eligible(sig: Signature) -> bool:
        def plain(spec: ValueSpec) -> bool:
            return (spec.kind == "memref" and spec.identity and spec.dtype is not None
                    and not spec.dtype.is_bf16)

        return (not sig.unsupported and bool(sig.results) and sig.results_by_pointer
                and all(plain(a) for a in sig.args) and all(plain(r) for r in sig.results))

    def _frame(self) -> tuple[Any, ...]:
        descs = []
        for _, rank, static, _ in self.args:
            desc = (ctypes.c_int64 * (3 + 2 * rank))()
            if static is not None:
                desc[3:3 + rank] = static
                desc[3 + rank:3 + 2 * rank] = _row_major(static)
            descs.append(desc)
        storage = (ctypes.c_int64 * self.storage_words)()
        slots = (ctypes.c_void_p * (self.n_args + 1))(
            *[ctypes.addressof(d) for d in descs], ctypes.addressof(storage))
        # The trampoline's argument as a ctypes object: no conversion per call.
        return descs, storage, ctypes.c_void_p(ctypes.addressof(slots)), slots

    def numpy_pointers(self, args: tuple[Any, ...]) -> list[int] | None:
        """Data addresses of `args` if all are dense arrays the signature takes as they are."""
        if len(args) != self.n_args:
            return None
        pointers = []
        for a, (dtype, rank, static, shape) in zip(args, self.args, strict=True):
            if type(a) is not np.ndarray or a.dtype != dtype:
                return None
            flags = a.flags
            if not (flags.c_contiguous and flags.aligned):
                return None
            if static is not None:
                if a.shape != static:
                    return None
            elif a.ndim != rank or any(w is not None and w != g
                                       for w, g in zip(shape, a.shape, strict=True)):
                return None
            try:
                pointers.append(ctypes.addressof(ctypes.c_char.from_buffer(a)))
            except (TypeError, ValueError):  # read-only or empty
                pointers.append(a.ctypes.data)
        return pointers

    def run(self, pointers: list[int], shapes: Sequence[Sequence[int]] | None) -> Any:
        """Call with checked arguments; one array, or a tuple for several results.
        `shapes` (the arguments' shapes) may be None when no argument has a dynamic size."""
        frames = self._frames
        frame = frames.pop() if frames else self._frame()
        try:
            descs, storage, slots, _ = frame
            if self.all_static:
                for desc, ptr in zip(descs, pointers):  # noqa: B905 - same length
                    desc[0] = desc[1] = ptr
            else:
                self._write_dynamic(descs, pointers, shapes)
            begin_call()
            self.trampoline(slots)
            failure = take_failure(self.sig.name)
            if failure is not None:
                raise failure
            if self.single:
                o, rank, dtype, static, nbytes, btype = self.results[0]
                allocated = storage[0]
                if btype is not None and allocated != DEAD_BEEF and \
                        not self._aliases(allocated, pointers, shapes):
                    buffer = btype.from_address(storage[1] + storage[2] * dtype.itemsize)
                    buffer.owner = HeapAllocation(allocated)  # freed with the array
                    return np.ndarray(static, dtype, buffer)
            return self._results(storage, pointers, shapes)
        finally:
            frames.append(frame)

    def _write_dynamic(self, descs: list[Any], pointers: list[int],
                       shapes: Sequence[Sequence[int]] | None) -> None:
        assert shapes is not None
        for i, ptr in enumerate(pointers):
            desc = descs[i]
            desc[0] = desc[1] = ptr
            rank, static = self.args[i][1], self.args[i][2]
            if static is None:
                shape = shapes[i]
                desc[3:3 + rank] = shape
                desc[3 + rank:3 + 2 * rank] = _row_major(shape)

    def _ranges(self, pointers: list[int], shapes: Sequence[Sequence[int]] | None
                ) -> list[tuple[int, int]]:
        """The arguments' byte ranges [start, end)."""
        ranges = []
        for i, ptr in enumerate(pointers):
            nbytes = self.static_nbytes[i]
            if nbytes is None:
                assert shapes is not None
                nbytes = math.prod(shapes[i]) * self.itemsizes[i]
            ranges.append((ptr, ptr + nbytes))
        return ranges

    def _aliases(self, address: int, pointers: list[int],
                 shapes: Sequence[Sequence[int]] | None) -> bool:
        """Whether `address` lies in an argument's memory."""
        if self.all_static:
            for ptr, nbytes in zip(pointers, self.static_nbytes):  # noqa: B905
                if ptr <= address < ptr + nbytes:  # type: ignore[operator]
                    return True
            return False
        for lo, hi in self._ranges(pointers, shapes):
            if lo <= address < hi:
                return True
        return False

    def _results(self, storage: Any, pointers: list[int],
                 shapes: Sequence[Sequence[int]] | None) -> Any:
        ranges = self._ranges(pointers, shapes)
        inside = _inside(ranges)
        owners: dict[int, HeapAllocation] = {}
        out = []
        for j, (o, rank, dtype, static, nbytes, btype) in enumerate(self.results):
            allocated = storage[o]
            shape = static if static is not None else tuple(storage[o + 3:o + 3 + rank])
            if static is None:
                nbytes = math.prod(shape) * dtype.itemsize
                btype = _bytes_type(nbytes) if nbytes else None
            if btype is None or allocated == DEAD_BEEF or inside(allocated):
                # Empty, or aliasing an input or a constant: the general unpacker copies.
                desc = descriptor_type(rank).from_buffer(storage, o * 8)
                out.append(self.unpackers[j](desc, owners, ranges))
                continue
            owner = owners.get(allocated)
            if owner is None:
                owner = owners[allocated] = HeapAllocation(allocated)
            buffer = btype.from_address(storage[o + 1] + storage[o + 2] * dtype.itemsize)
            buffer.owner = owner  # the array's base: frees the allocation when unreferenced
            out.append(np.ndarray(shape, dtype, buffer))
        return out[0] if self.single else tuple(out)


