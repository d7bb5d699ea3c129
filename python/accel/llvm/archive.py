"""Several object files as one blob: a Unix `ar` archive (what `ar t` lists).

A module big enough for parallel code generation (`accel.host.codegen`) becomes several
objects, and everything that keeps "the object code" of a compile (the compile cache, a
saved artifact's `module.o`, `phases.Recorder.object_code`) keeps one blob. One object is
kept as it is (no archive around it), so small modules are stored as before.

The archive is deterministic (no dates, owners or modes: the same objects give the same
bytes) and has no symbol index: it is a container for the JIT, not a library for `ld`.
"""

from __future__ import annotations

from accel.diagnostics import AccelError

MAGIC = b"!<arch>\n"
_HEADER = 60


def is_archive(data: bytes) -> bool:
    return bytes(data[:len(MAGIC)]) == MAGIC


def bundle(objects: list[bytes]) -> bytes:
    """One blob of `objects`: the object itself when there is one, else an archive."""
    if len(objects) == 1:
        return bytes(objects[0])
    out = bytearray(MAGIC)
    for i, obj in enumerate(objects):
        name = f"part{i}.o/".encode()
        out += (name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6)
                + b"644".ljust(8) + str(len(obj)).encode().ljust(10) + b"`\n")
        out += obj
        if len(obj) % 2:
            out += b"\n"
    return bytes(out)


def members(data: bytes) -> list[bytes]:
    """The objects of a blob made by `bundle` (a bare object is a list of one).

    Raises `AccelError` on an archive whose headers run past its end."""
    if not is_archive(data):
        return [bytes(data)]
    found, at, size = [], len(MAGIC), len(data)
    while at < size:
        header = bytes(data[at:at + _HEADER])
        if len(header) < _HEADER or header[58:60] != b"`\n":
            raise AccelError(f"object archive: malformed member header at byte {at}")
        try:
            length = int(header[48:58].decode("ascii").strip())
        except ValueError:
            raise AccelError(f"object archive: bad member size at byte {at}") from None
        start = at + _HEADER
        if length < 0 or start + length > size:
            raise AccelError(f"object archive: member at byte {at} runs past the end")
        found.append(bytes(data[start:start + length]))
        at = start + length + (length % 2)
    if not found:
        raise AccelError("object archive: no members")
    return found
