"""The elementwise chain of a conv or GEMM epilogue as kernel text (no IR values).

`passes/_conv_epilogue.py` matches the chain of `linalg.generic`s after a convolution and
records it here as `EpilogueCode`: the extra inputs' kinds and types, and each generic's
body as steps. The kernels (`passes/_conv_kernel.py`'s direct convolution,
`passes/_gemm_kernel.py`'s GEMM behind 1x1 convolutions) call `emit_epilogue` on each
value they write, as f32 or as a vector of positions of one output channel. The code is
hashable and free of SSA values, so it keys the kernel's name: equal chains share a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

#: Body ops the write-back emits, by the number of their operands (cmpf and select apart).
STEPS = {
    "arith.addf": 2, "arith.subf": 2, "arith.mulf": 2, "arith.divf": 2,
    "arith.maximumf": 2, "arith.minimumf": 2, "arith.maxnumf": 2, "arith.minnumf": 2,
    "arith.negf": 1, "math.sqrt": 1, "math.rsqrt": 1, "math.absf": 1,
    "arith.cmpf": 2, "arith.select": 3,
}

class Emitter(Protocol):
    """What `emit_epilogue` needs of `passes/_gemm_kernel._Emitter`."""

    def op(self, text: str, hint: str = "v") -> str: ...

    def c(self, value: int) -> str: ...


#: An operand of a step: ("cur",) the chain's value, ("x", k) extra k's element, ("r", j)
#: step j's result in this stage, ("k", bits) an f32 constant (its bit pattern).
Ref = tuple


@dataclass(frozen=True)
class Extra:
    """A generic's input other than the chain value: `kind` "full" (the output's shape,
    read at the same element), "channel" (`index` holds "f" where the channel goes, 0
    elsewhere) or "scalar" (all zeros)."""

    kind: str
    type: str
    index: tuple[str, ...]


@dataclass(frozen=True)
class EpilogueCode:
    """What the kernel renders: the extras' kinds and types, and per stage (generic) its
    steps (op name, operand refs, cmpf predicate or "") and the ref it yields. No IR
    values, so it keys the kernel's name."""

    extras: tuple[Extra, ...]
    stages: tuple[tuple[tuple[tuple[str, tuple[Ref, ...], str], ...], Ref], ...]


def emit_epilogue(b: Emitter, code: EpilogueCode, value: str, lanes: int, f: str,
                  full_index: str, full_type: str, shared: dict | None = None) -> str:
    """Emits the chain on `value` (f32, or `lanes` f32 lanes of output channel `f`) with
    emitter `b` and returns the result's name. Extras are `%E<k>`; full ones are read at
    `%Ef<k>[full_index]`, a view of type `full_type` (the kernel's view of its output).
    `shared`: the per-channel operands and constants already emitted for this `f` (a
    GEMM's row, several vectors wide), filled here: loads between stores to the output
    are not merged by LLVM, which cannot tell the buffers apart."""
    t = f"vector<{lanes}xf32>" if lanes > 1 else "f32"
    i1 = f"vector<{lanes}xi1>" if lanes > 1 else "i1"
    kept = {} if shared is None else shared  # channel, scalar and constant operands
    loaded: dict[int, str] = {}  # full operands: this value's own

    def splat(scalar: str) -> str:
        return b.op(f"vector.broadcast {scalar} : f32 to {t}") if lanes > 1 else scalar

    def get(ref: Ref, cur: str, res: list[str]) -> str:
        if ref[0] == "cur":
            return cur
        if ref[0] == "r":
            return res[ref[1]]
        if ref[0] == "k":
            if ref not in kept:
                kept[ref] = splat(b.op(f"arith.constant 0x{ref[1]:08X} : f32"))
            return kept[ref]
        k = ref[1]
        ex = code.extras[k]
        if ex.kind == "full":
            if k not in loaded:
                loaded[k] = b.op(f"vector.load %Ef{k}[{full_index}] : {full_type}, {t}") \
                    if lanes > 1 else b.op(f"memref.load %Ef{k}[{full_index}] : {full_type}")
            return loaded[k]
        if ref not in kept:
            idx = ", ".join(f if i == "f" else b.c(0) for i in ex.index)
            kept[ref] = splat(b.op(f"memref.load %E{k}[{idx}] : {ex.type}"))
        return kept[ref]

    cur = value
    for steps, yielded in code.stages:
        res: list[str] = []
        for name, refs, pred in steps:
            args = [get(r, cur, res) for r in refs]
            if name == "arith.cmpf":
                res.append(b.op(f"arith.cmpf {pred}, {args[0]}, {args[1]} : {t}"))
            elif name == "arith.select":
                sel = f"{i1}, {t}" if lanes > 1 else t
                res.append(b.op(f"arith.select {args[0]}, {args[1]}, {args[2]} : {sel}"))
            else:
                res.append(b.op(f"{name} {', '.join(args)} : {t}"))
        cur = get(yielded, cur, res)
    return cur
