"""A compile worker process (`python -m accel.host.worker`): calls compile functions of
accel by name and sends back what they return.

`accel.host.codegen.parallel_map` runs LLVM work (the parts of a big host module, the
PTX of GPU kernels) in several of these at once: LLVM holds llvmlite's process-wide lock,
so threads would run one at a time. A worker is a plain subprocess, not `multiprocessing`:
spawning through multiprocessing re-runs the user's `__main__` script, and an unguarded
script calling `accel.compile` would compile again in every worker.

Protocol on stdin/stdout, one pickle per message: a request `("module:function", args)`
(only functions of `accel` packages: `CALLABLE`), an answer `(True, result)` or `(False,
error_line)` for an `AccelError`; the worker serves requests until stdin closes.
"""

from __future__ import annotations

import importlib
import pickle
import signal
import sys
from typing import Any

from accel.diagnostics import AccelError
from accel.llvm import engine

#: What a worker may be asked to call.
CALLABLE = frozenset({"accel.host.worker:compile_part", "accel.targets.nvgpu.ptx:emit_ptx"})


def compile_part(llvm_ir: str, opt_level: int, cpu: str, features: str) -> bytes:
    """Optimise `llvm_ir` at `opt_level` for `cpu` and return its object code (for the JIT:
    the same target machine settings as the in-process JIT's)."""
    mod = engine.parse(llvm_ir, "code generation partition")
    tm = engine.target_machine(opt_level, cpu=cpu, features=features)
    engine.prepare(mod, tm)
    engine.optimize(mod, tm, opt_level)
    return bytes(tm.emit_object(mod))


def call(name: str, args: tuple[Any, ...]) -> Any:
    """`name` ("module:function", one of `CALLABLE`) called with `args`."""
    if name not in CALLABLE:
        raise AccelError(f"internal error: the compile worker cannot call {name}")
    module, function = name.split(":")
    return getattr(importlib.import_module(module), function)(*args)


def main() -> int:
    # Ctrl-C in the terminal reaches the whole process group: die quietly, the parent
    # reports the interrupt.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            name, args = pickle.load(stdin)
        except EOFError:
            return 0
        try:
            answer: tuple[bool, Any] = (True, call(name, args))
        except AccelError as err:
            answer = (False, str(err))
        pickle.dump(answer, stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
