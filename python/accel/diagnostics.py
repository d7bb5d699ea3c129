"""Located diagnostics: the one place that turns MLIR errors into `FILE:LINE:COL: error: ...`.

The bindings report parse, verify and pass failures as `MLIRError` whose diagnostics carry
locations such as `loc("-":2:8)` (a string parsed from memory is always named `-`). accel
re-labels them with the real file name and the line offset of a `--split-input-file` chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the bindings load only where MLIR is used, not with every error
    from accel.ir import MLIRError

_FILE_LINE_COL = re.compile(r'"(?P<file>(?:[^"\\]|\\.)*)":(?P<line>\d+):(?P<col>\d+)')

SEVERITIES = ("error", "warning", "note", "remark")


@dataclass
class Diagnostic:
    """One diagnostic with an optional source position and attached notes."""

    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    notes: list[Diagnostic] = field(default_factory=list)

    def format(self) -> str:
        """`file:line:col: severity: message`, then one line per note."""
        where = f"{self.file}:{self.line}:{self.col}: " if self.line is not None else (
            f"{self.file}: " if self.file else ""
        )
        first, *rest = self.message.splitlines() or [""]
        lines = [f"{where}{self.severity}: {first}", *rest]
        lines += [note.format() for note in self.notes]
        return "\n".join(lines)


class AccelError(Exception):
    """A user-facing error: printed as located diagnostics, never as a traceback."""

    def __init__(self, message: str | None = None, *, diagnostics: list[Diagnostic] | None = None,
                 file: str | None = None, line: int | None = None, col: int | None = None):
        if diagnostics is None:
            diagnostics = [Diagnostic("error", message or "", file, line, col)]
        self.diagnostics = diagnostics
        super().__init__(message if message is not None else diagnostics[0].message)

    def format(self) -> str:
        return "\n".join(d.format() for d in self.diagnostics)


def parse_location(loc: object) -> tuple[str, int, int] | None:
    """First `"file":line:col` inside a printed location (handles fused/callsite/name locs)."""
    m = _FILE_LINE_COL.search(str(loc))
    if m is None:
        return None
    return m.group("file"), int(m.group("line")), int(m.group("col"))


def relocate(
    loc: object, filename: str, line_offset: int = 0
) -> tuple[str, int | None, int | None]:
    """Map a location from a buffer parsed from memory to the user's file and line."""
    parsed = parse_location(loc)
    if parsed is None:
        return filename, None, None
    file, line, col = parsed
    if line == 0:  # the implicit top-level module: point at the start of the buffer
        line, col = 1, 1
    if file in ("-", "", "<stdin>"):
        return filename, line + line_offset, col
    return file, line, col


def from_mlir_diagnostic(diag: object, filename: str, line_offset: int = 0) -> Diagnostic:
    """Convert one `DiagnosticInfo` of the bindings (with its notes)."""
    severity = str(getattr(diag, "severity", "error")).rsplit(".", 1)[-1].lower()
    if severity not in SEVERITIES:
        severity = "error"
    file, line, col = relocate(diag.location, filename, line_offset)
    notes = [from_mlir_diagnostic(n, filename, line_offset) for n in getattr(diag, "notes", [])]
    return Diagnostic(severity, str(diag.message), file, line, col, notes)


def from_mlir_error(err: MLIRError, filename: str, line_offset: int = 0,
                    context: str | None = None) -> AccelError:
    """Turn an `MLIRError` into an `AccelError` with relocated diagnostics."""
    diags = [from_mlir_diagnostic(d, filename, line_offset) for d in err.error_diagnostics]
    if not diags:
        text = str(err).splitlines()[-1] if str(err) else "unknown MLIR error"
        diags = [Diagnostic("error", text, filename)]
    if context:
        diags[0].message = f"{context}: {diags[0].message}"
    return AccelError(diags[0].message, diagnostics=diags)


class PassFailure(Exception):
    """Raised inside a pass's `apply` to fail it with a located error (see `Pass.fail`)."""

    def __init__(self, message: str, location: object | None = None):
        super().__init__(message)
        self.location = location


class NotSupportedYet(AccelError, NotImplementedError):
    """A feature (an option value, a target) that is planned but not built yet."""


_TORCH_ALLOC = re.compile(r"tried to allocate (\d+) bytes")
_NUMPY_ALLOC = re.compile(r"Unable to allocate ([\d.]+ [KMGTPE]?i?B) for an array with shape "
                          r"(\([^)]*\))")


def gib(nbytes: int) -> str:
    """`nbytes` as "N GiB" (or MiB for small sizes), for "needs N GiB" messages."""
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):,.1f} GiB"
    return f"{nbytes / (1 << 20):,.1f} MiB"


def out_of_memory(err: BaseException) -> str | None:
    """What an allocation failure of torch or numpy asked for, as "needs N GiB (...)", or None
    when `err` is not one: the cause in words instead of an allocator's internals."""
    text = str(err)
    torch_alloc = _TORCH_ALLOC.search(text)
    if torch_alloc:
        return f"needs {gib(int(torch_alloc.group(1)))} (a tensor that large cannot be allocated)"
    numpy_alloc = _NUMPY_ALLOC.search(text)
    if numpy_alloc:
        return (f"needs {numpy_alloc.group(1)} for an array of shape {numpy_alloc.group(2)}, "
                "which cannot be allocated")
    if isinstance(err, MemoryError):
        return f"ran out of memory{': ' + text if text else ''}"
    return None


def too_deep(what: str) -> str:
    """The message for a `RecursionError`: what nests too deeply, not Python's limit."""
    return (f"{what} nests too deeply (Python's recursion limit was reached while processing "
            "it)")
