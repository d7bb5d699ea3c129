"""LLVM IR of `accel_parallel_for`: a persistent worker pool, with fork-join as its fallback.

Why a pool: a fork-join call that creates and joins T-1 threads pays ~20-50 us per thread,
serially on the caller. On 16 cores a small GEMM (an MLP layer at batch 64) then spends
more on thread starts than on work: measured on a 16-core Xeon, accel's MLP b64 took 780 us
at 1 thread and 696 us at 16. A pool's workers stay alive between calls; one call costs
a store and a wake-up.

Protocol (all in the globals below; one pool per JIT process, one per AOT library):
* A caller takes the pool with a compare-and-swap on `busy`. A caller that finds it taken
  (two threads calling compiled code at once, or a parallel body calling a parallel loop)
  runs the fork-join path of earlier versions instead: correct, only slower.
* The owner grows the pool to T-1 workers if needed. Workers have ids 1..W and never exit,
  except in an AOT library's destructor. It writes the job (body, ctx, n, T, failure cell),
  sets `remaining = W` and bumps the 32-bit generation `gen`, then wakes sleepers if any.
* A worker that sees a new generation runs chunk `id` of the job if `id < T`, then
  decrements `remaining`, every worker, runs a chunk or not. So the owner never starts
  job g+1 while a worker may still read job g. The owner runs chunk 0 itself, waits for
  `remaining == 0`, and releases `busy`.
* Between jobs a worker spins for SPIN_NS (checking `gen` with `pause`). Then it sleeps on a
  condition variable. Kernels of one model follow each other within microseconds, so the
  pool stays hot through a call. Idle between calls, it holds no core for longer than
  SPIN_NS: it cannot starve PyTorch's own threads.
  No lost wake-up: a sleeper adds itself to `sleepers` and re-reads `gen` under the mutex,
  and the owner bumps `gen` and reads `sleepers`, both sequentially consistent. So either
  the sleeper sees the new job, or the owner sees the sleeper and broadcasts under the
  mutex.
* `fork()`: the child has the parent's globals but none of its threads. The pool records
  the process id that started its workers; an owner in another process (a forked child)
  empties the pool first and starts new workers. No `pthread_atfork`: glibc exports it
  only through libc_nonshared.a, out of the JIT's reach.
* Failures on workers reach the caller as before: each worker points its pthread-key
  failure cell at the job's cell for the chunk (parallel.py's docstring).
"""

from __future__ import annotations

import platform

#: How long an idle worker spins before it sleeps (nanoseconds).
SPIN_NS = 200_000

_POOL_GLOBALS = """\
@accel_pool_gen = internal global i32 0, align 64
@accel_pool_busy = internal global i32 0, align 64
@accel_pool_remaining = internal global i64 0, align 64
@accel_pool_sleepers = internal global i32 0, align 64
@accel_pool_quit = internal global i32 0, align 4
@accel_pool_pid = internal global i32 0, align 4
@accel_pool_workers = internal global i64 0, align 8
@accel_pool_body = internal global ptr null, align 8
@accel_pool_ctx = internal global ptr null, align 8
@accel_pool_n = internal global i64 0, align 8
@accel_pool_t = internal global i64 0, align 8
@accel_pool_cell = internal global ptr null, align 8
@accel_pool_tids = internal global [MAX_THREADS x i64] zeroinitializer, align 8
@accel_pool_mutex = internal global [64 x i8] zeroinitializer, align 16  ; PTHREAD_MUTEX_INITIALIZER
@accel_pool_cond = internal global [64 x i8] zeroinitializer, align 16   ; PTHREAD_COND_INITIALIZER

declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @getpid()
declare i32 @clock_gettime(i32, ptr)
declare i32 @sched_yield()
%PAUSE_DECL%

define internal i64 @accel_pool_now() {
  %ts = alloca [2 x i64], align 8
  %r = call i32 @clock_gettime(i32 1, ptr %ts)                 ; CLOCK_MONOTONIC
  %s = load i64, ptr %ts
  %np = getelementptr inbounds [2 x i64], ptr %ts, i64 0, i64 1
  %ns = load i64, ptr %np
  %sns = mul i64 %s, 1000000000
  %t = add i64 %sns, %ns
  ret i64 %t
}

define internal ptr @accel_pool_worker(ptr %arg) {
entry:
  %a = ptrtoint ptr %arg to i64
  %id = and i64 %a, 4294967295                                 ; arg = gen << 32 | id
  %s0 = lshr i64 %a, 32
  %seen0 = trunc i64 %s0 to i32
  br label %wait

wait:
  %seen = phi i32 [ %seen0, %entry ], [ %g, %finished ]
  %since = call i64 @accel_pool_now()
  br label %spin

spin:
  %k = phi i32 [ 0, %wait ], [ %k1, %paused ], [ 0, %clock ]
  %g0 = load atomic i32, ptr @accel_pool_gen acquire, align 4
  %new0 = icmp ne i32 %g0, %seen
  br i1 %new0, label %run, label %paused

paused:
  %PAUSE_CALL%
  %k1 = add i32 %k, 1
  %check = icmp eq i32 %k1, 64
  br i1 %check, label %clock, label %spin

clock:
  %now = call i64 @accel_pool_now()
  %spun = sub i64 %now, %since
  %long = icmp sgt i64 %spun, SPIN_NS
  br i1 %long, label %sleep, label %spin

sleep:
  %l = call i32 @pthread_mutex_lock(ptr @accel_pool_mutex)
  %s1 = atomicrmw add ptr @accel_pool_sleepers, i32 1 seq_cst
  br label %sleep_check

sleep_check:
  %g1 = load atomic i32, ptr @accel_pool_gen seq_cst, align 4
  %same = icmp eq i32 %g1, %seen
  br i1 %same, label %sleep_wait, label %woke

sleep_wait:
  %w = call i32 @pthread_cond_wait(ptr @accel_pool_cond, ptr @accel_pool_mutex)
  br label %sleep_check

woke:
  %s2 = atomicrmw sub ptr @accel_pool_sleepers, i32 1 seq_cst
  %u = call i32 @pthread_mutex_unlock(ptr @accel_pool_mutex)
  br label %run

run:
  %g = phi i32 [ %g0, %spin ], [ %g1, %woke ]
  %quit = load atomic i32, ptr @accel_pool_quit acquire, align 4
  %stop = icmp ne i32 %quit, 0
  br i1 %stop, label %exit, label %job

job:
  %t = load i64, ptr @accel_pool_t                             ; published by gen's release
  %mine = icmp slt i64 %id, %t
  br i1 %mine, label %work, label %finished

work:
  %n = load i64, ptr @accel_pool_n
  %lo_n = mul nsw i64 %n, %id
  %lo = sdiv i64 %lo_n, %t
  %id1 = add nuw nsw i64 %id, 1
  %hi_n = mul nsw i64 %n, %id1
  %hi = sdiv i64 %hi_n, %t
  %body = load ptr, ptr @accel_pool_body
  %ctx = load ptr, ptr @accel_pool_ctx
  %cell = load ptr, ptr @accel_pool_cell
  %key = call i32 @accel_failure_key()
  %set = call i32 @pthread_setspecific(i32 %key, ptr %cell)   ; failures go to the caller
  call void %body(ptr %ctx, i64 %lo, i64 %hi)
  %unset = call i32 @pthread_setspecific(i32 %key, ptr null)
  br label %finished

finished:
  %left = atomicrmw sub ptr @accel_pool_remaining, i64 1 release
  br label %wait

exit:
  ret ptr null
}

; Owner only. Grows the pool to `need` workers (fewer if pthread_create fails); returns the
; worker count. In a process other than the one that started the workers (a fork()ed
; child: globals copied, threads not), it empties the pool first.
define internal i64 @accel_pool_grow(i64 %need) {
entry:
  %pid = call i32 @getpid()
  %owner = load i32, ptr @accel_pool_pid
  %same = icmp eq i32 %pid, %owner
  br i1 %same, label %count, label %reset

reset:
  store i64 0, ptr @accel_pool_workers
  store i32 0, ptr @accel_pool_sleepers
  store i64 0, ptr @accel_pool_remaining
  store [64 x i8] zeroinitializer, ptr @accel_pool_mutex
  store [64 x i8] zeroinitializer, ptr @accel_pool_cond
  store i32 %pid, ptr @accel_pool_pid
  br label %count

count:
  %have = load i64, ptr @accel_pool_workers
  %grow = icmp slt i64 %have, %need
  br i1 %grow, label %create, label %out

create:
  %w = phi i64 [ %have, %count ], [ %w1, %created ]
  %id = add nuw nsw i64 %w, 1
  %gen = load atomic i32, ptr @accel_pool_gen monotonic, align 4   ; only the owner bumps it
  %gen64 = zext i32 %gen to i64
  %hi = shl i64 %gen64, 32
  %packed = or i64 %hi, %id
  %arg = inttoptr i64 %packed to ptr
  %tid = getelementptr inbounds [MAX_THREADS x i64], ptr @accel_pool_tids, i64 0, i64 %id
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @accel_pool_worker, ptr %arg)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %created, label %out

created:
  %w1 = add nuw nsw i64 %w, 1
  store i64 %w1, ptr @accel_pool_workers
  %more = icmp slt i64 %w1, %need
  br i1 %more, label %create, label %out

out:
  %workers = load i64, ptr @accel_pool_workers
  ret i64 %workers
}

; Owner only: runs [0, n) in t chunks on the pool (t <= workers + 1); chunk 0 here.
define internal void @accel_pool_run(ptr %body, ptr %ctx, i64 %n, i64 %t, ptr %cell,
                                     i64 %workers) {
entry:
  store ptr %body, ptr @accel_pool_body
  store ptr %ctx, ptr @accel_pool_ctx
  store i64 %n, ptr @accel_pool_n
  store i64 %t, ptr @accel_pool_t
  store ptr %cell, ptr @accel_pool_cell
  store atomic i64 %workers, ptr @accel_pool_remaining monotonic, align 8
  %old = atomicrmw add ptr @accel_pool_gen, i32 1 seq_cst        ; publishes the job
  %sleeping = load atomic i32, ptr @accel_pool_sleepers seq_cst, align 4
  %any = icmp ne i32 %sleeping, 0
  br i1 %any, label %wake, label %own

wake:
  %l = call i32 @pthread_mutex_lock(ptr @accel_pool_mutex)
  %b = call i32 @pthread_cond_broadcast(ptr @accel_pool_cond)
  %u = call i32 @pthread_mutex_unlock(ptr @accel_pool_mutex)
  br label %own

own:
  %hi0 = sdiv i64 %n, %t
  call void %body(ptr %ctx, i64 0, i64 %hi0)
  br label %wait

wait:
  %j = phi i32 [ 0, %own ], [ %j1, %pause ], [ 0, %yield ]
  %left = load atomic i64, ptr @accel_pool_remaining acquire, align 8
  %done = icmp eq i64 %left, 0
  br i1 %done, label %out, label %pause

pause:
  %PAUSE_CALL%
  %j1 = add i32 %j, 1
  %long = icmp eq i32 %j1, 1024
  br i1 %long, label %yield, label %wait

yield:                                  ; a worker off its core: let it run
  %y = call i32 @sched_yield()
  br label %wait

out:
  ret void
}
"""

#: AOT libraries only: stop and join the workers when the library is unloaded (dlclose, or
#: the process's exit), unless a call is in flight.
_POOL_SHUTDOWN = """\
define internal void @accel_pool_shutdown() {
entry:
  %w = load i64, ptr @accel_pool_workers
  %none = icmp eq i64 %w, 0
  br i1 %none, label %out, label %ours

ours:                                   ; a forked child has none of the workers to join
  %pid = call i32 @getpid()
  %owner = load i32, ptr @accel_pool_pid
  %same = icmp eq i32 %pid, %owner
  br i1 %same, label %take, label %out

take:
  %got = cmpxchg ptr @accel_pool_busy, i32 0, i32 1 acquire monotonic
  %owned = extractvalue { i32, i1 } %got, 1
  br i1 %owned, label %stop, label %out

stop:
  store atomic i32 1, ptr @accel_pool_quit release, align 4
  %old = atomicrmw add ptr @accel_pool_gen, i32 1 seq_cst
  %l = call i32 @pthread_mutex_lock(ptr @accel_pool_mutex)
  %b = call i32 @pthread_cond_broadcast(ptr @accel_pool_cond)
  %u = call i32 @pthread_mutex_unlock(ptr @accel_pool_mutex)
  br label %join

join:
  %i = phi i64 [ 1, %stop ], [ %i1, %join ]
  %tp = getelementptr inbounds [MAX_THREADS x i64], ptr @accel_pool_tids, i64 0, i64 %i
  %tid = load i64, ptr %tp
  %jr = call i32 @pthread_join(i64 %tid, ptr null)
  %i1 = add nuw nsw i64 %i, 1
  %more = icmp sle i64 %i1, %w
  br i1 %more, label %join, label %reset

reset:
  store i64 0, ptr @accel_pool_workers
  store atomic i32 0, ptr @accel_pool_quit monotonic, align 4
  store atomic i32 0, ptr @accel_pool_busy release, align 4
  br label %out

out:
  ret void
}

@llvm.global_dtors = appending global [1 x { i32, ptr, ptr }]
                     [{ i32, ptr, ptr } { i32 65535, ptr @accel_pool_shutdown, ptr null }]
"""


def _pause(machine: str) -> tuple[str, str]:
    """The spin-wait hint for `machine` (declaration, call): x86's `pause`, Arm's `yield`."""
    if machine in ("x86_64", "amd64", "i386", "i686"):
        return ("declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()")
    if machine in ("aarch64", "arm64"):
        return ("declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)")
    return ("", "")


def pool_ir(max_threads: int, *, aot: bool, machine: str | None = None) -> str:
    """The pool's globals and functions (`accel_pool_grow`, `accel_pool_run`), and for AOT
    libraries the destructor that joins its workers."""
    decl, call = _pause(machine or platform.machine().lower())
    text = _POOL_GLOBALS + (_POOL_SHUTDOWN if aot else "")
    return (text.replace("%PAUSE_DECL%", decl).replace("%PAUSE_CALL%", call)
            .replace("MAX_THREADS", str(max_threads)).replace("SPIN_NS", str(SPIN_NS)))
