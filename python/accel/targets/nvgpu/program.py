"""The host side of a compiled model: the kernel sequence, read from the host function.

After outlining, a host function holds only what the GPU runtime has to do: device
buffers (`memref.alloc`), weights and constants (`memref.get_global`), views that alias a
buffer (`expand_shape`, `collapse_shape`, `cast`, `subview` with static offsets: with bare
pointers a kernel receives the base pointer and applies the static layout itself),
contiguous copies (`memref.copy`), kernel launches (`gpu.launch_func` with constant grid
and block) and `return`. `read_program` turns that into a `Program` (JSON-able: it is the
artifact manifest's and the AOT library's input); anything else is an op the GPU path cannot
run, and `HostOnly` names it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from accel.ir import Operation, ir
from accel.passes.nvgpu_map_loops import constant_index
from accel.runtime.dtypes import DTYPES


class HostOnly(Exception):
    """An op of a host function that has no GPU form (`op` names it, `where` locates it)."""

    def __init__(self, op: str, where: str, why: str):
        super().__init__(f"{op} at {where}: {why}")
        self.op, self.where, self.why = op, where, why


@dataclass
class Buffer:
    """A device buffer: an argument, a temporary, a weight (bound by name) or a constant."""

    kind: str  # "arg" | "temp" | "weight" | "const"
    nbytes: int
    dtype: str  # MLIR element type
    shape: list[int]
    index: int = -1  # arg: the argument's position
    name: str = ""  # weight/const: the global's name
    #: const: the bytes (hex), from the global's initial value.
    data: str = ""


@dataclass
class Step:
    """A launch (`kernel`, grid, block, args: buffer ids or {"scalar", "type"}) or a
    device-to-device `copy` of `nbytes` from buffer `src` to `dst`."""

    op: str
    kernel: str = ""
    grid: list[int] = field(default_factory=list)
    block: list[int] = field(default_factory=list)
    shared_bytes: int = 0
    args: list[Any] = field(default_factory=list)
    src: int = -1
    dst: int = -1
    nbytes: int = 0


@dataclass
class Program:
    """One function's device work: its buffers, its steps in order and its results."""

    name: str
    buffers: list[Buffer]
    steps: list[Step]
    results: list[int]
    #: Each result's shape: a result may be a reshaped view of its buffer.
    result_shapes: list[list[int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Program:
        return cls(d["name"], [Buffer(**b) for b in d["buffers"]],
                   [Step(**s) for s in d["steps"]], list(d["results"]),
                   [list(s) for s in d["result_shapes"]])

    def result_shape(self, i: int) -> list[int]:
        return self.result_shapes[i]

    def result_nbytes(self, i: int) -> int:
        """Bytes of result `i`: a result may be a prefix of its buffer (torch.chunk's first
        chunk is the input itself, viewed), so never the buffer's size."""
        buf = self.buffers[self.results[i]]
        return math.prod(self.result_shapes[i]) * np.dtype(DTYPES[buf.dtype].numpy).itemsize

    def kernels(self) -> list[str]:
        return [s.kernel for s in self.steps if s.op == "launch"]


def _where(op: Operation) -> str:
    return str(op.location)


def _memref(t: ir.Type, op: Operation) -> tuple[str, list[int], int]:
    """(element type, shape, byte size) of a static memref type."""
    if not isinstance(t, ir.MemRefType):
        raise HostOnly(op.name, _where(op), f"a non-memref value of type {t} on the host")
    mt = ir.MemRefType(t)
    if not mt.has_static_shape:
        raise HostOnly(op.name, _where(op), f"dynamic shape {t} (nvgpu compiles static "
                       "shapes only)")
    elem = str(mt.element_type)
    dt = DTYPES.get(elem)
    if dt is None:
        raise HostOnly(op.name, _where(op), f"element type {elem} has no device form")
    return elem, list(mt.shape), math.prod(mt.shape) * np.dtype(dt.numpy).itemsize


def _identity(t: ir.Type) -> bool:
    layout = ir.MemRefType(t).layout
    return isinstance(layout, ir.AffineMapAttr) and \
        layout.value == ir.AffineMap.get_identity(ir.MemRefType(t).rank)


def _global_data(module: Operation, name: str, elem: str) -> str | None:
    """Hex bytes of global `name`'s initial value; None for an external (weight) global."""
    for op in module.regions[0].blocks[0].operations:
        if op.name == "memref.global" and ir.StringAttr(op.attributes["sym_name"]).value \
                == name:
            if "initial_value" not in op.attributes:
                return None
            attr = op.attributes["initial_value"]
            if not isinstance(attr, ir.DenseElementsAttr):
                return None
            shape = ir.MemRefType(ir.TypeAttr(op.attributes["type"]).value).shape
            npt = np.dtype(DTYPES[elem].numpy)
            if attr.is_splat:
                value = np.array(attr.get_splat_value().value, dtype=npt)
                return np.full(shape, value, dtype=npt).tobytes().hex()
            return np.ascontiguousarray(np.array(attr), dtype=npt).tobytes().hex()
    raise KeyError(name)


def read_program(module: Operation, func: Operation) -> Program:
    """The `Program` of host function `func` (after outlining); `HostOnly` otherwise."""
    name = ir.StringAttr(func.attributes["sym_name"]).value
    buffers: list[Buffer] = []
    steps: list[Step] = []
    ids: dict[Any, int] = {}
    scalars: dict[Any, tuple[Any, str]] = {}
    block = func.regions[0].blocks[0]
    for i, arg in enumerate(block.arguments):
        elem, shape, nbytes = _memref(arg.type, func)
        ids[arg] = len(buffers)
        buffers.append(Buffer("arg", nbytes, elem, shape, index=i))
    results: list[int] = []
    result_shapes: list[list[int]] = []
    for op in block.operations:
        op = op.operation
        kind = op.name
        if kind == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, ir.IntegerAttr | ir.FloatAttr):
                scalars[op.results[0]] = (attr.value, str(attr.type))
        elif kind == "memref.alloc":
            if len(op.operands):
                raise HostOnly(kind, _where(op), "dynamic allocation size")
            elem, shape, nbytes = _memref(op.results[0].type, op)
            ids[op.results[0]] = len(buffers)
            buffers.append(Buffer("temp", nbytes, elem, shape))
        elif kind == "memref.get_global":
            elem, shape, nbytes = _memref(op.results[0].type, op)
            gname = ir.FlatSymbolRefAttr(op.attributes["name"]).value
            data = _global_data(module, gname, elem)
            ids[op.results[0]] = len(buffers)
            buffers.append(Buffer("weight" if data is None else "const", nbytes, elem, shape,
                                  name=gname, data=data or ""))
        elif kind in ("memref.expand_shape", "memref.collapse_shape", "memref.cast",
                      "memref.subview", "memref.reinterpret_cast"):
            if len(op.operands) > 1:
                raise HostOnly(kind, _where(op), "a view with dynamic offsets or sizes")
            ids[op.results[0]] = ids[op.operands[0]]
        elif kind == "memref.copy":
            src, dst = op.operands
            if not (_identity(src.type) and _identity(dst.type)):
                raise HostOnly(kind, _where(op), "a strided copy")
            steps.append(Step("copy", src=ids[src], dst=ids[dst],
                              nbytes=_memref(dst.type, op)[2]))
        elif kind == "gpu.launch_func":
            steps.append(_launch(op, ids, scalars))
        elif kind == "memref.dealloc":
            continue
        elif kind == "func.return":
            for v in op.operands:
                _, shape, _ = _memref(v.type, op)
                if not _identity(v.type):
                    raise HostOnly(kind, _where(op), "a strided view as a result")
                results.append(ids[v])
                result_shapes.append(shape)
        else:
            raise HostOnly(kind, _where(op), "no GPU kernel was made of it")
    return Program(name, buffers, steps, results, result_shapes)


def _launch(op: Operation, ids: dict[Any, int], scalars: dict[Any, tuple[Any, str]]) -> Step:
    view = op.opview
    sizes = []
    for v in (view.gridSizeX, view.gridSizeY, view.gridSizeZ,
              view.blockSizeX, view.blockSizeY, view.blockSizeZ):
        n = constant_index(v)
        if n is None:
            raise HostOnly(op.name, _where(op), "launch sizes that are not constants")
        sizes.append(n)
    smem = 0
    if view.dynamicSharedMemorySize is not None:
        smem = constant_index(view.dynamicSharedMemorySize) or 0
    # "@module::@kernel": the PTX file is the module's, the entry point the kernel's.
    module, entry = str(op.attributes["kernel"]).replace("@", "").split("::")
    args: list[Any] = []
    for v in view.kernelOperands:
        if v in ids:
            args.append(ids[v])
        elif v in scalars:
            value, type_str = scalars[v]
            args.append({"scalar": value, "type": type_str})
        else:
            raise HostOnly(op.name, _where(op), "a kernel argument computed on the host")
    return Step("launch", kernel=f"{module}.{entry}", grid=sizes[:3], block=sizes[3:],
                shared_bytes=smem, args=args)
