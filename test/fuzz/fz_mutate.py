"""Text mutations for the fuzz harness: MLIR (and other grammar) inputs damaged the ways a
user, an editor or a broken generator damages them.

Every mutation is a pure function of (text, rng): the same seed gives the same input, so a
defect replays from its case JSON alone.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

#: Tokens: SSA names, symbols, attributes/types aliases, numbers, words, strings, punctuation.
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[%@#!^][\w.$-]*|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?'
                    r"|\w+|->|[^\s\w]")
_INT = re.compile(r"(?<![\w.%@#])-?\d+(?![\w.])")
_FLOAT = re.compile(r"(?<![\w%@#])-?\d+\.\d+(?:[eE][+-]?\d+)?")
_DIM = re.compile(r"(?<=[<x])\d+(?=x)")
BRACKETS = "()[]{}<>"

#: Integers at the edges of every width a parser might store them in.
BOUNDARY_INTS = ("0", "-1", "1", "2147483647", "-2147483648", "2147483648", "4294967296",
                 "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                 "18446744073709551616", "99999999999999999999", "1" + "0" * 40, "-0")
BOUNDARY_FLOATS = ("nan", "inf", "-inf", "1e400", "-0.0", "0x7FC00000", "1e-400", "3.4e38",
                   "1.0e+", ".5", "5.")
#: Digits of other scripts and full-width digits: never numbers in MLIR or accel's grammars.
UNICODE_DIGITS = ("\u0663", "\uff13", "\u0969", "\u00b3", "\u2163")
HUGE_DIMS = ("1000000000000", "99999999999", "4294967296", "9223372036854775807", "0")
JUNK = ("\x00", "\x7f", '"', "\\", "\u200b", "\ufeff", "\U0001f600", "\n", "%", "@", "#",
        "^", "!", "{", "}")

Mutation = Callable[[str, random.Random], str]


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(text))


def _replace_span(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def delete_token(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    t = rng.choice(toks)
    return _replace_span(text, t.start(), t.end(), "")


def duplicate_token(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    t = rng.choice(toks)
    return _replace_span(text, t.start(), t.end(), t.group() + " " + t.group())


def swap_tokens(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if len(toks) < 2:
        return text
    i = rng.randrange(len(toks) - 1)
    j = i + 1 if rng.random() < 0.7 else rng.randrange(len(toks))
    a, b = sorted((toks[i], toks[j]), key=lambda m: m.start())
    if a.start() == b.start():
        return text
    return (text[:a.start()] + b.group() + text[a.end():b.start()] + a.group()
            + text[b.end():])


def boundary_int(text: str, rng: random.Random) -> str:
    found = list(_INT.finditer(text))
    if not found:
        return text
    m = rng.choice(found)
    return _replace_span(text, m.start(), m.end(), rng.choice(BOUNDARY_INTS))


def boundary_float(text: str, rng: random.Random) -> str:
    found = list(_FLOAT.finditer(text))
    if not found:
        return boundary_int(text, rng)
    m = rng.choice(found)
    return _replace_span(text, m.start(), m.end(), rng.choice(BOUNDARY_FLOATS))


def huge_dim(text: str, rng: random.Random) -> str:
    found = list(_DIM.finditer(text))
    if not found:
        return boundary_int(text, rng)
    m = rng.choice(found)
    return _replace_span(text, m.start(), m.end(), rng.choice(HUGE_DIMS))


def damage_bracket(text: str, rng: random.Random) -> str:
    spots = [i for i, c in enumerate(text) if c in BRACKETS]
    if not spots:
        return text
    i = rng.choice(spots)
    action = rng.randrange(3)
    if action == 0:  # delete it
        return text[:i] + text[i + 1:]
    if action == 1:  # replace it with another bracket
        return text[:i] + rng.choice(BRACKETS) + text[i + 1:]
    return text[:i] + text[i] * rng.randint(2, 4) + text[i + 1:]  # repeat it


def unicode_digit(text: str, rng: random.Random) -> str:
    spots = [i for i, c in enumerate(text) if c.isdigit() and c.isascii()]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + rng.choice(UNICODE_DIGITS) + text[i + 1:]


def insert_junk(text: str, rng: random.Random) -> str:
    i = rng.randrange(len(text) + 1)
    return text[:i] + rng.choice(JUNK) + text[i:]


def truncate(text: str, rng: random.Random) -> str:
    return text[:rng.randrange(len(text) + 1)]


def splice_line(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    src = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[src])
    return "\n".join(lines)


def empty_list(text: str, rng: random.Random) -> str:
    """`[1, 0]` -> `[, ]`, `[x]`, `[0, , 1]`: the integer lists the bindings mishandle."""
    found = list(re.finditer(r"\[[-\d, ]+\]", text))
    if not found:
        return damage_bracket(text, rng)
    m = rng.choice(found)
    new = rng.choice(("[, ]", "[x]", "[0, , 1]", "[]", "[,]", "[0,]", "[-]", "[9999999999]",
                      "[0 1]", "[" + ", ".join(["0"] * rng.randint(5, 40)) + "]"))
    return _replace_span(text, m.start(), m.end(), new)


MUTATIONS: dict[str, Mutation] = {
    "delete-token": delete_token, "duplicate-token": duplicate_token,
    "swap-tokens": swap_tokens, "boundary-int": boundary_int,
    "boundary-float": boundary_float, "huge-dim": huge_dim, "bracket": damage_bracket,
    "unicode-digit": unicode_digit, "junk": insert_junk, "truncate": truncate,
    "splice-line": splice_line, "int-list": empty_list,
}


def mutate(text: str, rng: random.Random, count: int | None = None) -> tuple[str, list[str]]:
    """`text` with 1-3 random mutations (or `count`); also returns their names."""
    names = []
    for _ in range(count if count is not None else rng.choice((1, 1, 1, 2, 3))):
        name = rng.choice(sorted(MUTATIONS))
        text = MUTATIONS[name](text, rng)
        names.append(name)
    return text, names


def deep_nesting(depth: int, kind: str) -> str:
    """A module whose regions, types or attributes nest `depth` levels deep."""
    if kind == "regions":
        body = "%c = arith.constant 0 : i32\n"
        for _ in range(depth):
            body = f"scf.execute_region {{\n{body}scf.yield\n}}\n"
        return f"func.func @deep() {{\n{body}return\n}}\n"
    if kind == "types":
        return (f"func.func @deep(%a: {'tuple<' * depth}i32{'>' * depth}) {{\n"
                "  return\n}\n")
    attr = "[" * depth + "1" + "]" * depth
    return f'func.func @deep() attributes {{a = {attr}}} {{\n  return\n}}\n'
