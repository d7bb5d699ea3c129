"""Linking compiled CPU code: `CompiledMLIR` (a JIT-ed module and its callables), the JIT
itself (llvmlite MCJIT, with the trampolines, soft-float helpers and parallel runtime linked
in), and reuse of compile-cache entries (`from_cache`). No MLIR bindings are imported here,
so a cache hit in a new process links code without loading torch-mlir;
`accel.host.compile` runs the MLIR pipelines.
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accel import phases
from accel.diagnostics import AccelError
from accel.host import codegen, openmp, perfmap, vecmath
from accel.host.abi import soft_float_helpers_ir, trampoline_ir
from accel.host.parallel import PARALLEL_FOR, parallel_runtime_ir
from accel.llvm import archive
from accel.llvm import engine as llvmx
from accel.llvm.elf import object_problem
from accel.runtime.call import CompiledFunction
from accel.runtime.signature import Signature, signature_from_json
from accel.runtime.weights import check_bindings


# -- result ---------------------------------------------------------------------------------
@dataclass
class CompiledMLIR:
    """A JIT-compiled MLIR module. Call functions with `invoke(name, *args)` or `[name](...)`.

    `functions` maps each public function to its `Signature` (memref-level types);
    `mlir_llvm` is the module after lowering ("" when reloaded from an artifact) and
    `llvm_ir` the (normalised) LLVM IR text. `cache_hit` is True when the compile cache
    supplied the LLVM IR (the MLIR pipeline did not run).
    """

    functions: dict[str, Signature]
    mlir_llvm: str
    llvm_ir: str
    _callables: dict[str, CompiledFunction] = field(repr=False)
    _engine: Any = field(repr=False)  # keeps the machine code alive
    cache_hit: bool = False
    #: External weights the code reads (name -> array, kept alive here; see accel.weights).
    weights: Mapping[str, np.ndarray] = field(default_factory=dict, repr=False)
    #: The host object file (ELF) the JIT linked: what the cache and artifacts reuse.
    object_code: bytes = field(default=b"", repr=False)
    #: The LLVM optimisation level the code was (or, from IR, will be) built at.
    opt_level: int = 3

    @classmethod
    def from_llvm_ir(cls, llvm_ir: str, signatures: dict[str, Signature], opt_level: int = 3,
                     mlir_llvm: str = "", cache_hit: bool = False,
                     weights: Mapping[str, np.ndarray] | None = None,
                     weight_specs: Mapping[str, int] | None = None,
                     object_code: bytes | None = None, part_cache: bool = False
                     ) -> CompiledMLIR:
        """JIT normalised LLVM IR (`llvm_ir` of an earlier compilation) with its signatures.

        `object_code` is the host object an earlier compilation of this IR produced
        (`CompiledMLIR.object_code`): given, LLVM neither optimises nor compiles again.

        `weight_specs` (name -> byte size) lists the external globals the code reads; each
        is bound to the array of that name in `weights`. `part_cache`: a module cut for
        parallel code generation takes the objects of parts compiled before from the
        compile cache (`accel.host.codegen.emit_objects`).
        """
        bound = {name: (weights or {})[name] for name in (weight_specs or {})
                 if name in (weights or {})}
        check_bindings(weight_specs or {}, weights or {}, "the compiled code")
        engine, callables, obj = _jit(llvm_ir, signatures, opt_level, bound, object_code,
                                      part_cache)
        compiled = cls(signatures, mlir_llvm, llvm_ir, callables, engine, cache_hit, bound,
                       obj, opt_level)
        for fn in callables.values():
            # A function kept without its module must keep the machine code and the bound
            # weights alive: calling freed code was a SIGSEGV (`compile_mlir(src)["f"]`).
            fn.owner = compiled
        return compiled

    def __getitem__(self, name: str) -> CompiledFunction:
        fn = self._callables.get(name)
        if fn is None:
            raise ValueError(f"no public function @{name} in the module; available: "
                             f"{', '.join('@' + n for n in self._callables) or 'none'}")
        return fn

    def invoke(self, name: str, *args: Any) -> Any:
        """Call `@name`: numpy arrays for memrefs/tensors, scalars for scalars.

        Returns None (no results), one value, or a tuple. Memref results are numpy arrays
        that own their memory; scalar results are 0-d arrays of their dtype (bf16: float32).
        """
        return self[name](*args)


def from_cache(key: str, opt_level: int, weights: Mapping[str, np.ndarray], *,
               exact: bool = True) -> CompiledMLIR | None:
    """The `CompiledMLIR` of cache entry `key` with `weights` bound, or None (no entry, or
    one that does not fit: it is rebuilt). `exact`: the entry's weights must be exactly
    `weights`' names (the front cache binds what it found, nothing else).

    An entry's object code runs as it is, so it is checked first: its digest (damage inside
    a well-formed entry, e.g. a broken writer) and its ELF structure (what LLVM's loader
    would crash on). A damaged entry is dropped and rebuilt, never linked.
    """
    from accel import cache

    entry = cache.lookup(key, {"llvm_ir": str, "signatures": list})
    if entry is None:
        return None
    hit = entry.metadata
    try:
        sigs = {s["name"]: signature_from_json(s) for s in hit["signatures"]}
    except (KeyError, TypeError, ValueError):
        return None  # a well-formed entry from a broken writer: rebuild it
    specs = hit.get("weights", {})
    if not isinstance(specs, dict) or (exact and set(specs) != set(weights)):
        return None
    object_code = _cached_object(entry.data, hit)
    if isinstance(object_code, str):
        cache.drop(key, object_code)
        return None
    check_bindings(specs, weights, "the compiled code")  # the caller's error, not the entry's
    rec = phases.current()
    try:
        compiled = CompiledMLIR.from_llvm_ir(hit["llvm_ir"], sigs, opt_level,
                                             hit.get("mlir_llvm", ""), cache_hit=True,
                                             weights=weights, weight_specs=specs,
                                             object_code=object_code)
    except AccelError as err:  # IR or symbols that do not fit the signatures
        cache.drop(key, str(err))
        return None
    if rec is not None:
        rec.cache_hit = True
    return compiled


def object_digest(object_code: bytes) -> str:
    """The digest a cache entry keeps of its object code (`object_sha256`)."""
    return hashlib.sha256(object_code).hexdigest()


def _cached_object(data: bytes, hit: Mapping[str, Any]) -> bytes | None | str:
    """The entry's checked object code (its bytes), None when it has none (the IR is
    compiled), or a str saying why the entry is damaged."""
    if not data:
        return None
    if hit.get("object_sha256") != object_digest(data):
        return "object code does not match its digest"
    problem = object_problem(data)
    return f"object code is damaged: {problem}" if problem else data


# -- JIT ------------------------------------------------------------------------------------

def _callee_types(mod: llvmx.ModuleRef, symbol: str) -> tuple[str, list[str]] | None:
    try:
        fn = mod.get_function(symbol)
    except NameError:
        return None
    ftype = fn.global_value_type
    return str(ftype.get_function_return()), [str(t) for t in ftype.get_function_parameters()]


def _resolve_externals(mod: llvmx.ModuleRef) -> None:
    """Bind every declared function to its address in this process (libc, libm, ...).

    Explicit binding makes `malloc`/`free` in compiled code the very functions the runtime's
    finalizers call, and turns a missing symbol into an error: inside MCJIT it would abort.
    """
    from accel.runtime.symbols import fallback_symbol, process_symbol

    for fn in mod.functions:
        if not fn.is_declaration or fn.name.startswith("llvm."):
            continue
        if llvmx.address_of_symbol(fn.name) is not None:
            continue
        address = process_symbol(fn.name) or fallback_symbol(fn.name)
        if not address:
            raise AccelError(f"function '{fn.name}' is declared but defined nowhere (not in the "
                             "module, not in the process): load its library with "
                             "llvmlite.binding.load_library_permanently first")
        llvmx.add_symbol(fn.name, address)


def _with_vector_math(llvm_ir: str, opt_level: int) -> str:
    """`llvm_ir` with libmvec variants on its libm calls when the vectorisers run."""
    if not opt_level:
        return llvm_ir
    return vecmath.attach_vector_variants(llvm_ir, vecmath.host_isa())


def host_assembly(llvm_ir: str, opt_level: int = 3, *, vector_math: bool = True) -> str:
    """The host assembly the JIT makes of `llvm_ir` (`CompiledMLIR.llvm_ir`): for checking
    what LLVM did (vector instructions, calls) without a disassembler. `vector_math=False`
    leaves out the libmvec annotations the JIT adds (backend/vecmath.py)."""
    if vector_math:
        llvm_ir = _with_vector_math(llvm_ir, opt_level)
    mod = llvmx.parse(llvm_ir, "LLVM IR")
    tm = llvmx.target_machine(opt_level)
    llvmx.prepare(mod, tm)
    llvmx.optimize(mod, tm, opt_level)
    return tm.emit_assembly(mod)


def inline_entries(mod: llvmx.ModuleRef, opt_level: int, entries: set[str]) -> None:
    """Inline each of the `entries` into its `_mlir_ciface_` wrapper (the JIT's callee).

    MLIR's LLVM lowering gives `@f` every memref descriptor field as a parameter and its
    results as one struct, and `_mlir_ciface_f` unpacks and repacks them. An optimizer
    step with 62 parameters makes `@f` a function of ~1000 parameters returning a struct
    of 124 descriptors, and LLVM's instruction selection of that call boundary was most of
    the optimizer's code generation (ResNet-18 width 16 train step: 7.3 s -> 1.8 s;
    docs/compile-time.md). Internal and `alwaysinline`, `@f` disappears into its wrapper:
    nothing outside the module calls it (trampolines and AOT wrappers call
    `_mlir_ciface_f`). Only entries: every function has a wrapper, and inlining the
    kernels they call (conv, GEMM, outlined parts) into their callers made a forward
    graph's LLVM optimisation 6x slower. The wrappers of functions that are not entries
    (kernels, a split function's parts) are never called (calls between functions go to
    `@f` itself): internal, LLVM drops them instead of compiling them (the ResNet-18 width
    16 optimizer graph's machine code: 4.6 -> 2.3 s). At opt_level 0: left as it is."""
    if not opt_level:
        return
    defined = {f.name for f in mod.functions if not f.is_declaration}
    for fn in mod.functions:
        if fn.is_declaration:
            continue
        if fn.name in entries and f"_mlir_ciface_{fn.name}" in defined:
            fn.linkage = "internal"
            fn.add_function_attribute("alwaysinline")
        elif fn.name.startswith("_mlir_ciface_") and \
                fn.name.removeprefix("_mlir_ciface_") not in entries:
            fn.linkage = "internal"


#: Binding external weights by name (a process-wide symbol table) and resolving them in
#: `finalize_object` must not interleave between two compilations.
_BIND_LOCK = threading.Lock()


def _jit(llvm_ir: str, signatures: dict[str, Signature], opt_level: int,
         weights: Mapping[str, np.ndarray],
         object_code: bytes | None = None, part_cache: bool = False
         ) -> tuple[Any, dict[str, CompiledFunction], bytes]:
    """JIT `llvm_ir`; returns the engine, the callables and the host object code.

    With `object_code` (from an earlier `_jit` of the same IR on this host) nothing is
    optimised or compiled again: the object is loaded and linked as it is.
    """
    from accel import interrupts

    with phases.phase("codegen"):
        rec = phases.current()
        # LLVM releases the GIL: in a worker thread, so that Ctrl-C stops the wait at once.
        engine, callables, obj = interrupts.run_releasing_gil(
            lambda: _jit_unrecorded(llvm_ir, signatures, opt_level, weights, object_code,
                                    part_cache))
        if rec is not None and rec.want_object:
            rec.object_code = obj
        return engine, callables, obj


def _keep_object(objects: list[bytes], data: Any) -> None:
    objects.append(bytes(data))


class _ObjectSink:
    """MCJIT's object-cache hook: keeps each object file it compiles. ctypes prints and
    drops an exception raised in the callback (Ctrl-C landing there: "Exception ignored on
    calling ctypes callback") and the compile would go on without its object, into a
    damaged cache entry; the sink keeps the exception for `raise_error` instead."""

    def __init__(self) -> None:
        self.objects: list[bytes] = []
        self.error: BaseException | None = None

    def notify(self, _module: Any, data: Any) -> None:
        try:
            _keep_object(self.objects, data)
        except BaseException as err:  # noqa: BLE001 - re-raised after finalize_object
            self.error = self.error or err

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error


def _jit_unrecorded(llvm_ir: str, signatures: dict[str, Signature], opt_level: int,
                    weights: Mapping[str, np.ndarray], object_code: bytes | None,
                    part_cache: bool = False
                    ) -> tuple[Any, dict[str, CompiledFunction], bytes]:
    mod = llvmx.parse(_with_vector_math(llvm_ir, opt_level), "translated LLVM IR")
    if object_code is None:
        inline_entries(mod, opt_level, {s.name for s in signatures.values()
                                        if s.callee == f"_mlir_ciface_{s.name}"})
    callable_sigs = {}
    for index, (name, sig) in enumerate(signatures.items()):
        if sig.unsupported:
            continue
        found = _callee_types(mod, sig.callee)
        if found != sig.callee_llvm_types():
            raise AccelError(f"internal error: @{sig.callee} has LLVM type {found}, expected "
                             f"{sig.callee_llvm_types()}")
        mod.link_in(llvmx.parse(trampoline_ir(index, sig), f"trampoline of @{name}"))
        callable_sigs[name] = index
    helpers = soft_float_helpers_ir()
    if helpers:
        mod.link_in(llvmx.parse(helpers, "soft-float helpers"))
    if _callee_types(mod, PARALLEL_FOR) is not None:  # multi-threaded kernels' worker pool
        bind_parallel_runtime()
    _resolve_externals(mod)
    for gv in mod.global_variables:
        if gv.is_declaration and gv.name not in weights and \
                llvmx.address_of_symbol(gv.name) is None:
            # MCJIT would abort the process on an unresolved symbol.
            raise AccelError(f"global '{gv.name}' is declared but has no definition and no "
                             "weight bound to it (pass it in `weights`)")
    tm = llvmx.target_machine(opt_level)
    llvmx.prepare(mod, tm)
    sink = _ObjectSink()
    emitted = sink.objects
    parts = [] if object_code is not None else _parts(mod, llvm_ir)
    if object_code is None and len(parts) < 2:
        llvmx.optimize(mod, tm, opt_level)
        engine = llvmx.mcjit(mod, tm)
        # MCJIT hands each object it compiles to the cache hook: keep it for the next time.
        engine.set_object_cache(notify_func=sink.notify)
    else:
        # `mod` only served to resolve externals; the code is the objects'.
        if object_code is None:  # a big module: its parts compiled by worker processes
            object_code = archive.bundle(codegen.emit_objects(
                parts, opt_level, *llvmx.host_cpu(), cached=part_cache))
        empty = llvmx.parse("", "empty module")
        empty.triple, empty.data_layout = mod.triple, mod.data_layout
        engine = llvmx.mcjit(empty, tm)
        for member in archive.members(object_code):
            llvmx.add_object(engine, member)
        emitted.append(object_code)
    with _BIND_LOCK:
        for name, array in weights.items():
            llvmx.add_symbol(name, array.ctypes.data)
        engine.finalize_object()
    sink.raise_error()
    perfmap.record((f.name for f in mod.functions if not f.is_declaration),
                   engine.get_function_address)
    if not emitted:  # never store or save code without its object
        raise AccelError("internal error: LLVM compiled the module but handed back no "
                         "object code")
    obj = emitted[0]
    callables = {}
    for name, sig in signatures.items():
        address = 0
        if name in callable_sigs:
            address = engine.get_function_address(f"__accel_call_{callable_sigs[name]}")
            if not address:
                raise AccelError(f"internal error: no code for @{name} in the compiled object")
        callables[name] = CompiledFunction(sig, address)
    return engine, callables, obj


_RUNTIME_ENGINES: list[Any] = []  # the process's one parallel runtime, never freed
_RUNTIME_LOCK = threading.Lock()


def bind_parallel_runtime() -> None:
    """Compile `accel_parallel_for` and its worker pool once per process and bind the symbol
    for every JIT module. The pool's workers run this code between calls, so it must live
    as long as the process: a copy linked into each module would be freed with its module
    under them, and each module would keep a pool of its own."""
    openmp.bind()  # PyTorch may have loaded OpenMP since the last compile
    with _RUNTIME_LOCK:
        if _RUNTIME_ENGINES:
            return
        mod = llvmx.parse(parallel_runtime_ir(), "parallel runtime")
        _resolve_externals(mod)
        tm = llvmx.target_machine(2)
        llvmx.prepare(mod, tm)
        llvmx.optimize(mod, tm, 2)
        engine = llvmx.mcjit(mod, tm)
        engine.finalize_object()
        llvmx.add_symbol(PARALLEL_FOR, engine.get_function_address(PARALLEL_FOR))
        _RUNTIME_ENGINES.append(engine)


def _parts(mod: llvmx.ModuleRef, llvm_ir: str) -> list[str]:
    """The module (trampolines and runtime linked in) cut for parallel code generation
    (`accel.host.codegen`), or [] when it is too small to cut (counted on the translated
    IR's lines first: printing a module costs ~0.25 s per 100,000 lines)."""
    if llvm_ir.count("\n") < 2 * codegen.LINES_PER_PART:
        return []
    parts = codegen.partition(str(mod))
    return parts if len(parts) > 1 else []


def host_free_address_in_jit() -> int:
    """Address the JIT resolves `free` to (a test checks it is libc's, used by finalizers)."""
    mod = llvmx.parse("declare void @free(ptr)\ndefine ptr @__accel_free_addr() {\n"
                      "  ret ptr @free\n}\n", "free probe")
    tm = llvmx.target_machine(0)
    llvmx.prepare(mod, tm)
    engine = llvmx.mcjit(mod, tm)
    engine.finalize_object()
    probe = ctypes.CFUNCTYPE(ctypes.c_void_p)(engine.get_function_address("__accel_free_addr"))
    return probe() or 0
