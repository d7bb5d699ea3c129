"""mlir-opt's input handling: `--split-input-file`, diagnostics printed as LLVM's SourceMgr
prints them, and `--verify-diagnostics`, following the bundled MLIR (ToolUtilities.cpp,
Diagnostics.cpp `SourceMgrDiagnosticHandler` / `SourceMgrDiagnosticVerifierHandler`).

* Splitting cuts the text at every occurrence of the marker (default `// -----`), not only
  at whole lines. It splits at the marker less its last two characters and then looks at the
  next two: anything else is a "near miss" (a warning), and the piece joins the chunk before.
  Upstream's check of the character after the marker compares with '0' (not '-'), so
  `// ------` splits and leaves a `-` at the start of the next chunk; this is mirrored.
* A diagnostic in the input prints as `file:line:col: error: message`, the source line and a
  caret (`^~~~` under a range); one without a location as `<unknown>:0: error: message`.
* Expectations are `expected-(error|warning|note|remark)[-re] [@+N|@-N|@above|@below|@unknown]
  {{text}}` at the end of a line. `@below` binds to the next line that holds no expectation
  (so stacked `@below` lines all bind to the same line), `@above` to the last such line
  before it. Each diagnostic (and each of its notes) must match one on its line: same
  severity and the text contained in the message (`-re`: `{{...}}` parts are regexes). One
  that matches nothing is "unexpected"; one that matches but for the severity is a near miss.
  Expectations are read from the whole file at the start; unmatched ones are reported at the
  end, in file order, then those at unknown locations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from accel.diagnostics import Diagnostic

DEFAULT_MARKER = "// -----"
_EXPECTED = re.compile(r"expected-(error|note|remark|warning)(-re)? *"
                       r"(@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}$")
_POSIX_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
                  "lower": "a-z", "space": r" \t\n\r\f\v", "xdigit": "0-9A-Fa-f",
                  "punct": r"!-/:-@\[-`{-~", "blank": r" \t"}


# -- the source buffer ----------------------------------------------------------------------
@dataclass
class Source:
    """The input file as LLVM's SourceMgr holds it: name, text, and line starts."""

    name: str
    text: str
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    def line_col(self, offset: int) -> tuple[int, int]:
        import bisect

        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def line_text(self, line: int) -> str | None:
        if not 1 <= line <= len(self.starts):
            return None
        end = self.text.find("\n", self.starts[line - 1])
        return self.text[self.starts[line - 1]: None if end < 0 else end].rstrip("\r")

    def message(self, severity: str, text: str, line: int | None, col: int | None,
                *, file: str | None = None, show_source: bool = True, length: int = 0) -> str:
        """One diagnostic as SourceMgr prints it (source line and caret when in this file)."""
        if line is None:  # no place at all, or only a file (accel's errors on the input)
            return f"{file}: {severity}: {text}" if file else f"<unknown>:0: {severity}: {text}"
        file = self.name if file is None else file
        head = f"{file}:{line}:{col}: {severity}: {text}"
        source = self.line_text(line) if file == self.name and line and col else None
        if not show_source or source is None:
            return head
        return f"{head}\n{_caret(source, col or 1, length)}"


def _caret(source: str, col: int, length: int) -> str:
    """The source line and `^~~` under columns [col, col+length), tabs expanded as LLVM does."""
    expanded, caret = [], []
    for i, ch in enumerate(source):
        width = 8 - len(expanded) % 8 if ch == "\t" else 1
        expanded.append(" " * width if ch == "\t" else ch)
        mark = "^" if i + 1 == col else "~" if col < i + 1 < col + length else " "
        caret.append(mark * width if mark == "~" else mark + " " * (width - 1))
    if col > len(source):
        caret.append(" " * (col - 1 - len(source)) + "^")
    return "".join(expanded) + "\n" + "".join(caret).rstrip()


# -- --split-input-file ---------------------------------------------------------------------
@dataclass
class Chunk:
    text: str  # padded with blank lines/columns so locations are those of the whole file
    start: int  # offset in the file


def split(source: Source, marker: str | None) -> tuple[list[Chunk], list[str]]:
    """The chunks (upstream's algorithm) and the near-miss warnings, formatted."""
    if not marker:
        return [Chunk(source.text, 0)], []
    text, check = source.text, 2
    head, tail = marker[:-check], marker[-check:]
    spans, pos = [], 0
    for piece in text.split(head) if head else [text]:
        spans.append((pos, pos + len(piece)))
        pos += len(piece) + len(head)
    chunks: list[tuple[int, int]] = []
    warnings: list[str] = []
    prev = (0, 0)
    for start, end in spans:
        if prev[0] == prev[1]:
            prev = (start, end)
            continue
        piece = text[start:end]
        if piece.startswith(tail) and len(piece) > check and piece[check] != "0":
            chunks.append(prev)
            prev = (start + check, end)
        else:
            line, col = source.line_col(start)
            warnings.append(source.message("warning", "near miss with file split marker",
                                           line, col))
            prev = (prev[0], end)
    if prev[0] != prev[1]:
        chunks.append(prev)
    out = []
    for start, end in chunks:
        line, col = source.line_col(start)
        out.append(Chunk("\n" * (line - 1) + " " * (col - 1) + text[start:end], start))
    return out, warnings


# -- --verify-diagnostics -------------------------------------------------------------------
@dataclass
class Expected:
    severity: str
    line: int  # target line; 0 for @unknown
    at: tuple[int, int] | None  # (line, col) of `expected-`; None for @unknown
    text: str
    regex: re.Pattern[str] | None = None
    matched: bool = False

    def match(self, message: str) -> bool:
        if self.regex is not None:
            return self.regex.search(message) is not None
        return self.text in message


class Verifier:
    """`SourceMgrDiagnosticVerifierHandler` for one input file."""

    def __init__(self, source: Source, only_expected: bool, out: list[str]):
        self.source = source
        self.only_expected = only_expected
        self.out = out  # formatted errors, in order
        self.ok = True
        self.expected: list[Expected] = []
        self.unknown: list[Expected] = []
        self._scan()

    def _scan(self) -> None:
        lines = self.source.text.split("\n")
        last_plain = 0
        waiting: list[Expected] = []
        for number, raw in enumerate(lines):
            m = _EXPECTED.search(raw.rstrip())
            if m is None:
                for exp in waiting:
                    exp.line = number + 1
                waiting = []
                last_plain = number
                continue
            at = (number + 1, m.start() + 1)
            exp = Expected(m.group(1), number + 1, at, m.group(5))
            if m.group(2) and not self._compile(exp):
                self.ok = False
                continue
            where = m.group(4)
            if where is not None:
                if where[0] in "+-":
                    exp.line += int(where)
                elif where == "unknown":
                    exp.at = None
                    self.unknown.append(exp)
                    continue
                elif where == "above":
                    exp.line = last_plain + 1
                else:  # below: the next line without an expectation; the end if none
                    waiting.append(exp)
                    exp.line = len(lines)
            self.expected.append(exp)

    def _compile(self, exp: Expected) -> bool:
        parts, rest = [], exp.text
        while rest:
            k = rest.find("{{")
            if k < 0:
                parts.append(re.escape(rest))
                break
            parts.append(re.escape(rest[:k]))
            rest = rest[k + 2:]
            end = rest.find("}}")
            if end < 0:
                return self._error(exp, "found start of regex with no end '}}'")
            body = _from_posix(rest[:end])
            try:
                re.compile(body)
            except re.error as err:
                return self._error(exp, f"invalid regex: {err}")
            parts.append(f"({body})")
            rest = rest[end + 2:]
        exp.regex = re.compile("".join(parts))
        return True

    def _error(self, exp: Expected, text: str, length: int | None = None) -> bool:
        if exp.at is None:
            self.out.append(f"<unknown>:0: error: {text}")
        else:
            self.out.append(self.source.message(
                "error", text, *exp.at, length=len(exp.text) if length is None else length))
        return False

    def process(self, diag: Diagnostic) -> None:
        """One diagnostic and each of its notes."""
        self._one(diag)
        for note in diag.notes:
            self._one(note)

    def _one(self, diag: Diagnostic) -> None:
        if diag.line is not None and diag.file == self.source.name:
            candidates = self.expected
        elif diag.line is None:
            candidates = self.unknown
        else:
            candidates = []  # another file: no expectations there
        near = None
        for exp in candidates:
            if diag.line is not None and diag.line != exp.line:
                continue
            if exp.match(diag.message):
                if exp.severity == diag.severity:
                    exp.matched = True
                    return
                near = exp
        if self.only_expected:
            return
        self.ok = False
        if near is not None:
            self._error(near, f"'{diag.severity}' diagnostic emitted when expecting a "
                              f"'{near.severity}'", length=0)
        else:
            self.out.append(self.source.message(
                "error", f"unexpected {diag.severity}: {diag.message}", diag.line, diag.col,
                file=diag.file))

    def finish(self) -> bool:
        # Upstream verifies twice (explicitly, then in the handler's destructor) and clears
        # only the per-file list in between: unmatched @unknown expectations print twice.
        for exp in [*self.expected, *self.unknown, *self.unknown]:
            if not exp.matched:
                self.ok = self._error(exp, f"expected {exp.severity} \"{exp.text}\" was not "
                                           "produced")
        self.expected, self.unknown = [], []
        return self.ok


def _from_posix(pattern: str) -> str:
    """An LLVM (POSIX ERE) regex in Python's syntax: `[[:alpha:]]` classes."""
    return re.sub(r"\[:(\w+):\]", lambda m: _POSIX_CLASSES.get(m.group(1), m.group(0)),
                  pattern)


def render(source: Source, diag: Diagnostic) -> str:
    """A diagnostic with its notes as `SourceMgrDiagnosticHandler` prints them: a note shows
    its source line only when its location differs from the one before."""
    lines = [source.message(diag.severity, diag.message, diag.line, diag.col, file=diag.file)]
    last = (diag.file, diag.line, diag.col)
    for note in diag.notes:
        here = (note.file, note.line, note.col)
        lines.append(source.message("note", note.message, note.line, note.col, file=note.file,
                                    show_source=here != last))
        last = here
    return "\n".join(lines)
