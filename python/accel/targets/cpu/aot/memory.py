"""User memory for AOT libraries: a static, liveness-based plan of one call's allocations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: Alignment of weights and of every block in the user memory pool.
ALIGN = 64


@dataclass
class MemoryPlan:
    """Offsets of the allocations of one call, in call order, in a pool of `scratch_bytes`."""

    sizes: list[int]
    offsets: list[int]
    peak: int

    @property
    def scratch_bytes(self) -> int:
        return self.peak + ALIGN  # room to align an unaligned pool start


def plan_memory(events: Sequence[tuple[str, int, int]]) -> MemoryPlan:
    """Liveness-based static placement of a call's allocations.

    `events` is the call's sequence of ("alloc", id, size) and ("free", id, 0); blocks never
    freed live until the end. Greedy by size (largest first): each block goes at the lowest
    aligned offset that overlaps no block placed earlier whose lifetime meets its own.
    """
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    size: dict[int, int] = {}
    order: list[int] = []
    for t, (kind, ident, nbytes) in enumerate(events):
        if kind == "alloc":
            start[ident], size[ident] = t, max(nbytes, 1)
            order.append(ident)
        else:
            end[ident] = t
    horizon = len(events)
    rounded = {i: -(-size[i] // ALIGN) * ALIGN for i in order}
    placed: list[tuple[int, int, int, int]] = []  # (lo, hi, start, end)
    offset: dict[int, int] = {}
    for ident in sorted(order, key=lambda i: (-rounded[i], start[i])):
        s, e = start[ident], end.get(ident, horizon)
        busy = sorted((lo, hi) for lo, hi, ps, pe in placed if ps <= e and s <= pe)
        at = 0
        for lo, hi in busy:
            if at + rounded[ident] <= lo:
                break
            at = max(at, hi)
        offset[ident] = at
        placed.append((at, at + rounded[ident], s, e))
    peak = max((hi for _, hi, _, _ in placed), default=0)
    return MemoryPlan([size[i] for i in order], [offset[i] for i in order], peak)


