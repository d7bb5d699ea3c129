"""`perf` symbol maps for JIT code (`ACCEL_PERF_MAP=1`).

`perf record` samples JIT-compiled code at addresses no ELF file names; `perf report` looks
such addresses up in `/tmp/perf-<pid>.map` ("START SIZE NAME" in hex, one function a line),
the convention V8, the JVM and LuaJIT follow. With `$ACCEL_PERF_MAP` set, every module the
JIT links appends its functions there, so a profile of a compiled model names its kernels
and fused nests instead of `[unknown]`. Sizes are the distance to the next function of the
same module (MCJIT does not hand out symbol sizes), the last one 4 KiB at most. AOT
libraries need no map: they are ELF files whose symbols `perf` reads itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable

ENV = "ACCEL_PERF_MAP"
_LAST_SIZE = 4096
_LOCK = threading.Lock()


def enabled() -> bool:
    """Whether `$ACCEL_PERF_MAP` asks for a map (unset, empty and "0" do not)."""
    return os.environ.get(ENV, "") not in ("", "0")


def path() -> str:
    """Where `perf report` looks for this process's map."""
    return f"/tmp/perf-{os.getpid()}.map"


def entries(names: Iterable[str], address_of: Callable[[str], int]) -> list[tuple[int, int, str]]:
    """(start, size, name) for the functions among `names` that have code, by address."""
    found = sorted((address, name) for name in names if (address := address_of(name)))
    out = []
    for index, (address, name) in enumerate(found):
        end = found[index + 1][0] if index + 1 < len(found) else address + _LAST_SIZE
        out.append((address, max(1, min(end - address, 1 << 24)), name))
    return out


def record(names: Iterable[str], address_of: Callable[[str], int]) -> None:
    """Append the functions of one linked module to this process's map, if asked for."""
    if not enabled():
        return
    lines = "".join(f"{start:x} {size:x} {name}\n"
                    for start, size, name in entries(names, address_of))
    with _LOCK, open(path(), "a", encoding="ascii", errors="replace") as out:
        out.write(lines)
