"""Host forms of the warp-level WMMA ops (`gpu.subgroup_mma_*`), for kernel emulation.

A WMMA fragment's element-to-lane layout is the hardware's secret, but the ops are
warp-collective: every lane gets the same result. On the host one lane per warp runs the
whole warp's work, so a fragment becomes the full tile in that lane's memory:

    %f = gpu.subgroup_mma_load_matrix %A[%b, %i, %j] {leadDimension = 16 : index}
         : memref<2x32x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
  ->
    %f = memref.alloca() : memref<16x16xf16>   + loops copying A[%b, %i + u, %j + v]

`compute` is the tile product with products and sums in f32 (i32 for int8), rounded to
the accumulator's type once per op, as the tensor cores do; `store` copies the tile out.
A kernel holding these ops may hold no per-thread memory writes (`check_collective`): the
emulator runs only lane 0 of each warp.
"""

from __future__ import annotations

import re

from accel.diagnostics import AccelError

_V = r"%[\w$.-]+(?:#\d+)?"
_FRAG = r'!gpu\.mma_matrix<(\d+)x(\d+)x(\w+), "(\w+)">'
_LOAD = re.compile(rf"^\s*({_V}) = gpu\.subgroup_mma_load_matrix ({_V})\[([^\]]*)\] "
                   rf"\{{leadDimension = (\d+) : index\}} : (memref<[^,>]*>) -> {_FRAG}$")
_STORE = re.compile(rf"^\s*gpu\.subgroup_mma_store_matrix ({_V}), ({_V})\[([^\]]*)\] "
                    rf"\{{leadDimension = (\d+) : index\}} : {_FRAG}, (memref<[^,>]*>)$")
_COMPUTE = re.compile(rf"^\s*({_V}) = gpu\.subgroup_mma_compute ({_V}), ({_V}), ({_V}) : "
                      rf"{_FRAG}, {_FRAG} -> {_FRAG}$")
_CONSTANT = re.compile(rf"^\s*({_V}) = gpu\.subgroup_mma_constant_matrix ({_V}) : {_FRAG}$")
_ANY_FRAG = re.compile(_FRAG)
_MEMREF = re.compile(r"memref<((?:\d+x)+)(\w+)>")
#: Ops that write memory per thread: not allowed next to the warp-level ops (lane 0 only).
_PER_THREAD_WRITES = ("memref.store", "memref.atomic", "memref.copy", "gpu.barrier")


def _elt(t: str) -> str:
    """Storage type of a fragment element (si8/ui8 fragments load plain i8 memory)."""
    return "i8" if t in ("si8", "ui8") else t


def _buf(rows: str, cols: str, t: str) -> str:
    return f"memref<{rows}x{cols}x{_elt(t)}>"


def fragment_types(line: str) -> str:
    """`line` with every fragment type spelled as its host buffer type."""
    return _ANY_FRAG.sub(lambda m: _buf(m.group(1), m.group(2), m.group(3)), line)


def is_wmma(line: str) -> bool:
    return "gpu.subgroup_mma_" in line


def check_collective(name: str, lines: list[str]) -> None:
    """AccelError unless the warp-level kernel `lines` is safe to run on lane 0 only."""
    for line in lines:
        if not is_wmma(line) and any(w in line for w in _PER_THREAD_WRITES):
            raise AccelError(f"emulation: kernel {name} mixes warp-level WMMA ops with "
                             f"per-thread memory writes ({line.strip()})")


class _Names:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, what: str) -> str:
        return f"%{self.prefix}_{what}"


def _tile_loops(n: _Names, rows: str, cols: str, body: list[str]) -> list[str]:
    """`body` for u < rows, v < cols (%{n}_u, %{n}_v)."""
    return [f"{n('rows')} = arith.constant {rows} : index",
            f"{n('cols')} = arith.constant {cols} : index",
            f"{n('one')} = arith.constant 1 : index",
            f"{n('zero')} = arith.constant 0 : index",
            f"scf.for {n('u')} = {n('zero')} to {n('rows')} step {n('one')} {{",
            f"  scf.for {n('v')} = {n('zero')} to {n('cols')} step {n('one')} {{",
            *[f"    {b}" for b in body], "  }", "}"]


def _indices(n: _Names, memref: str, idx: str, lead: str, what: str) -> tuple[list[str], str]:
    """Index lines and the index list of element (u, v) of a tile at `idx` of `memref`."""
    match = _MEMREF.fullmatch(memref)
    if match is None:
        raise AccelError(f"emulation: {what} on {memref}: only identity-layout memrefs")
    shape = match.group(1).rstrip("x").split("x")
    parts = [p.strip() for p in idx.split(",")]
    if len(parts) < 2 or len(parts) != len(shape) or shape[-1] != lead:
        raise AccelError(f"emulation: {what} on {memref} with leadDimension {lead}: the tile "
                         "must be rows of the memref's last dimension")
    lines = [f"{n('r')} = arith.addi {parts[-2]}, {n('u')} : index",
             f"{n('c')} = arith.addi {parts[-1]}, {n('v')} : index"]
    return lines, ", ".join([*parts[:-2], n("r"), n("c")])


def _wide(t: str) -> str:
    return "i32" if _elt(t).startswith("i") else "f32"


def _extend(n: _Names, value: str, t: str, what: str) -> tuple[list[str], str]:
    t, wide = _elt(t), _wide(t)
    if t == wide:
        return [], value
    op = "arith.extsi" if wide == "i32" else "arith.extf"
    return [f"{n(what)} = {op} {value} : {t} to {wide}"], n(what)


def translate(line: str, index: int, *, store_guard: str | None = None) -> list[str] | None:
    """The host lines of one WMMA op line (None: not a WMMA op). `store_guard`: an i1 value
    true in one lane per warp, which alone stores (every lane of a block kernel runs the
    warp's loads and products; a lane storing after another lane of its warp read the
    same tile would otherwise feed it a value from the future)."""
    n = _Names(f"__wmma{index}")
    if m := _LOAD.match(line):
        res, src, idx, lead, memref, rows, cols, t, _ = m.groups()
        index_lines, at = _indices(n, memref, idx, lead, "subgroup_mma_load_matrix")
        buf = _buf(rows, cols, t)
        return [f"{res} = memref.alloca() : {buf}", *_tile_loops(n, rows, cols, [
            *index_lines, f"{n('x')} = memref.load {src}[{at}] : {memref}",
            f"memref.store {n('x')}, {res}[{n('u')}, {n('v')}] : {buf}"])]
    if m := _STORE.match(line):
        val, dst, idx, lead, rows, cols, t, _, memref = m.groups()
        index_lines, at = _indices(n, memref, idx, lead, "subgroup_mma_store_matrix")
        buf = _buf(rows, cols, t)
        loops = _tile_loops(n, rows, cols, [
            *index_lines, f"{n('x')} = memref.load {val}[{n('u')}, {n('v')}] : {buf}",
            f"memref.store {n('x')}, {dst}[{at}] : {memref}"])
        return loops if store_guard is None else \
            [f"scf.if {store_guard} {{", *[f"  {x}" for x in loops], "}"]
    if m := _CONSTANT.match(line):
        res, value, rows, cols, t, _ = m.groups()
        buf = _buf(rows, cols, t)
        return [f"{res} = memref.alloca() : {buf}", *_tile_loops(n, rows, cols, [
            f"memref.store {value}, {res}[{n('u')}, {n('v')}] : {buf}"])]
    if m := _COMPUTE.match(line):
        return _compute(n, m.groups())
    if is_wmma(line):
        raise AccelError(f"emulation: no host form for {line.strip()}")
    return None


def _compute(n: _Names, groups: tuple[str, ...]) -> list[str]:
    res, a, b, c = groups[:4]
    (m, k, ta, _), (_, cols, tb, _), (_, _, tc, _) = (groups[4:8], groups[8:12], groups[12:16])
    wide = _wide(tc)
    fa, fb, fc = _buf(m, k, ta), _buf(k, cols, tb), _buf(m, cols, tc)
    ext_a, va = _extend(n, n("a"), ta, "wa")
    ext_b, vb = _extend(n, n("b"), tb, "wb")
    ext_c, vc = _extend(n, n("c0"), tc, "wc")
    mul, add = ("arith.muli", "arith.addi") if wide == "i32" else ("arith.mulf", "arith.addf")
    back = [] if _elt(tc) == wide else [f"{n('rc')} = arith.truncf {n('s')} : f32 to {tc}"]
    out = n("rc") if back else n("s")
    inner = [f"{n('a')} = memref.load {a}[{n('u')}, {n('k')}] : {fa}",
             f"{n('b')} = memref.load {b}[{n('k')}, {n('v')}] : {fb}",
             *ext_a, *ext_b, f"{n('p')} = {mul} {va}, {vb} : {wide}",
             f"{n('acc2')} = {add} {n('acc')}, {n('p')} : {wide}",
             f"scf.yield {n('acc2')} : {wide}"]
    body = [f"{n('c0')} = memref.load {c}[{n('u')}, {n('v')}] : {fc}", *ext_c,
            f"{n('kn')} = arith.constant {k} : index",
            f"{n('s')} = scf.for {n('k')} = {n('zero')} to {n('kn')} step {n('one')} "
            f"iter_args({n('acc')} = {vc}) -> ({wide}) {{",
            *[f"  {line}" for line in inner], "}", *back,
            f"memref.store {out}, {res}[{n('u')}, {n('v')}] : {fc}"]
    return [f"{res} = memref.alloca() : {fc}", *_tile_loops(n, m, cols, body)]
