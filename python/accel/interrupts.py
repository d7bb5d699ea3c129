"""Ctrl-C during a compile: stop within a second or two, leave nothing half-written.

Python's own SIGINT handler raises `KeyboardInterrupt` at the next bytecode of the main
thread, wherever that is. In a compile that place is often wrong:

- inside a Python callback of torch's C++ dispatcher (tracing for torch.export): some call
  sites cannot pass an exception on, and the process dies in `std::terminate` (SIGABRT);
- inside a weakref callback or a finalizer run by the garbage collector, or llvmlite's
  object-cache callback: the exception is printed ("Exception ignored in ...") and dropped,
  and the compile goes on (into a damaged cache entry, for the latter);
- inside an import (torch imports ~1,300 modules lazily on the first export): the module
  stays half-initialised for the rest of the process;
- inside MLIR's pass managers, which hold the GIL: nothing in Python runs until a pass
  returns, and a Python pass must not raise into C++ at all.

So a compile runs under `guarded()`: SIGINT only sets a flag (`pending()`), and the
interrupt (`CompileInterrupted`, a `KeyboardInterrupt`) is raised by a tracer when the next
function where that is safe is called, as that function's first act (its caller sees an
exception from a call, which its `with` and `try` blocks handle): not the standard library,
a finalizer, a generator being resumed, code running during an import, or torch's own code
outside torch.export's and torch.fx's Python drivers (`outside_torch_internals`).
Inside `deferred()` (pass manager runs, final writes) nothing is raised until the block
ends; `accel.pass_run` runs each pass under a pass manager of its own, so the run stops
between two passes. `run_releasing_gil(fn)` runs C calls that release the GIL (LLVM through
llvmlite) in a worker thread while the main thread waits, so the wait ends at once; the
abandoned worker finishes on its own (holding `LLVM_LOCK`, so no other compile enters
LLVM's global context meanwhile), and its result is dropped, never stored.

    with interrupts.guarded():              # accel.compile, compile_mlir
        with interrupts.deferred():
            pm.run(module)                  # Ctrl-C: the run stops after this pass
        obj = interrupts.run_releasing_gil(lambda: engine.finalize_object())

Only the main thread receives signals; elsewhere the helpers just run their code. Under a
SIGINT handler that is not Python's default, or a tracer of someone else's (a debugger,
coverage), Python's default behaviour stays.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: Held by the thread that runs LLVM (llvmlite uses LLVM's one global context).
LLVM_LOCK = threading.RLock()

_state = threading.local()  # guarded: our handler is installed; deferring: deferred() depth
_pending = threading.Event()
#: Set by the command-line tools, which exit on Ctrl-C: an import interrupted halfway does
#: not matter to a process that ends, so the interrupt does not wait for imports to finish.
_exits_on_interrupt = False


class CompileInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a compile (a `KeyboardInterrupt`, so `except Exception` lets it
    through); its message is the one line the tools print."""


def interrupted(what: str = "compile") -> CompileInterrupted:
    return CompileInterrupted(f"{what} interrupted")


def exit_on_interrupt() -> None:
    """This process ends on Ctrl-C (a command-line tool): see `_exits_on_interrupt`."""
    global _exits_on_interrupt
    _exits_on_interrupt = True


def pending() -> bool:
    """Whether a Ctrl-C arrived that has not been raised yet."""
    return _pending.is_set()


def check() -> None:
    """Raise the pending interrupt now (`CompileInterrupted`), if there is one; inside a
    `deferred()` block nothing (its end raises it: never inside a callback from C)."""
    if _pending.is_set() and not getattr(_state, "deferring", 0):
        _pending.clear()
        raise interrupted()


def _installable() -> bool:
    return threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler and sys.gettrace() is None


# -- where a raise is safe -----------------------------------------------------------------
@functools.cache
def _stdlib() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple({os.path.join(paths[k], "") for k in ("stdlib", "platstdlib")})


@functools.cache
def _torch_dirs() -> tuple[str, tuple[str, ...], str] | None:
    """(torch's package folder, the folders of torch.export's and torch.fx's Python
    drivers, torch.fx's tracing modes), once torch is imported."""
    torch = sys.modules.get("torch")
    if torch is None or not getattr(torch, "__file__", None):
        return None
    root = os.path.join(os.path.dirname(torch.__file__), "")
    return root, (f"{root}export{os.sep}", f"{root}_export{os.sep}", f"{root}fx{os.sep}"), \
        f"{root}fx{os.sep}experimental{os.sep}"


def outside_torch_internals(code: Any) -> bool:
    """Whether a frame of `code` may raise: not torch's own code (its C++ dispatcher calls
    back into it), except torch.export's and torch.fx's drivers (graphs, code generation),
    which Python calls; the model's code, transformers, torch-mlir's importer and accel's
    own may."""
    dirs = _torch_dirs() if "torch" in sys.modules else None
    if dirs is None:
        return True
    root, drivers, dispatch = dirs
    file = code.co_filename
    return not file.startswith(root) or (file.startswith(drivers)
                                         and not file.startswith(dispatch))


_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _never_safe(code: Any) -> bool:
    """Where a raise is lost or half-done whoever calls the code: the standard library
    (weakref callbacks print and drop exceptions), finalizers and context managers' exits
    (cleanup), frozen import machinery."""
    return code.co_name in ("__del__", "__exit__", "__aexit__") or \
        code.co_filename.startswith(("<frozen", *_stdlib()))


def _inside_import(frame: Any) -> bool:
    """Whether a module is being imported somewhere up `frame`'s stack."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith("<frozen importlib") or (
                code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__"):
            return True
        frame = frame.f_back
    return False


# -- the blocks ----------------------------------------------------------------------------
@contextlib.contextmanager
def guarded(is_safe: Callable[[Any], bool] = outside_torch_internals) -> Iterator[None]:
    """accel's SIGINT handling for the block (see the module's docstring): the interrupt is
    raised by the next call of a function whose code `is_safe` accepts (and that is not the
    standard library, a finalizer, a generator or an import), never inside `deferred()`; at
    the latest when the block ends. Nests (the outermost block counts); off the main thread, under
    another SIGINT handler or a tracer, Python's default behaviour."""
    if getattr(_state, "guarded", False) or not _installable():
        yield
        return

    def safe(code: Any) -> bool:
        return not _never_safe(code) and is_safe(code)

    def tracer(frame: Any, event: str, arg: Any) -> None:  # noqa: ARG001 - a tracer's signature
        # Raised as the first thing a newly called function does: the caller sees an
        # exception from a call, which its `with`/`try` blocks handle, never one in the
        # middle of its own line (after `with lock:` took the lock, say). Not when a
        # generator resumes (a context manager's cleanup would be skipped).
        code = frame.f_code
        if event == "call" and _pending.is_set() and not getattr(_state, "deferring", 0) \
                and not code.co_flags & _RESUMABLE and safe(code) \
                and (_exits_on_interrupt or not _inside_import(frame)):
            sys.settrace(None)
            _pending.clear()
            raise interrupted()

    def handler(signum: int, frame: Any) -> None:  # noqa: ARG001 - a signal handler's signature
        _pending.set()
        sys.settrace(tracer)  # last: this handler's own lines must not raise

    previous = signal.signal(signal.SIGINT, handler)
    _state.guarded = True
    try:
        yield
    finally:
        _state.guarded = False
        signal.signal(signal.SIGINT, previous)
        if sys.gettrace() is tracer:
            sys.settrace(None)
        check()  # the user asked to stop: that wins over an error on its way out


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Nothing is raised inside the block (C code that calls back into Python: pass
    managers with Python passes; the final writes of a compile); a Ctrl-C that came is
    raised when it ends (also in place of an exception on its way out). Nests."""
    with guarded(lambda code: False):  # when not guarded yet: a handler that only flags
        _state.deferring = getattr(_state, "deferring", 0) + 1
        try:
            yield
        finally:
            _state.deferring -= 1
            check()


def run_releasing_gil(fn: Callable[[], T]) -> T:
    """`fn()` (C calls that release the GIL, e.g. LLVM's optimiser) in a worker thread while
    the main thread waits, so that Ctrl-C interrupts the wait at once. Inside `deferred()`,
    off the main thread, or under a SIGINT handler of someone else's, `fn()` is simply
    called. `fn` runs under `LLVM_LOCK`."""
    ours = getattr(_state, "guarded", False) or _installable()
    if getattr(_state, "deferring", 0) or not ours or \
            threading.current_thread() is not threading.main_thread():
        with LLVM_LOCK:
            return fn()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            with LLVM_LOCK:
                box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = err

    worker = threading.Thread(target=work, name="accel-llvm", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
            check()
    except KeyboardInterrupt:
        # The worker finishes by itself; its result is dropped (nothing is stored).
        raise interrupted() from None
    if "error" in box:
        raise box["error"]
    return box["value"]
