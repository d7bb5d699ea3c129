"""Ahead-of-time libraries: a compiled module as a C-callable shared/static library + header.

    from accel.targets.cpu.aot import build_library
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
  frees the temporaries; `__accel_assert_fail`/`__accel_alloc_fail` with a thread-local
  status and message for `<NAME>_last_error()` (worker threads report to their caller);
  `memrefCopy`; and with `user_memory` a static, liveness-planned allocator over the
  caller's scratch pool (no heap allocation at all).

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

from accel import interrupts
from accel.diagnostics import AccelError
from accel.host import vecmath
from accel.host.abi import soft_float_helpers_ir
from accel.host.parallel import FAILURE_KEY, NUM_THREADS, PARALLEL_FOR, parallel_runtime_ir
from accel.llvm import engine
from accel.options import c_identifier_problem
from accel.runtime.signature import Signature
from accel.runtime.symbols import ALLOC_FAIL_SYMBOL, ASSERT_FAIL_SYMBOL
from accel.targets.cpu.aot.csource import (
    _C_SCALARS,
    _C_TYPES,
    header_source,
    readme_text,
    runtime_source,
)
from accel.targets.cpu.aot.memory import ALIGN, MemoryPlan, plan_memory
from accel.user_files import make_folder

#: `target_cpu` values: the LLVM CPU name and gcc `-march` for each (host: this machine's).
TARGET_CPUS: dict[str, tuple[str, str]] = {
    "generic": ("x86-64", "x86-64"),  # any x86-64: the baseline level
    **{level: (level, level) for level in ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")},
    "host": ("", "native"),
}
DEFAULT_NAME = "accel_artifact"
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
    if not isinstance(name, str):
        raise TypeError(f"aot_name must be a str, got {type(name).__name__}")
    problem = c_identifier_problem(name)
    if problem:
        raise ValueError(f"aot_name {problem}, got {name[:40]!r}")
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
    out = make_folder(out_dir, "the AOT output folder")
    lib = AotLibrary(name, out, sig, static, user_memory, target_cpu)
    with tempfile.TemporaryDirectory(prefix="accel-aot-") as tmp_name:
        tmp = Path(tmp_name)
        # LLVM releases the GIL: in a worker thread, so that Ctrl-C stops the wait at once.
        model_obj, weight_names = interrupts.run_releasing_gil(
            lambda: _emit_model_object(cm.llvm_ir, bound, name, target_cpu, opt_level,
                                       user_memory, tmp))
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
        from accel.host.compile import compile_mlir

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
    # The runtime's thread count (read by kernels that choose a path by it) is no weight:
    # the parallel runtime linked in below defines it.
    declared = [m.group(1) for m in _WEIGHT_DECL.finditer(llvm_ir) if m.group(1) != NUM_THREADS]
    missing = [w for w in declared if w not in weights]
    if missing:
        raise AccelError(f"global '{missing[0]}' is declared but no weight is bound to it")
    # Weights are read-only data in the library: tell LLVM (hidden: no GOT indirection).
    text = _WEIGHT_DECL.sub(lambda m: m.group(0) if m.group(1) == NUM_THREADS else
                            f"@{m.group(1)} = external hidden constant ", llvm_ir)
    if opt_level and vecmath.available():  # exp, tanh, erf, ... vectorise via libmvec
        text = vecmath.attach_vector_variants(text, _vector_isa(target_cpu))
    mod = engine.parse(text, "translated LLVM IR")
    # Narrowing helpers codegen may call (libgcc's would pull in libgcc_s): our own, hidden.
    mod.link_in(engine.parse(soft_float_helpers_ir(["__truncdfbf2", "__truncsfbf2",
                                                    "__truncdfhf2"]), "soft-float helpers"))
    # Multi-threaded GEMM kernels' fork-join (pthreads, in libc since glibc 2.34), with the
    # library's own thread count (ACCEL_NUM_THREADS, else the online cores, on first use;
    # 1 with user_memory, whose pool allocator serves only the calling thread).
    if any(fn.name == PARALLEL_FOR and fn.is_declaration for fn in mod.functions):
        mod.link_in(engine.parse(parallel_runtime_ir(aot=True, serial=user_memory),
                                "parallel runtime"))
    prefix = f"{name}__"
    renames = {ASSERT_FAIL_SYMBOL: prefix + "assert_fail", ALLOC_FAIL_SYMBOL: prefix + "alloc_fail",
               FAILURE_KEY: prefix + "failure_key", "memrefCopy": prefix + "memrefCopy"}
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
        if fn.linkage.name in ("internal", "private"):  # the worker pool's: local already
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
        elif not gv.is_declaration and gv.linkage.name not in ("internal", "private") \
                and not gv.name.startswith("llvm."):  # llvm.global_dtors keeps its name
            gv.name = prefix + gv.name
            gv.visibility = "hidden"
    triple = engine.process_triple()
    if not triple.startswith("x86_64"):
        raise AccelError(f"AOT libraries target x86-64; this host is {triple}")
    cpu, features = (None, None) if target_cpu == "host" else (TARGET_CPUS[target_cpu][0], "")
    tm = engine.target_machine(opt_level, cpu=cpu, features=features, reloc="pic", jit=False)
    engine.prepare(mod, tm)
    engine.optimize(mod, tm, opt_level)
    (tmp / "model.ll").write_text(str(mod))
    obj = tmp / "model.o"
    obj.write_bytes(tm.emit_object(mod))
    return obj, weight_names  # type: ignore[return-value]


def _vector_isa(target_cpu: str) -> str:
    """libmvec's ISA letter for a target CPU (the x86-64 levels: v3 is AVX2, v4 AVX-512)."""
    if target_cpu == "host":
        return vecmath.isa_for_features(engine.host_cpu()[1].split(","))
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


# -- user memory: tracing ------------------------------------------------------------------
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


