"""A pure-Python model of MN-Core 2 tensor layouts in the vendor's notation.

MN-Core's SDK (MLSDK) writes where every element of a tensor lives as a layout string, e.g.
the `Gather` input layout of the vendor's `layout_spec.json` example::

    ((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])

Semantics accel adopts (the vendor documents the notation only by example; see
docs/dialects/mncore.md for the full list of assumptions):

- one parenthesised *group* per tensor dimension, *factors* listed outermost first: an index
  along the dimension is the mixed-radix number of the factors' digits, so the product of a
  group's sizes must be >= the dimension (the excess is padding);
- a factor `N_LEVEL:S` takes N positions along a hardware level and adds `digit * S` to that
  level's coordinate; levels are `Time` (sequential step), `L2B`, `L1B`, `MAB`, `PE` and `W`
  (the lane inside a 64-bit long word);
- a bare factor `N:S` adds `digit * S` to the local address (in long words) inside a PE;
- `; B@[L1B, ...]` replicates the whole tensor over every position of those levels;
- a level a layout does not mention (and does not broadcast over) stays at coordinate 0.

MN-Core 2's hierarchy: 4 groups x 2 L2B (8 L2B), 8 L1B per L2B, 16 MAB per L1B, 4 PE per MAB
(4096 PEs); local memory (LM) holds 2Ki long words per PE per bank.

    >>> lay = Layout.parse("((4_PE:1, 2:1), (2_W:1))")
    >>> lay.place((5, 1))
    Placement(time=0, l2b=0, l1b=0, mab=0, pe=2, address=1, lane=1)
    >>> str(lay)
    '((4_PE:1, 2:1), (2_W:1))'

`pack(array)` lays a host array out as the device image (the transpose MLSDK performs on
host-to-device transfers); `unpack(image, shape)` inverts it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

#: Named levels a factor may use, in the notation's spelling.
LEVELS: tuple[str, ...] = ("Time", "L2B", "L1B", "MAB", "PE", "W")
#: Levels a tensor may be replicated over with `B@[...]`.
BROADCAST_LEVELS: tuple[str, ...] = ("L2B", "L1B", "MAB", "PE")
#: Pseudo-level of bare `N:S` factors: the address (in long words) inside a PE's memory.
ADDRESS = "addr"
#: Axes of a device image, outermost first (see `Layout.pack`).
IMAGE_AXES: tuple[str, ...] = ("Time", "L2B", "L1B", "MAB", "PE", ADDRESS, "W")

#: MN-Core 2 positions per level: 4 groups x 2 L2B, 8 L1B per L2B, 16 MAB per L1B, 4 PE per MAB.
HIERARCHY: dict[str, int] = {"L2B": 8, "L1B": 8, "MAB": 16, "PE": 4}
#: Bits in a long word, the unit of a PE's local memory address.
LONG_WORD_BITS = 64
#: Long words one tensor may span per PE in each memory; None means no bound in this model.
MEMORY_WORDS: dict[str, int | None] = {"lm": 2048, "dram": None}

# Past this many digit combinations on one level, injectivity is not enumerated.
_ENUMERATION_LIMIT = 1 << 22


class LayoutSyntaxError(ValueError):
    """A malformed layout string; `column` is 1-based."""

    def __init__(self, message: str, column: int):
        super().__init__(f"column {column}: {message}")
        self.column = column
        self.reason = message


@dataclass(frozen=True)
class Factor:
    """`size_level:stride`, or `size:stride` for an address factor (level `addr`)."""

    size: int
    level: str
    stride: int

    def __str__(self) -> str:
        if self.level == ADDRESS:
            return f"{self.size}:{self.stride}"
        return f"{self.size}_{self.level}:{self.stride}"

    @property
    def span(self) -> int:
        """Largest coordinate offset this factor adds."""
        return (self.size - 1) * self.stride


class Placement(NamedTuple):
    """Where one element sits (replica 0 on broadcast levels)."""

    time: int
    l2b: int
    l1b: int
    mab: int
    pe: int
    address: int
    lane: int


@dataclass(frozen=True)
class Footprint:
    """What a layout occupies for one tensor shape."""

    time_steps: int
    words_per_pe: int
    pes: int
    replication: int
    lanes_used: int
    elements: int
    padded_elements: int
    padding: tuple[int, ...]  # padded positions per dimension

    @property
    def padding_elements(self) -> int:
        return self.padded_elements - self.elements


@dataclass
class LayoutReport:
    """Result of `Layout.check`: errors (the layout does not fit), warnings, footprint."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    footprint: Footprint | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def dtype_bits(dtype: object) -> int:
    """Element width in bits of a numpy dtype, a dtype name (`f16`, `bf16`, `float32`) or an int."""
    if isinstance(dtype, int):
        return dtype
    if isinstance(dtype, str) and dtype.lower() in ("bf16", "bfloat16"):
        return 16
    if isinstance(dtype, str) and dtype[:1] in "fiu" and dtype[1:].isdigit():
        return int(dtype[1:])
    return np.dtype(dtype).itemsize * 8  # type: ignore[call-overload]


# -- parsing --------------------------------------------------------------------------------
#: Largest factor size or stride: sizes multiply to a tensor dimension, an int64.
MAX_INTEGER = (1 << 63) - 1


class _Parser:
    """Recursive descent over the notation; every error names its column and what it wanted."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def parse(self) -> Layout:
        self._expect("(", "'(' to open the layout")
        groups: list[tuple[Factor, ...]] = []
        broadcast: tuple[str, ...] = ()
        if self._peek() == ";":  # a rank-0 tensor may still be broadcast: `(; B@[L1B])`
            self._advance()
            broadcast = self._broadcast()
        elif self._peek() != ")":
            while True:
                groups.append(self._group(len(groups)))
                ch = self._peek()
                if ch == ",":
                    self._advance()
                    continue
                if ch == ";":
                    self._advance()
                    broadcast = self._broadcast()
                    break
                if ch == ")":
                    break
                self._fail("',', ';' or ')' after a dimension group")
        self._expect(")", "')' to close the layout")
        if self._peek() != "":
            self._fail("end of layout after its closing ')'")
        return Layout(tuple(groups), broadcast)

    def _group(self, dim: int) -> tuple[Factor, ...]:
        self._expect("(", f"'(' to open the group of dimension {dim}")
        factors: list[Factor] = []
        if self._peek() == ")":
            self._advance()
            return ()
        while True:
            factors.append(self._factor())
            ch = self._peek()
            if ch == ",":
                self._advance()
                continue
            if ch == ")":
                self._advance()
                return tuple(factors)
            self._fail("',' or ')' after a factor")

    def _factor(self) -> Factor:
        col = self._column()
        size = self._integer("a factor size (a positive integer)")
        if size < 1:
            raise LayoutSyntaxError(f"factor size must be at least 1, got {size}", col)
        level = ADDRESS
        if self.text[self.pos : self.pos + 1] == "_":
            self.pos += 1  # no whitespace inside `N_LEVEL`
            level = self._name(LEVELS, "a level name after '_' (" + ", ".join(LEVELS) + ")")
        elif self._peek() == "_":
            raise LayoutSyntaxError(f"no space may separate '{size}' from '_' in "
                                    f"'{size}_LEVEL'", self._column())
        self._expect(":", "':' and a stride after the factor size" if level == ADDRESS
                     else f"':' and a stride after '{size}_{level}'")
        stride = self._integer("a stride (a non-negative integer)")
        return Factor(size, level, stride)

    def _broadcast(self) -> tuple[str, ...]:
        self._expect("B", "'B@[' to start the broadcast list")
        if self.text[self.pos : self.pos + 1] != "@":
            self._fail("'@[' after 'B'")
        self.pos += 1
        self._expect("[", "'[' after 'B@'")
        levels: list[str] = []
        while True:
            col = self._column()
            level = self._name(BROADCAST_LEVELS, "a broadcast level ("
                               + ", ".join(BROADCAST_LEVELS) + ")")
            if level in levels:
                raise LayoutSyntaxError(f"level '{level}' is broadcast twice", col)
            levels.append(level)
            ch = self._peek()
            if ch == ",":
                self._advance()
                continue
            if ch == "]":
                self._advance()
                return tuple(levels)
            self._fail("',' or ']' in the broadcast list")

    # -- lexical helpers ----------------------------------------------------------------------
    def _skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def _peek(self) -> str:
        self._skip_ws()
        return self.text[self.pos : self.pos + 1]

    def _advance(self) -> None:
        self.pos += 1

    def _column(self) -> int:
        self._skip_ws()
        return self.pos + 1

    def _expect(self, token: str, what: str) -> None:
        if self._peek() != token:
            self._fail(what)
        self.pos += 1

    def _integer(self, what: str) -> int:
        self._skip_ws()
        start = self.pos
        # ASCII digits only: str.isdigit() also takes full-width and other scripts' digits.
        while self.pos < len(self.text) and "0" <= self.text[self.pos] <= "9":
            self.pos += 1
        if start == self.pos:
            self._fail(what)
        value = int(self.text[start : self.pos])
        if value > MAX_INTEGER:
            raise LayoutSyntaxError(f"{value} is out of range (max {MAX_INTEGER})", start + 1)
        return value

    def _name(self, allowed: Sequence[str], what: str) -> str:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isalnum():
            self.pos += 1
        word = self.text[start : self.pos]
        if word not in allowed:
            self.pos = start
            self._fail(what)
        return word

    def _fail(self, what: str) -> None:
        self._skip_ws()
        found = f"'{self.text[self.pos]}'" if self.pos < len(self.text) else "end of layout"
        if self.pos < len(self.text) and self.text[self.pos].isalnum():
            end = self.pos
            while end < len(self.text) and self.text[end].isalnum():
                end += 1
            found = f"'{self.text[self.pos:end]}'"
        raise LayoutSyntaxError(f"expected {what}, found {found}", self.pos + 1)


# -- the model ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """A parsed layout: one factor group per dimension, plus the broadcast levels."""

    groups: tuple[tuple[Factor, ...], ...]
    broadcast: tuple[str, ...] = ()

    @staticmethod
    def parse(text: str) -> Layout:
        """Parse the vendor notation; raises `LayoutSyntaxError` naming column and expectation."""
        return _Parser(text).parse()

    def __str__(self) -> str:
        groups = ", ".join("(" + ", ".join(str(f) for f in g) + ")" for g in self.groups)
        tail = f"; B@[{', '.join(self.broadcast)}]" if self.broadcast else ""
        return f"({groups}{tail})"

    # -- geometry ---------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.groups)

    @property
    def padded_shape(self) -> tuple[int, ...]:
        """Positions each group covers: the product of its factor sizes (1 for `()`)."""
        return tuple(math.prod(f.size for f in g) for g in self.groups)

    def factors(self, level: str) -> list[Factor]:
        """Every factor on `level` (`addr` for bare address factors), in order of appearance."""
        return [f for g in self.groups for f in g if f.level == level]

    def extent(self, level: str) -> int:
        """Coordinates `level` spans: largest coordinate + 1 (broadcast levels: not included)."""
        return 1 + sum(f.span for f in self.factors(level))

    def image_shape(self) -> tuple[int, ...]:
        """Shape of the device image (`IMAGE_AXES` order); broadcast levels take every position."""
        return tuple(HIERARCHY[a] if a in self.broadcast else self.extent(a) for a in IMAGE_AXES)

    def place(self, index: Sequence[int]) -> Placement:
        """Placement of the element at `index` (replica 0 on broadcast levels)."""
        if len(index) != self.rank:
            raise IndexError(f"index {tuple(index)} has rank {len(index)}, layout has {self.rank}")
        coord = dict.fromkeys(IMAGE_AXES, 0)
        for dim, (i, group) in enumerate(zip(index, self.groups, strict=True)):
            if not 0 <= i < self.padded_shape[dim]:
                raise IndexError(f"index {i} is outside dimension {dim} "
                                 f"({self.padded_shape[dim]} positions)")
            for f in reversed(group):  # innermost factor is the least significant digit
                i, digit = divmod(i, f.size)
                coord[f.level] += digit * f.stride
        return Placement(*(coord[a] for a in IMAGE_AXES))

    # -- checks -----------------------------------------------------------------------------
    def check(self, shape: Sequence[int], dtype: object,
              memory: str | int | None = None) -> LayoutReport:
        """Check the layout against a tensor: rank, coverage, hierarchy sizes, lane width,
        collisions, and (given `memory`: 'lm', 'dram', or a capacity in long words) addresses.
        """
        report = LayoutReport()
        errors = report.errors
        bits = dtype_bits(dtype)
        if bits <= 0 or LONG_WORD_BITS % bits:
            errors.append(f"{bits}-bit elements do not pack into {LONG_WORD_BITS}-bit long words")
            return report
        if len(shape) != self.rank:
            errors.append(f"layout has {self.rank} dimension groups but the tensor has "
                          f"rank {len(shape)}")
            return report
        for dim, (size, covered) in enumerate(zip(shape, self.padded_shape, strict=True)):
            if size > covered:
                errors.append(f"dimension {dim} has size {size} but its group covers only "
                              f"{covered} positions")
        for level, limit in HIERARCHY.items():
            if self.extent(level) > limit:
                errors.append(f"{level} spans {self.extent(level)} positions but MN-Core 2 has "
                              f"{limit}")
        lanes = LONG_WORD_BITS // bits
        if self.extent("W") > lanes:
            errors.append(f"W spans {self.extent('W')} lanes but a {LONG_WORD_BITS}-bit long "
                          f"word holds {lanes} {bits}-bit elements")
        for level in self.broadcast:
            if self.factors(level):
                errors.append(f"{level} is broadcast (B@[{level}]) and also used by a factor, "
                              "so replicas overwrite other elements")
        for level in IMAGE_AXES:
            if not _injective(self.factors(level)):
                listed = ", ".join(str(f) for f in self.factors(level))
                errors.append(f"two elements share a slot: the {_level_name(level)} factors "
                              f"({listed}) map different indices to the same coordinate")
        capacity = MEMORY_WORDS.get(memory) if isinstance(memory, str) else memory
        if isinstance(memory, str) and memory not in MEMORY_WORDS:
            errors.append(f"unknown memory '{memory}' (known: {', '.join(MEMORY_WORDS)})")
        words = self.extent(ADDRESS)
        if capacity is not None and words > capacity:
            where = f"'{memory}'" if isinstance(memory, str) else "the memory"
            errors.append(f"addresses span {words} long words per PE but {where} holds "
                          f"{capacity}")
        if not errors and self.extent("W") < lanes:
            report.warnings.append(f"long words hold {lanes} {bits}-bit lanes but the layout "
                                   f"uses {self.extent('W')}")
        if not errors:
            report.footprint = self.footprint(shape)
        return report

    def footprint(self, shape: Sequence[int]) -> Footprint:
        """Time steps, long words per PE, PEs holding data, replication and padding."""
        padded = self.padded_shape
        replication = math.prod(HIERARCHY[b] for b in self.broadcast)
        pes = math.prod(self.extent(level) for level in HIERARCHY) * replication
        return Footprint(
            time_steps=self.extent("Time"),
            words_per_pe=self.extent(ADDRESS),
            pes=pes,
            replication=replication,
            lanes_used=self.extent("W"),
            elements=math.prod(shape),
            padded_elements=math.prod(padded),
            padding=tuple(p - s for p, s in zip(padded, shape, strict=True)),
        )

    # -- host <-> device images ---------------------------------------------------------------
    def pack(self, array: np.ndarray, fill: object = 0) -> np.ndarray:
        """Lay `array` out as a device image of `image_shape()` (axes `IMAGE_AXES`).

        Slots no element maps to hold `fill`; broadcast levels hold identical replicas. The
        image is element-granular: axis `W` is the lane inside a long word.
        """
        array = np.asarray(array)
        self._require_fits(array.shape)
        base = [1 if a in self.broadcast else n for a, n in zip(IMAGE_AXES, self.image_shape(),
                                                                strict=True)]
        image = np.full(base, fill, dtype=array.dtype)
        image[self._coordinates(array.shape)] = array
        return np.broadcast_to(image, self.image_shape()).copy()

    def unpack(self, image: np.ndarray, shape: Sequence[int]) -> np.ndarray:
        """The tensor of `shape` held in `image` (replica 0 of broadcast levels)."""
        image = np.asarray(image)
        if image.shape != self.image_shape():
            raise ValueError(f"image has shape {image.shape}, layout needs {self.image_shape()}")
        self._require_fits(tuple(shape))
        return image[self._coordinates(tuple(shape))].reshape(tuple(shape))

    def _require_fits(self, shape: tuple[int, ...]) -> None:
        if len(shape) != self.rank:
            raise ValueError(f"tensor of rank {len(shape)} does not match a layout of rank "
                             f"{self.rank}")
        for dim, (size, covered) in enumerate(zip(shape, self.padded_shape, strict=True)):
            if size > covered:
                raise ValueError(f"dimension {dim} has size {size}, layout covers {covered}")

    def _coordinates(self, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        """Per image axis, the coordinate of every element (arrays broadcastable to `shape`)."""
        coords = {a: np.zeros((1,) * len(shape), dtype=np.int64) for a in IMAGE_AXES}
        for dim, (size, group) in enumerate(zip(shape, self.groups, strict=True)):
            index = np.arange(size, dtype=np.int64)
            along = [1] * len(shape)
            along[dim] = size
            for f in reversed(group):
                index, digit = np.divmod(index, f.size)
                coords[f.level] = coords[f.level] + (digit * f.stride).reshape(along)
        return tuple(np.broadcast_to(coords[a], shape) for a in IMAGE_AXES)


def _level_name(level: str) -> str:
    return "address" if level == ADDRESS else level


def _injective(factors: Iterable[Factor]) -> bool:
    """Whether distinct digit tuples of `factors` always give distinct coordinate sums."""
    live = sorted((f for f in factors if f.size > 1), key=lambda f: f.stride)
    reach = 0
    for f in live:  # fast path: each stride clears everything the smaller ones reach
        if f.stride <= reach:
            break
        reach += f.span
    else:
        return True
    combinations = math.prod(f.size for f in live)
    if combinations > _ENUMERATION_LIMIT:
        return False  # cannot prove it; treat as a collision
    sums = np.zeros(1, dtype=np.int64)
    for f in live:
        sums = (sums[:, None] + np.arange(f.size, dtype=np.int64) * f.stride).ravel()
    return len(np.unique(sums)) == combinations


__all__ = [
    "ADDRESS",
    "BROADCAST_LEVELS",
    "HIERARCHY",
    "IMAGE_AXES",
    "LEVELS",
    "LONG_WORD_BITS",
    "MEMORY_WORDS",
    "Factor",
    "Footprint",
    "Layout",
    "LayoutReport",
    "LayoutSyntaxError",
    "Placement",
    "dtype_bits",
]
