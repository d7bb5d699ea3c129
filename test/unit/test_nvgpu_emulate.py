"""The nvgpu kernel emulator's cooperative mode: barriers and shared memory on the host
(the block's threads as OS threads), checked on hand-written kernels."""

from __future__ import annotations

import numpy as np
import pytest
from accel.context import make_context
from accel.diagnostics import AccelError
from accel.ir import Module, enable_torch_mlir_extensions, load_torch_dialects
from accel.pipeline import run_pipeline
from accel.targets.nvgpu import emulate

#: Each block reverses its 32 elements through shared memory: thread t writes slot t,
#: waits at the barrier, then reads slot 31 - t (another thread's write).
REVERSE = """
func.func @main(%A: memref<64xf32>) -> memref<64xf32> {
  %B = memref.alloc() : memref<64xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
      threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
      workgroup(%sh : memref<32xf32, #gpu.address_space<workgroup>>) {
    %base = arith.muli %bx, %c32 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %A[%i] : memref<64xf32>
    memref.store %v, %sh[%tx] : memref<32xf32, #gpu.address_space<workgroup>>
    GUARD_OPEN
    gpu.barrier
    GUARD_CLOSE
    %c31 = arith.constant 31 : index
    %j = arith.subi %c31, %tx : index
    %w = memref.load %sh[%j] : memref<32xf32, #gpu.address_space<workgroup>>
    memref.store %w, %B[%i] : memref<64xf32>
    gpu.terminator
  }
  return %B : memref<64xf32>
}
"""


def _emulated(text: str):  # noqa: ANN202 - the emulator's callable
    enable_torch_mlir_extensions()
    with make_context() as ctx:
        load_torch_dialects(ctx)
        module = Module.parse(text)
        run_pipeline(module, "builtin.module(gpu-launch-sink-index-computations,"
                             "gpu-kernel-outlining)", label="test")
        return emulate.emulate_outlined(module)["main"]


def test_barrier_and_shared_memory() -> None:
    run = _emulated(REVERSE.replace("GUARD_OPEN", "").replace("GUARD_CLOSE", ""))
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(run(a), np.concatenate([a[31::-1], a[:31:-1]]))


def test_divergent_barrier_is_an_error(monkeypatch) -> None:
    """Thread 0 skips the barrier (undefined on a GPU): a clean error, not a hang."""
    monkeypatch.setattr(emulate, "BARRIER_TIMEOUT", 0.5)
    text = REVERSE.replace("GUARD_OPEN", "%c0 = arith.constant 0 : index\n"
                           "    %t0 = arith.cmpi ne, %tx, %c0 : index\n    scf.if %t0 {") \
                  .replace("GUARD_CLOSE", "}")
    run = _emulated(text)
    with pytest.raises(AccelError, match=r"a barrier was not reached by all 32 threads"):
        run(np.arange(64, dtype=np.float32))
