"""Parsing untrusted MLIR text without letting a crash in the bindings take the process down.

Every place that parses text a user (or a file on disk) supplied goes through
`parse_module`: accel-opt, accel-run and `compile_mlir` (through the cpu target's
`signatures.parsed`), the rdu target, and `CompiledModule.module` of a loaded artifact.

Two upstream weaknesses kill the process instead of reporting an error:

* The custom parsers of `linalg.transpose` (`permutation = [...]`), `linalg.broadcast` and
  `linalg.reduce` (`dimensions = [...]`) store the result of a failed integer-list parse (a
  null attribute) and crash with SIGSEGV on any malformed list (`[0, , 1]`, `[x]`, a value
  beyond int64, a missing bracket).
* The parser, the verifier and the printer recurse once per nesting level, so deeply nested
  IR (thousands of nested modules, regions, brackets) overflows the C stack.

`parse_module` therefore (1) refuses IR that nests deeper than `MAX_IR_DEPTH` brackets,
(2) checks the integer lists of those ops itself and reports a malformed one as
`file:line:col: error:` at the bad token, and (3) when that check cannot vouch for an op
(its text has a shape the checker does not follow), parses once in a forked child first
(`accel.isolation`), so a crash there becomes `file:1:1: error: the MLIR parser crashed on
this input (SIGSEGV)` and the process lives. Well-formed IR takes only the checks (regex
scans and a numpy pass: 5-10 ms per 0.5 MB, 10-20% of the parse alone) and one in-process
parse; the probe, when needed, costs 40-70 ms more.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from typing import Any

from accel.diagnostics import AccelError, from_mlir_error

#: Deepest bracket nesting ((), [], {}, <>) accepted in IR text. Real IR nests a few dozen
#: levels; the bindings' recursive parser and printer overflow the stack at a few thousand.
MAX_IR_DEPTH = 256

#: Ops whose custom parser crashes on a malformed integer list after the keyword.
FRAGILE_LISTS = {"linalg.transpose": "permutation", "linalg.broadcast": "dimensions",
                 "linalg.reduce": "dimensions"}

_INT = r"-?\s*(?:0x[0-9a-fA-F]{1,15}|[0-9]{1,18})\s*"  # always within int64
#: The printer's form of a fragile op up to its well-formed list: most sites, checked in C.
_WELL_FORMED = re.compile(
    r"(?P<op>linalg\.(?:transpose|broadcast|reduce))\s*(?:\{[^{}\"/]*\}\s*)?"
    r"ins\s*\([^()\"/]*\)\s*outs\s*\([^()\"/]*\)\s*"
    rf"(?P<kw>permutation|dimensions)\s*=\s*\[\s*(?:{_INT}(?:,\s*{_INT})*)?\]")
#: A fragile op's name (the character before it is checked apart: a leading look-behind
#: would cost the regex its fast literal search).
_SITE = re.compile(r"linalg\.(?:transpose|broadcast|reduce)(?![\w.$-])")
_NAME_CHARS = frozenset("_.$\"@%#!^-")
#: A line prefix that ends outside any string literal and comment.
_CODE_PREFIX = re.compile(r'(?:[^"/\n]|/(?!/)|"(?:[^"\\\n]|\\.)*")*')
_TOKEN = re.compile(r'\s+|//[^\n]*|"(?:[^"\\\n]|\\.)*"?|[()\[\]{}<>=,]|[^\s()\[\]{}<>=,"/]+|/')
#: Strings and comments, whose brackets are not the IR's nesting. Two patterns, each led
#: by a literal that the regex engine finds fast (an alternation is scanned char by char);
#: strings go first (a string may hold `//`; a `"` in a comment pairs only in the comment).
_STRING = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')
_COMMENT = re.compile(r"//[^\n]*")
_DEC = re.compile(r"-?[0-9]+")
_HEX = re.compile(r"-?0x[0-9a-fA-F]+")
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_NOT_BRACKETS = bytes(c for c in range(256) if chr(c) not in "()[]{}<>")
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
#: Tokens scanned from an op name to its list before the checker gives up on the op.
_SCAN_LIMIT = 4096


@dataclass
class _Where:
    text: str
    filename: str
    line_offset: int

    def error(self, message: str, pos: int) -> AccelError:
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return _located(AccelError(message, file=self.filename, line=line + self.line_offset,
                                   col=col))


# -- nesting ----------------------------------------------------------------------------------
def check_nesting(text: str, filename: str = "<input>", line_offset: int = 0,
                  limit: int = MAX_IR_DEPTH) -> None:
    """Raise `AccelError` at the first bracket nested deeper than `limit` (strings,
    comments, `->`, `>=` and `<=` do not count)."""
    if len(text) < 1 << 16 and sum(text.count(c) for c in "([{<") <= limit:
        return  # cannot nest deeper than it has openers: the common, small case
    import numpy as np

    code = _COMMENT.sub("", _STRING.sub("", text) if '"' in text else text)
    code = code.replace("->", "").replace(">=", "").replace("<=", "")
    brackets = code.encode("utf-8", "replace").translate(None, _NOT_BRACKETS)
    depth = np.cumsum(_steps()[np.frombuffer(brackets, np.uint8)], dtype=np.int64)
    # Clamped at zero: a stray closer (in a token the filter missed) must not hide a deep
    # nest after it. depth - (lowest depth so far, if negative) is that clamped walk.
    deepest = int((depth - np.minimum.accumulate(np.minimum(depth, 0))).max(initial=0))
    if deepest <= limit:
        return
    exact, pos = _first_too_deep(text, limit)  # the estimate may count a stray '<'
    if exact > limit:
        raise _Where(text, filename, line_offset).error(
            f"IR nests too deeply ({exact} levels of brackets, max {limit})", pos)


@functools.cache
def _steps() -> Any:
    """Bracket -> +1/-1 for every byte value (0 for the rest)."""
    import numpy as np

    table = np.zeros(256, np.int8)
    for c in "([{<":
        table[ord(c)] = 1
    for c in ")]}>":
        table[ord(c)] = -1
    return table


def _first_too_deep(text: str, limit: int) -> tuple[int, int]:
    """(deepest nesting, position where it first exceeds `limit`): the slow, exact walk."""
    depth, deepest, where = 0, 0, 0
    for m in _TOKEN.finditer(text):
        tok, at = m.group(), m.start()
        if tok in ("(", "[", "{") or (tok == "<" and text[at + 1:at + 2] != "="):
            depth += 1
            if depth > limit and not where:
                where = at
            deepest = max(deepest, depth)
        elif tok in (")", "]", "}") or (tok == ">" and text[at - 1:at] != "-"
                                        and text[at + 1:at + 2] != "="):
            depth = max(depth - 1, 0)
    return deepest, where


# -- integer lists of fragile ops -------------------------------------------------------------
def check_integer_lists(text: str, filename: str = "<input>", line_offset: int = 0) -> bool:
    """Check the integer lists that `FRAGILE_LISTS` ops' parsers crash on.

    Raises `AccelError` at the first malformed list; returns whether every such op was
    followed to a well-formed list (False: some op has a shape this checker does not follow,
    and only an isolated parse can tell whether it is safe).
    """
    if "linalg." not in text:
        return True
    where = _Where(text, filename, line_offset)
    vouched = True
    fine = {m.start() for m in _WELL_FORMED.finditer(text)
            if FRAGILE_LISTS[m.group("op")] == m.group("kw")}
    for m in _SITE.finditer(text):
        before = text[m.start() - 1:m.start()]
        if m.start() in fine or before.isalnum() or before in _NAME_CHARS:
            continue  # well-formed, or part of a longer name (`@linalg.transpose`, `"..."`)
        line_start = text.rfind("\n", 0, m.start()) + 1
        if not _CODE_PREFIX.fullmatch(text, line_start, m.start()):
            continue  # inside a comment or a string
        op = m.group()
        vouched &= _check_site(where, op, FRAGILE_LISTS[op], m.end())
    return vouched


def _tokens(text: str, pos: int):
    """(token, position) from `pos` on, without whitespace and comments."""
    for m in _TOKEN.finditer(text, pos):
        tok = m.group()
        if tok.isspace() or tok.startswith("//"):
            continue
        yield tok, m.start()
    yield "", len(text)


def _check_site(where: _Where, op: str, keyword: str, pos: int) -> bool:
    """Follow `op [{attrs}] [{payload}] [ins(...)] [outs(...)] keyword = [list]` from `pos`."""
    tokens = _tokens(where.text, pos)
    depth = 0
    for tok, _ in itertools.islice(tokens, _SCAN_LIMIT):
        if not tok:
            return False
        if tok in _OPEN:
            depth += 1
        elif tok in _CLOSE:
            depth -= 1
            if depth < 0:
                return False
        elif depth == 0 and tok not in ("ins", "outs"):
            if tok != keyword or next(tokens, ("", 0))[0] != "=":
                return False  # not this op's custom form: the parser fails before the list
            _check_list(where, f"'{op}' {keyword}", tokens)
            return True
    return False


def _check_list(where: _Where, what: str, tokens) -> None:
    """`[` (integer (`,` integer)*)? `]` with int64 integers, as DenseI64ArrayAttr parses."""
    tok, at = next(tokens)
    if tok != "[":
        raise where.error(f"{what}: expected '[', found {_show(tok)}", at)
    tok, at = next(tokens)
    if tok == "]":
        return
    while True:
        if tok == "-":  # `- 1` is one integer to MLIR's lexer too
            tok, at = next(tokens)
            tok = "-" + tok if tok and tok[0] != "-" else "\0"
        if tok not in ("true", "false"):
            if not (_DEC.fullmatch(tok) or _HEX.fullmatch(tok)):
                raise where.error(f"{what}: expected an integer, found {_show(tok)}", at)
            value = int(tok, 0 if "x" in tok else 10)
            if not _I64_MIN <= value <= _I64_MAX:
                raise where.error(f"{what}: {tok} is out of range for i64 (from {_I64_MIN} "
                                  f"to {_I64_MAX})", at)
        tok, at = next(tokens)
        if tok == "]":
            return
        if tok != ",":
            raise where.error(f"{what}: expected ',' or ']', found {_show(tok)}", at)
        tok, at = next(tokens)


def _show(tok: str) -> str:
    if not tok:
        return "end of input"
    if tok == "\0":
        return "'-' without a number"
    return repr(tok[:40]) if tok.isprintable() else ascii(tok[:40])


# -- parsing ----------------------------------------------------------------------------------
def precheck(text: str, filename: str = "<input>", line_offset: int = 0) -> bool:
    """Both checks; returns whether an in-process parse is known to be safe."""
    check_nesting(text, filename, line_offset)
    return check_integer_lists(text, filename, line_offset)


def parse_module(text: str, filename: str = "<input>", line_offset: int = 0):  # -> Module
    """Parse untrusted MLIR `text` in the current context; `AccelError` (located) on any
    problem, never a crash of this process."""
    from accel.ir import MLIRError, Module

    if not precheck(text, filename, line_offset):
        probe_in_child(text, filename, line_offset)
    try:
        return Module.parse(text)
    except MLIRError as err:
        raise _located(from_mlir_error(err, filename, line_offset)) from None


def _located(error: AccelError) -> AccelError:
    """`error` whose message (`str()`) is its first diagnostic's `file:line:col: error: ...`
    line: API callers print `str(err)`, not `err.format()`, and must see where it failed."""
    first = error.diagnostics[0]
    if first.line is None:
        return error
    return AccelError(first.format().splitlines()[0], diagnostics=error.diagnostics)


def probe_in_child(text: str, filename: str = "<input>", line_offset: int = 0) -> None:
    """Parse `text` in a forked child with the current context's settings; raise `AccelError`
    if the parser crashed or hung there (a clean parse error is left to the real parse)."""
    from accel.ir import Context, Module
    from accel.isolation import IsolatedFailure, child_context, run_isolated

    like = Context.current

    def work() -> bytes:
        with child_context(like):
            try:
                Module.parse(text)
            except Exception:  # noqa: BLE001 - a clean error: the real parse reports it
                pass
        return b""

    try:
        run_isolated(work, timeout=PROBE_TIMEOUT)
    except IsolatedFailure as why:
        what = f"crashed on this input ({why.signal})" if why.signal else f"failed ({why})"
        raise AccelError(f"the MLIR parser {what}", file=filename, line=1 + line_offset,
                         col=1) from None


#: Seconds the isolated parse may take (a 1 MB module parses in well under a second).
PROBE_TIMEOUT = 300.0

__all__ = ["FRAGILE_LISTS", "MAX_IR_DEPTH", "check_integer_lists", "check_nesting",
           "parse_module", "precheck", "probe_in_child"]
