"""Signatures of compiled functions: value specs, memref descriptors, their JSON form.

A `Signature` says how one public function is called through its trampoline (see
`accel.runtime.call`); `descriptor_type(rank)` is the ctypes layout of MLIR's ranked memref
descriptor `{ptr allocated, ptr aligned, i64 offset, i64 sizes[r], i64 strides[r]}`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from accel.runtime.dtypes import DTYPES, DType


# -- signatures -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ValueSpec:
    """One argument or result: a ranked memref, a scalar, or (LLVM-dialect input) a pointer.

    `shape` entries are None for dynamic sizes. `strides`/`offset` are the layout's static
    values (None: dynamic) when the layout is not the identity; `identity` says whether it is.
    """

    kind: str  # "memref" | "scalar" | "pointer"
    dtype: DType | None
    type_str: str
    shape: tuple[int | None, ...] = ()
    identity: bool = True
    strides: tuple[int | None, ...] = ()
    offset: int | None = 0

    @property
    def rank(self) -> int:
        return len(self.shape)

    def describe(self) -> str:
        """`memref<4x?xf32> (a float32 array of shape (4, *))` style text for errors."""
        if self.kind == "pointer":
            return f"{self.type_str} (a numpy array, passed by data pointer)"
        assert self.dtype is not None
        if self.kind == "scalar":
            return f"{self.type_str} ({_scalar_words(self.dtype)})"
        user = _dtype_words(self.dtype)
        dims = ", ".join("*" if d is None else str(d) for d in self.shape)
        dims += "," if self.rank == 1 else ""
        return f"{self.type_str} (a {user} array of shape ({dims}))"


def _scalar_words(dt: DType) -> str:
    if dt.mlir == "i1":
        return "a bool"
    if dt.is_int:
        return "an int"
    if dt.is_complex:
        return "a complex"
    return "a float" + (", rounded to bf16" if dt.is_bf16 else "")


def _dtype_words(dt: DType) -> str:
    if dt.is_bf16:
        return "float32 (rounded to bf16) or uint16 (bf16 bits)"
    return str(dt.numpy)


@dataclass(frozen=True)
class Signature:
    """A callable function: its symbol, argument and result specs, and how results return."""

    name: str
    args: tuple[ValueSpec, ...]
    results: tuple[ValueSpec, ...]
    #: The C symbol the trampoline calls (`_mlir_ciface_<name>`, or `<name>` for llvm.func).
    callee: str
    #: True when results come back through a pointer passed first (memref or >1 results).
    results_by_pointer: bool
    #: Why the function cannot be called from Python, if it cannot.
    unsupported: str | None = None

    def __str__(self) -> str:
        args = ", ".join(a.type_str for a in self.args)
        res = ", ".join(r.type_str for r in self.results)
        return f"@{self.name}({args}) -> ({res})"

    def callee_llvm_types(self) -> tuple[str, list[str]]:
        """(return type, parameter types) of the callee in LLVM IR."""
        params = ["ptr"] if self.results_by_pointer else []
        params += ["ptr" if a.kind != "scalar" else a.dtype.llvm for a in self.args]  # type: ignore[union-attr]
        if self.results_by_pointer or not self.results:
            return "void", params
        return self.results[0].dtype.llvm, params  # type: ignore[union-attr]


# -- memref descriptors ---------------------------------------------------------------------
@cache
def descriptor_type(rank: int) -> type[ctypes.Structure]:
    """ctypes struct of a ranked memref descriptor (the C layout of the LLVM struct)."""
    fields: list[tuple[str, Any]] = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64),
    ]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRefDescriptor{rank}D", (ctypes.Structure,), {"_fields_": fields})


def result_storage_type(sig: Signature) -> type | None:
    """ctypes type the callee writes results into (None: no results)."""
    if not sig.results:
        return None
    fields = [(f"r{i}", _result_ctype(r)) for i, r in enumerate(sig.results)]
    if len(fields) == 1:
        return fields[0][1]
    return type(f"Results_{len(fields)}", (ctypes.Structure,), {"_fields_": fields})


def _result_ctype(spec: ValueSpec) -> type:
    if spec.kind == "memref":
        return descriptor_type(spec.rank)
    assert spec.dtype is not None
    return spec.dtype.ctype



# -- JSON (cache entries, artifacts) -------------------------------------------------------
def _spec_to_json(spec: ValueSpec) -> dict[str, Any]:
    return {"kind": spec.kind, "dtype": spec.dtype.mlir if spec.dtype else None,
            "type": spec.type_str, "shape": list(spec.shape), "identity": spec.identity,
            "strides": list(spec.strides), "offset": spec.offset}


def _spec_from_json(d: Mapping[str, Any]) -> ValueSpec:
    return ValueSpec(d["kind"], DTYPES[d["dtype"]] if d["dtype"] else None, d["type"],
                     tuple(d["shape"]), d["identity"], tuple(d["strides"]), d["offset"])


def signature_to_json(sig: Signature) -> dict[str, Any]:
    """A `Signature` as JSON-compatible data (`signature_from_json` inverts it)."""
    return {"name": sig.name, "args": [_spec_to_json(a) for a in sig.args],
            "results": [_spec_to_json(r) for r in sig.results], "callee": sig.callee,
            "results_by_pointer": sig.results_by_pointer, "unsupported": sig.unsupported}


def signature_from_json(d: Mapping[str, Any]) -> Signature:
    """The `Signature` that `signature_to_json` wrote."""
    return Signature(d["name"], tuple(_spec_from_json(a) for a in d["args"]),
                     tuple(_spec_from_json(r) for r in d["results"]), d["callee"],
                     d["results_by_pointer"], d["unsupported"])
