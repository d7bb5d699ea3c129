"""The ops of printed MLIR, read as text: what the Graph page lists.

The dashboard shows IR that accel already wrote; it does not need to verify or transform
it, and it must open folders of any target quickly (a 10k-op graph in well under a second)
without loading the MLIR bindings or the dialects a dump uses (torch, rdu, gpu, llvm).
So this reads the printed form line by line:

    %3 = linalg.matmul ins(%a, %b : ...) outs(%2 : ...) -> tensor<2x16xf32> loc(#loc7)
    %24 = "rdu.section"(%23, %arg0) ({ ... }) {sym_name = "s0_linear", ...} : (...) -> ...

Each op directly in a function body becomes an `Op` (name, results, operands, result type,
lines, location). The bodies of ops listed in `GROUPS` (an RDU section) are read too: their
ops get the section's `sym_name` as `group`. Other regions (a linalg.generic's scalar body)
belong to their op. Anything the scanner does not understand is skipped, never fatal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Ops whose regions hold the model's ops, grouped under the op's sym_name.
GROUPS = ("rdu.section", "rdu.hypersection")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_FUNC = re.compile(r'^\s*(?:func\.func|llvm\.func|func)\s+(?:\w+\s+)*@"?([\w.$-]+)"?')
_OP = re.compile(r'^\s*(?:(%[\w.$#-]+(?::\d+)?(?:\s*,\s*%[\w.$#-]+(?::\d+)?)*)\s*=\s*)?'
                 r'("[\w.$]+"|[a-z_][\w$]*(?:\.[\w$]+)+|return)(?=[\s(<{:]|$)')
_VALUE = re.compile(r"%[\w.$#-]+")
_LOC_USE = re.compile(r"\s*loc\((#loc\d*|\"[^\"]*\"[^)]*|[^)]*)\)\s*$")
_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_SYM = re.compile(r'sym_name = "((?:[^"\\]|\\.)*)"')
_HYPER = re.compile(r'^\s*"rdu\.hypersection"\(')
_REF = re.compile(r"hypersection = @([\w.$-]+)")
_KERNEL = re.compile(r"gpu\.launch_func\s+@([\w.$-]+)::@([\w.$-]+)")


@dataclass
class Op:
    """One op of a function body."""

    name: str
    results: list[str]
    operands: list[str]
    type: str
    line: int  # 1-based first line
    end: int  # 1-based last line
    func: str
    loc: str = ""
    group: str = ""
    kernel: str = ""
    #: Inside a group op's region (its values are local to that region).
    nested: bool = False
    #: An RDU hypersection instance: the hypersection whose body it runs.
    ref: str = ""


@dataclass
class Scan:
    """A file's ops in order, and the functions they belong to."""

    ops: list[Op] = field(default_factory=list)
    funcs: list[str] = field(default_factory=list)
    truncated: bool = False


def _depth_change(line: str) -> int:
    code = _STRING.sub('""', line)
    return code.count("{") - code.count("}")


def _result_type(text: str) -> str:
    """The result type on an op's (or a region op's closing) line: after `->`, else after
    the last ` : `; the location stripped, at most 120 characters."""
    text = _LOC_USE.sub("", text)
    if "->" in text:
        out = text.rsplit("->", 1)[1]
    elif " : " in text:
        out = text.rsplit(" : ", 1)[1]
    else:
        return ""
    return _balanced(out.strip())[:120]


def _balanced(text: str) -> str:
    """`text` up to its first unmatched `)` (`outs(%e : T) permutation = ...` -> `T`)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
            if depth < 0:
                return text[:i].strip()
    return text


def scan(text: str, max_ops: int = 200_000) -> Scan:
    """The ops of every function in `text` (see the module docstring)."""
    lines = text.split("\n")
    result = Scan()
    aliases: dict[str, str] = {}
    depth = 0
    func = ""
    body = -1  # depth of the current function's body; -1: outside a function
    open_op: Op | None = None  # a top-level op whose region is open
    open_depth = 0
    group_ops: list[Op] = []
    open_inner: Op | None = None  # a section's op whose region is open
    hyper_start = -1  # first op of the RDU hypersection being read, else -1
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("#loc"):
            m = _LOC_DEF.match(stripped)
            if m:
                aliases[m.group(1)] = m.group(2)
            continue
        change = _depth_change(line)
        if body < 0:
            m = _FUNC.match(line)
            if m and change > 0:
                func = m.group(1)
                result.funcs.append(func)
                body = depth + change
            elif _HYPER.match(line) and change > 0:  # read like a function, named at its end
                func, hyper_start = "hypersection", len(result.ops)
                body = depth + change
            depth += change
            continue
        if open_op is not None:
            if depth == open_depth + 1 and open_op.name in GROUPS:
                inner = _read_op(stripped, number, func)
                if inner is not None and inner.name != "rdu.yield":
                    inner.nested = True
                    group_ops.append(inner)
                    if change > 0:
                        open_inner = inner
            elif open_inner is not None and depth + change == open_depth + 1:
                open_inner.end = number  # the closing line of a region op in a section
                open_inner.type = _result_type(stripped)
                open_inner = None
            depth += change
            if depth <= open_depth:
                open_op.end = number
                open_op.type = _result_type(stripped)
                sym = _SYM.search(stripped)
                open_op.loc = _loc(stripped, aliases) or open_op.loc
                if sym:
                    open_op.group = sym.group(1)
                ref = _REF.search(stripped)
                if ref:
                    open_op.ref = ref.group(1)
                for inner in group_ops:
                    inner.group = open_op.group or open_op.name
                result.ops.extend(group_ops)
                group_ops = []
                open_op = None
            continue
        if depth + change < body or stripped == "}":
            if hyper_start >= 0:
                sym = _SYM.search(stripped)
                name = f"hypersection {sym.group(1) if sym else '?'}"
                for op in result.ops[hyper_start:]:
                    op.func = name
                result.funcs.append(name)
                hyper_start = -1
            body, depth = -1, depth + change
            continue
        if depth != body:  # inside a region the scanner does not read
            depth += change
            continue
        op = _read_op(stripped, number, func)
        depth += change
        if op is None:
            continue
        if len(result.ops) >= max_ops:
            result.truncated = True
            break
        result.ops.append(op)
        if change > 0:
            open_op, open_depth = op, depth - change
            op.end = -1
    for op in result.ops:
        if op.loc.startswith("#loc"):
            op.loc = aliases.get(op.loc, op.loc)
        if op.end < 0:
            op.end = op.line
    return result


def _loc(line: str, aliases: dict[str, str]) -> str:
    m = _LOC_USE.search(line)
    if not m:
        return ""
    ref = m.group(1)
    return aliases.get(ref, ref)[:300]


def _read_op(stripped: str, number: int, func: str) -> Op | None:
    if not stripped or stripped[0] in "}^#/" or stripped.startswith("module"):
        return None
    m = _OP.match(stripped)
    if not m:
        return None
    results_text, name = m.group(1) or "", m.group(2).strip('"')
    if name == "return":
        name = "func.return"
    results = _VALUE.findall(results_text)
    rest = stripped[m.end():]
    rest = _LOC_USE.sub("", rest)
    operands = [v for v in _VALUE.findall(_STRING.sub('""', rest)) if v not in results]
    op = Op(name, results, list(dict.fromkeys(operands)), "", number, number, func,
            loc=_loc(stripped, {}))
    op.type = _result_type(stripped) if not stripped.endswith("{") else ""
    k = _KERNEL.search(stripped)
    if k:
        op.kernel = f"{k.group(1)}.{k.group(2)}"
    return op
