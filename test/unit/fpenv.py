"""This thread's floating-point environment (x87 control word, MXCSR), for tests.

libmvec's results depend on the rounding mode (eager's SLEEF and scalar libm do not), so
conftest checks that no test leaves it changed and test_vecmath reports it on a miss.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator

_LIBC = ctypes.CDLL(None)
#: glibc's FE_DFL_ENV: ((const fenv_t *) -1).
_DEFAULT = ctypes.c_void_p(-1)


def fp_environment() -> tuple[int, int]:
    """(x87 control word, MXCSR without its sticky exception flags) of this thread."""
    env = (ctypes.c_uint32 * 8)()
    _LIBC.fegetenv(env)
    return env[0] & 0xFFFF, env[7] & 0xFFC0


def reset_fp_environment() -> None:
    """Round to nearest, no FTZ/DAZ, exceptions masked: the process's default."""
    _LIBC.fesetenv(_DEFAULT)


@contextlib.contextmanager
def default_fp_environment() -> Iterator[None]:
    """The default environment inside the block, this thread's own restored after it."""
    saved = (ctypes.c_uint32 * 8)()
    _LIBC.fegetenv(saved)
    reset_fp_environment()
    try:
        yield
    finally:
        _LIBC.fesetenv(saved)
