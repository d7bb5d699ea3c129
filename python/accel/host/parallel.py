"""Parallel loops for generated code: `accel_parallel_for`, as LLVM IR text.

    void accel_parallel_for(void (*body)(void *ctx, int64_t lo, int64_t hi),
                            void *ctx, int64_t n);

runs `body` over [0, n) split into T contiguous chunks, T = min(accel_num_threads, n):
chunk 0 on the calling thread, chunks 1..T-1 on PyTorch's OpenMP threads when the JIT
process has OpenMP loaded (`openmp.py`: `GOMP_parallel`, and why; the team is always
`accel_num_threads` strong, as libgomp ends the threads a smaller team leaves out), else
on the workers of a persistent pool (`parallel_ir.py`: its protocol, and why). With T = 1
it calls `body(ctx, 0, n)` and wakes no worker. A caller that finds the pool in use
(another thread's call, or a parallel body's own parallel loop) runs fork-join instead:
threads made with `pthread_create` and joined before it returns; a failed
`pthread_create` runs that chunk on the calling thread. `ACCEL_THREAD_POOL=0` (read when
the runtime is compiled: once per process in the JIT, at build time for AOT libraries)
makes every call fork-join; `ACCEL_THREAD_POOL=accel` keeps the pool even with OpenMP
loaded.

Idle workers spin for `parallel_ir.SPIN_NS` (200 us) after a call, then sleep on a
condition variable. So between calls accel holds no core for long, and cannot starve the
pools PyTorch (or OpenBLAS) runs while it is idle. During a call it uses at most
`accel_num_threads` cores, the calling one included.
The thread count is the global `i32 accel_num_threads`:

* JIT: one process-wide `ctypes.c_int32` bound to the symbol (`accel.llvm.engine.add_symbol`),
  so every compiled module reads the same value; `set_num_threads` changes it for later calls.
  The default is the `ACCEL_NUM_THREADS` environment variable, else the cores this process
  may run on (`os.sched_getaffinity`).
* AOT libraries: a hidden global in the library, 0 until the first call, which then reads
  `ACCEL_NUM_THREADS`, else `sysconf(_SC_NPROCESSORS_ONLN)`.

Failures (a failed runtime assertion, an integer division by zero, a failed allocation) on
a worker thread reach the caller: each worker stores the address of a failure cell `{i64
kind, i64 payload}` on the caller's stack under a pthread key (`accel_failure_key()`), the
runtime's failure hooks fill the cell there instead of the worker's own record (first
failure wins), and once every chunk is done, `accel_parallel_for` reports the cell's failure again
on the calling thread (`accel.runtime.symbols`). The key is the process's
(`symbols.failure_key_address`) in the JIT, the library's own (`pthread_once`) in AOT.

Code generators decide statically whether a loop is worth running in parallel (the GEMM
kernels of `accel-matmul-microkernel` only call it above a work threshold) and choose `n`
so that one item is worth a hand-off to a worker (~1-5 us when it spins, ~20-50 us when it
sleeps).
"""

from __future__ import annotations

import ctypes
import os
import threading

from accel.host import openmp
from accel.host.parallel_ir import pool_ir
from accel.runtime.symbols import (
    ALLOC_FAIL_SYMBOL,
    ASSERT_FAIL_SYMBOL,
    FAIL_ALLOC,
    FAIL_ASSERT,
    failure_key_address,
)

#: Symbols the generated code uses.
PARALLEL_FOR = "accel_parallel_for"
NUM_THREADS = "accel_num_threads"
#: `i32 accel_failure_key()`: the pthread key of the workers' failure cells.
FAILURE_KEY = "accel_failure_key"
#: Most threads one call uses (bounds the stack arrays of `accel_parallel_for`).
MAX_THREADS = 256

_count = ctypes.c_int32(0)
_lock = threading.Lock()
_bound = False


def default_num_threads() -> int:
    """`ACCEL_NUM_THREADS` when set to a positive int, else the cores this process may use."""
    text = os.environ.get("ACCEL_NUM_THREADS", "").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"ACCEL_NUM_THREADS must be a positive integer, got {text!r}") \
                from None
        if value >= 1:
            return min(value, MAX_THREADS)
        raise ValueError(f"ACCEL_NUM_THREADS must be a positive integer, got {text!r}")
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_THREADS))


def num_threads() -> int:
    """Threads a parallel loop of JIT-compiled code uses (set or default)."""
    with _lock:
        if _count.value <= 0:
            _count.value = default_num_threads()
        return _count.value


def set_num_threads(count: int | None) -> None:
    """Threads for parallel loops of all JIT-compiled code from now on (the calling thread
    included; 1: run serially); None: back to `default_num_threads()`."""
    if count is None:
        count = default_num_threads()
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"num_threads must be a positive int, got {count!r}")
    with _lock:
        _count.value = min(count, MAX_THREADS)


def num_threads_address() -> int:
    """Address of the process-wide thread count the JIT binds `accel_num_threads` to."""
    return ctypes.addressof(_count)


def _bind_jit_symbols() -> None:
    """Bind `accel_num_threads` for MCJIT (once; the value is set from the environment)."""
    global _bound
    from accel.llvm import engine

    num_threads()
    with _lock:
        if not _bound:
            engine.add_symbol(NUM_THREADS, num_threads_address())
            engine.add_symbol(FAILURE_KEY + "_value", failure_key_address())
            engine.add_symbol(openmp.TABLE, openmp.table_address())
            _bound = True


_RUNTIME = """\
%accel.job = type { ptr, ptr, i64, i64, i64, i64, ptr }  ; body, ctx, lo, hi, thread, started, cell
%accel.omp_frame = type { ptr, ptr, i64, i64, ptr }    ; body, ctx, n, t, cell

declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_join(i64, ptr)
declare i32 @pthread_setspecific(i32, ptr)
declare ptr @pthread_getspecific(i32)
declare void @ASSERT_FAIL(ptr)
declare void @ALLOC_FAIL(i64)
%EXTRA_DECLS%

define ptr @accel_parallel_thunk(ptr %job) {
  %bp = getelementptr inbounds %accel.job, ptr %job, i64 0, i32 0
  %body = load ptr, ptr %bp
  %cp = getelementptr inbounds %accel.job, ptr %job, i64 0, i32 1
  %ctx = load ptr, ptr %cp
  %lp = getelementptr inbounds %accel.job, ptr %job, i64 0, i32 2
  %lo = load i64, ptr %lp
  %hp = getelementptr inbounds %accel.job, ptr %job, i64 0, i32 3
  %hi = load i64, ptr %hp
  %fp = getelementptr inbounds %accel.job, ptr %job, i64 0, i32 6
  %cell = load ptr, ptr %fp
  %key = call i32 @accel_failure_key()
  %set = call i32 @pthread_setspecific(i32 %key, ptr %cell)   ; failures go to the caller
  call void %body(ptr %ctx, i64 %lo, i64 %hi)
  ret ptr null
}

; One OpenMP thread's share of a job: chunks tid, tid + nt, ... of t (nt < t when the
; runtime gives a smaller team: a nested region, OMP_DYNAMIC). Thread 0 is the caller.
define internal void @accel_omp_chunks(ptr %frame) {
entry:
  %tidp = getelementptr inbounds [3 x ptr], ptr @accel_omp, i64 0, i64 1
  %tidf = load ptr, ptr %tidp
  %ntp = getelementptr inbounds [3 x ptr], ptr @accel_omp, i64 0, i64 2
  %ntf = load ptr, ptr %ntp
  %tid32 = call i32 %tidf()
  %nt32 = call i32 %ntf()
  %tid = sext i32 %tid32 to i64
  %nt0 = sext i32 %nt32 to i64
  %nt = call i64 @llvm.smax.i64(i64 %nt0, i64 1)
  %body = load ptr, ptr %frame
  %cp = getelementptr inbounds %accel.omp_frame, ptr %frame, i64 0, i32 1
  %ctx = load ptr, ptr %cp
  %np = getelementptr inbounds %accel.omp_frame, ptr %frame, i64 0, i32 2
  %n = load i64, ptr %np
  %tp = getelementptr inbounds %accel.omp_frame, ptr %frame, i64 0, i32 3
  %t = load i64, ptr %tp
  %fp = getelementptr inbounds %accel.omp_frame, ptr %frame, i64 0, i32 4
  %cell = load ptr, ptr %fp
  %worker = icmp ne i64 %tid, 0
  %key = call i32 @accel_failure_key()
  br i1 %worker, label %redirect, label %loop_entry

redirect:                               ; failures on a worker go to the caller's cell
  %prev0 = call ptr @pthread_getspecific(i32 %key)
  %set = call i32 @pthread_setspecific(i32 %key, ptr %cell)
  br label %loop_entry

loop_entry:
  %prev = phi ptr [ null, %entry ], [ %prev0, %redirect ]
  %any = icmp slt i64 %tid, %t
  br i1 %any, label %loop, label %out

loop:
  %c = phi i64 [ %tid, %loop_entry ], [ %c1, %loop ]
  %lo_n = mul nsw i64 %n, %c
  %lo = sdiv i64 %lo_n, %t
  %c1 = add nuw nsw i64 %c, %nt
  %cn = add nuw nsw i64 %c, 1
  %hi_n = mul nsw i64 %n, %cn
  %hi = sdiv i64 %hi_n, %t
  call void %body(ptr %ctx, i64 %lo, i64 %hi)
  %more = icmp slt i64 %c1, %t
  br i1 %more, label %loop, label %out

out:
  br i1 %worker, label %restore, label %done

restore:
  %unset = call i32 @pthread_setspecific(i32 %key, ptr %prev)
  br label %done

done:
  ret void
}

define void @accel_parallel_for(ptr %body, ptr %ctx, i64 %n) {
entry:
  %set = load atomic i32, ptr @accel_num_threads monotonic, align 4
  %unset = icmp sle i32 %set, 0
  br i1 %unset, label %default, label %have

default:
  %def = call i32 @accel_default_num_threads()
  store atomic i32 %def, ptr @accel_num_threads monotonic, align 4
  br label %have

have:
  %t32 = phi i32 [ %set, %entry ], [ %def, %default ]
  %t64 = sext i32 %t32 to i64
  %tcap = call i64 @llvm.smin.i64(i64 %t64, i64 MAX_THREADS)
  %t = call i64 @llvm.smin.i64(i64 %tcap, i64 %n)
  %serial = icmp sle i64 %t, 1
  br i1 %serial, label %inline, label %fork

inline:
  %pos = icmp sgt i64 %n, 0
  br i1 %pos, label %inline_call, label %done

inline_call:
  call void %body(ptr %ctx, i64 0, i64 %n)
  br label %done

fork:
  %jobs = alloca %accel.job, i64 MAX_THREADS, align 16
  %cell = alloca [2 x i64], align 16                    ; {kind, payload}: the workers' failure
  store i64 0, ptr %cell
  %gomp = load atomic ptr, ptr @accel_omp monotonic, align 8
  %has_omp = icmp ne ptr %gomp, null
  br i1 %has_omp, label %omp, label %try_pool

omp:                                    ; the process's OpenMP threads (accel.host.openmp)
  %frame = alloca %accel.omp_frame, align 8
  store ptr %body, ptr %frame
  %fc = getelementptr inbounds %accel.omp_frame, ptr %frame, i64 0, i32 1
  store ptr %ctx, ptr %fc
  %fn = getelementptr inbounds %accel.omp_frame, ptr %frame, i64 0, i32 2
  store i64 %n, ptr %fn
  %ft = getelementptr inbounds %accel.omp_frame, ptr %frame, i64 0, i32 3
  store i64 %t, ptr %ft
  %fcell = getelementptr inbounds %accel.omp_frame, ptr %frame, i64 0, i32 4
  store ptr %cell, ptr %fcell
  ; The team is always the configured count, whatever `t`: libgomp ends the pool threads a
  ; smaller team leaves out and starts new ones for the next larger team, so a 3-item loop
  ; between two 16-item ones cost 13 thread exits and 13 pthread_creates (ATen's loops also
  ; keep the full team). Threads past `t` have no chunk and only pass the barrier.
  %team = trunc i64 %tcap to i32
  call void %gomp(ptr @accel_omp_chunks, ptr %frame, i32 %team, i32 0)
  br label %check

try_pool:
  %got = cmpxchg ptr @accel_pool_busy, i32 0, i32 1 acquire monotonic
  %owned = extractvalue { i32, i1 } %got, 1
  br i1 %owned, label %pool, label %spawn               ; pool taken: fork-join instead

pool:
  %need = sub nsw i64 %t, 1
  %workers = call i64 @accel_pool_grow(i64 %need)
  %cap = add nsw i64 %workers, 1
  %tp = call i64 @llvm.smin.i64(i64 %t, i64 %cap)
  %alone = icmp sle i64 %tp, 1
  br i1 %alone, label %pool_alone, label %pool_run

pool_alone:                             ; no worker could be started
  call void %body(ptr %ctx, i64 0, i64 %n)
  br label %pool_release

pool_run:
  call void @accel_pool_run(ptr %body, ptr %ctx, i64 %n, i64 %tp, ptr %cell, i64 %workers)
  br label %pool_release

pool_release:
  store atomic i32 0, ptr @accel_pool_busy release, align 4
  br label %check

spawn:                                  ; chunk i = [n*i/t, n*(i+1)/t) for i = 1..t-1
  %i = phi i64 [ 1, %try_pool ], [ %i1, %spawned ]
  %i1 = add nuw nsw i64 %i, 1
  %lo_n = mul nsw i64 %n, %i
  %lo = sdiv i64 %lo_n, %t
  %hi_n = mul nsw i64 %n, %i1
  %hi = sdiv i64 %hi_n, %t
  %j = getelementptr inbounds %accel.job, ptr %jobs, i64 %i
  store ptr %body, ptr %j
  %jc = getelementptr inbounds %accel.job, ptr %j, i64 0, i32 1
  store ptr %ctx, ptr %jc
  %jl = getelementptr inbounds %accel.job, ptr %j, i64 0, i32 2
  store i64 %lo, ptr %jl
  %jh = getelementptr inbounds %accel.job, ptr %j, i64 0, i32 3
  store i64 %hi, ptr %jh
  %jf = getelementptr inbounds %accel.job, ptr %j, i64 0, i32 6
  store ptr %cell, ptr %jf
  %jt = getelementptr inbounds %accel.job, ptr %j, i64 0, i32 4
  %js = getelementptr inbounds %accel.job, ptr %j, i64 0, i32 5
  %rc = call i32 @pthread_create(ptr %jt, ptr null, ptr @accel_parallel_thunk, ptr %j)
  %ok = icmp eq i32 %rc, 0
  %okx = zext i1 %ok to i64
  store i64 %okx, ptr %js
  br i1 %ok, label %spawned, label %run_here

run_here:                               ; no thread: this chunk on the calling thread
  call void %body(ptr %ctx, i64 %lo, i64 %hi)
  br label %spawned

spawned:
  %more = icmp slt i64 %i1, %t
  br i1 %more, label %spawn, label %own

own:
  %hi0 = sdiv i64 %n, %t
  call void %body(ptr %ctx, i64 0, i64 %hi0)
  br label %join

join:
  %k = phi i64 [ 1, %own ], [ %k1, %joined ]
  %k1 = add nuw nsw i64 %k, 1
  %jk = getelementptr inbounds %accel.job, ptr %jobs, i64 %k
  %jks = getelementptr inbounds %accel.job, ptr %jk, i64 0, i32 5
  %started = load i64, ptr %jks
  %was = icmp ne i64 %started, 0
  br i1 %was, label %do_join, label %joined

do_join:
  %jkt = getelementptr inbounds %accel.job, ptr %jk, i64 0, i32 4
  %tid = load i64, ptr %jkt
  %jr = call i32 @pthread_join(i64 %tid, ptr null)
  br label %joined

joined:
  %again = icmp slt i64 %k1, %t
  br i1 %again, label %join, label %check

check:                                  ; a worker failed: report it on this thread
  %kind = load i64, ptr %cell
  %pp = getelementptr inbounds [2 x i64], ptr %cell, i64 0, i64 1
  switch i64 %kind, label %done [ i64 FAIL_ASSERT, label %assert_failed
                                  i64 FAIL_ALLOC, label %alloc_failed ]

assert_failed:
  %msg = load ptr, ptr %pp
  call void @ASSERT_FAIL(ptr %msg)
  br label %done

alloc_failed:
  %bytes = load i64, ptr %pp
  call void @ALLOC_FAIL(i64 %bytes)
  br label %done

done:
  ret void
}

declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.smax.i64(i64, i64)
"""

#: JIT: the count lives in Python (`_count`); 0 never reaches the code, but stay safe.
_JIT_COUNT = """\
@accel_num_threads = external global i32
@accel_omp = external global [3 x ptr]
@accel_failure_key_value = external global i32

define i32 @accel_default_num_threads() {
  ret i32 1
}

define i32 @accel_failure_key() {
  %k = load i32, ptr @accel_failure_key_value
  ret i32 %k
}
"""

#: AOT: the library's own count, from ACCEL_NUM_THREADS or the online cores on first use.
_AOT_COUNT = """\
@accel_num_threads = global i32 0, align 4
@accel_omp = internal constant [3 x ptr] zeroinitializer   ; AOT: always accel's own pool
@accel_env_name = private unnamed_addr constant [18 x i8] c"ACCEL_NUM_THREADS\\00"

declare ptr @getenv(ptr)
declare i32 @accel_failure_key()                  ; in the library's C runtime
declare i32 @atoi(ptr)
declare i64 @sysconf(i32)

define i32 @accel_default_num_threads() {
entry:
  %env = call ptr @getenv(ptr @accel_env_name)
  %none = icmp eq ptr %env, null
  br i1 %none, label %cores, label %parse

parse:
  %v = call i32 @atoi(ptr %env)
  %good = icmp sgt i32 %v, 0
  br i1 %good, label %out, label %cores

cores:
  %c = call i64 @sysconf(i32 84)                 ; _SC_NPROCESSORS_ONLN (glibc)
  %c32 = trunc i64 %c to i32
  %cpos = icmp sgt i32 %c32, 0
  %cs = select i1 %cpos, i32 %c32, i32 1
  br label %out

out:
  %r = phi i32 [ %v, %parse ], [ %cs, %cores ]
  ret i32 %r
}
"""


def parallel_runtime_ir(aot: bool = False, serial: bool = False) -> str:
    """LLVM IR defining `accel_parallel_for` and its worker pool (`parallel_ir`); for the
    JIT (`aot` false) it declares `accel_num_threads` and binds it to the process-wide
    count, for AOT libraries it defines it (read from the environment on first use) and
    joins the pool's workers when the library is unloaded. `serial` (AOT only) fixes the
    count at 1: a `user_memory` library's pool allocator is per calling thread and follows
    the build-time sequence of allocations, which worker threads would break.

    The pool's workers run the runtime's code between calls, so the code must outlive
    them: the JIT compiles this once per process (`accel.host.jit`), never per module."""
    if not aot:
        _bind_jit_symbols()
    runtime = _RUNTIME
    if os.environ.get("ACCEL_THREAD_POOL", "").strip() == "0":  # fork-join on every call
        runtime = runtime.replace("br i1 %owned, label %pool, label %spawn",
                                  "br label %spawn")
    text = (runtime + pool_ir(MAX_THREADS, aot=aot)).replace("MAX_THREADS", str(MAX_THREADS))
    text = (text
            .replace("FAIL_ASSERT", str(FAIL_ASSERT)).replace("FAIL_ALLOC", str(FAIL_ALLOC))
            .replace("@ASSERT_FAIL", "@" + ASSERT_FAIL_SYMBOL)
            .replace("@ALLOC_FAIL", "@" + ALLOC_FAIL_SYMBOL))
    count = _JIT_COUNT
    if aot:
        count = _AOT_COUNT.replace("global i32 0", "global i32 1") if serial else _AOT_COUNT
    return text.replace("%EXTRA_DECLS%", count)
