"""The nvgpu runtime's plumbing against a fake CUDA driver (no GPU needed): buffers, input
and output copies, kernel argument order, CUDA-graph capture and replay, weights uploaded
once. The fake runs each "kernel" as a numpy function of the buffers it is given."""

from __future__ import annotations

import ctypes
import enum
import itertools
from typing import Any

import accel
import accel.settings
import numpy as np
import pytest
from accel.targets import get as get_target
from accel.targets.nvgpu import runtime, toolkit

TEXT = """
memref.global "private" @bias : memref<8xf32>
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = memref.get_global @bias : memref<8xf32>
  %b = bufferization.to_tensor %w restrict : memref<8xf32> to tensor<8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,
      affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x8xf32>, tensor<8xf32>)
      outs(%e : tensor<4x8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.addf %x, %y : f32
      %t = math.exp %s : f32
      linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
"""


class FakeDriver:
    """Just enough of cuda.bindings.driver, with device memory in host bytearrays."""

    class CUresult(enum.IntEnum):
        CUDA_SUCCESS = 0
        CUDA_ERROR_INVALID_VALUE = 1

    class CUstreamCaptureMode(enum.IntEnum):
        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1

    class CUstream(int):
        pass

    def __init__(self, kernels: dict[str, Any]) -> None:
        self.memory: dict[int, bytearray] = {}
        self.kernels = kernels  # entry -> fn(list of buffer addresses)
        self.addresses = itertools.count(1 << 20, 1 << 16)
        self.calls: list[str] = []
        self.capturing: list[Any] | None = None
        ok = (self.CUresult.CUDA_SUCCESS,)
        for name in ("cuInit", "cuCtxSetCurrent", "cuStreamSynchronize"):
            setattr(self, name, lambda *a, _n=name: (self.calls.append(_n), ok)[1])

    def cuGetErrorString(self, err: Any) -> tuple[Any, bytes]:
        return self.CUresult.CUDA_SUCCESS, b"fake error"

    def cuDeviceGet(self, n: int) -> tuple[Any, int]:
        return self.CUresult.CUDA_SUCCESS, 0

    def cuDevicePrimaryCtxRetain(self, dev: int) -> tuple[Any, str]:
        return self.CUresult.CUDA_SUCCESS, "ctx"

    def cuStreamCreate(self, flags: int) -> tuple[Any, Any]:
        return self.CUresult.CUDA_SUCCESS, self.CUstream(7)

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, bytes]:
        self.calls.append("cuModuleLoadData")
        assert image.endswith(b"\0") and b".entry" in image
        return self.CUresult.CUDA_SUCCESS, image

    def cuModuleGetFunction(self, module: bytes, name: bytes) -> tuple[Any, str]:
        return self.CUresult.CUDA_SUCCESS, name.decode()

    def cuMemAlloc(self, n: int) -> tuple[Any, int]:
        ptr = next(self.addresses)
        self.memory[ptr] = bytearray(n)
        return self.CUresult.CUDA_SUCCESS, ptr

    def _copy_in(self, ptr: int, host: int, n: int, *_: Any) -> tuple[Any]:
        self.memory[int(ptr)][:n] = ctypes.string_at(host, n)
        return (self.CUresult.CUDA_SUCCESS,)

    cuMemcpyHtoD = cuMemcpyHtoDAsync = _copy_in

    def cuMemcpyDtoHAsync(self, host: int, ptr: int, n: int, stream: Any) -> tuple[Any]:
        ctypes.memmove(host, bytes(self.memory[int(ptr)][:n]), n)
        return (self.CUresult.CUDA_SUCCESS,)

    def cuLaunchKernel(self, f: str, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       smem: int, stream: Any, params: int, extra: int) -> tuple[Any]:
        n = self.kernels[f][0]
        slots = (ctypes.c_uint64 * n).from_address(params)
        pointers = [ctypes.c_uint64.from_address(a).value for a in slots]
        launch = (f, pointers)
        if self.capturing is not None:
            self.capturing.append(launch)
        else:
            self._run(launch)
        return (self.CUresult.CUDA_SUCCESS,)

    def _run(self, launch: tuple[str, list[int]]) -> None:
        self.calls.append("kernel")
        f, pointers = launch
        self.kernels[f][1]([np.frombuffer(self.memory[p], np.float32) for p in pointers])

    def cuStreamBeginCapture(self, stream: Any, mode: Any) -> tuple[Any]:
        self.capturing = []
        return (self.CUresult.CUDA_SUCCESS,)

    def cuStreamEndCapture(self, stream: Any) -> tuple[Any, list[Any]]:
        graph, self.capturing = self.capturing, None
        return self.CUresult.CUDA_SUCCESS, graph

    def cuGraphInstantiate(self, graph: list[Any], flags: int) -> tuple[Any, list[Any]]:
        return self.CUresult.CUDA_SUCCESS, graph

    def cuGraphLaunch(self, graph: list[Any], stream: Any) -> tuple[Any]:
        self.calls.append("graph")
        for launch in graph:
            self._run(launch)
        return (self.CUresult.CUDA_SUCCESS,)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeDriver, Any]:
    opts = accel.settings.merge({"target": "nvgpu", "device": "sm_90", "cache": False})
    bias = np.linspace(-1, 1, 8, dtype=np.float32)
    exe = get_target("nvgpu").compile(TEXT, opts, weights={"bias": bias})
    (step,) = exe.programs["f"].steps  # one fused kernel: exp(a + bias)
    order = step.args  # buffer ids in the kernel's parameter order
    roles = {b: i for i, b in enumerate(order)}
    buffers = exe.programs["f"].buffers

    def kernel(views: list[np.ndarray]) -> None:
        by_kind = {buffers[b].kind: views[roles[b]] for b in order}
        out = by_kind["temp"][:32]
        out[:] = np.exp(by_kind["arg"][:32].reshape(4, 8) + by_kind["weight"][:8]).ravel()

    driver = FakeDriver({exe.kernels[step.kernel].entry: (len(order), kernel)})
    monkeypatch.setattr(runtime, "import_driver", lambda: driver)
    monkeypatch.setattr(toolkit, "require_gpu", lambda what: None)
    monkeypatch.setattr(runtime, "_CONTEXT", [])
    monkeypatch.setattr(runtime, "_MODULES", {})
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    return driver, exe, bias


def test_numpy_call_through_a_graph(fake) -> None:
    driver, exe, bias = fake
    x = np.arange(32, dtype=np.float32).reshape(4, 8) / 32
    np.testing.assert_allclose(exe["f"](x), np.exp(x + bias), rtol=1e-6)
    np.testing.assert_allclose(exe["f"](2 * x), np.exp(2 * x + bias), rtol=1e-6)
    assert driver.calls.count("cuModuleLoadData") == 1  # device_one_time_load
    assert driver.calls.count("graph") == 2  # captured once, replayed per call


def test_direct_launches_without_graphs(fake) -> None:
    driver, exe, bias = fake
    exe.options = {**exe.options, "cuda_graph": False}
    x = np.ones((4, 8), np.float32)
    np.testing.assert_allclose(exe["f"](x), np.exp(x + bias), rtol=1e-6)
    assert "graph" not in driver.calls and driver.calls.count("kernel") == 1


def test_wrong_input_is_refused_before_the_driver(fake) -> None:
    driver, exe, _ = fake
    with pytest.raises(ValueError, match="argument 0"):
        exe["f"](np.ones((4, 8), np.float64))
    assert "kernel" not in driver.calls
