"""Calling compiled code from Python: dtypes, memref descriptors, argument packing, ownership.

Calling convention. Every public function is reached through a generated `void
_accel_call_<n>(ptr %slots)` trampoline (see `accel.host.jit`), which loads the arguments
from `slots` and calls MLIR's C interface `_mlir_ciface_<name>`:

    slot i (memref arg)   address of a ranked memref descriptor
                          {ptr allocated, ptr aligned, i64 offset, i64 sizes[r], i64 strides[r]}
    slot i (scalar arg)   address of the scalar (so f16/bf16/i1 need no C ABI support in ctypes)
    slot n (results)      address of the result storage: the descriptor for one memref
                          result, a struct {r0, r1, ...} for several, or the scalar for one

Dtype mapping (MLIR element type -> numpy): f16 float16, f32 float32, f64 float64,
i1 bool, i8/i16/i32/i64 int8..int64 (signless), ui8..ui64 uint8..uint64, si8..si64
int8..int64, index int64, complex<f32> complex64, complex<f64> complex128 (LLVM's
{re, im} struct is numpy's complex layout; complex scalars are Python/numpy complex numbers
or reals). **bf16**: numpy has no bfloat16, so bf16 arguments accept float32
arrays (rounded to nearest-even bf16; NaNs stay NaN) or uint16 arrays holding the raw bit
patterns (also any dtype named "bfloat16", e.g. ml_dtypes'); bf16 results come back as
float32 (exact, every bf16 is a float32).

Ownership. Memref results are heap buffers that the compiled code allocated with `malloc`
(ownership-based buffer deallocation guarantees the caller owns every returned buffer). The
returned numpy array wraps that memory without a copy and owns it: its base object calls
libc `free` (the allocator the JIT-ed code links against) when the last view dies. Results
sharing one allocation share one owner; a result that aliases an input buffer or a global
constant is copied instead and never freed.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from accel.runtime.dtypes import (
    DType,
    bf16_bits_to_float32,
    float32_to_bf16_bits,
    python_float_to_bf16_bits,
)
from accel.runtime.heap import DEAD_BEEF, HeapAllocation, _HeapView
from accel.runtime.signature import (
    Signature,
    ValueSpec,
    descriptor_type,
    result_storage_type,
)
from accel.runtime.symbols import begin_call, take_failure

if TYPE_CHECKING:
    from accel.runtime.fast_path import FastPlan



# -- argument packing -----------------------------------------------------------------------
Packer = Callable[[Any, list], int]


def make_packer(spec: ValueSpec, where: str) -> Packer:
    """A function turning a Python value into the address for its slot (`keep` holds temps)."""
    if spec.kind == "memref":
        return _memref_packer(spec, where)
    if spec.kind == "pointer":
        return _pointer_packer(spec, where)
    return _scalar_packer(spec, where)


def _as_memref_array(value: Any, spec: ValueSpec, where: str) -> np.ndarray:
    """Check dtype, rank and static dims; return a C-contiguous array in storage dtype."""
    dt = spec.dtype
    assert dt is not None
    arr = value if isinstance(value, np.ndarray) else _asarray(value, spec, where)
    if dt.is_bf16:
        if arr.dtype == np.float32:
            arr = float32_to_bf16_bits(arr)
        elif arr.dtype == np.uint16 or (arr.dtype.name == "bfloat16" and arr.dtype.itemsize == 2):
            arr = _dense(arr).view(np.uint16)
        else:
            raise ArgumentDtypeError(f"{where}: expected {spec.describe()}, got dtype "
                                     f"{arr.dtype}")
    elif arr.dtype != dt.numpy:
        if not _signless_alias(dt, arr.dtype):
            raise ArgumentDtypeError(f"{where}: expected {spec.describe()}, got dtype "
                                     f"{arr.dtype}")
        arr = _dense(arr).view(dt.numpy)  # the same bits under the signature's reading
    if arr.ndim != spec.rank:
        raise ValueError(f"{where}: expected {spec.describe()}, got rank {arr.ndim} "
                         f"(shape {arr.shape})")
    for axis, (want, got) in enumerate(zip(spec.shape, arr.shape, strict=True)):
        if want is not None and want != got:
            raise ValueError(f"{where}: expected {spec.describe()}, got shape {arr.shape} "
                             f"(dimension {axis} is {got}, expected {want})")
    return _dense(arr)


def _signless_alias(dt: DType, got: np.dtype) -> bool:
    """Whether an array of dtype `got` passes as `dt` unchanged: MLIR's signless integers
    (i8..i64) take signed and unsigned arrays of their width alike, as MLIR's runners do
    (torch-mlir lowers uint8 tensors to i8). Explicitly signed (si) and unsigned (ui, or
    i marked `accel.unsigned`) types keep their one dtype."""
    return (dt.is_int and dt.mlir.startswith("i") and dt.mlir != "index"
            and got.kind == "u" and got.itemsize == dt.numpy.itemsize)


def _asarray(value: Any, spec: ValueSpec, where: str) -> np.ndarray:
    """`value` as an array; a value numpy cannot view (a tensor that requires grad, ...) is
    a TypeError naming the argument, not the library's RuntimeError."""
    try:
        return np.asarray(value)
    except (RuntimeError, TypeError, ValueError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise TypeError(f"{where}: expected {spec.describe()}, got a {type(value).__name__} "
                        f"that is not an array ({reason})") from None


def _dense(arr: np.ndarray) -> np.ndarray:
    """`arr` itself if row-major and aligned, else a copy that is (0-d arrays stay 0-d)."""
    if arr.flags.c_contiguous and arr.flags.aligned:
        return arr
    return np.array(arr, order="C")  # identity layouts need dense row-major data


def _memref_packer(spec: ValueSpec, where: str) -> Packer:
    desc_type = descriptor_type(spec.rank)
    rank = spec.rank
    itemsize = spec.dtype.numpy.itemsize  # type: ignore[union-attr]
    static_offset = spec.offset or 0

    def pack(value: Any, keep: list) -> int:
        arr = _as_memref_array(value, spec, where)
        data = arr.ctypes.data
        strides = tuple(s // itemsize for s in arr.strides)
        if not spec.identity:
            _check_layout(spec, arr.shape, strides, where)
        aligned = data - static_offset * itemsize
        desc = desc_type(data, aligned, static_offset, arr.shape, strides) if rank else \
            desc_type(data, aligned, static_offset)
        keep.append((arr, desc, data, arr.nbytes))
        return ctypes.addressof(desc)

    return pack


def _check_layout(spec: ValueSpec, shape: tuple[int, ...], strides: tuple[int, ...],
                  where: str) -> None:
    """Static strides of a strided layout must match the (row-major) array we pass."""
    for axis, (want, got, size) in enumerate(zip(spec.strides, strides, shape, strict=True)):
        if want is not None and want != got and size > 1:
            raise ValueError(f"{where}: layout of {spec.type_str} needs stride {want} in "
                             f"dimension {axis}, a row-major array of shape {shape} has {got}")


def _pointer_packer(spec: ValueSpec, where: str) -> Packer:
    def pack(value: Any, keep: list) -> int:
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{where}: expected {spec.describe()}, got {type(value).__name__}")
        arr = _dense(value)
        keep.append((arr, None, arr.ctypes.data, arr.nbytes))
        return arr.ctypes.data

    return pack


def _scalar_packer(spec: ValueSpec, where: str) -> Packer:
    dt = spec.dtype
    assert dt is not None
    convert = _scalar_converter(dt, spec, where)

    def pack(value: Any, keep: list) -> int:
        cell = dt.ctype(*convert(value)) if dt.is_complex else dt.ctype(convert(value))
        keep.append(cell)
        return ctypes.addressof(cell)

    return pack


def _scalar_converter(dt: DType, spec: ValueSpec, where: str) -> Callable[[Any], Any]:
    """Value check and conversion to what `dt.ctype(...)` takes (bits for f16/bf16)."""

    def bad(value: Any) -> TypeError:
        return TypeError(f"{where}: expected {spec.describe()}, got {type(value).__name__} "
                         f"{value!r}")

    def unwrap(value: Any) -> Any:
        if isinstance(value, np.ndarray) and value.ndim == 0:
            return value[()]
        return value

    if dt.mlir == "i1":
        def to_bool(value: Any) -> bool:
            value = unwrap(value)
            if isinstance(value, bool | np.bool_):
                return bool(value)
            if isinstance(value, int | np.integer) and int(value) in (0, 1):
                return bool(value)
            raise bad(value)
        return to_bool

    if dt.is_int:
        info = np.iinfo(dt.numpy)
        lo, hi = info.min, info.max
        if dt.mlir.startswith("i"):  # signless (and index): either reading of the bits
            lo, hi = -(1 << (info.bits - 1)), (1 << info.bits) - 1

        def to_int(value: Any) -> int:
            value = unwrap(value)
            if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
                raise bad(value)
            v = int(value)
            if not lo <= v <= hi:
                raise ValueError(f"{where}: {v} does not fit {spec.type_str}")
            # Signless values above the signed range wrap to the same bits.
            return v - (1 << info.bits) if dt.numpy.kind == "i" and v > info.max else v
        return to_int

    def check_real(value: Any) -> Any:
        value = unwrap(value)
        if isinstance(value, bool | np.bool_) or not isinstance(
                value, int | float | np.integer | np.floating):
            raise bad(value)
        return value

    if dt.is_complex:
        def to_complex(value: Any) -> tuple[float, float]:
            value = unwrap(value)
            if not isinstance(value, complex | np.complexfloating):
                value = check_real(value)
            c = complex(value)
            return c.real, c.imag
        return to_complex
    if dt.mlir == "f16":
        return lambda value: int(np.float16(check_real(value)).view(np.uint16))
    if dt.is_bf16:
        def to_bf16(value: Any) -> int:
            value = check_real(value)
            if isinstance(value, np.float32):
                return int(float32_to_bf16_bits(np.asarray(value))[()])
            return python_float_to_bf16_bits(float(value))
        return to_bf16
    return lambda value: float(check_real(value))


# -- results --------------------------------------------------------------------------------
Unpacker = Callable[[Any, dict, Sequence[tuple[int, int]]], Any]


def make_unpacker(spec: ValueSpec) -> Unpacker:
    """Reads one result from the callee's storage: (value, owners-by-address, input ranges)."""
    if spec.kind == "memref":
        return _memref_unpacker(spec)
    return _scalar_unpacker(spec)


def _scalar_unpacker(spec: ValueSpec) -> Unpacker:
    """A scalar result as a 0-d array of its dtype (as a rank-0 memref result comes back):
    arrays out, whatever the result's rank, with the width and signedness kept."""
    dt = spec.dtype
    assert dt is not None
    if dt.mlir == "f16":
        return lambda raw, owners, inputs: np.array(raw, np.uint16).view(np.float16)
    if dt.is_bf16:
        return lambda raw, owners, inputs: bf16_bits_to_float32(np.array(raw, np.uint16))
    dtype = dt.numpy
    if dt.is_complex:
        return lambda raw, owners, inputs: np.array(complex(raw[0], raw[1]), dtype)
    return lambda raw, owners, inputs: np.array(raw, dtype)


def _memref_unpacker(spec: ValueSpec) -> Unpacker:
    dt = spec.dtype
    assert dt is not None
    itemsize = dt.numpy.itemsize
    typestr = dt.numpy.str
    rank = spec.rank

    def unpack(desc: Any, owners: dict, inputs: Sequence[tuple[int, int]]) -> np.ndarray:
        allocated = desc.allocated or 0
        shape = tuple(desc.sizes) if rank else ()
        strides = tuple(s * itemsize for s in desc.strides) if rank else ()
        data = (desc.aligned or 0) + desc.offset * itemsize
        foreign = allocated == DEAD_BEEF or any(lo <= allocated < hi for lo, hi in inputs)
        if foreign:
            # Aliases an input or a constant global: copy it, never free it.
            view = np.asarray(_HeapView(None, data, shape, strides, typestr))  # type: ignore[arg-type]
            arr = view.copy()
        else:
            owner = owners.get(allocated)
            if owner is None:
                owner = owners[allocated] = HeapAllocation(allocated)
            if 0 in shape:
                arr = np.empty(shape, dt.numpy)
            else:
                arr = np.asarray(_HeapView(owner, data, shape, strides, typestr))
        return bf16_bits_to_float32(arr) if dt.is_bf16 else arr

    return unpack


# -- one callable function ------------------------------------------------------------------
@dataclass
class CompiledFunction:
    """A JIT-compiled function callable with numpy arrays and Python scalars."""

    signature: Signature
    address: int  # of the `void (ptr)` trampoline
    _packers: list[Packer] = field(default_factory=list, repr=False)
    _unpackers: list[Unpacker] = field(default_factory=list, repr=False)
    _result_type: type | None = field(default=None, repr=False)
    _trampoline: Any = field(default=None, repr=False)
    _slots_type: type | None = field(default=None, repr=False)
    #: The prepared call (`FastPlan`) when the signature allows one.
    fast: FastPlan | None = field(default=None, repr=False)
    #: What keeps the code alive (the `CompiledMLIR`: engine and bound weights).
    owner: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        sig = self.signature
        if sig.unsupported:
            return
        self._packers = [make_packer(a, f"@{sig.name} argument %arg{i}")
                         for i, a in enumerate(sig.args)]
        self._unpackers = [make_unpacker(r) for r in sig.results]
        self._result_type = result_storage_type(sig)
        n_slots = len(sig.args) + (1 if sig.results else 0)
        self._slots_type = ctypes.c_void_p * max(n_slots, 1)
        self._trampoline = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self.address)
        from accel.runtime.fast_path import FastPlan

        if FastPlan.eligible(sig):
            self.fast = FastPlan(sig, self._trampoline, self._unpackers)

    def __call__(self, *args: Any) -> Any:
        fast = self.fast
        if fast is not None:
            pointers = fast.numpy_pointers(args)
            if pointers is not None:
                return fast.run(pointers, [a.shape for a in args])
        sig = self.signature
        if sig.unsupported:
            raise TypeError(f"@{sig.name} cannot be called from Python: {sig.unsupported}")
        if len(args) != len(self._packers):
            raise TypeError(f"@{sig.name} takes {len(self._packers)} argument"
                            f"{'' if len(self._packers) == 1 else 's'} "
                            f"({', '.join(a.type_str for a in sig.args)}), got {len(args)}")
        keep: list = []
        slots = self._slots_type()  # type: ignore[misc]
        for i, (pack, value) in enumerate(zip(self._packers, args, strict=True)):
            slots[i] = pack(value, keep)
        storage = self._result_type() if self._result_type is not None else None
        if storage is not None:
            slots[len(args)] = ctypes.addressof(storage)
        begin_call()
        self._trampoline(ctypes.addressof(slots))
        failure = take_failure(sig.name)
        if failure is not None:  # the results are poison on this path: never unpack them
            raise failure
        if storage is None:
            return None
        return self._results(storage, keep)

    def _results(self, storage: Any, keep: list) -> Any:
        inputs = [(t[2], t[2] + t[3]) for t in keep if isinstance(t, tuple)]
        owners: dict[int, HeapAllocation] = {}
        if len(self._unpackers) == 1:
            one = self.signature.results[0]
            # A complex scalar's storage is a ctypes array (no `.value`): the unpacker reads it.
            raw = storage.value if one.kind == "scalar" and not one.dtype.is_complex \
                else storage  # type: ignore[union-attr]
            return self._unpackers[0](raw, owners, inputs)
        return tuple(unpack(getattr(storage, f"r{i}"), owners, inputs)
                     for i, unpack in enumerate(self._unpackers))


class ArgumentDtypeError(TypeError, ValueError):
    """An argument of the wrong dtype: a TypeError, and a ValueError like wrong shapes."""


