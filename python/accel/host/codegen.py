"""Parallel code generation: a big LLVM module as partitions, optimised and compiled to
object code in worker processes, linked together by the JIT, each part's object cached.

LLVM optimises and compiles the functions of a module one after another in one thread,
and llvmlite serialises every call behind one lock: a train step's backward graph (~120
functions, 100,000 lines of IR) took ~16 s of one core while the others idled. The module's
functions are independent once each is compiled (they call each other through symbols),
so `partition` cuts the printed module into parts of whole functions, each a module of its
own (the functions it defines; declarations of those it calls elsewhere; the constants it
reads, copied), and `emit_objects` compiles them in `ACCEL_COMPILE_JOBS` worker processes
(`accel.host.worker` through `parallel_map`; default: every core this process may use).

Deterministic: how a module is cut depends only on its text (`_chunks`, never on the job
count), and each part's object only on the part, so the objects are the same bytes
whatever `ACCEL_COMPILE_JOBS` is (one job compiles the same parts in this process). Small
modules (under `LINES_PER_PART` * 2 lines: every test model, most inference graphs) are not
cut at all and keep the single-object path.

Cached: a part's text depends on its own functions only (content-defined cuts; its own
declarations, attribute groups and metadata, numbered afresh), so `emit_objects` takes
parts compiled before from the compile cache (`accel.cache.part_key`): a model with one
layer changed compiles that layer's parts and the entry again.

What crosses parts: calls (a private function another part calls becomes external, under
its unique name), read-only globals (copied; they stay private in each part), and
`@llvm.compiler.used` (each part gets the libmvec declarations its calls may be
vectorised into). A module with writable globals, aliases, unnamed (numbered) globals
or a `used` list naming its own definitions is not cut.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import pickle
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from accel.diagnostics import AccelError
from accel.host import worker
from accel.llvm.elf import object_problem

log = logging.getLogger("accel.codegen")

#: Lines of printed IR per part; a module of fewer than twice this stays whole. (12,000
#: until the twelfth session: the zoo's quick BERT, 17,000 lines, then compiled whole,
#: 1.3 s of its 4 s compile; in two parts 0.8 s, and it ran as fast.)
LINES_PER_PART = 8_000
#: At most this many parts (each pays a parse and a target machine).
MAX_PARTS = 16
JOBS_ENV = "ACCEL_COMPILE_JOBS"
#: Less IR than this (characters, all calls together) is compiled here: starting a worker
#: (~0.2 s: an interpreter, llvmlite) costs more than it saves.
PARALLEL_MIN_CHARS = 500_000

_NAME = r'(?:"(?:[^"\\]|\\.)*"|[-a-zA-Z$._][-a-zA-Z$._0-9]*|[0-9]+)'
_REF = re.compile(r"@(" + _NAME + r")")
_DEFINE_NAME = re.compile(r"@(" + _NAME + r")\(")
_GLOBAL = re.compile(r"@(" + _NAME + r") = (.*?)\b(global|constant|alias|ifunc) ")
_LOCAL_LINKAGE = re.compile(r"^define (private|internal) ")
_DECL_DROPS = re.compile(r"^define (?:(?:private|internal|available_externally|linkonce|"
                         r"linkonce_odr|weak|weak_odr|external|dso_local|hidden|protected) )*")


def compile_jobs() -> int:
    """`ACCEL_COMPILE_JOBS`, or the cores this process may run on."""
    raw = os.environ.get(JOBS_ENV, "").strip()
    if not raw:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not Linux
            return max(1, os.cpu_count() or 1)
    try:
        jobs = int(raw)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise AccelError(f"{JOBS_ENV}={raw!r}: expected a positive number of worker processes")
    return jobs


@dataclass
class _Function:
    name: str
    lines: list[str]
    refs: set[str] = field(default_factory=set)


@dataclass
class _Module:
    """The printed module taken apart: lines every part keeps (header, types, `used`
    lists), external declarations, attribute groups and metadata (each part takes the ones
    it names, numbered afresh), globals and function definitions."""

    common: list[str]
    globals: dict[str, tuple[str, set[str]]]
    functions: dict[str, _Function]
    declarations: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    named_metadata: list[str] = field(default_factory=list)
    #: `@llvm.compiler.used` / `@llvm.used`: (the line's name, the declarations it names).
    used: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(f.lines) for f in self.functions.values())


#: `#N` (an attribute group) and `!N` (a metadata node) outside string literals.
_NUMBERED = re.compile(r'"(?:[^"\\]|\\.)*"|([#!])([0-9]+)\b')
_ATTRIBUTES = re.compile(r"^attributes #([0-9]+) = ")
_METADATA = re.compile(r"^!([0-9]+) = ")


def _parse(text: str) -> _Module | None:
    """`text` (LLVM's printer output) taken apart, or None where cutting is not safe."""
    module = _Module([], {}, {})
    common, globals_, functions = module.common, module.globals, module.functions
    used: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            match = _DEFINE_NAME.search(line)
            if match is None:
                return None
            end = i
            while lines[end] != "}":
                end += 1
                if end == len(lines):
                    return None
            body = lines[i:end + 1]
            name = match.group(1)
            fn = _Function(name, body)
            for body_line in body:
                fn.refs.update(_REF.findall(body_line))
            fn.refs.discard(name)
            functions[name] = fn
            i = end + 1
            continue
        if line.startswith(("@llvm.used = ", "@llvm.compiler.used = ")):
            used.append(line)  # libmvec's variants kept for the vectoriser (host/vecmath.py)
        elif line.startswith("@"):
            match = _GLOBAL.match(line)
            if match is None or match.group(1).isdigit():
                return None
            words, kind = match.group(2).split(), match.group(3)
            declaration = "external" in words or "extern_weak" in words
            if kind in ("alias", "ifunc") or (kind == "global" and not declaration) or \
                    "appending" in words:
                return None  # writable or special: one definition only
            refs = set(_REF.findall(line[match.end():]))
            globals_[match.group(1)] = (line, refs)
        elif line.startswith(("module asm", "$")):
            return None  # inline assembly or comdats: would be defined in every part
        elif line.startswith("declare ") and (match := _DEFINE_NAME.search(line)):
            module.declarations[match.group(1)] = line
        elif match := _ATTRIBUTES.match(line):
            module.attributes[match.group(1)] = line
        elif match := _METADATA.match(line):
            module.metadata[match.group(1)] = line
        elif line.startswith("!"):
            module.named_metadata.append(line)  # !llvm.module.flags and the like
        elif line and not line.startswith(";"):  # comments: "; Function Attrs: ..."
            common.append(line)
        i += 1
    for line in used:  # each part gets the list's names it uses: only declarations
        names = _REF.findall(line.split(" = ", 1)[1])
        if set(names) & (set(functions) | set(globals_)) or "appending global" not in line:
            return None
        module.used.append((line.split(" = ", 1)[0], names))
    return module


def part_count(size: int) -> int:
    """How many parts a module of `size` function lines is cut into (1: not cut)."""
    parts = min(MAX_PARTS, size // LINES_PER_PART)
    return parts if parts >= 2 else 1


def _groups(module: _Module) -> list[list[str]]:
    """Functions that must share a part: an entry and its `_mlir_ciface_` wrapper (the
    JIT inlines the entry into it)."""
    groups: dict[str, list[str]] = {}
    for name in module.functions:
        base = name.removeprefix("_mlir_ciface_")
        key = base if base in module.functions else name
        groups.setdefault(key, []).append(name)
    return list(groups.values())


def _lines(module: _Module, group: list[str]) -> int:
    return sum(len(module.functions[n].lines) for n in group)


def _assign(module: _Module, parts: int) -> list[list[str]]:
    """Longest-first onto the lightest part (ties: the lower index): balanced, and a
    function of the text alone."""
    sized = sorted(_groups(module), key=lambda g: (-_lines(module, g), g))
    loads, owned = [0] * parts, [[] for _ in range(parts)]  # type: list[int], list[list[str]]
    for group in sized:
        k = loads.index(min(loads))
        owned[k].extend(group)
        loads[k] += _lines(module, group)
    return [sorted(names) for names in owned if names]


def _chunks(module: _Module) -> list[list[str]]:
    """Content-defined parts (as restic and rsync cut files): the groups in the order of
    their names, a part ending after a group with a probability of its share of the target
    size (drawn from a hash of its name), or before a group that would take the part past
    1.5x that. Where a part ends depends on the groups around it alone, so a
    changed function changes its own part (and at most its neighbour, if its size crosses a
    bound): the other parts keep their text, and their objects come from the part cache.
    The entries (what the JIT's `__accel_call_` trampolines call) and the trampolines form
    a part of their own: an entry calls every other function, so it changes with any."""
    groups = _groups(module)
    called = {ref for name, fn in module.functions.items() if name.startswith("__accel_call_")
              for ref in fn.refs}
    entry = [g for g in groups if any(n.startswith("__accel_call_") or n in called for n in g)]
    chunks: list[list[str]] = [[n for g in entry for n in g]] if entry else []
    current: list[str] = []
    load = 0
    # Parts of ~3/4 LINES_PER_PART, at most 1.5x that: a train step's backward graph (108K
    # lines) compiled as fast as in the balanced parts of LINES_PER_PART (3.3 s on 2 jobs;
    # up to 2x LINES_PER_PART, its longest part made it 0.3 s slower).
    target = max(1, LINES_PER_PART * 3 // 4)
    for group in sorted((g for g in groups if g not in entry), key=min):
        lines = _lines(module, group)
        if current and load + lines > target * 3 // 2:
            chunks.append(current)
            current, load = [], 0
        current.extend(group)
        load += lines
        draw = int.from_bytes(hashlib.sha256(min(group).encode()).digest()[:8], "big") / 2**64
        if draw < lines / target:
            chunks.append(current)
            current, load = [], 0
    if current:
        chunks.append(current)
    return [sorted(names) for names in chunks]


def _declaration(header: str) -> str:
    return "declare " + _DECL_DROPS.sub("", header).removesuffix("{").rstrip()


def _needs(module: _Module, names: list[str]) -> tuple[set[str], set[str]]:
    """(every symbol the functions `names` and the globals they read name, those globals)."""
    refs: set[str] = set()
    for name in names:
        refs |= module.functions[name].refs
    wanted: set[str] = set()
    todo = list(refs)
    while todo:  # globals, and what their initialisers name
        ref = todo.pop()
        if ref in module.globals and ref not in wanted:
            wanted.add(ref)
            refs |= module.globals[ref][1]
            todo.extend(module.globals[ref][1])
    return refs, wanted


def _numbered_afresh(module: _Module, out: list[str]) -> list[str]:
    """`out` with the attribute groups and metadata nodes it names appended, numbered from
    0 in the order of first use: a part's text then depends on its own contents only, not
    on how the whole module numbered them (the part cache's key)."""
    lines = out + module.named_metadata
    defined = {"#": module.attributes, "!": module.metadata}
    renamed: dict[tuple[str, str], str] = {}
    counts = {"#": 0, "!": 0}

    def rename(match: re.Match[str]) -> str:
        sigil, number = match.group(1), match.group(2)
        if sigil is None:
            return match.group(0)  # a string literal: left as it is
        new = renamed.get((sigil, number))
        if new is None:
            if number not in defined[sigil]:
                raise AccelError(f"internal error: {sigil}{number} is named but not defined "
                                 "in the module cut for code generation")
            new = renamed[(sigil, number)] = str(counts[sigil])
            counts[sigil] += 1
            lines.append(defined[sigil][number])  # renamed in its turn: nodes name nodes
        return sigil + new

    # A definition is appended when first named, so each kind lands in its new order.
    k = 0
    while k < len(lines):
        if "#" in lines[k] or "!" in lines[k]:  # most lines name neither: skip the regex
            lines[k] = _NUMBERED.sub(rename, lines[k])
        k += 1
    return lines


def partition(text: str, parts: int | None = None) -> list[str]:
    """The parts of the printed module `text` (a list of one: `text` itself, when it is
    small or cannot be cut). `parts`: how many, balanced by size (default: content-defined
    parts of about 3/4 `LINES_PER_PART` lines, `_chunks`, when the module has at least
    twice `LINES_PER_PART`). Each part is a module of its own whose text depends on its
    functions alone."""
    module = _parse(text)
    if module is None:
        return [text]
    if parts is None:
        if part_count(module.size) < 2:
            return [text]
        owned = _chunks(module)
    else:
        owned = _assign(module, parts) if parts >= 2 else []
    if len(owned) < 2:
        return [text]
    owner = {name: k for k, names in enumerate(owned) for name in names}
    needs = [_needs(module, names) for names in owned]
    called_across = {ref for k, (refs, _) in enumerate(needs) for ref in refs
                     if ref in owner and owner[ref] != k}
    texts = []
    for k, names in enumerate(owned):
        refs, wanted = needs[k]
        code = [module.globals[g][0] for g in module.globals if g in wanted]
        code += [_declaration(module.functions[f].lines[0]) for f in sorted(refs)
                 if f in owner and owner[f] != k]
        for name in names:
            body = module.functions[name].lines
            if name in called_across:
                body = [_LOCAL_LINKAGE.sub("define ", body[0]), *body[1:]]
            code += body
        used = _used_lists(module, code, refs)
        refs = refs | {name for _, kept in used for name in kept}
        out = list(module.common)
        out += [f'{list_name} = appending global [{len(kept)} x ptr] ['
                + ", ".join(f"ptr @{n}" for n in kept) + '], section "llvm.metadata"'
                for list_name, kept in used]
        out += [line for name, line in module.declarations.items() if name in refs]
        texts.append("\n".join(_numbered_afresh(module, out + code)) + "\n")
    return texts


def _used_lists(module: _Module, code: list[str], refs: set[str]
                ) -> list[tuple[str, list[str]]]:
    """The `used` lists for a part of `code`: the names it calls, or that an attribute
    group it uses names (libmvec's variants, in `vector-function-abi-variant`), so that a
    model that starts using erf elsewhere does not change this part's text."""
    if not module.used:
        return []
    groups = {m.group(2) for line in code if "#" in line for m in _NUMBERED.finditer(line)
              if m.group(1) == "#"}
    attributes = " ".join(module.attributes[g] for g in groups if g in module.attributes)
    out = []
    for list_name, names in module.used:
        kept = [n for n in names if n in refs or f"({n})" in attributes]
        if kept:
            out.append((list_name, kept))
    return out


def emit_objects(parts: Sequence[str], opt_level: int, cpu: str, features: str,
                 jobs: int | None = None, *, cached: bool = False) -> list[bytes]:
    """Object code of each part, in order, compiled by up to `jobs` worker processes
    (default `compile_jobs()`; 1: here, one after another). `cached`: parts whose object
    the cache holds (`accel.cache.part_key`: the part's text, the target, LLVM) are not
    compiled again, and the others are stored: a model with one layer changed compiles
    that layer's parts only."""
    from accel import cache

    keys = [cache.part_key(p, opt_level, cpu, features) for p in parts] if cached else []
    found = [cache.lookup_part(k) for k in keys] if cached else [None] * len(parts)
    missing = [k for k, obj in enumerate(found) if obj is None or object_problem(obj)]
    made = parallel_map("accel.host.worker:compile_part",
                        [(parts[k], opt_level, cpu, features) for k in missing], jobs,
                        what="code generation part")
    for k, obj in zip(missing, made, strict=True):
        found[k] = obj
        if cached:
            cache.store_part(keys[k], obj)
    if cached:
        log.info("accel codegen: %d of %d parts compiled, %d from the cache", len(missing),
                 len(parts), len(parts) - len(missing))
    return [obj for obj in found if obj is not None]


def parallel_map(function: str, calls: Sequence[tuple[Any, ...]], jobs: int | None = None, *,
                 what: str = "compile job") -> list[Any]:
    """`function` ("module:function", one of `worker.CALLABLE`) applied to each argument
    tuple of `calls`, by up to `jobs` worker processes (default `compile_jobs()`; 1, a
    single call or less than `PARALLEL_MIN_CHARS` of IR: here), results in the order of
    `calls`. The biggest calls (by the length of
    their first argument, the IR) go first. An `AccelError` in a call is raised here with
    `what` and the call's index."""
    jobs = compile_jobs() if jobs is None else jobs
    size = sum(len(str(args[0])) for args in calls if args)
    if jobs <= 1 or len(calls) <= 1 or size < PARALLEL_MIN_CHARS or not sys.executable:
        results = []
        for k, args in enumerate(calls):
            try:
                results.append(worker.call(function, args))
            except AccelError as err:
                raise AccelError(f"{err} ({what} {k})") from None
        return results
    found: list[Any] = [None] * len(calls)
    order = sorted(range(len(calls)), key=lambda k: -len(str(calls[k][0])))
    lock = threading.Lock()

    errors: list[tuple[int, BaseException]] = []

    def serve() -> None:
        k = -1
        try:
            with _Worker() as w:
                while True:
                    with lock:
                        if not order or errors:
                            return
                        k = order.pop(0)
                    found[k] = w.call(function, calls[k], f"{what} {k}")
        except BaseException as err:  # noqa: BLE001 - raised by the caller's thread
            errors.append((k, err))

    # Daemon threads, not a thread pool's: after a Ctrl-C abandons the compile, interpreter
    # exit does not wait for them (the pool's atexit hook would), and `_kill_live` then
    # stops their workers.
    threads = [threading.Thread(target=serve, name=f"accel-compile-{i}", daemon=True)
               for i in range(min(jobs, len(calls)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:  # the failed call of the lowest index, whatever the timing
        raise min(errors, key=lambda e: e[0])[1]
    return found


#: Worker processes alive now: killed when the interpreter exits (after a Ctrl-C the
#: compile thread is abandoned, and its workers must not outlive the process).
_LIVE: set[subprocess.Popen[bytes]] = set()


@atexit.register
def _kill_live() -> None:
    for proc in list(_LIVE):
        proc.kill()


class _Worker:
    """One `accel.host.worker` process (stderr to a temporary file: read after a failure)."""

    def __enter__(self) -> _Worker:
        import accel

        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(accel.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "accel.host.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=env)
        _LIVE.add(self.proc)
        return self

    def call(self, function: str, args: tuple[Any, ...], what: str) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            pickle.dump((function, args), self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.flush()
            ok, answer = pickle.load(self.proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            self.proc.wait()
            self.stderr.seek(0)
            tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-1:]
            raise AccelError(f"internal error: the compile worker for {what} exited with "
                             f"status {self.proc.returncode}"
                             + (f": {tail[0]}" if tail else "")) from None
        if not ok:
            raise AccelError(f"{answer} ({what})")
        return answer

    def __exit__(self, *exc: object) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if exc[0] is not None:
            self.proc.kill()
        self.proc.wait()
        _LIVE.discard(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.stderr.close()
