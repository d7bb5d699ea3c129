"""A structural check of relocatable ELF objects before the JIT links them.

The CPU JIT links host object files it made earlier (compile-cache entries, artifacts'
`module.o`) without compiling again. LLVM's object loader trusts its input: a truncated
section table, a symbol naming a section that does not exist or a relocation past the end
of its section makes it read or write out of bounds and kill the process. `object_problem`
walks the header, the section table, the symbol tables and every relocation and returns
the first thing out of bounds (or of a kind the loader does not expect), so a damaged
object is refused or rebuilt instead of linked.

What it cannot see: damaged instructions or constants inside a well-formed section. The
compile cache keeps a digest of each object for that (`accel.host.jit`); an
artifact's object is covered by its manifest checksum and is as trusted as a shared library.
"""

from __future__ import annotations

import platform
import struct

from accel.diagnostics import AccelError
from accel.llvm.archive import is_archive, members

_EM = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}
_SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 3, 4, 8, 9
_SHN_LORESERVE, _SHN_ABS, _SHN_COMMON = 0xFF00, 0xFFF1, 0xFFF2
_STT_FILE = 4
#: x86-64 relocations of the JIT's large code model (R_X86_64_64, R_X86_64_PC64), with the
#: bytes each patches. 32-bit ones can overflow when linked, which LLVM answers with abort().
_X86_64_RELOCS = {1: 8, 24: 8}
_WRITE, _ALLOC, _EXEC, _MERGE, _STRINGS, _INFO_LINK, _LARGE = (
    0x1, 0x2, 0x4, 0x10, 0x20, 0x40, 0x10000000)
#: Section flag sets of JIT objects (X86_64_LARGE aside): none (names, symbols), data,
#: read-only data, code, constants, strings, relocations. Others (TLS, compressed, groups,
#: writable code, code that is not executable) are not what the JIT made.
_SECTION_FLAGS = frozenset({0, _ALLOC, _ALLOC | _WRITE, _ALLOC | _EXEC, _ALLOC | _MERGE,
                            _ALLOC | _MERGE | _STRINGS, _INFO_LINK})
_STT_FUNC = 2
_MAX_SECTIONS = 1 << 16
#: Largest section alignment accepted (LLVM aborts on absurd ones; code needs a page at most).
_MAX_ALIGN = 1 << 16
_SHF_MERGE = 0x10


def _host_machine() -> int | None:
    return _EM.get(platform.machine().lower())


def object_problem(data: bytes) -> str | None:
    """Why `data` is not a well-formed relocatable ELF object for this host (or an archive
    of them, `accel.llvm.archive`), or None."""
    if not is_archive(data):
        return _object_problem(data)
    try:
        parts = members(data)
    except AccelError as err:
        return str(err)
    for i, part in enumerate(parts):
        problem = _object_problem(part)
        if problem:
            return f"archive member {i}: {problem}"
    return None


def _object_problem(data: bytes) -> str | None:
    try:
        return _check(memoryview(data))
    except struct.error as err:  # a table that ends early
        return f"truncated ({err})"


def _check(data: memoryview) -> str | None:
    size = len(data)
    if size < 64 or bytes(data[:4]) != b"\x7fELF":
        return "not an ELF file"
    if data[4] != 2 or data[5] != 1:
        return "not a 64-bit little-endian ELF file"
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_type != 1:
        return f"ELF type {e_type}, not a relocatable object"
    host = _host_machine()
    if host is not None and e_machine != host:
        return f"built for ELF machine {e_machine}, not this host's {host}"
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize != 64 or not 0 < shnum < _MAX_SECTIONS or shstrndx >= shnum:
        return "malformed section header table"
    if shoff + shnum * 64 > size:
        return "the section header table is past the end of the file"
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * 64) for i in range(shnum)]
    if any(sections[0]):
        return "the null section header is not null"
    for i, (_, kind, flags, _, offset, length, link, _, align, entsize) in enumerate(sections):
        if kind != _SHT_NOBITS and offset + length > size:
            return f"section {i} is past the end of the file"
        if align & (align - 1) or align > _MAX_ALIGN:
            return f"section {i} has alignment {align}"
        if flags & _SHF_MERGE and (entsize == 0 or length % entsize):
            return f"section {i} has entries of {entsize} bytes"
        if flags & ~_LARGE not in _SECTION_FLAGS:
            return f"section {i} has flags {flags:#x}"
        if kind != _SHT_NOBITS and length and (offset < 64 or offset % max(align, 1)):
            return f"section {i} is misplaced (offset {offset}, alignment {align})"
        if kind in (_SHT_SYMTAB, _SHT_RELA, _SHT_REL) and link >= shnum:
            return f"section {i} links to section {link}, which does not exist"
    placed = sorted((offset, offset + length) for _, kind, _, _, offset, length, *_ in sections
                    if kind != _SHT_NOBITS and length)
    placed.append((shoff, shoff + shnum * 64))
    placed.sort()
    if any(start < end for (_, end), (start, _) in zip(placed, placed[1:], strict=False)):
        return "sections overlap"
    names = sections[shstrndx]
    if names[1] != _SHT_STRTAB:
        return "the section name table is not a string table"
    for i, section in enumerate(sections):
        problem = None
        if section[0] >= max(names[5], 1):
            problem = "its name is past the section name table"
        elif section[1] == _SHT_STRTAB and section[5] and \
                (data[section[4]] != 0 or data[section[4] + section[5] - 1] != 0):
            problem = "a string table that does not start and end with NUL"
        elif section[1] == _SHT_SYMTAB:
            problem = _check_symbols(data, sections, section)
        elif section[1] in (_SHT_RELA, _SHT_REL):
            problem = _check_relocations(data, sections, section, host)
        if problem:
            return f"section {i}: {problem}"
    return None


def _check_symbols(data: memoryview, sections: list[tuple[int, ...]],
                   symtab: tuple[int, ...]) -> str | None:
    _, _, _, _, offset, length, link, _, _, entsize = symtab
    if entsize != 24 or length % 24:
        return "malformed symbol table"
    strtab = sections[link]
    if strtab[1] != _SHT_STRTAB:
        return "the symbol names are not in a string table"
    for j in range(length // 24):
        name, info, _, shndx, value, sym_size = struct.unpack_from("<IBBHQQ", data,
                                                                   offset + j * 24)
        if name >= max(strtab[5], 1):
            return f"symbol {j}'s name is past its string table"
        if info >> 4 > 2 or info & 0xF > 4:  # LOCAL/GLOBAL/WEAK; NOTYPE..FILE
            return f"symbol {j} has binding and type {info:#x}"
        if shndx == _SHN_COMMON:  # JIT objects define no common symbols
            return f"symbol {j} is a common symbol"
        if shndx in (0, _SHN_ABS):
            continue
        if shndx >= _SHN_LORESERVE or shndx >= len(sections):
            return f"symbol {j} is in section {shndx}, which does not exist"
        if value + sym_size > sections[shndx][5]:
            return f"symbol {j} is past the end of its section"
        if info & 0xF == _STT_FUNC and not sections[shndx][2] & _EXEC:
            return f"function symbol {j} is in a section that is not executable"
    return None


def _check_relocations(data: memoryview, sections: list[tuple[int, ...]],
                       rel: tuple[int, ...], host: int | None) -> str | None:
    _, kind, _, _, offset, length, link, info, _, entsize = rel
    width = 24 if kind == _SHT_RELA else 16
    if entsize != width or length % width:
        return "malformed relocation table"
    symtab = sections[link]
    if symtab[1] != _SHT_SYMTAB or symtab[9] != 24:
        return "the relocations' symbol table is not one"
    if info >= len(sections):
        return f"relocations for section {info}, which does not exist"
    target_size = sections[info][5]
    symbols = symtab[5] // 24
    for j in range(length // width):
        r_offset, r_info = struct.unpack_from("<QQ", data, offset + j * width)
        rtype, sym = r_info & 0xFFFFFFFF, r_info >> 32
        if sym >= symbols:
            return f"relocation {j} names symbol {sym}, which does not exist"
        if data[symtab[4] + sym * 24 + 4] & 0xF == _STT_FILE:
            return f"relocation {j} refers to a file symbol"
        patch = _X86_64_RELOCS.get(rtype) if host == 62 else 4
        if patch is None:
            return f"relocation {j} has type {rtype}, which the JIT does not expect"
        if r_offset + patch > target_size:
            return f"relocation {j} is past the end of its section"
    return None
