"""JIT-compiling MLIR for the host CPU: `compile_mlir(source) -> CompiledMLIR`.

    from accel import compile_mlir
    mod = compile_mlir('''
      func.func @add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> { ... }''')
    out = mod.invoke("add", x, y)        # numpy in, numpy out

Input may be at any level the pipelines below cover: linalg/tensor, memref, affine, scf,
arith/math/cf, or already the LLVM dialect. The steps:

0. `FUSE_ON_TENSORS` (opt_level >= 1): reduce-reduce fusion, unsafe-math rewrites and
   on linalg-on-tensors, each switched off by its `disable_*` option.
1. `BUFFERIZE`: tensors -> memrefs at function boundaries too, with ownership-based
   deallocation (no temporaries leak; each returned buffer is owned by the caller).
2. Signatures of public `func.func`s are read at this memref level (`accel.runtime`).
3. `LOWER_TO_LLVM`: loops (affine loops fused by `accel-affine-fusion` at opt_level >= 1),
   then the LLVM dialect with `_mlir_ciface_<name>` C wrappers.
4. Translate to LLVM IR, normalise it for llvmlite (`accel.llvm.normalize`), add one
   `void (ptr)` trampoline per function, optimise at `opt_level` for the host CPU and JIT
   it with MCJIT.

Results are not turned into out-parameters: this MLIR's `buffer-results-to-out-params`
either skips public functions or also converts dynamically shaped results (whose shapes the
caller cannot know), so every memref result comes back as a descriptor the caller owns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from accel import interrupts, phases
from accel.cache_lock import compiling
from accel.diagnostics import AccelError, from_mlir_error, out_of_memory, too_deep
from accel.host import signatures as abi
from accel.host.jit import CompiledMLIR, from_cache, object_digest
from accel.host.pipelines import check, pipeline_text, pipelines
from accel.ir import (
    MLIRError,
    Module,
    translate_to_llvmir,
)
from accel.llvm.normalize import normalize_llvm_ir
from accel.options import code_options
from accel.runtime.signature import signature_to_json


# -- options --------------------------------------------------------------------------------
def resolve_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """`compile_mlir`'s options: the options table's (accel.options) plus `filename`, the
    file name its diagnostics show (default "<input>")."""
    from accel import options as table
    from accel import settings
    from accel.settings import Settings

    if isinstance(options, Settings) and options.target == "cpu":
        # Resolved and checked once at the entry (accel.settings): not again here.
        return options if "filename" in options else options.replace(filename="<input>")
    if options is not None and not isinstance(options, Mapping):
        raise table.OptionTypeError(f"options must be a dict, got {type(options).__name__}")
    given = dict(options or {})
    filename = given.pop("filename", "<input>")
    if not isinstance(filename, str):
        raise table.OptionTypeError(f"option 'filename' must be a str, got "
                                    f"{type(filename).__name__}")
    given.setdefault("target", "cpu")
    resolved = settings.merge(given, extra={"filename": filename})
    if resolved["target"] != "cpu":  # the other targets compile through accel.compile
        raise table.OptionError(f"compile_mlir compiles for the host CPU (target 'cpu'), "
                                f"got target {resolved['target']!r}: use accel-compile "
                                f"--target {resolved['target']} or accel.compile")
    check(resolved)  # e.g. float_dtype: refused, never silently ignored
    return resolved


def split_functions(opts: Mapping[str, Any]) -> bool:
    """Whether long functions are split into parts that LLVM optimises one by one, equal
    parts (repeated layers) kept once (`accel-split-functions`, `accel-dedupe-functions`):
    the `split_functions` option where one sets it, else `$ACCEL_SPLIT_FUNCTIONS` (default
    on; `0` turns it off). LLVM's -O3 costs more than linear time in a function's size: a
    12-layer GPT-2's one `main` took 75 s of CPU in LLVM, its 6 different parts 2.6 s
    (docs/compile-time.md). Functions under 500 ops stay whole."""
    given = opts.get("split_functions")
    if given is not None:
        return bool(given)
    return os.environ.get("ACCEL_SPLIT_FUNCTIONS", "1").strip().lower() not in \
        ("0", "false", "no", "off")


# -- compile --------------------------------------------------------------------------------
def compile_mlir(source: str | Module, options: dict[str, Any] | None = None, *,
                 weights: Mapping[str, np.ndarray] | None = None) -> CompiledMLIR:
    """Lower MLIR text or a module (any level down to the LLVM dialect) and JIT it.

    `weights` binds external `memref.global` declarations (no initial value) by name to
    C-contiguous arrays of their size, which the code then reads in place (accel.weights).
    Raises `AccelError` (located diagnostics) when the input does not parse, a pass fails or
    an op is left that the CPU pipeline cannot lower; `ValueError` for bad options.
    """
    from accel.runtime.weights import checked_weights

    if not isinstance(source, str | Module):
        hint = " (decode it first: source.decode())" if isinstance(source, bytes | bytearray) \
            else ""
        raise TypeError(f"compile_mlir: source must be MLIR text (str) or a Module, got "
                        f"{type(source).__name__}{hint}")
    weights = checked_weights(weights, "compile_mlir: weights")
    opts = resolve_options(options)
    try:
        with interrupts.guarded():  # Ctrl-C: stops at a safe place, nothing is cached
            return _compile(source, opts, weights)
    except RecursionError:  # a pass or the printer walking deeply nested regions
        raise AccelError(too_deep("the MLIR input"), file=opts["filename"]) from None
    except MemoryError as err:  # still a MemoryError, saying what ran out
        raise MemoryError(f"compiling {opts['filename']} {out_of_memory(err)}") from None


def _compile(source: str | Module, opts: dict[str, Any], weights: dict[str, np.ndarray]
             ) -> CompiledMLIR:
    from accel import cache

    text = source if isinstance(source, str) else source.operation.get_asm(enable_debug_info=True)
    key = cache.cache_key(text, code_options(opts)) if opts["cache"] else None
    if key is not None:
        compiled = from_cache(key, opts["opt_level"], weights or {}, exact=False)
        if compiled is not None:
            return compiled
    # Another process compiling the same module (a data-parallel rank): wait for it, then
    # link the code it stored.
    with compiling(key) as waited:
        if waited:
            compiled = from_cache(key, opts["opt_level"], weights or {}, exact=False)
            if compiled is not None:
                return compiled
        return _compile_and_store(text, key, opts, weights)


def _compile_and_store(text: str, key: str | None, opts: dict[str, Any],
                       weights: dict[str, np.ndarray]) -> CompiledMLIR:
    from accel import cache
    from accel.pipeline import RunConfig, run_pipeline

    filename = opts["filename"]
    with abi.parsed(text, filename, weights or {}) as (module, weight_specs):
        fuse, bufferize, lower = pipelines({**opts, "split_functions": split_functions(opts)})
        # The accel dialects' verifiers run after the first pipeline only: the cpu passes
        # make no accel-dialect ops, and each verifier walks every op.
        first, later = RunConfig(filename=filename), RunConfig(filename=filename,
                                                               verify_dialects=False)
        if fuse:
            with phases.phase("fuse"):
                run_pipeline(module, pipeline_text(fuse), label="cpu-fuse", cfg=first)
            phases.snapshot("fuse", module)
        with phases.phase("bufferize"):
            run_pipeline(module, pipeline_text(bufferize), label="cpu-bufferize",
                         cfg=later if fuse else first)
        phases.snapshot("bufferize", module)
        signatures = {sig.name: sig for sig in abi.signatures_of(module)}
        with phases.phase("llvm-dialect"):
            run_pipeline(module, pipeline_text(lower), label="cpu-lower-to-llvm", cfg=later)
            abi.check_all_llvm(module, filename)
        mlir_llvm = str(module)
        phases.snapshot("llvm-dialect", mlir_llvm)
        try:
            with phases.phase("llvm-ir"):
                llvm_ir = normalize_llvm_ir(translate_to_llvmir(module))
        except MLIRError as err:
            raise from_mlir_error(err, filename, context="translation to LLVM IR") from None
        phases.snapshot("llvm-ir", llvm_ir, suffix=".ll")
    compiled = CompiledMLIR.from_llvm_ir(llvm_ir, signatures, opts["opt_level"], mlir_llvm,
                                         weights=weights, weight_specs=weight_specs,
                                         part_cache=key is not None)
    if key is not None:
        cache.store(key, compiled.object_code, {
            "llvm_ir": llvm_ir, "mlir_llvm": mlir_llvm, "weights": weight_specs,
            "object_sha256": object_digest(compiled.object_code),
            "signatures": [signature_to_json(s) for s in signatures.values()]})
    return compiled



