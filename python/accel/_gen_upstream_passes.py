"""Regenerate `accel/upstream_passes.json`, the catalogue of upstream MLIR passes.

Run `python -m accel._gen_upstream_passes` after changing the bindings pin (about a minute);
`--check` only compares with the checked-in file (exit status 1 when stale).

Every fact in the catalogue comes from the *installed* bindings, never from a guess:

* Names and summaries: read from the bindings' own pass registry. The CAPI library is not
  stripped, so its `.symtab` gives the addresses of MLIR's `passRegistry` and
  `passPipelineRegistry` (`llvm::ManagedStatic<llvm::StringMap<PassInfo>>`); a child process
  walks both maps with `ctypes` and checks the layout (map item size, every key equal to the
  entry's own `arg` string) before trusting it. The walk runs in a child so a layout change can
  only make it fail, never crash the generator; on failure (`--no-registry` forces it) names
  come from kebab-case strings in the library that parse as passes, summaries from
  `torch-mlir-opt --list-passes` where it lists the pass, else "no summary".
* Anchors: a pass restricted to an op kind fails to parse at the wrong level with
  "Can't add pass ... restricted to 'X'"; a pass that parses both at `builtin.module` and
  inside `func.func` is op-agnostic (anchor None). Pipelines are validated at `builtin.module`.
* Options and defaults: `str(PassManager.parse(...))` prints every option sorted by name,
  except empty list options, which leave an empty slot; the names for those slots (and the
  options of pipelines, which print expanded) are found by probing strings of the library
  with `NAME{cand=0}` ("no such option" means absent). Types come from the `llvm::cl` parse
  diagnostics for a bad value ("invalid value for boolean argument", ...).
* Cross-checked against `torch-mlir-opt --list-passes` for the passes both know.
"""

from __future__ import annotations

import argparse
import bisect
import ctypes
import json
import mmap
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).with_name("upstream_passes.json")
_REGISTRY_SYMBOLS = {"passes": "_ZL12passRegistry", "pipelines": "_ZL20passPipelineRegistry"}
_EXPORTED_SYMBOL = "mlirContextCreate"  # any exported symbol: gives the load base address
_STD_STRING = 32  # sizeof(std::string), libstdc++
_PASS_INFO = 4 * 32  # PassRegistryEntry: 2 x std::string + 2 x std::function
_TOMBSTONE = (2**64 - 1) << 3 & (2**64 - 1)
_RESTRICTED = re.compile(r"restricted to '([^']+)' on a PassManager intended to run on '([^']+)'")
_TOKEN = re.compile(rb"(?<=\0)([A-Za-z_][A-Za-z0-9_.-]{0,63})(?=\0)")
_TAIL = re.compile(rb"([A-Za-z0-9_.-]{1,64})\0")
_PASS_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_NO_OPTION = "no such option"
_HIGH = "\U0010ffff"


@dataclass
class Entry:
    """One catalogued pass or pipeline while it is being built."""

    name: str
    summary: str | None
    pipeline: bool
    anchor: str | None = None
    options: tuple[tuple[str, str | None, str | None], ...] = ()


# -- the library ---------------------------------------------------------------------------
def capi_library() -> str:
    """Path of the bindings' aggregate CAPI library (the one holding the pass registry)."""
    from accel.ir import bindings_libs_dir

    libs = sorted(Path(bindings_libs_dir()).glob("lib*CAPI*.so*"), key=lambda p: p.stat().st_size)
    if not libs:
        raise FileNotFoundError(f"no lib*CAPI*.so in {bindings_libs_dir()}")
    return str(libs[-1])


def elf_symbol_values(path: str, names: Iterable[str]) -> dict[str, int]:
    """`st_value` of the named symbols, from `.symtab` (local symbols included)."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm[:4] != b"\x7fELF" or mm[4] != 2 or mm[5] != 1:
            raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
        (shoff,) = struct.unpack_from("<Q", mm, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", mm, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", mm, shoff + i * shentsize)
                    for i in range(shnum)]
        symtab = next((s for s in sections if s[1] == 2), None)  # SHT_SYMTAB
        if symtab is None:
            raise ValueError(f"{path}: stripped (no .symtab)")
        stroff, strsize = sections[symtab[6]][4], sections[symtab[6]][5]
        wanted: dict[int, str] = {}
        for name in names:
            at = mm.find(b"\0" + name.encode() + b"\0", stroff, stroff + strsize)
            if at >= 0:
                wanted[at + 1 - stroff] = name
        found: dict[str, int] = {}
        table = memoryview(mm)[symtab[4]:symtab[4] + symtab[5]]
        for st_name, _info, _other, _shndx, value, _size in struct.iter_unpack("<IBBHQQ", table):
            if st_name in wanted and value:
                found[wanted[st_name]] = value
        table.release()
    return found


def read_registry() -> dict[str, dict[str, str]]:
    """Walk the live pass registries of this process: {"passes"|"pipelines": {arg: summary}}."""
    from accel.ir import Context, PassManager

    if "torch_mlir._mlir_libs._torchMlir" in sys.modules:
        raise RuntimeError("torch-mlir's own passes are registered; run in a fresh interpreter")
    with Context():
        PassManager.parse("builtin.module(cse)")  # registration has happened
    lib = capi_library()
    syms = elf_symbol_values(lib, [_EXPORTED_SYMBOL, *_REGISTRY_SYMBOLS.values()])
    missing = {_EXPORTED_SYMBOL, *_REGISTRY_SYMBOLS.values()} - syms.keys()
    if missing:
        raise LookupError(f"symbols not found in {lib}: {sorted(missing)}")
    handle = ctypes.CDLL(lib, mode=os.RTLD_NOLOAD | os.RTLD_NOW)  # the copy already loaded
    exported = ctypes.cast(getattr(handle, _EXPORTED_SYMBOL), ctypes.c_void_p).value
    if not exported:
        raise LookupError(f"{_EXPORTED_SYMBOL} not resolvable")
    base = exported - syms[_EXPORTED_SYMBOL]
    return {kind: _walk_string_map(base + syms[sym]) for kind, sym in _REGISTRY_SYMBOLS.items()}


def _u64(addr: int) -> int:
    return ctypes.c_uint64.from_address(addr).value


def _u32(addr: int) -> int:
    return ctypes.c_uint32.from_address(addr).value


def _std_string(addr: int) -> str:
    ptr, size = _u64(addr), _u64(addr + 8)
    if not ptr or size > 4096:
        raise ValueError("implausible std::string")
    return ctypes.string_at(ptr, size).decode()


def _walk_string_map(managed_static: int) -> dict[str, str]:
    """{key: description} of a `ManagedStatic<StringMap<PassInfo or PassPipelineInfo>>`."""
    smap = _u64(managed_static)  # ManagedStaticBase::Ptr
    if not smap:
        return {}
    # StringMapImpl: TheTable, NumBuckets, NumItems, [NumTombstones,] ItemSize (by version).
    table, buckets, items = _u64(smap), _u32(smap + 8), _u32(smap + 12)
    item_sizes = (_u32(smap + 16), _u32(smap + 20))
    if 8 + _PASS_INFO not in item_sizes or not table or buckets > 1 << 20:
        raise ValueError(f"unexpected StringMap layout (item size {item_sizes})")
    out: dict[str, str] = {}
    for i in range(buckets):
        entry = _u64(table + 8 * i)
        if entry in (0, _TOMBSTONE):
            continue
        key_len = _u64(entry)
        if key_len > 256:
            raise ValueError("implausible key length")
        key = ctypes.string_at(entry + 8 + _PASS_INFO, key_len).decode()
        arg, desc = _std_string(entry + 8), _std_string(entry + 8 + _STD_STRING)
        if arg != key or not desc.isprintable():
            raise ValueError(f"registry entry mismatch: {key!r} vs {arg!r}")
        out[key] = desc
    if len(out) != items:
        raise ValueError(f"walked {len(out)} entries, map says {items}")
    return out


def registry_via_child() -> dict[str, dict[str, str]] | None:
    """`read_registry()` in a child interpreter; None (with a note) when it fails."""
    proc = subprocess.run([sys.executable, "-m", "accel._gen_upstream_passes", "--dump-registry"],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"note: registry walk failed ({tail}); falling back to a string scan")
        return None
    return json.loads(proc.stdout)


@dataclass
class Strings:
    """Identifier-like strings of the library, the candidates for names."""

    tokens: list[str]  # whole NUL-delimited strings plus their suffixes after '-' or '_'
    tails: list[str]  # identifier runs just before a NUL (their suffixes: tail-merged literals)

    def suffixes_between(self, lo: str, hi: str) -> list[str]:
        """Every suffix of `tails` strictly between `lo` and `hi`."""
        out = {t[i:] for t in self.tails for i in range(len(t))
               if (t[i].isalpha() or t[i] == "_") and lo < t[i:] < hi}
        return sorted(out)


def library_strings(path: str) -> Strings:
    """Candidate names from the library's bytes."""
    data = Path(path).read_bytes()
    tokens = {m.group(1).decode() for m in _TOKEN.finditer(data)}
    suffixes = {t[m.end():] for t in tokens for m in re.finditer(r"[-_](?=[A-Za-z_])", t)}
    tails = {m.group(1).decode() for m in _TAIL.finditer(data)}
    return Strings(sorted(tokens | suffixes), sorted(tails))


def opt_tool_listing() -> dict[str, tuple[str, set[str]]]:
    """{pass: (summary, option names)} from `torch-mlir-opt --list-passes`."""
    from accel.ir import bindings_opt_tool

    try:
        text = subprocess.run([bindings_opt_tool(), "--list-passes"], capture_output=True,
                              text=True, timeout=60).stdout
    except OSError:
        return {}
    return parse_opt_listing(text)


def parse_opt_listing(text: str) -> dict[str, tuple[str, set[str]]]:
    """Parse `*-opt --list-passes` output into {pass: (summary, option names)}."""
    out: dict[str, tuple[str, set[str]]] = {}
    current: str | None = None
    for line in text.splitlines():
        if m := re.match(r"^  --(\S+)\s+-   (.*)$", line):
            current = m.group(1)
            out[current] = (m.group(2).strip(), set())
        elif (m := re.match(r"^    --([^=\s]+)", line)) and current:
            out[current][1].add(m.group(1))
        elif not line.startswith("    "):
            current = None
    return out


# -- probing the PassManager ---------------------------------------------------------------
class Prober:
    """Parses pipelines in one context, capturing what MLIR writes to stderr (fd 2)."""

    def __enter__(self) -> Prober:
        from accel.ir import Context, PassManager

        self._pm = PassManager
        self._ctx = Context()
        self._ctx.__enter__()
        sys.stderr.flush()
        self._tmp = tempfile.TemporaryFile(buffering=0)  # shares its offset with fd 2
        self._saved = os.dup(2)
        os.dup2(self._tmp.fileno(), 2)
        self.count = 0
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._tmp.close()
        self._ctx.__exit__(None, None, None)

    def parse(self, pipeline: str) -> tuple[str | None, str]:
        """(printed pipeline or None, error text: exception message + stderr)."""
        self.count += 1
        pos = self._tmp.seek(0, os.SEEK_END)
        if pos > 1 << 20:
            self._tmp.truncate(0)
            pos = self._tmp.seek(0)
        printed, err = None, ""
        try:
            printed = str(self._pm.parse(pipeline))
        except Exception as e:  # noqa: BLE001 - any parse failure is an answer
            err = str(e)
        self._tmp.seek(pos)
        return printed, err + self._tmp.read().decode(errors="replace")


def wrap(anchor: str | None, element: str) -> str:
    """`element` placed where its anchor runs, under a `builtin.module` root."""
    if anchor in (None, "builtin.module"):
        return f"builtin.module({element})"
    return f"builtin.module({anchor}({element}))"


def find_anchor(p: Prober, name: str) -> tuple[bool, str | None]:
    """(parses?, anchor) of a pass: None means op-agnostic."""
    printed, err = p.parse(f"builtin.module({name})")
    if printed is None:
        m = _RESTRICTED.search(err)
        if not m:
            return False, None
        return p.parse(wrap(m.group(1), name))[0] is not None, m.group(1)
    printed, err = p.parse(f"builtin.module(func.func({name}))")
    if printed is not None:
        return True, None
    m = _RESTRICTED.search(err)
    return True, (m.group(1) if m else "builtin.module")


def option_slots(printed: str, name: str) -> list[tuple[str, str]]:
    """[(option, printed value)] of `name` in a printed pipeline; ('', '') = an empty list."""
    m = re.search(r"(?<=[(,])" + re.escape(name) + r"(\{|[,)])", printed)
    if not m or m.group(1) != "{":
        return []
    i, depth, cur, parts = m.end(), 0, [], []
    quote = ""
    while i < len(printed):
        c = printed[i]
        i += 1
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                break
            depth -= 1
        elif c == " " and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur))
    return [tuple(part.split("=", 1)) if "=" in part else (part, "") for part in parts]


def classify(err: str, option: str) -> str | None:
    """Option type from the `llvm::cl` diagnostic for a bad value (None: no cl diagnostic)."""
    m = re.search(r"for the -{1,2}" + re.escape(option) + r" option: (.*)", err)
    if not m:
        return None
    msg = m.group(1)
    if "boolean argument" in msg:
        return "bool"
    # `int`/`uint` are 32-bit (C int, unsigned); `long`, `llong` and their unsigned
    # forms are 64-bit on the platforms the bindings ship for.
    if re.search(r"for u(long|llong) argument", msg):
        return "uint64"
    if re.search(r"for uint argument", msg):
        return "uint"
    if re.search(r"for (long|llong) argument", msg):
        return "int64"
    if re.search(r"for integer argument", msg):
        return "int"
    if "floating point argument" in msg:
        return "float"
    if "Cannot find option named" in msg:
        return "enum"
    return "unknown"


def option_type(p: Prober, name: str, anchor: str | None, option: str,
                is_pipeline: bool) -> str | None:
    """Type of one option: bool/int/uint/float/enum/string/pipeline/list (None if unsure)."""
    printed, err = p.parse(wrap(anchor, f"{name}{{{option}=zz9q,zz8q}}"))
    scalar = classify(err, option)
    if scalar is not None:  # a list parser reports the first element, a scalar one the text
        if scalar == "unknown":
            return None
        return scalar if "'zz9q,zz8q'" in err else "list"
    if "pass pipeline" in err.lower():
        return "pipeline"
    if is_pipeline:
        return None  # accepts any text: a string or a list of strings, printing cannot tell
    if printed is not None and f"{option}={{zz9q,zz8q}}" in printed:
        return "list"
    return "string"


def option_exists(p: Prober, anchor: str | None, name: str, option: str) -> bool:
    """Whether `name` accepts an option called `option`."""
    return _NO_OPTION not in p.parse(wrap(anchor, f"{name}{{{option}=0}}"))[1]


def hidden_options(p: Prober, entry: Entry, slots: list[tuple[str, str]],
                   strings: Strings) -> list[str]:
    """Names of the empty list options (empty slots) of a pass, found by probing tokens."""
    names = [k for k, _ in slots]
    found: list[str] = []
    i = 0
    while i < len(names):
        if names[i]:
            i += 1
            continue
        j = i
        while j < len(names) and not names[j]:
            j += 1
        lo, hi, want = (names[i - 1] if i else ""), (names[j] if j < len(names) else _HIGH), j - i
        tokens = strings.tokens
        gap = tokens[bisect.bisect_right(tokens, lo):bisect.bisect_left(tokens, hi)]
        hits = _scan(p, entry, gap, want)
        if len(hits) < want:  # maybe a tail-merged string: try every suffix in the gap
            extra = [t for t in strings.suffixes_between(lo, hi) if t not in hits]
            hits += _scan(p, entry, extra, want - len(hits))
        if len(hits) < want:
            print(f"warning: {entry.name}: {want - len(hits)} empty list option(s) between "
                  f"{lo!r} and {hi!r} not identified")
        found += hits
        i = j
    return found


def _scan(p: Prober, entry: Entry, candidates: list[str], want: int) -> list[str]:
    hits: list[str] = []
    for cand in candidates:
        if option_exists(p, entry.anchor, entry.name, cand):
            hits.append(cand)
            if len(hits) == want:
                break
    return hits


def pass_options(p: Prober, entry: Entry, strings: Strings) -> None:
    """Fill `entry.options` for a pass."""
    printed, _ = p.parse(wrap(entry.anchor, entry.name))
    assert printed is not None
    slots = option_slots(printed, entry.name)
    opts: list[tuple[str, str | None, str | None]] = []
    for key, value in slots:
        if key:
            typ = option_type(p, entry.name, entry.anchor, key, False)
            if typ == "string" and value.startswith("{") and value.endswith("}"):
                value = value[1:-1]
            opts.append((key, value, typ))
    opts += [(h, "", "list") for h in hidden_options(p, entry, slots, strings)]
    entry.options = tuple(sorted(opts))


def pipeline_options(p: Prober, entry: Entry, strings: Strings) -> None:
    """Fill `entry.options` for a pipeline (defaults are not observable: None)."""
    if _NO_OPTION not in p.parse(wrap(None, f"{entry.name}{{zzqx9=0}}"))[1]:
        return  # takes no options at all (EmptyPipelineOptions rejects silently)
    names = [t for t in strings.tokens if option_exists(p, None, entry.name, t)]
    entry.options = tuple((n, None, option_type(p, entry.name, None, n, True))
                          for n in names)


# -- building the catalogue ----------------------------------------------------------------
def discover_names(p: Prober, tokens: list[str]) -> dict[str, bool]:
    """Fallback name discovery: {name: is_pipeline} for kebab-case tokens that parse.

    Tokens include every suffix of the library's strings: the linker tail-merges literals
    (`canonicalize` lives inside `fcanonicalize`).
    """
    out: dict[str, bool] = {}
    for tok in tokens:
        if not _PASS_NAME.fullmatch(tok):
            continue
        printed, err = p.parse(f"builtin.module({tok})")
        if printed is not None:
            out[tok] = not re.search(r"(?<=[(,])" + re.escape(tok) + r"[{,)]", printed)
        elif _RESTRICTED.search(err):
            out[tok] = False
    return out


def build(use_registry: bool = True) -> tuple[list[Entry], dict[str, Any]]:
    """Probe the installed bindings; returns the entries and facts for the header."""
    from accel.versions import PROVIDER, provider_version

    t0 = time.time()
    lib = capi_library()
    registry = registry_via_child() if use_registry else None
    strings = library_strings(lib)
    listing = opt_tool_listing()
    entries: list[Entry] = []
    with Prober() as p:
        if registry is not None:
            source = "registry"
            entries += [Entry(n, s, False) for n, s in registry["passes"].items()]
            entries += [Entry(n, s, True) for n, s in registry["pipelines"].items()]
        else:
            source = "strings"
            names = {t for t in strings.suffixes_between("", _HIGH) if _PASS_NAME.fullmatch(t)}
            for n, is_pipe in discover_names(p, sorted(names)).items():
                summary = listing[n][0] if n in listing else None
                entries.append(Entry(n, summary, is_pipe))
        kept: list[Entry] = []
        for e in sorted(entries, key=lambda e: e.name):
            if e.pipeline:
                ok, e.anchor = p.parse(wrap(None, e.name))[0] is not None, "builtin.module"
            else:
                ok, e.anchor = find_anchor(p, e.name)
            if not ok:
                print(f"warning: {e.name} is registered but does not parse; left out")
                continue
            (pipeline_options if e.pipeline else pass_options)(p, e, strings)
            kept.append(e)
        probes = p.count
    for e in kept:  # cross-check with the *-opt tool
        if e.name in listing:
            summary, opts = listing[e.name]
            if e.summary is not None and summary != e.summary:
                print(f"warning: {e.name}: summary differs from torch-mlir-opt: {summary!r}")
            if not e.pipeline and opts != {o[0] for o in e.options}:
                print(f"warning: {e.name}: options differ from torch-mlir-opt: {sorted(opts)}")
    facts = {"provider": PROVIDER, "version": provider_version(), "source": source,
             "seconds": time.time() - t0, "probes": probes,
             "crosschecked": sum(e.name in listing for e in kept)}
    return kept, facts


def render(entries: list[Entry], facts: dict[str, Any]) -> str:
    """The catalogue as JSON text (`accel/upstream_passes.json`)."""
    data = {
        "generated_by": "python -m accel._gen_upstream_passes (do not edit by hand)",
        "provider": facts["provider"], "provider_version": facts["version"],
        "source": facts["source"],
        "entry": "[name, summary or null, anchor or null, is_pipeline, "
                 "[[option, default or null, type or null], ...]]",
        "passes": [[e.name, e.summary, e.anchor, e.pipeline, [list(o) for o in e.options]]
                   for e in entries],
    }
    return json.dumps(data, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accel._gen_upstream_passes",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=Path, default=DATA_FILE, help="file to write")
    ap.add_argument("--check", action="store_true", help="only compare with --output")
    ap.add_argument("--no-registry", action="store_true", help="force the string-scan fallback")
    ap.add_argument("--dump-registry", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.dump_registry:
        json.dump(read_registry(), sys.stdout)
        return 0
    entries, facts = build(use_registry=not a.no_registry)
    text = render(entries, facts)
    pipes = sum(e.pipeline for e in entries)
    print(f"{len(entries) - pipes} passes + {pipes} pipelines, "
          f"{sum(e.summary is not None for e in entries)} with summaries, "
          f"{sum(len(e.options) for e in entries)} options, source={facts['source']}, "
          f"{facts['crosschecked']} cross-checked with torch-mlir-opt, "
          f"{facts['probes']} probes, {facts['seconds']:.1f}s")
    if a.check:
        current = a.output.read_text() if a.output.exists() else ""
        print("up to date" if current == text else f"STALE: {a.output}")
        return 0 if current == text else 1
    a.output.write_text(text)
    print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
