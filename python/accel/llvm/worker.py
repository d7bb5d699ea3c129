"""A code generation worker: LLVM IR in, object code out (`python -m accel.llvm.worker`).

`accel.host.codegen` compiles the partitions of a big module in several of these at once
(LLVM holds llvmlite's process-wide lock, so threads would run one at a time). A worker
is a plain subprocess, not `multiprocessing`: spawning through multiprocessing re-runs the
user's `__main__` script, and an unguarded script calling `accel.compile` would compile
again in every worker. Protocol on stdin/stdout, one pickle per message: a request
`(llvm_ir, opt_level, cpu, features)`, an answer `(True, object_bytes)` or `(False,
error_line)`; the worker serves requests until stdin closes.
"""

from __future__ import annotations

import pickle
import signal
import sys

from accel.diagnostics import AccelError
from accel.llvm import engine


def compile_part(llvm_ir: str, opt_level: int, cpu: str, features: str) -> bytes:
    """Optimise `llvm_ir` at `opt_level` for `cpu` and return its object code (for the JIT:
    the same target machine settings as the in-process JIT's)."""
    mod = engine.parse(llvm_ir, "code generation partition")
    tm = engine.target_machine(opt_level, cpu=cpu, features=features)
    engine.prepare(mod, tm)
    engine.optimize(mod, tm, opt_level)
    return bytes(tm.emit_object(mod))


def main() -> int:
    # Ctrl-C in the terminal reaches the whole process group: die quietly, the parent
    # reports the interrupt.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            request = pickle.load(stdin)
        except EOFError:
            return 0
        try:
            answer: tuple[bool, bytes | str] = (True, compile_part(*request))
        except AccelError as err:
            answer = (False, str(err))
        pickle.dump(answer, stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
