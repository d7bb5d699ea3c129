"""Parallel loops on PyTorch's OpenMP threads (python/accel/host/openmp.py).

With PyTorch imported, the JIT's `accel_parallel_for` hands its chunks to `GOMP_parallel` of
the OpenMP runtime PyTorch loaded, so compiled code and eager ops share one set of threads.
Checked here: the runtime is found; chunk c of t runs on OpenMP thread c (a body stores
`omp_get_thread_num()`, which is 0 on any thread OpenMP did not start); every index runs
once for thread counts below, at and above n; a loop of fewer items than threads keeps the
full team (libgomp would end the threads left out); a parallel call inside a parallel body still
covers its range; `ACCEL_THREAD_POOL=accel` and a forked child use accel's own pool, and
the child's call completes (GNU OpenMP's threads do not survive a fork).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch  # noqa: F401 - loads the OpenMP runtime these tests use
from accel.host import openmp
from accel.llvm import engine as llvmx
from test_parallel import _LOOP, _compile, wait_child

#: ctx = i32 per index: omp_get_thread_num() of the thread that ran it.
_OMP_TIDS = _LOOP.format(decls="declare i32 @omp_get_thread_num()", prelude="""\
  %tid = call i32 @omp_get_thread_num()""", each="""\
  %p = getelementptr i32, ptr %ctx, i64 %i
  store i32 %tid, ptr %p""")

#: A parallel loop whose body runs another parallel loop over its own range: a caller
#: already inside an OpenMP team. ctx = [unused, count of index 0, count of index 1, ...].
_NESTED = """\
declare void @accel_parallel_for(ptr, ptr, i64)

define void @count(ptr %counts, i64 %lo, i64 %hi) {
entry:
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

define void @outer(ptr %ctx, i64 %lo, i64 %hi) {
  %n = sub i64 %hi, %lo
  %first = add i64 %lo, 1
  %base = getelementptr i64, ptr %ctx, i64 %first
  call void @accel_parallel_for(ptr @count, ptr %base, i64 %n)
  ret void
}

define void @run(ptr %ctx, i64 %n) {
  call void @accel_parallel_for(ptr @outer, ptr %ctx, i64 %n)
  ret void
}
"""


@pytest.fixture(autouse=True)
def default_mode(monkeypatch):
    """These tests are about the default (a suite run with ACCEL_THREAD_POOL set too)."""
    monkeypatch.delenv("ACCEL_THREAD_POOL", raising=False)


@pytest.fixture
def omp_symbol():
    """omp_get_thread_num of PyTorch's runtime, bound for test bodies (it is not global)."""
    assert openmp.bind(), "PyTorch's OpenMP runtime was not found"
    lib = ctypes.CDLL(openmp.library(), mode=os.RTLD_NOLOAD)
    llvmx.init_native()
    llvmx.add_symbol("omp_get_thread_num",
                     ctypes.cast(lib.omp_get_thread_num, ctypes.c_void_p).value)


def test_pytorch_openmp_runtime_is_found():
    assert openmp.mode() == "openmp"
    path = openmp.bind()
    assert path and "omp" in os.path.basename(path)
    assert openmp.library() == path


@pytest.mark.usefixtures("omp_symbol")
def test_chunk_c_runs_on_openmp_thread_c(threads):
    _engine, run = _compile(aot=False, source=_OMP_TIDS, raw=True)
    threads(4)
    tids = np.full(64, -1, np.int32)
    run(tids.ctypes.data, 64)
    assert tids.tolist() == [c for c in range(4) for _ in range(16)]


@pytest.mark.usefixtures("omp_symbol")
def test_fewer_items_than_threads_keep_the_team(threads):
    """A loop of fewer items than threads still runs on a full team: libgomp ends the pool
    threads a smaller team leaves out (and starts new ones for the next full team), which
    made a 16-thread ResNet-18 slower than 8 threads. Chunk c still runs on thread c, and
    the process keeps its threads."""
    _engine, run = _compile(aot=False, source=_OMP_TIDS, raw=True)
    threads(4)
    run(np.full(8, -1, np.int32).ctypes.data, 8)  # a full team exists
    before = len(os.listdir("/proc/self/task"))
    tids = np.full(3, -1, np.int32)
    run(tids.ctypes.data, 3)
    assert tids.tolist() == [0, 1, 2]
    assert len(os.listdir("/proc/self/task")) == before


@pytest.mark.usefixtures("omp_symbol")
def test_accel_pool_when_asked(threads):
    """ACCEL_THREAD_POOL=accel (here: the table emptied) runs chunks on accel's workers,
    which OpenMP did not start: omp_get_thread_num() is 0 on each."""
    _engine, run = _compile(aot=False, source=_OMP_TIDS, raw=True)
    threads(4)
    openmp.unbind()
    try:
        tids = np.full(64, -1, np.int32)
        run(tids.ctypes.data, 64)
        assert (tids == 0).all()
    finally:
        assert openmp.bind()


@pytest.mark.parametrize("count", [1, 2, 3, 7])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 100])
def test_every_index_once_on_openmp(threads, count, n):
    assert openmp.bind()
    _engine, run = _compile(aot=False)
    threads(count)
    calls, counts = run(n)
    assert (counts == 1).all()
    assert calls == (min(count, n) if n else 0)


def test_two_callers_at_once_on_openmp(threads):
    """Two Python threads in compiled parallel code at the same time (ctypes drops the
    GIL): each leads an OpenMP team of its own; every index of both runs exactly once."""
    import threading

    assert openmp.bind()
    _engine, run = _compile(aot=False)
    threads(3)
    errors: list[str] = []

    def caller() -> None:
        for n in range(1, 200):
            calls, counts = run(n)
            if not (counts == 1).all() or calls != min(3, n):
                errors.append(f"n={n}: calls {calls}, counts {set(counts.tolist())}")

    workers = [threading.Thread(target=caller) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors[:3]


def test_nested_parallel_loops_cover_their_range(threads):
    assert openmp.bind()
    _engine, run = _compile(aot=False, source=_NESTED)
    threads(3)
    for n in (1, 7, 50):
        _calls, counts = run(n)
        assert (counts == 1).all(), counts


def test_mode_setting(monkeypatch):
    for value, mode in (("", "openmp"), ("openmp", "openmp"), ("accel", "accel"), ("0", "0"),
                        ("ACCEL", "accel")):
        monkeypatch.setenv("ACCEL_THREAD_POOL", value)
        assert openmp.mode() == mode
    monkeypatch.setenv("ACCEL_THREAD_POOL", "other")
    monkeypatch.setattr(openmp, "_warned", set())
    with pytest.warns(UserWarning, match="ACCEL_THREAD_POOL='other' is not one of"):
        assert openmp.mode() == "openmp"


def test_forked_child_uses_accel_pool(threads):
    """After a fork the child's table is empty (GNU OpenMP's team is gone there) and stays
    empty; its parallel call runs on accel's pool and completes."""
    assert openmp.bind()
    _engine, run = _compile(aot=False)
    threads(3)
    assert run(30)[0] == 3
    pid = os.fork()
    if pid == 0:
        try:
            ok = openmp.library() == "" and openmp.bind() == ""
            calls, counts = run(30)
            os._exit(0 if ok and calls == 3 and (counts == 1).all() else 1)
        finally:
            os._exit(2)
    assert wait_child(pid) == 0
    assert openmp.library()  # the parent keeps OpenMP


@pytest.mark.parametrize("pool", ["openmp", "accel"])
def test_compiled_model_same_result_either_pool(pool):
    """A model with a parallel GEMM and parallel loops, in a fresh process per pool: the
    same values (each chunk's work does not depend on the thread that runs it)."""
    code = textwrap.dedent("""
        import numpy as np, torch, accel
        from accel.host import openmp
        accel.set_num_threads(2)
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU())
        x = torch.randn(256, 512)
        fn = accel.compile(m, (x,), options={"cache": False})
        assert "accel_parallel_for" in fn.compiled.llvm_ir
        print("library", bool(openmp.library()))
        np.save("out.npy", fn(x).detach().numpy())
        """)
    env = {**os.environ, "ACCEL_THREAD_POOL": pool}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=_tmp(pool), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"library {pool == 'openmp'}" in proc.stdout
    _RESULTS[pool] = np.load(os.path.join(_tmp(pool), "out.npy"))
    if len(_RESULTS) == 2:
        assert np.array_equal(_RESULTS["openmp"], _RESULTS["accel"])


_RESULTS: dict[str, np.ndarray] = {}


def _tmp(pool: str) -> str:
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"accel-openmp-test-{os.getpid()}-{pool}")
    os.makedirs(path, exist_ok=True)
    return path
