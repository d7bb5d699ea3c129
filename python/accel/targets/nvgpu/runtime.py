"""Running a `GpuExecutable` on the GPU through NVIDIA's `cuda-bindings` (driver API).

Imported only when a compiled function is called. Per process: the primary context of GPU
0 (the one torch uses, so torch tensors and our buffers share it) and every PTX module
loaded once (`device_one_time_load`; the driver JIT-compiles PTX for the present GPU).
Per (executable, function): a `Session` holding the device buffers (weights and constants
uploaded once, arguments and temporaries allocated once) and, with `cuda_graph`, the kernel
sequence captured once as a CUDA graph and replayed on every call.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from accel.diagnostics import AccelError
from accel.runtime.dtypes import DTYPES
from accel.targets.nvgpu import toolkit


class GpuExecutable(Protocol):
    """What a session runs (`accel.targets.nvgpu.executable.GpuExecutable`, which calls
    this module: it is not imported here, not even for types)."""

    @property
    def kernels(self) -> Mapping[str, Any]: ...
    @property
    def programs(self) -> Mapping[str, Any]: ...
    @property
    def options(self) -> Mapping[str, Any]: ...
    @property
    def weights(self) -> Mapping[str, Any]: ...

_LOCK = threading.Lock()
_MODULES: dict[str, Any] = {}  # PTX text -> CUmodule (device_one_time_load)
_SESSIONS: dict[tuple[int, str], Session] = {}


def _driver() -> Any:
    """cuda.bindings.driver, initialised with GPU 0's primary context current."""
    toolkit.require_gpu("target nvgpu")
    cu = import_driver()
    if not _CONTEXT:
        check(cu.cuInit(0), "cuInit")
        device = check(cu.cuDeviceGet(0), "cuDeviceGet")
        ctx = check(cu.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
        _CONTEXT.append(ctx)
    check(cu.cuCtxSetCurrent(_CONTEXT[0]), "cuCtxSetCurrent")
    return cu


_CONTEXT: list[Any] = []


def import_driver() -> Any:
    """cuda.bindings.driver (a test may stand a fake in its place)."""
    try:
        from cuda.bindings import driver
    except ImportError:
        raise AccelError("target nvgpu needs NVIDIA's cuda-bindings to run kernels: "
                         "`pip install accel[gpu]`") from None
    return driver


def check(result: tuple[Any, ...], what: str) -> Any:
    """The value of a cuda-bindings call `(err, value...)`; AccelError on failure."""
    cu = import_driver()
    err, *values = result
    if err != cu.CUresult.CUDA_SUCCESS:
        _, text = cu.cuGetErrorString(err)
        raise AccelError(f"CUDA driver: {what} failed: {err.name} "
                         f"({text.decode() if isinstance(text, bytes) else text})")
    return values[0] if len(values) == 1 else tuple(values) if values else None


def _function(cu: Any, exe: GpuExecutable, kernel: str, reuse: bool) -> Any:
    k = exe.kernels[kernel]
    module = _MODULES.get(k.ptx) if reuse else None
    if module is None:
        module = check(cu.cuModuleLoadData(k.ptx.encode() + b"\0"),
                       f"loading the PTX of {k.module}")
        if reuse:
            _MODULES[k.ptx] = module
    return check(cu.cuModuleGetFunction(module, k.entry.encode()), f"finding {kernel}")


def _torch_stream() -> int:
    """torch's current CUDA stream (0, the legacy default stream, without torch)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return int(torch.cuda.current_stream().cuda_stream)
    return 0


class Session:
    """Device buffers and kernel handles of one function of one executable."""

    def __init__(self, exe: GpuExecutable, name: str):
        cu = _driver()
        self.cu, self.exe, self.program = cu, exe, exe.programs[name]
        opts = exe.options
        reuse = bool(opts.get("device_one_time_load", True))
        self.use_graph = bool(opts.get("cuda_graph", True))
        self.functions = {k: _function(cu, exe, k, reuse) for k in self.program.kernels()}
        self.pointers: list[int] = []
        self._owned: list[Any] = []
        for buf in self.program.buffers:
            ptr = check(cu.cuMemAlloc(max(buf.nbytes, 1)), "cuMemAlloc")
            self._owned.append(ptr)
            self.pointers.append(int(ptr))
            data = None
            if buf.kind == "weight":
                data = np.ascontiguousarray(exe.weights[buf.name])
            elif buf.kind == "const":
                data = np.frombuffer(bytes.fromhex(buf.data), dtype=np.uint8)
            if data is not None:
                check(cu.cuMemcpyHtoD(ptr, data.ctypes.data, buf.nbytes), "uploading " +
                      buf.name)
        self._graphs: dict[tuple[int, ...], Any] = {}
        # One set of device buffers per session: concurrent calls take turns.
        self.lock = threading.Lock()

    def _params(self, args: list[Any], pointers: list[int]) -> tuple[np.ndarray, list[Any]]:
        """kernelParams: an array of addresses, each of one argument's value."""
        values: list[np.ndarray] = []
        for a in args:
            if isinstance(a, dict):
                dt = DTYPES[a["type"]] if a["type"] in DTYPES else DTYPES["i64"]
                values.append(np.array([a["scalar"]], dtype=dt.numpy))
            else:
                values.append(np.array([pointers[a]], dtype=np.uint64))
        return np.array([v.ctypes.data for v in values], dtype=np.uint64), values

    def _launch_all(self, stream: Any, pointers: list[int]) -> None:
        cu = self.cu
        for step in self.program.steps:
            if step.op == "copy":
                check(cu.cuMemcpyDtoDAsync(pointers[step.dst], pointers[step.src],
                                           step.nbytes, stream), "cuMemcpyDtoDAsync")
                continue
            params, keep = self._params(step.args, pointers)
            check(cu.cuLaunchKernel(self.functions[step.kernel], *step.grid, *step.block,
                                    step.shared_bytes, stream, params.ctypes.data, 0),
                  f"launching {step.kernel}")
            del keep

    def _run(self, stream: Any, pointers: list[int]) -> None:
        cu = self.cu
        if not self.use_graph or int(stream) == 0:  # the legacy stream cannot capture
            self._launch_all(stream, pointers)
            return
        key = tuple(pointers)
        graph_exec = self._graphs.get(key)
        if graph_exec is None:
            check(cu.cuStreamBeginCapture(
                stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                "cuStreamBeginCapture")
            self._launch_all(stream, pointers)
            graph = check(cu.cuStreamEndCapture(stream), "cuStreamEndCapture")
            graph_exec = check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
            self._graphs[key] = graph_exec
        check(cu.cuGraphLaunch(graph_exec, stream), "cuGraphLaunch")

    def run_numpy(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Copy `inputs` in, run, copy the results out (synchronous)."""
        with self.lock:
            return self._run_numpy(inputs)

    def _run_numpy(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        cu = self.cu
        stream = cu.CUstream(_torch_stream())
        if self.use_graph and int(stream) == 0:
            stream = self._own_stream()
        args = [b for b in self.program.buffers if b.kind == "arg"]
        for buf, array in zip(args, inputs, strict=True):
            check(cu.cuMemcpyHtoDAsync(self.pointers[self.program.buffers.index(buf)],
                                       array.ctypes.data, buf.nbytes, stream), "copy in")
        self._run(stream, self.pointers)
        outs = []
        for i, rid in enumerate(self.program.results):
            buf = self.program.buffers[rid]
            out = np.empty(self.program.result_shape(i), dtype=DTYPES[buf.dtype].numpy)
            check(cu.cuMemcpyDtoHAsync(out.ctypes.data, self.pointers[rid],
                                       self.program.result_nbytes(i),
                                       stream), "copy out")
            outs.append(out)
        check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
        return outs

    def _own_stream(self) -> Any:
        if not hasattr(self, "_stream"):
            self._stream = check(self.cu.cuStreamCreate(0), "cuStreamCreate")
        return self._stream

    def run_torch(self, tensors: tuple[Any, ...]) -> list[Any]:
        """torch CUDA tensors in place (no copies); new CUDA tensors out, on torch's
        current stream, without synchronising (torch orders later work after it)."""
        with self.lock:
            return self._run_torch(tensors)

    def _run_torch(self, tensors: tuple[Any, ...]) -> list[Any]:
        import torch

        args = [b for b in self.program.buffers if b.kind == "arg"]
        if len(tensors) != len(args):
            raise ValueError(f"@{self.program.name} takes {len(args)} tensors, got "
                             f"{len(tensors)}")
        pointers = list(self.pointers)
        for buf, t in zip(args, tensors, strict=True):
            if not (isinstance(t, torch.Tensor) and t.is_cuda and t.is_contiguous()):
                raise AccelError(f"on_gpu_tensors: argument {buf.index} must be a "
                                 "contiguous torch CUDA tensor")
            if list(t.shape) != buf.shape:
                raise ValueError(f"argument {buf.index}: expected shape {buf.shape}, got "
                                 f"{list(t.shape)}")
            pointers[self.program.buffers.index(buf)] = t.data_ptr()
        outs: list[Any] = []
        written_in_place: set[int] = set()  # result indices
        redirected: set[int] = set()  # buffer ids
        for i, rid in enumerate(self.program.results):
            buf = self.program.buffers[rid]
            dt = DTYPES[buf.dtype]
            tdt = torch.bfloat16 if dt.is_bf16 else getattr(torch, np.dtype(dt.numpy).name)
            out = torch.empty(self.program.result_shape(i), dtype=tdt, device="cuda")
            # A temporary that is wholly this result is computed straight into its tensor;
            # others (arguments, weights, prefixes, a buffer returned twice) are copied.
            if buf.kind == "temp" and rid not in redirected and \
                    self.program.result_nbytes(i) == buf.nbytes:
                pointers[rid] = out.data_ptr()
                redirected.add(rid)
                written_in_place.add(i)
            outs.append(out)
        # Launched directly, not as a graph: a graph per set of tensor addresses would grow
        # without bound under torch's allocator.
        self._launch_all(self.cu.CUstream(_torch_stream()), pointers)
        for i, (rid, out) in enumerate(zip(self.program.results, outs, strict=True)):
            if i not in written_in_place:
                check(self.cu.cuMemcpyDtoDAsync(out.data_ptr(), pointers[rid],
                                                self.program.result_nbytes(i),
                                                self.cu.CUstream(_torch_stream())), "copy")
        return outs


def session(exe: GpuExecutable, name: str) -> Session:
    """The session of function `name` of `exe` (created on first use)."""
    key = (id(exe), name)
    with _LOCK:
        found = _SESSIONS.get(key)
        if found is None or found.exe is not exe:
            found = _SESSIONS[key] = Session(exe, name)
        return found

