"""Ahead-of-time libraries: a compiled module as a C-callable shared/static library + header.

    from accel.aot import build_library
    lib = build_library(accel.compile(model, inputs), "mlp", "out/mlp", target_cpu="generic")
    # out/mlp: libmlp.so  mlp.o  mlp.h  README.txt
    y = lib.call(x)                               # the same library through ctypes

What goes into the library (docs/aot.md is the user documentation):

* the model's code: the normalised LLVM IR of the compilation (`CompiledMLIR.llvm_ir`),
  optimised and compiled by llvmlite for the chosen CPU (`host`, `generic` x86-64,
  `x86-64-v2`, `x86-64-v3`) as position-independent code. Every symbol of it is renamed
  `<NAME>__<symbol>` and hidden, so several libraries link into one program;
* the weights, embedded as read-only data: the external globals `@accel_w<N>` the code reads
  become hidden `.rodata` symbols whose bytes are `.incbin`ed from the arrays (fast for
  hundreds of MB; LLVM never sees them, so it neither parses nor folds them);
* a small C runtime generated for this signature: the exported `int <NAME>(...)` (plain
  pointers for static shapes, memref descriptors for dynamic ones), which builds the
  descriptors, calls `_mlir_ciface_<entry>`, copies results into the caller's buffers and
  frees the temporaries; `__accel_assert_fail` with a thread-local message for
  `<NAME>_last_error()`; `memrefCopy`; and with `user_memory` a static, liveness-planned
  allocator over the caller's scratch pool (no heap allocation at all).

`gcc` links `lib<NAME>.so` (`-shared`, libc, libm and glibc's libmvec only) and `gcc -r` the
relocatable `<NAME>.o` for static linking (link it with `-lmvec -lm`).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from accel.backend import vecmath
from accel.diagnostics import AccelError
from accel.runtime import DType, Signature, ValueSpec

#: Names the library's runtime needs from libc (or a program's own `main`).
_RESERVED = {"main", "malloc", "free", "abort", "memcpy", "memset", "strncpy"}
#: `target_cpu` values: the LLVM CPU name and gcc `-march` for each (host: this machine's).
TARGET_CPUS: dict[str, tuple[str, str]] = {
    "generic": ("x86-64", "x86-64"),
    "x86-64": ("x86-64", "x86-64"),
    "x86-64-v2": ("x86-64-v2", "x86-64-v2"),
    "x86-64-v3": ("x86-64-v3", "x86-64-v3"),
    "x86-64-v4": ("x86-64-v4", "x86-64-v4"),
    "host": ("", "native"),
}
DEFAULT_NAME = "accel_artifact"
#: Alignment of weights and of every block in the user memory pool.
ALIGN = 64
#: The `allocated` pointer `memref.get_global` puts in descriptors of constant globals.
DEAD_BEEF = 0xDEADBEEF
#: Status codes of the generated function.
STATUS_OK, STATUS_ASSERT, STATUS_POOL = 0, 1, 2

#: C type of one element (buffers) or of a scalar argument, by MLIR type.
_C_TYPES = {
    "f32": "float", "f64": "double", "i1": "bool", "index": "int64_t",
    "f16": "uint16_t", "bf16": "uint16_t",
    "complex<f32>": "float", "complex<f64>": "double",
    **{f"i{b}": f"int{b}_t" for b in (8, 16, 32, 64)},
    **{f"si{b}": f"int{b}_t" for b in (8, 16, 32, 64)},
    **{f"ui{b}": f"uint{b}_t" for b in (8, 16, 32, 64)},
}
#: Scalars passed by value (f16/bf16/complex have no portable C ABI spelling here).
_C_SCALARS = {k for k in _C_TYPES if k not in ("f16", "bf16", "complex<f32>", "complex<f64>")}
_C_NOTE = {"f16": " (IEEE half bits)", "bf16": " (bfloat16 bits)",
           "complex<f32>": " (interleaved re, im pairs)",
           "complex<f64>": " (interleaved re, im pairs)", "i1": " (one byte per element)"}


@dataclass
class AotLibrary:
    """What `build_library` wrote, and a ctypes view of it."""

    name: str
    out_dir: Path
    signature: Signature
    static_shapes: bool
    user_memory: bool
    target_cpu: str
    scratch_bytes: int = 0
    files: dict[str, Path] = field(default_factory=dict)
    _lib: Any = field(default=None, repr=False)

    @property
    def so_path(self) -> Path:
        return self.files["so"]

    @property
    def object_path(self) -> Path:
        return self.files["object"]

    @property
    def header_path(self) -> Path:
        return self.files["header"]

    def load(self) -> ctypes.CDLL:
        """`lib<NAME>.so` loaded with ctypes (once)."""
        if self._lib is None:
            lib = ctypes.CDLL(str(self.so_path.resolve()))
            getattr(lib, self.name).restype = ctypes.c_int
            last = getattr(lib, f"{self.name}_last_error")
            last.restype, last.argtypes = ctypes.c_char_p, []
            self._lib = lib
        return self._lib

    def last_error(self) -> str:
        return (getattr(self.load(), f"{self.name}_last_error")() or b"").decode()

    def call(self, *args: Any, scratch: np.ndarray | None = None) -> Any:
        """Call the library on numpy inputs (static shapes); returns the outputs like JIT code.

        Raises `RuntimeError` with `<NAME>_last_error()` on a non-zero status. With
        `user_memory`, `scratch` is the pool (default: a fresh one of `scratch_bytes`).
        """
        outs, status = self.call_status(*args, scratch=scratch)
        if status:
            raise RuntimeError(f"{self.name} returned {status}: {self.last_error()}")
        return outs[0] if len(outs) == 1 else tuple(outs)

    def call_status(self, *args: Any, scratch: np.ndarray | None = None
                    ) -> tuple[list[np.ndarray], int]:
        """(outputs, status) of one call; see `call`."""
        if not self.static_shapes:
            raise NotImplementedError("AotLibrary.call supports static shapes only")
        fn = getattr(self.load(), self.name)
        sig = self.signature
        if len(args) != len(sig.args):
            raise TypeError(f"{self.name} takes {len(sig.args)} inputs, got {len(args)}")
        c_args: list[Any] = []
        keep = []
        for spec, value in zip(sig.args, args, strict=True):
            if spec.kind == "scalar":
                c_args.append(spec.dtype.ctype(value))  # type: ignore[union-attr]
                continue
            arr = np.ascontiguousarray(value, dtype=spec.dtype.numpy)  # type: ignore[union-attr]
            if arr.shape != spec.shape:
                raise ValueError(f"{self.name}: expected shape {spec.shape}, got {arr.shape}")
            keep.append(arr)
            c_args.append(ctypes.c_void_p(arr.ctypes.data))
        outs = []
        for spec in sig.results:
            shape = spec.shape if spec.kind == "memref" else ()
            out = np.empty(shape, spec.dtype.numpy)  # type: ignore[union-attr]
            outs.append(out)
            c_args.append(ctypes.c_void_p(out.ctypes.data))
        if self.user_memory:
            pool = scratch if scratch is not None else np.empty(self.scratch_bytes, np.uint8)
            c_args += [ctypes.c_void_p(pool.ctypes.data), ctypes.c_size_t(pool.nbytes)]
        status = fn(*c_args)
        return [o[()] if o.ndim == 0 else o for o in outs], int(status)

    def benchmark(self, *args: Any, num_iters: int = 1) -> tuple[Any, float]:
        """Run the library `num_iters` times on the same inputs: (outputs, mean seconds)."""
        self.call(*args)  # warm-up, and the outputs
        start = time.perf_counter()
        for _ in range(num_iters):
            out = self.call(*args)
        return out, (time.perf_counter() - start) / max(num_iters, 1)


# -- entry point ----------------------------------------------------------------------------
def build_library(compiled: Any, name: str = DEFAULT_NAME, out_dir: str | os.PathLike = ".",
                  weights: Mapping[str, np.ndarray] | None = None, *,
                  target_cpu: str = "host", entry: str | None = None,
                  user_memory: bool = False, opt_level: int = 3,
                  keep_sources: bool = False) -> AotLibrary:
    """Write `lib<name>.so`, `<name>.o`, `<name>.h` and `README.txt` into `out_dir`.

    `compiled` is a `CompiledMLIR`, an `accel.compile` result (`CompiledModule`) or MLIR text
    (compiled here). `weights` overrides the compilation's bound weights (name -> array).
    `entry` is the function to export (default: `main` of a model, else the first callable
    public function). `user_memory`: the function takes a trailing scratch pool and its size
    and allocates nothing (static shapes only). `keep_sources`: also keep the generated C,
    assembly and LLVM IR in `out_dir/src/`.
    """
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
        raise ValueError(f"aot_name must be a C identifier, got {name!r}")
    if name in _RESERVED:
        raise ValueError(f"aot_name {name!r} is a C library function the library uses")
    if target_cpu not in TARGET_CPUS:
        raise ValueError(f"target CPU must be one of {', '.join(TARGET_CPUS)}, got "
                         f"{target_cpu!r}")
    for tool in ("gcc",):
        if shutil.which(tool) is None:
            raise AccelError(f"AOT libraries need '{tool}' on PATH to link")
    cm, entry = _resolve_compiled(compiled, entry, opt_level)
    sig = cm.functions[entry]
    if sig.unsupported:
        raise AccelError(f"@{entry} cannot be exported: {sig.unsupported}")
    _check_signature(sig)
    static = all(d is not None for s in (*sig.args, *sig.results) if s.kind == "memref"
                 for d in s.shape) and all(s.identity for s in (*sig.args, *sig.results))
    if user_memory and not static:
        raise AccelError("user_memory needs static shapes (every temporary is planned into "
                         "the pool when the library is built)")
    bound = dict(cm.weights if weights is None else weights)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lib = AotLibrary(name, out, sig, static, user_memory, target_cpu)
    with tempfile.TemporaryDirectory(prefix="accel-aot-") as tmp_name:
        tmp = Path(tmp_name)
        model_obj, weight_names = _emit_model_object(cm.llvm_ir, bound, name, target_cpu,
                                                     opt_level, user_memory, tmp)
        weights_s = _weights_asm(name, weight_names, bound, tmp)
        plan = None
        if user_memory:
            plan = _trace_allocations(lib, model_obj, weights_s, tmp)
            lib.scratch_bytes = plan.scratch_bytes
        runtime_c = tmp / f"{name}_runtime.c"
        runtime_c.write_text(runtime_source(name, sig, entry, static, plan))
        header = out / f"{name}.h"
        header.write_text(header_source(name, sig, entry, static, user_memory, target_cpu,
                                        plan.scratch_bytes if plan else None))
        so = out / f"lib{name}.so"
        obj = out / f"{name}.o"
        _link(name, target_cpu, [model_obj], weights_s, runtime_c, header.parent, so, obj, tmp)
        readme = out / "README.txt"
        readme.write_text(readme_text(lib))
        lib.files = {"so": so, "object": obj, "header": header, "readme": readme}
        if keep_sources:
            src = out / "src"
            src.mkdir(exist_ok=True)
            for f in (runtime_c, weights_s, tmp / "model.ll"):
                shutil.copy(f, src / f.name)
    return lib


def _resolve_compiled(compiled: Any, entry: str | None, opt_level: int) -> tuple[Any, str]:
    """(CompiledMLIR, entry function name) from whatever the caller has."""
    if isinstance(compiled, str):
        from accel.backend.cpu import compile_mlir

        compiled = compile_mlir(compiled, {"opt_level": opt_level})
    if hasattr(compiled, "compiled") and hasattr(compiled, "func_name"):  # CompiledModule
        entry = entry or compiled.func_name
        compiled = compiled.compiled
    if entry is None:
        callable_fns = [n for n, s in compiled.functions.items() if not s.unsupported]
        if not callable_fns:
            raise AccelError("no public function to export")
        entry = callable_fns[0]
    if entry not in compiled.functions:
        raise AccelError(f"no public function @{entry}; available: "
                         f"{', '.join('@' + n for n in compiled.functions) or 'none'}")
    return compiled, entry


def _check_signature(sig: Signature) -> None:
    if sig.callee != f"_mlir_ciface_{sig.name}":
        raise AccelError(f"@{sig.name} is an llvm.func: AOT exports func.func functions only")
    for spec in (*sig.args, *sig.results):
        if spec.kind == "memref":
            if spec.dtype is None or spec.dtype.mlir not in _C_TYPES:
                raise AccelError(f"@{sig.name}: {spec.type_str} has no C element type")
        elif spec.kind != "scalar" or spec.dtype.mlir not in _C_SCALARS:  # type: ignore[union-attr]
            raise AccelError(f"@{sig.name}: {spec.type_str} cannot be passed through the C "
                             "interface")


# -- the model's object code ----------------------------------------------------------------
_WEIGHT_DECL = re.compile(r"^@([\w.$]+|\"[^\"]*\") = external global ", re.MULTILINE)


def _emit_model_object(llvm_ir: str, weights: Mapping[str, np.ndarray], name: str,
                       target_cpu: str, opt_level: int, user_memory: bool,
                       tmp: Path) -> tuple[Path, list[str]]:
    """Compile the module for `target_cpu`: every defined symbol renamed `<name>__*`, hidden."""
    import llvmlite.binding as llvm

    from accel.backend.cpu import _init_llvm, _parse_llvm, soft_float_helpers_ir
    from accel.runtime import ASSERT_FAIL_SYMBOL

    _init_llvm()
    declared = [m.group(1) for m in _WEIGHT_DECL.finditer(llvm_ir)]
    missing = [w for w in declared if w not in weights]
    if missing:
        raise AccelError(f"global '{missing[0]}' is declared but no weight is bound to it")
    # Weights are read-only data in the library: tell LLVM (hidden: no GOT indirection).
    text = _WEIGHT_DECL.sub(lambda m: f"@{m.group(1)} = external hidden constant ", llvm_ir)
    if opt_level and vecmath.available():  # exp, tanh, erf, ... vectorise via libmvec
        text = vecmath.attach_vector_variants(text, _vector_isa(target_cpu))
    mod = _parse_llvm(text, "translated LLVM IR")
    # Narrowing helpers codegen may call (libgcc's would pull in libgcc_s): our own, hidden.
    mod.link_in(_parse_llvm(soft_float_helpers_ir(["__truncdfbf2", "__truncsfbf2",
                                                    "__truncdfhf2"]), "soft-float helpers"))
    # Multi-threaded GEMM kernels' fork-join (pthreads, in libc since glibc 2.34), with the
    # library's own thread count (ACCEL_NUM_THREADS, else the online cores, on first use;
    # 1 with user_memory, whose pool allocator serves only the calling thread).
    from accel.backend.parallel import PARALLEL_FOR, parallel_runtime_ir

    if any(fn.name == PARALLEL_FOR and fn.is_declaration for fn in mod.functions):
        mod.link_in(_parse_llvm(parallel_runtime_ir(aot=True, serial=user_memory),
                                "parallel runtime"))
    prefix = f"{name}__"
    renames = {ASSERT_FAIL_SYMBOL: prefix + "assert_fail", "memrefCopy": prefix + "memrefCopy"}
    if user_memory:
        renames |= {"malloc": prefix + "alloc", "free": prefix + "free"}
    for fn in mod.functions:
        if fn.name.startswith("llvm."):
            continue
        if fn.is_declaration:
            if fn.name in renames:
                fn.name = renames[fn.name]
            elif user_memory and fn.name in ("aligned_alloc", "calloc", "realloc",
                                             "posix_memalign"):
                raise AccelError(f"user_memory: the code calls '{fn.name}', which the pool "
                                 "allocator does not replace")
            continue
        if not fn.name.startswith("__trunc"):
            fn.name = prefix + fn.name
        fn.visibility = "hidden"
    weight_names = []
    for gv in mod.global_variables:
        if gv.is_declaration and gv.name in weights:
            original = gv.name
            gv.name = prefix + original
            weight_names.append((gv.name, original))
        elif not gv.is_declaration and gv.linkage.name not in ("internal", "private"):
            gv.name = prefix + gv.name
            gv.visibility = "hidden"
    triple = llvm.get_process_triple()
    if not triple.startswith("x86_64"):
        raise AccelError(f"AOT libraries target x86-64; this host is {triple}")
    cpu, _ = TARGET_CPUS[target_cpu]
    features = ""
    if target_cpu == "host":
        cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    tm = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=opt_level, reloc="pic", codemodel="default")
    mod.triple = triple
    mod.data_layout = str(tm.target_data)
    if opt_level:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_unrolling = False  # as in the JIT: full unrolling explodes static loops
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    (tmp / "model.ll").write_text(str(mod))
    obj = tmp / "model.o"
    obj.write_bytes(tm.emit_object(mod))
    return obj, weight_names  # type: ignore[return-value]


def _vector_isa(target_cpu: str) -> str:
    """libmvec's ISA letter for a target CPU (the x86-64 levels: v3 is AVX2, v4 AVX-512)."""
    if target_cpu == "host":
        import llvmlite.binding as llvm

        return vecmath.isa_for_features(llvm.get_host_cpu_features().flatten().split(","))
    return {"x86-64-v3": "d", "x86-64-v4": "e"}.get(target_cpu, "b")


def _weights_asm(name: str, weight_names: Sequence[tuple[str, str]],
                 weights: Mapping[str, np.ndarray], tmp: Path) -> Path:
    """Assembly defining each weight as a hidden, aligned `.rodata` symbol (`.incbin`)."""
    lines = []
    for index, (symbol, original) in enumerate(weight_names):
        data = np.ascontiguousarray(weights[original])
        blob = tmp / f"w{index}.bin"
        blob.write_bytes(data.tobytes())
        lines += [f'  .section .rodata.{symbol},"a",@progbits',
                  f"  .p2align {ALIGN.bit_length() - 1}",
                  f"  .globl {symbol}", f"  .hidden {symbol}", f"  .type {symbol},@object",
                  f"  .size {symbol}, {data.nbytes}", f"{symbol}:"]
        lines.append(f'  .incbin "{blob}"' if data.nbytes else "  .zero 1")
    lines.append('  .section .note.GNU-stack,"",@progbits')
    path = tmp / f"{name}_weights.s"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise AccelError(f"{what} failed ({' '.join(cmd)}): {proc.stderr.strip()[-2000:]}")


def _cflags(target_cpu: str) -> list[str]:
    return ["-O2", "-fPIC", "-fvisibility=hidden", f"-march={TARGET_CPUS[target_cpu][1]}",
            "-std=gnu11", "-fno-strict-aliasing"]


def _link(name: str, target_cpu: str, objects: list[Path], weights_s: Path, runtime_c: Path,
          include: Path, so: Path, obj: Path, tmp: Path) -> None:
    """`<name>.o` (relocatable, hidden symbols made local) and `lib<name>.so` (glibc only)."""
    flags = _cflags(target_cpu)
    rt_o, w_o = tmp / "runtime.o", tmp / "weights.o"
    _run(["gcc", *flags, f"-I{include}", "-c", str(runtime_c), "-o", str(rt_o)],
         "compiling the C runtime")
    _run(["gcc", "-c", str(weights_s), "-o", str(w_o)], "assembling the weights")
    parts = [*map(str, objects), str(w_o), str(rt_o)]
    partial = tmp / "combined.o"
    _run(["gcc", "-r", "-nostdlib", *parts, "-o", str(partial)], "linking the object file")
    if shutil.which("objcopy"):
        _run(["objcopy", "--localize-hidden", str(partial)], "localising hidden symbols")
    shutil.copy(partial, obj)
    _run(["gcc", "-shared", "-Wl,-z,noexecstack", "-Wl,-z,defs", "-Wl,--as-needed",
          "-o", str(so), *parts, "-lmvec", "-lm"], "linking the shared library")


# -- user memory: tracing and planning ------------------------------------------------------
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


def _trace_allocations(lib: AotLibrary, model_obj: Path, weights_s: Path,
                       tmp: Path) -> MemoryPlan:
    """Build a tracing variant, run it once on zero inputs, plan its allocations."""
    name, sig = lib.name, lib.signature
    trace_c = tmp / f"{name}_trace.c"
    trace_c.write_text(runtime_source(name, sig, sig.name, True, None, trace=True))
    so = tmp / f"lib{name}_trace.so"
    rt_o, w_o = tmp / "trace_rt.o", tmp / "trace_w.o"
    _run(["gcc", *_cflags(lib.target_cpu), "-c", str(trace_c), "-o", str(rt_o)],
         "compiling the tracing runtime")
    _run(["gcc", "-c", str(weights_s), "-o", str(w_o)], "assembling the weights")
    _run(["gcc", "-shared", "-o", str(so), str(model_obj), str(w_o), str(rt_o), "-lmvec",
          "-lm"],
         "linking the tracing library")
    handle = ctypes.CDLL(str(so))
    fn = getattr(handle, name)
    fn.restype = ctypes.c_int
    # A failed runtime assertion cuts the call (and its allocations) short: try other inputs.
    for fill in (0, 1):
        ctypes.c_long.in_dll(handle, f"{name}__trace_n").value = 0
        ctypes.c_long.in_dll(handle, f"{name}__trace_allocs").value = 0
        keep, c_args = [], []
        for spec in sig.args:
            if spec.kind == "scalar":
                c_args.append(spec.dtype.ctype(fill))  # type: ignore[union-attr]
                continue
            arr = np.full(spec.shape, fill, spec.dtype.numpy)  # type: ignore[union-attr]
            keep.append(arr)
            c_args.append(ctypes.c_void_p(arr.ctypes.data))
        for spec in sig.results:
            arr = np.zeros(spec.shape if spec.kind == "memref" else (),
                           spec.dtype.numpy)  # type: ignore[union-attr]
            keep.append(arr)
            c_args.append(ctypes.c_void_p(arr.ctypes.data))
        if fn(*c_args) == 0:
            break
    else:
        raise AccelError("user_memory: the function fails a runtime assertion on all-zero and "
                         "all-one inputs, so its allocations cannot be traced")
    count = ctypes.c_long.in_dll(handle, f"{name}__trace_n").value
    kinds = (ctypes.c_int * count).in_dll(handle, f"{name}__trace_kind") if count else []
    ids = (ctypes.c_long * count).in_dll(handle, f"{name}__trace_id") if count else []
    sizes = (ctypes.c_size_t * count).in_dll(handle, f"{name}__trace_size") if count else []
    overflow = ctypes.c_int.in_dll(handle, f"{name}__trace_overflow").value
    if overflow:
        raise AccelError("user_memory: the call makes too many allocations to trace")
    events = [("alloc" if kinds[i] == 0 else "free", ids[i], sizes[i]) for i in range(count)]
    return plan_memory(events)


# -- generated C ----------------------------------------------------------------------------
def _ctype(dt: DType | None) -> str:
    assert dt is not None
    return _C_TYPES[dt.mlir]


def _desc_type(name: str, spec: ValueSpec) -> str:
    return f"{name}_memref_{spec.rank}d_{_c_tag(spec.dtype)}"


def _c_tag(dt: DType | None) -> str:
    assert dt is not None
    return re.sub(r"\W", "", dt.mlir.replace("complex<", "c"))


def _desc_typedefs(name: str, sig: Signature) -> list[str]:
    seen: dict[str, str] = {}
    for spec in (*sig.args, *sig.results):
        if spec.kind != "memref":
            continue
        tname = _desc_type(name, spec)
        ct = _ctype(spec.dtype)
        dims = (f" int64_t sizes[{spec.rank}]; int64_t strides[{spec.rank}];"
                if spec.rank else "")
        seen[tname] = (f"typedef struct {{ {ct} *allocated; {ct} *aligned; int64_t offset;"
                       f"{dims} }} {tname};")
    return list(seen.values())


def _shape_text(spec: ValueSpec) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in spec.shape) + "]"


def _count(spec: ValueSpec) -> int:
    n = 1
    for d in spec.shape:
        n *= d or 0
    return n


def c_prototype(name: str, sig: Signature, static: bool, user_memory: bool,
                comments: bool = False) -> str:
    """`int NAME(const float *in0, ..., float *out0, ...)`, optionally one comment per arg."""
    params: list[tuple[str, str]] = []
    for i, spec in enumerate(sig.args):
        if spec.kind == "scalar":
            params.append((f"{_ctype(spec.dtype)} in{i}", f"input {i}: {spec.type_str} scalar"))
        elif static:
            params.append((f"const {_ctype(spec.dtype)} *in{i}",
                           f"input {i}: {spec.type_str}, {_count(spec)} elements, row-major "
                           f"{_shape_text(spec)}{_C_NOTE.get(spec.dtype.mlir, '')}"))  # type: ignore[union-attr]
        else:
            params.append((f"const {_desc_type(name, spec)} *in{i}",
                           f"input {i}: {spec.type_str} descriptor, sizes {_shape_text(spec)}"
                           " ('?': any), filled by the caller"))
    for i, spec in enumerate(sig.results):
        if spec.kind == "scalar":
            params.append((f"{_ctype(spec.dtype)} *out{i}", f"output {i}: {spec.type_str}, "
                           "written through the pointer"))
        elif static:
            params.append((f"{_ctype(spec.dtype)} *out{i}",
                           f"output {i}: {spec.type_str}, {_count(spec)} elements, row-major "
                           f"{_shape_text(spec)}, written by the call"
                           f"{_C_NOTE.get(spec.dtype.mlir, '')}"))  # type: ignore[union-attr]
        else:
            params.append((f"{_desc_type(name, spec)} *out{i}",
                           f"output {i}: {spec.type_str} descriptor, filled by the call; the "
                           "caller owns out->allocated (free() it)"))
    if user_memory:
        params.append(("void *scratch", f"scratch pool, at least {name}_scratch_bytes() "
                       "bytes; any alignment; not used after the call returns"))
        params.append(("size_t scratch_size", "size of the scratch pool in bytes"))
    if not params:
        return f"int {name}(void)"
    if not comments:
        return f"int {name}(" + ", ".join(p for p, _ in params) + ")"
    body = []
    for k, (p, note) in enumerate(params):
        sep = "," if k + 1 < len(params) else ""
        body.append(f"    {p}{sep}  /* {note} */")
    return f"int {name}(\n" + "\n".join(body) + ")"


def header_source(name: str, sig: Signature, entry: str, static: bool, user_memory: bool,
                  target_cpu: str, scratch_bytes: int | None = None) -> str:
    guard = f"{name.upper()}_H"
    lines = [
        f"/* {name}.h: generated by accel (ahead-of-time library of @{entry}).",
        f" *   {sig}",
        f" * Target CPU: {target_cpu}. Link with -l{name} (lib{name}.so) or {name}.o -lmvec "
        "-lm.",
        " * Thread-safe: concurrent calls on different buffers are fine.",
        " */",
        f"#ifndef {guard}", f"#define {guard}", "",
        "#include <stdbool.h>", "#include <stddef.h>", "#include <stdint.h>", "",
        "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
    ]
    if static:
        sizes = [f"#define {name.upper()}_{kind}{i}_ELEMENTS {_count(spec)}"
                 for kind, specs in (("IN", sig.args), ("OUT", sig.results))
                 for i, spec in enumerate(specs) if spec.kind == "memref"]
        if sizes:
            lines += ["/* Element counts of the buffers. */", *sizes, ""]
    if scratch_bytes is not None:
        lines += ["/* The scratch pool size (also returned by the function below). */",
                  f"#define {name.upper()}_SCRATCH_BYTES {scratch_bytes}", ""]
    typedefs = [] if static else _desc_typedefs(name, sig)
    if typedefs:
        lines += ["/* MLIR ranked memref descriptors (element strides; data at",
                  " * aligned + offset). */", *typedefs, ""]
    lines += [
        f"/* Runs @{entry}. Returns 0 on success; {STATUS_ASSERT} if a runtime assertion "
        f"failed (outputs", f" * undefined; the message is in {name}_last_error())"
        + (f"; {STATUS_POOL} if the scratch pool is too small (nothing written)." if
           user_memory else "."),
        " */",
        c_prototype(name, sig, static, user_memory, comments=True) + ";", "",
        f"/* The message of this thread's last failed call of {name} (\"\" if it succeeded). */",
        f"const char *{name}_last_error(void);", "",
    ]
    if user_memory:
        lines += [f"/* Bytes of scratch memory {name} needs (its `scratch_size`). */",
                  f"size_t {name}_scratch_bytes(void);", ""]
    lines += ["#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


_RUNTIME_COMMON = r"""
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* The libc functions used, declared here: <stdlib.h> would clash with names like `div`. */
void *malloc(size_t size);
void free(void *p);
void abort(void);
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
char *strncpy(char *dst, const char *src, size_t n);

#define EXPORT __attribute__((visibility("default")))
#define DEAD_BEEF ((uintptr_t)0xDEADBEEFu)

static _Thread_local char @__error[512];
static _Thread_local int @__failed;

/* Called by the compiled code for a failed runtime assertion (it then returns poison). */
void @__assert_fail(const char *message) {
  if (@__failed) return;
  @__failed = 1;
  strncpy(@__error, message ? message : "runtime assertion failed", sizeof @__error - 1);
  @__error[sizeof @__error - 1] = 0;
}

static void @__set_error(const char *message) {
  @__failed = 1;
  strncpy(@__error, message, sizeof @__error - 1);
  @__error[sizeof @__error - 1] = 0;
}

EXPORT const char *@_last_error(void) { return @__error; }

typedef struct { int64_t rank; void *descriptor; } @__unranked;

/* MLIR's memrefCopy: copies between strided memrefs of one shape. */
void @__memrefCopy(int64_t elem, @__unranked *src, @__unranked *dst) {
  int64_t rank = src->rank;
  char **s = (char **)src->descriptor, **d = (char **)dst->descriptor;
  int64_t soff = ((int64_t *)s)[2], doff = ((int64_t *)d)[2];
  const int64_t *sizes = (int64_t *)s + 3, *sstr = (int64_t *)s + 3 + rank;
  const int64_t *dstr = (int64_t *)d + 3 + rank;
  char *sp = s[1] + soff * elem, *dp = d[1] + doff * elem;
  int64_t idx[64] = {0};
  if (rank > 64) return;
  for (int64_t i = 0; i < rank; ++i) if (sizes[i] == 0) return;
  for (;;) {
    int64_t so = 0, dof = 0;
    for (int64_t i = 0; i < rank; ++i) { so += idx[i] * sstr[i]; dof += idx[i] * dstr[i]; }
    memcpy(dp + dof * elem, sp + so * elem, (size_t)elem);
    int64_t k = rank - 1;
    while (k >= 0 && ++idx[k] == sizes[k]) idx[k--] = 0;
    if (k < 0) return;
  }
}

/* Dense row-major copy out of a strided result. */
static void @__copy_out(void *dst, const char *base, int64_t elem, int rank,
                        const int64_t *sizes, const int64_t *strides) {
  int64_t n = 1, expect = 1;
  bool dense = true;
  for (int i = rank - 1; i >= 0; --i) {
    if (sizes[i] != 1 && strides[i] != expect) dense = false;
    expect *= sizes[i];
    n *= sizes[i];
  }
  if (n == 0) return;
  if (dense) { memcpy(dst, base, (size_t)(n * elem)); return; }
  int64_t idx[64] = {0};
  char *out = (char *)dst;
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int i = 0; i < rank; ++i) off += idx[i] * strides[i];
    memcpy(out + e * elem, base + off * elem, (size_t)elem);
    int k = rank - 1;
    while (k >= 0 && ++idx[k] == sizes[k]) idx[k--] = 0;
  }
}
"""

_RUNTIME_TRACE = r"""
/* Build-time tracing allocator: records the call's allocation sequence. */
#define TRACE_MAX 65536
EXPORT long @__trace_n;
EXPORT int @__trace_overflow;
EXPORT int @__trace_kind[TRACE_MAX];
EXPORT long @__trace_id[TRACE_MAX];
EXPORT size_t @__trace_size[TRACE_MAX];
static void *trace_ptr[TRACE_MAX];
EXPORT long @__trace_allocs;

static void @__trace(int kind, long id, size_t size) {
  if (@__trace_n >= TRACE_MAX) { @__trace_overflow = 1; return; }
  @__trace_kind[@__trace_n] = kind; @__trace_id[@__trace_n] = id;
  @__trace_size[@__trace_n++] = size;
}

void *@__alloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (@__trace_allocs < TRACE_MAX) trace_ptr[@__trace_allocs] = p;
  @__trace(0, @__trace_allocs++, size);
  return p;
}

void @__free(void *p) {
  for (long i = @__trace_allocs - 1; i >= 0; --i)
    if (i < TRACE_MAX && trace_ptr[i] == p) { trace_ptr[i] = NULL; @__trace(1, i, 0); break; }
  free(p);
}
"""

_RUNTIME_POOL = r"""
/* The static plan: the call's allocations, in order, and their offsets in the pool. */
#define PLAN_N @PLAN_N@
static const size_t @__plan_size[PLAN_N + 1] = {@PLAN_SIZES@};
static const size_t @__plan_offset[PLAN_N + 1] = {@PLAN_OFFSETS@};
#define PLAN_PEAK ((size_t)@PLAN_PEAK@)
#define POOL_ALIGN ((uintptr_t)@ALIGN@)
static _Thread_local char *@__pool;
static _Thread_local size_t @__next;
static _Thread_local char @__spare[POOL_ALIGN] __attribute__((aligned(@ALIGN@)));

EXPORT size_t @_scratch_bytes(void) { return PLAN_PEAK + POOL_ALIGN; }

void *@__alloc(size_t size) {
  size_t i = @__next++;
  if (i < PLAN_N && @__plan_size[i] == size) return @__pool + @__plan_offset[i];
  /* Not the planned sequence (cannot happen for static shapes): report, never overflow. */
  @__set_error("user memory: allocation sequence differs from the build-time plan");
  if (size <= sizeof @__spare) return @__spare;
  abort();
}

void @__free(void *p) { (void)p; }
"""


def runtime_source(name: str, sig: Signature, entry: str, static: bool,
                   plan: MemoryPlan | None, trace: bool = False) -> str:
    """The C runtime of the library: the exported wrapper and the symbols the code calls."""
    text = _RUNTIME_COMMON
    user_memory = plan is not None
    if trace:
        text += _RUNTIME_TRACE
    elif plan is not None:
        n = len(plan.sizes)
        text += (_RUNTIME_POOL.replace("@PLAN_N@", str(n))
                 .replace("@PLAN_SIZES@", ", ".join(map(str, [*plan.sizes, 0])))
                 .replace("@PLAN_OFFSETS@", ", ".join(map(str, [*plan.offsets, 0])))
                 .replace("@PLAN_PEAK@", str(plan.peak)).replace("@ALIGN@", str(ALIGN)))
    lines = [text, *_desc_typedefs(name, sig)]
    # The callee: results through a pointer to their struct, then the arguments.
    res_fields = []
    for i, spec in enumerate(sig.results):
        ct = _desc_type(name, spec) if spec.kind == "memref" else _ctype(spec.dtype)
        res_fields.append(f"{ct} r{i};")
    if res_fields:
        lines.append(f"typedef struct {{ {' '.join(res_fields)} }} {name}__results;")
    callee_params = [f"{name}__results *"] if sig.results_by_pointer else []
    for spec in sig.args:
        callee_params.append(f"{_desc_type(name, spec)} *" if spec.kind == "memref"
                             else _ctype(spec.dtype))
    ret = "void"
    if sig.results and not sig.results_by_pointer:
        ret = _ctype(sig.results[0].dtype)
    lines.append(f"{ret} {name}___mlir_ciface_{entry}({', '.join(callee_params) or 'void'});")
    lines.append("")
    lines.append(f"EXPORT {c_prototype(name, sig, static, user_memory)} {{")
    body = [f"  {name}__failed = 0;", f"  {name}__error[0] = 0;"]
    if user_memory:
        body += [
            "  uintptr_t base = ((uintptr_t)scratch + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1);",
            "  size_t need = PLAN_PEAK ? PLAN_PEAK + (size_t)(base - (uintptr_t)scratch) : 0;",
            "  if (need && (!scratch || scratch_size < need)) {",
            "    @__set_error(\"scratch pool too small: see @_scratch_bytes()\");",
            f"    return {STATUS_POOL};", "  }",
            "  @__pool = (char *)base;", "  @__next = 0;",
        ]
    operands = ["&res"] if sig.results_by_pointer else []
    for i, spec in enumerate(sig.args):
        if spec.kind == "scalar":
            operands.append(f"in{i}")
        elif static:
            dt = _desc_type(name, spec)
            sizes = ", ".join(str(d) for d in spec.shape)
            strides, acc = [], 1
            for d in reversed(spec.shape):
                strides.insert(0, acc)
                acc *= d
            dims = f", {{{sizes}}}, {{{', '.join(map(str, strides))}}}" if spec.rank else ""
            body.append(f"  {dt} a{i} = {{({_ctype(spec.dtype)} *)in{i}, "
                        f"({_ctype(spec.dtype)} *)in{i}, 0{dims}}};")
            operands.append(f"&a{i}")
        else:
            operands.append(f"({_desc_type(name, spec)} *)in{i}")
    if res_fields:
        body.append(f"  {name}__results res;")
        body.append("  memset(&res, 0, sizeof res);")
    call = f"{name}___mlir_ciface_{entry}({', '.join(operands)});"
    if sig.results and not sig.results_by_pointer:
        body.append(f"  res.r0 = {call}")
    else:
        body.append(f"  {call}")
    body.append(f"  if ({name}__failed) return {STATUS_ASSERT};")
    # Inputs' data ranges: a result pointing into one is not ours to free.
    in_ranges = []
    for i, spec in enumerate(sig.args):
        if spec.kind != "memref":
            continue
        if static:
            in_ranges.append((f"(uintptr_t)in{i}",
                              f"{_count(spec)} * sizeof({_ctype(spec.dtype)})"))
        else:
            in_ranges.append((f"(uintptr_t)in{i}->allocated", "1"))
    freed: list[str] = []
    for i, spec in enumerate(sig.results):
        if spec.kind == "scalar":
            body.append(f"  *out{i} = res.r{i};")
            continue
        r = f"res.r{i}"
        elem = f"sizeof({_ctype(spec.dtype)})"
        sizes = f"{r}.sizes" if spec.rank else "NULL"
        strides = f"{r}.strides" if spec.rank else "NULL"
        foreign = " || ".join([f"(uintptr_t){r}.allocated == DEAD_BEEF"] + [
            f"((uintptr_t){r}.allocated >= {lo} && (uintptr_t){r}.allocated < {lo} + {n})"
            for lo, n in in_ranges])
        if static:
            body.append(f"  {name}__copy_out(out{i}, (const char *){r}.aligned + {r}.offset * "
                        f"{elem}, {elem}, {spec.rank}, {sizes}, {strides});")
        else:
            # The caller owns what it gets: copy results that alias constants or inputs.
            body += [f"  if ({foreign}) {{",
                     f"    int64_t n = 1; for (int k = 0; k < {spec.rank}; ++k) "
                     f"n *= {r}.sizes[k];" if spec.rank else "    int64_t n = 1;",
                     f"    void *copy = malloc((size_t)(n ? n : 1) * {elem});",
                     f"    if (!copy) {{ @__set_error(\"out of memory\"); return {STATUS_POOL}; }}",
                     f"    {name}__copy_out(copy, (const char *){r}.aligned + {r}.offset * "
                     f"{elem}, {elem}, {spec.rank}, {sizes}, {strides});",
                     f"    {r}.allocated = {r}.aligned = copy; {r}.offset = 0;"]
            if spec.rank:
                body.append(f"    for (int k = {spec.rank - 1}, s = 1; k >= 0; s *= "
                            f"{r}.sizes[k], --k) {r}.strides[k] = s;")
            body += ["  }", f"  *out{i} = {r};"]
            continue
        if user_memory:
            continue
        # Results sharing one allocation are freed once.
        dup = "".join(f" && {r}.allocated != {o}.allocated" for o in freed)
        body.append(f"  if (!({foreign}){dup}) free({r}.allocated);")
        freed.append(r)
    body.append("  return 0;")
    lines += body
    lines.append("}")
    return "\n".join(lines).replace("@", name) + "\n"


def readme_text(lib: AotLibrary) -> str:
    name, sig = lib.name, lib.signature
    proto = c_prototype(name, sig, lib.static_shapes, lib.user_memory)
    lines = [
        f"{name}: an ahead-of-time compiled model library, generated by accel",
        "",
        f"Files: lib{name}.so (shared), {name}.o (static: link it with -lmvec -lm), {name}.h "
        "(the interface).",
        f"Function: {sig}",
        f"Target CPU: {lib.target_cpu}",
        "",
        "Call:",
        f"  {proto};",
        "",
        "Inputs come first, then outputs; " + (
            "each is a pointer to a dense row-major buffer of the shape in the header."
            if lib.static_shapes else
            "each is a memref descriptor (allocated, aligned, offset, sizes, strides); the "
            "call fills each output descriptor with a buffer the caller must free() "
            "(out->allocated)."),
        f"The return value is 0 on success, {STATUS_ASSERT} when a runtime assertion failed "
        f"(message: {name}_last_error()).",
    ]
    if lib.user_memory:
        lines += [f"User memory: the last two arguments are a scratch pool of at least "
                  f"{name}_scratch_bytes() = {lib.scratch_bytes} bytes and its size. The "
                  f"call allocates nothing on the heap; a smaller pool returns {STATUS_POOL}."]
    lines += [
        "Calls are thread-safe for different buffers. The library needs only glibc's libc, "
        "libm and libmvec.",
        "",
        "Build and run against it:",
        f"  gcc -O2 main.c -I. -L. -l{name} -Wl,-rpath,'$ORIGIN' -o main     # shared",
        f"  gcc -O2 main.c -I. {name}.o -lmvec -lm -o main                       # static",
        "",
    ]
    return "\n".join(lines)
