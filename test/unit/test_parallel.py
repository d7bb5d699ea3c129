"""`accel_parallel_for` (python/accel/host/parallel.py, parallel_ir.py): the worker pool and
its fork-join fallback on their own.

A body that atomically counts each index it is given and the calls made checks that every
index of [0, n) runs exactly once, in min(threads, n) chunks, for thread counts below,
at and above n (n = 0 included); the AOT variant reads ACCEL_NUM_THREADS itself. The pool:
its workers are the same threads call after call, two callers at once both finish (one
on the pool, one fork-join), a fork()ed child gets a pool of its own, and an AOT runtime's
destructor joins its workers.
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

_LOOP = """\
declare void @accel_parallel_for(ptr, ptr, i64)
{decls}
define void @body(ptr %ctx, i64 %lo, i64 %hi) {{
entry:
{prelude}
  %some = icmp slt i64 %lo, %hi
  br i1 %some, label %loop, label %done
loop:
  %i = phi i64 [ %lo, %entry ], [ %i1, %loop ]
{each}
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %hi
  br i1 %more, label %loop, label %done
done:
  ret void
}}

define void @run(ptr %ctx, i64 %n) {{
  call void @accel_parallel_for(ptr @body, ptr %ctx, i64 %n)
  ret void
}}
"""

#: ctx = [calls, count of index 0, count of index 1, ...]: each call and index counted.
_BODY = _LOOP.format(decls="", prelude="""\
  %calls = atomicrmw add ptr %ctx, i64 1 seq_cst
  %counts = getelementptr i64, ptr %ctx, i64 1""", each="""\
  %p = getelementptr i64, ptr %counts, i64 %i
  %old = atomicrmw add ptr %p, i64 1 seq_cst""")

#: ctx = i32 per index: the id of the thread that ran it.
_TIDS = _LOOP.format(decls="declare i32 @gettid()", prelude="""\
  %tid = call i32 @gettid()""", each="""\
  %p = getelementptr i32, ptr %ctx, i64 %i
  store i32 %tid, ptr %p""")

#: Engines whose runtime a pool's workers may still be running: kept for the process.
_KEEP: list = []


def _compile(aot: bool, source: str = _BODY, raw: bool | None = None):
    """(engine, run function) for `source` with the runtime: the process's shared one for
    the JIT (its pool must outlive every module), a linked AOT runtime otherwise. `raw`
    (default: for _TIDS): `run(ctx, n)` itself, not the counting wrapper."""
    llvmx.init_native()
    mod = llvmx.parse(source, "test body")
    if aot:
        mod.link_in(llvmx.parse(parallel.parallel_runtime_ir(aot=True), "parallel runtime"))
    else:
        cpu.bind_parallel_runtime()
    cpu._resolve_externals(mod)
    tm = llvmx.target_machine(2)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    _KEEP.append(engine)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("run"))
    if raw or (raw is None and source is _TIDS):
        return engine, fn

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
    """With 2 threads a call runs chunk 0 on the calling thread and chunk 1 on another."""
    _engine, run = _compile(aot=False, source=_TIDS)
    parallel.set_num_threads(2)
    tids = np.zeros(10, np.int32)
    run(tids.ctypes.data, 10)
    assert (tids[:5] == threading.get_native_id()).all()
    assert tids[5] != threading.get_native_id() and (tids[5:] == tids[5]).all()


def _tasks() -> int:
    return len(os.listdir("/proc/self/task"))


def _settles_at(count: int) -> bool:
    """Whether this process's thread count reaches `count` within 5 s (a call's helper
    threads, such as the one `lib.call` runs the library on, take a moment to exit)."""
    import time

    deadline = time.monotonic() + 5
    while _tasks() != count and time.monotonic() < deadline:
        time.sleep(0.01)
    return _tasks() == count


def test_aot_runtime_reads_environment(monkeypatch):
    """ACCEL_NUM_THREADS is read by the library itself; unloading it (its destructors, as
    dlclose or exit runs them) joins the pool's workers."""
    monkeypatch.setenv("ACCEL_NUM_THREADS", "3")
    engine, run = _compile(aot=True)
    before = _tasks()
    calls, counts = run(10)
    assert calls == 3 and (counts == 1).all()
    assert _settles_at(before + 2)  # two workers stay for the next call
    engine.run_static_destructors()
    assert _settles_at(before)
    calls, counts = run(10)  # a later call starts the pool again
    assert calls == 3 and (counts == 1).all()
    engine.run_static_destructors()


def test_pool_reuses_its_workers(restore_threads):
    """100 calls on 4 threads run on 4 distinct threads in all: the pool's. Fork-join would
    start 300 threads."""
    _engine, run = _compile(aot=False, source=_TIDS)
    parallel.set_num_threads(4)
    seen: set[int] = set()
    for _ in range(100):
        tids = np.zeros(64, np.int32)
        run(tids.ctypes.data, 64)
        assert (tids != 0).all()
        assert len(set(tids.tolist())) == 4  # 4 chunks, 4 threads
        seen |= set(tids.tolist())
    assert len(seen) == 4


def test_two_callers_at_once(restore_threads):
    """Two Python threads call parallel code at the same time (ctypes drops the GIL): one
    owns the pool, the other runs fork-join; every index of both runs exactly once."""
    _engine, run = _compile(aot=False)
    parallel.set_num_threads(3)
    errors: list[str] = []

    def caller() -> None:
        for n in range(1, 300):
            calls, counts = run(n)
            if not (counts == 1).all() or calls != min(3, n):
                errors.append(f"n={n}: calls {calls}, counts {set(counts.tolist())}")

    threads = [threading.Thread(target=caller) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def wait_child(pid: int, seconds: float = 60) -> int:
    """The exit code of forked child `pid`; fails the test if it runs longer (a hang)."""
    import time

    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's parallel call hung")
        time.sleep(0.05)


def test_forked_child_starts_its_own_pool(restore_threads):
    """A child forked after the pool started has none of its threads: its parallel call
    must start new workers, not wait for the parent's (a hang, killed after 60 s)."""

    _engine, run = _compile(aot=False)
    parallel.set_num_threads(3)
    assert run(30)[0] == 3  # the parent's pool is up
    pid = os.fork()
    if pid == 0:  # the child: exit status says whether its call was right
        try:
            calls, counts = run(30)
            os._exit(0 if calls == 3 and (counts == 1).all() else 1)
        finally:
            os._exit(2)
    assert wait_child(pid) == 0


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


def test_aot_library_unload_joins_its_workers(tmp_path, monkeypatch):
    """The library's pool keeps 2 workers (ACCEL_NUM_THREADS=3) between calls; dlclose runs
    its destructor, which joins them: no thread is left running unmapped code."""
    import _ctypes

    from accel.targets.cpu.aot import build_library

    monkeypatch.setenv("ACCEL_NUM_THREADS", "3")
    lib = build_library(_MATMUL, "pmm", tmp_path)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 200), np.float32)
    b = rng.standard_normal((200, 300), np.float32)
    handle = lib.load()._handle
    before = _tasks()
    for _ in range(3):
        np.testing.assert_allclose(lib.call(a, b), a.astype(np.float64) @ b, rtol=1e-4,
                                   atol=1e-4)
    assert _settles_at(before + 2)
    lib._lib = None
    _ctypes.dlclose(handle)
    assert _settles_at(before)
