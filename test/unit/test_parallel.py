"""`accel_parallel_for` (python/accel/host/parallel.py): the fork-join runtime on its own.

A body that atomically counts each index it is given and the calls made checks that every
index of [0, n) runs exactly once, in min(threads, n) chunks, for thread counts below,
at and above n (n = 0 included); the AOT variant reads ACCEL_NUM_THREADS itself.
"""

from __future__ import annotations

import ctypes
import os
import threading

import llvmlite.binding as llvm
import numpy as np
import pytest
from accel.host import jit as cpu
from accel.host import parallel
from accel.llvm import engine as llvmx
from samples import matmul_source

_BODY = """\
declare void @accel_parallel_for(ptr, ptr, i64)

define void @body(ptr %ctx, i64 %lo, i64 %hi) {
entry:
  %calls = atomicrmw add ptr %ctx, i64 1 seq_cst
  %counts = getelementptr i64, ptr %ctx, i64 1
  %some = icmp slt i64 %lo, %hi
  br i1 %some, label %loop, label %done
loop:
  %i = phi i64 [ %lo, %entry ], [ %i1, %loop ]
  %p = getelementptr i64, ptr %counts, i64 %i
  %old = atomicrmw add ptr %p, i64 1 seq_cst
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %hi
  br i1 %more, label %loop, label %done
done:
  ret void
}

define void @run(ptr %ctx, i64 %n) {
  call void @accel_parallel_for(ptr @body, ptr %ctx, i64 %n)
  ret void
}
"""


def _compile(aot: bool):
    """(engine, run(n) -> (calls, counts)) for the body above linked with the runtime."""
    llvmx.init_native()
    mod = llvmx.parse(_BODY, "test body")
    mod.link_in(llvmx.parse(parallel.parallel_runtime_ir(aot=aot), "parallel runtime"))
    cpu._resolve_externals(mod)
    tm = llvmx.target_machine(2)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("run"))

    def run(n: int) -> tuple[int, np.ndarray]:
        buf = np.zeros(n + 1, np.int64)
        fn(buf.ctypes.data, n)
        return int(buf[0]), buf[1:]

    return engine, run


@pytest.fixture
def restore_threads():
    before = parallel.num_threads()
    yield
    parallel.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 100])
def test_every_index_once(restore_threads, threads, n):
    _engine, run = _compile(aot=False)
    parallel.set_num_threads(threads)
    calls, counts = run(n)
    assert (counts == 1).all()
    assert calls == (min(threads, n) if n else 0)


def test_threads_are_started(restore_threads):
    """With 2 threads a call runs on a second thread (seen in /proc/self/task)."""
    _engine, run = _compile(aot=False)
    parallel.set_num_threads(2)
    seen: set[int] = set()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            seen.add(len(os.listdir("/proc/self/task")))

    sampler = threading.Thread(target=sample)
    base = len(os.listdir("/proc/self/task"))
    sampler.start()
    try:
        for _ in range(200):
            run(1 << 16)
    finally:
        stop.set()
        sampler.join()
    assert max(seen) >= base + 2  # this thread, the sampler, one worker


def test_aot_runtime_reads_environment(monkeypatch):
    monkeypatch.setenv("ACCEL_NUM_THREADS", "3")
    _engine, run = _compile(aot=True)
    calls, counts = run(10)
    assert calls == 3 and (counts == 1).all()


def test_thread_count_settings(monkeypatch, restore_threads):
    monkeypatch.setenv("ACCEL_NUM_THREADS", "5")
    assert parallel.default_num_threads() == 5
    parallel.set_num_threads(None)
    assert parallel.num_threads() == 5
    parallel.set_num_threads(1)
    assert parallel.num_threads() == 1
    monkeypatch.delenv("ACCEL_NUM_THREADS")
    assert parallel.default_num_threads() == len(os.sched_getaffinity(0))
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv("ACCEL_NUM_THREADS", bad)
        with pytest.raises(ValueError, match="ACCEL_NUM_THREADS"):
            parallel.default_num_threads()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="num_threads"):
            parallel.set_num_threads(bad)


_MATMUL = matmul_source("mm", 256, 200, 300)



@pytest.mark.parametrize("user_memory", [False, True])
def test_aot_library_with_parallel_kernel(tmp_path, monkeypatch, user_memory):
    """An AOT library of a matmul large enough for a parallel kernel (its own
    accel_parallel_for; serial with user_memory, whose pool serves one thread)."""
    import subprocess

    from accel.targets.cpu.aot import build_library

    monkeypatch.setenv("ACCEL_NUM_THREADS", "3")
    lib = build_library(_MATMUL, "pmm", tmp_path, user_memory=user_memory)
    undefined = subprocess.run(["nm", "-u", str(lib.object_path)], capture_output=True,
                               text=True, check=True).stdout.split()
    assert "pthread_create" in undefined  # from libc (glibc >= 2.34: no -lpthread)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 200), np.float32)
    b = rng.standard_normal((200, 300), np.float32)
    np.testing.assert_allclose(lib.call(a, b), a.astype(np.float64) @ b, rtol=1e-4,
                               atol=1e-4)
