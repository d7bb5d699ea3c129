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
4. Translate to LLVM IR, normalise it for llvmlite (`accel.backend.llvmir`), add one
   `void (ptr)` trampoline per function, optimise at `opt_level` for the host CPU and JIT
   it with MCJIT.

Results are not turned into out-parameters: this MLIR's `buffer-results-to-out-params`
either skips public functions or also converts dynamically shaped results (whose shapes the
caller cannot know), so every memref result comes back as a descriptor the caller owns.
"""

from __future__ import annotations

import base64
import ctypes
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from accel import phases
from accel.backend import vecmath
from accel.backend.llvmir import normalize_llvm_ir
from accel.diagnostics import AccelError, from_mlir_error, relocate
from accel.ir import (
    MLIRError,
    Module,
    Operation,
    enable_torch_mlir_extensions,
    ir,
    load_torch_dialects,
    translate_to_llvmir,
)
from accel.runtime import DTYPES, CompiledFunction, Signature, ValueSpec
from accel.weights import check_bindings

# -- pipelines (data) -------------------------------------------------------------------------
#: Where AFFINE_FUSION goes in BUFFERIZE: before deallocation, whose `memref.dealloc`s make
#: MLIR's fusion keep (and recompute) producer nests it would otherwise remove.
DEALLOCATE_MARK = "buffer-deallocation-pipeline"

BUFFERIZE: list[str] = [
    # argmax/max(dim) as two reductions that vectorise (and return NaN's index, as eager).
    "func.func(accel-split-argmax)",
    # tm_tensor ops (scan, scatter, sort, topk) have no One-Shot interface: memrefs first...
    "func.func(tm-tensor-bufferize)",
    # ...which leaves shared `to_buffer`s and non-`restrict` `to_tensor`s One-Shot mishandles.
    "func.func(accel-prepare-one-shot)",
    # Tensors -> memrefs, across calls too; identity layouts keep argument buffers row-major.
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion="
    "identity-layout-map unknown-type-conversion=identity-layout-map}",
    # tm_tensor ops on memrefs -> loops, before deallocation needs their memory effects.
    "func.func(tm-tensor-to-loops)",
    # Frees every temporary and clones returned arguments: callers own all returned buffers.
    DEALLOCATE_MARK,
    # bufferization.clone/dealloc left by the deallocation pipeline -> memref alloc/copy/dealloc.
    "convert-bufferization-to-memref",
]

#: Tensor-level fusion before bufferization at opt_level >= 1, as (the option that switches
#: the entry off, pass); passes not registered in this build are skipped.
FUSE_ON_TENSORS: list[tuple[str, str]] = [
    # Attention and other reduction chains -> one loop nest with an online softmax.
    ("disable_reduce_reduce_fusion", "accel-reduce-reduce-fusion"),
    # Value-changing float rewrites (x/sqrt(y) -> x*rsqrt(y), ...), PolyBlocks' default.
    # (No tensor-level linalg-fuse-elementwise-ops: its reshape propagation turns matmuls
    # into generics the GEMM kernels cannot match; tiny GPT-2 ran 26x slower. Elementwise
    # chains are fused as loops by accel-affine-fusion instead.)
    ("disable_unsafe_math_canonicalizations", "accel-unsafe-math-canonicalize"),
]

#: Goes before AFFINE_FUSION at opt_level >= 1: large static f32 matmuls become calls to
#: packed, register-tiled vector GEMM kernels (docs/cpu-codegen.md) before linalg turns
#: into affine loops; the deallocation pipeline then frees the packing buffers.
MATMUL_KERNELS = "accel-matmul-microkernel"

#: Goes before BUFFERIZE's deallocation when affine fusion is on (opt_level >= 1); the
#: linalg ops are then loops already and LOWER_TO_LLVM's linalg-to-loops finds none.
AFFINE_FUSION: list[str] = [
    # linalg on memrefs -> affine loops, which fusion's dependence analysis understands.
    "func.func(convert-linalg-to-affine-loops)",
    # Producer-consumer and sibling fusion of the nests, then scalar replacement.
    "accel-affine-fusion",
    # Unit dims leave one-iteration loops whose variable indexes what others index with 0;
    # promoting them (and folding the constants) makes equal accesses look equal.
    "func.func(affine-loop-normalize{promote-single-iter=true},canonicalize)",
    # Fusion sinks reduction loops innermost: reductions over a leading dim then stride
    # over whole rows (50x slower); the unit-stride loop goes back inside.
    "func.func(accel-loop-interchange)",
    # Transposing nests (unit stride along different loops) in 32 x 32 blocks.
    "func.func(accel-tile-transposes)",
]

#: Goes right after AFFINE_FUSION (so only when it runs): the outermost parallel loop of
#: each large nest runs on threads with `accel_parallel_for` (docs/cpu-codegen.md); options
#: may follow in braces (`{min-work=...}`).
PARALLEL_LOOPS = "accel-parallelize-loops"

LOWER_TO_LLVM: list[str] = [
    # `_mlir_ciface_<name>` wrappers (descriptors by pointer) are what the JIT calls.
    "accel-emit-c-interface",
    # linalg on memrefs -> scf loops (LLVM's O3 vectorises them).
    "func.func(convert-linalg-to-loops)",
    # affine (from the input) -> scf + arith.
    "lower-affine",
    # Structured control flow -> blocks and branches, as the LLVM dialect needs.
    "convert-scf-to-cf",
    # A failed cf.assert reports and returns instead of abort()ing the process (now that
    # loops are branches, every assert sits in a function body).
    "accel-assert-to-error-return",
    # complex arithmetic (abs, exp, div, ...) -> arith/math on the real and imaginary parts.
    "convert-complex-to-standard",
    # math on f16/bf16 runs in f32: no libm calls on types libm lacks.
    "math-extend-to-supported-types{target-type=f32}",
    # bf16 arithmetic runs in f32 too: x86 without AVX512-BF16 has no native bf16 ops.
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}",
    # bf16<->f32 casts as integer bit operations (no __truncsfbf2 libcall), ceildiv & co.
    "arith-expand{include-bf16=true}",
    # math ops with LLVM intrinsics (exp, log, sqrt, fma, ...) first: they vectorise.
    "convert-math-to-llvm",
    # The rest (tanh, erf, atan, ...) as libm calls, resolved in the process.
    "convert-math-to-libm",
    # subview/expand_shape/collapse_shape -> reinterpret_cast with explicit strides.
    "expand-strided-metadata",
    # ...whose offset/stride arithmetic comes as affine.apply (dynamic shapes, views).
    "lower-affine",
    # memref ops and descriptors -> LLVM (malloc/free, llvm.memcpy for dense copies).
    "finalize-memref-to-llvm",
    # vector ops from the input, if any.
    "convert-vector-to-llvm",
    # The remaining scalar dialects and the functions themselves.
    "convert-arith-to-llvm",
    # What convert-complex-to-standard keeps (create, re, im, constant) -> LLVM structs.
    "convert-complex-to-llvm",
    "convert-index-to-llvm",
    "convert-ub-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    # Drop the casts the partial conversions left between each other.
    "reconcile-unrealized-casts",
]


def pipeline_text(passes: list[str]) -> str:
    """`builtin.module(a,b,...)` for a pass list."""
    return "builtin.module(" + ",".join(passes) + ")"


def pipelines(opts: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """(tensor-level fusion, BUFFERIZE, lowering to LLVM) for resolved `compile_mlir` options."""
    from accel.passes import lookup_pass

    if opts["opt_level"] == 0:
        return [], BUFFERIZE, LOWER_TO_LLVM
    fuse = [p for flag, p in FUSE_ON_TENSORS if not opts[flag]
            and (p.startswith("func.func(") or lookup_pass(p) is not None)]
    if opts["disable_fast_math"]:  # the rewrites stay, the reassociation flags go
        fuse = [p + "{reassociate-reductions=false}" if p == "accel-unsafe-math-canonicalize"
                else p for p in fuse]
    at = BUFFERIZE.index(DEALLOCATE_MARK)
    middle = [MATMUL_KERNELS] if lookup_pass(MATMUL_KERNELS) is not None else []
    if not opts["disable_affine_fusion"]:
        middle += AFFINE_FUSION
        if lookup_pass(PARALLEL_LOOPS.split("{", 1)[0]) is not None:
            middle.append(PARALLEL_LOOPS)
    bufferize = BUFFERIZE[:at] + middle + BUFFERIZE[at:]
    return fuse, bufferize, LOWER_TO_LLVM


# -- options --------------------------------------------------------------------------------
DEFAULT_OPTIONS: dict[str, Any] = {
    "opt_level": 3,  # LLVM optimisation level, 0-3
    "filename": "<input>",  # file name shown in diagnostics
    "cache": True,  # look up / store the result in the on-disk cache (`accel.cache`)
    # Fusion switches (PolyBlocks' names); all fusion is off at opt_level 0.
    "disable_affine_fusion": False,
    "disable_reduce_reduce_fusion": False,
    "disable_unsafe_math_canonicalizations": False,
    # No fast-math flags at all (the unsafe-math pass's reassociated reductions included).
    "disable_fast_math": False,
}

#: Options that change the generated code (the compile cache key covers them).
CODE_OPTIONS = ("opt_level", "disable_affine_fusion", "disable_reduce_reduce_fusion",
                "disable_unsafe_math_canonicalizations", "disable_fast_math")


def _check_options(options: dict[str, Any] | None) -> dict[str, Any]:
    merged = dict(DEFAULT_OPTIONS)
    for key, value in (options or {}).items():
        if key not in DEFAULT_OPTIONS:
            raise ValueError(f"unknown compile_mlir option {key!r}; valid options: "
                             f"{', '.join(sorted(DEFAULT_OPTIONS))}")
        merged[key] = value
    level = merged["opt_level"]
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise ValueError(f"option 'opt_level' must be an int from 0 to 3, got {level!r}")
    if not isinstance(merged["filename"], str):
        raise ValueError(f"option 'filename' must be a str, got {merged['filename']!r}")
    for flag in ("cache", *CODE_OPTIONS[1:]):
        if not isinstance(merged[flag], bool):
            raise ValueError(f"option {flag!r} must be a bool, got {merged[flag]!r}")
    return merged


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

    @classmethod
    def from_llvm_ir(cls, llvm_ir: str, signatures: dict[str, Signature], opt_level: int = 3,
                     mlir_llvm: str = "", cache_hit: bool = False,
                     weights: Mapping[str, np.ndarray] | None = None,
                     weight_specs: Mapping[str, int] | None = None,
                     object_code: bytes | None = None) -> CompiledMLIR:
        """JIT normalised LLVM IR (`llvm_ir` of an earlier compilation) with its signatures.

        `object_code` is the host object an earlier compilation of this IR produced
        (`CompiledMLIR.object_code`): given, LLVM neither optimises nor compiles again.

        `weight_specs` (name -> byte size) lists the external globals the code reads; each
        is bound to the array of that name in `weights`.
        """
        bound = {name: (weights or {})[name] for name in (weight_specs or {})
                 if name in (weights or {})}
        check_bindings(weight_specs or {}, weights or {}, "the compiled code")
        engine, callables, obj = _jit(llvm_ir, signatures, opt_level, bound, object_code)
        return cls(signatures, mlir_llvm, llvm_ir, callables, engine, cache_hit, bound, obj)

    def __getitem__(self, name: str) -> CompiledFunction:
        fn = self._callables.get(name)
        if fn is None:
            raise ValueError(f"no public function @{name} in the module; available: "
                             f"{', '.join('@' + n for n in self._callables) or 'none'}")
        return fn

    def invoke(self, name: str, *args: Any) -> Any:
        """Call `@name`: numpy arrays for memrefs/tensors, scalars for scalars.

        Returns None (no results), one value, or a tuple. Memref results are numpy arrays
        that own their memory; scalar results are numpy scalars (bf16: float32).
        """
        return self[name](*args)


# -- compile --------------------------------------------------------------------------------
def compile_mlir(source: str | Module, options: dict[str, Any] | None = None, *,
                 weights: Mapping[str, np.ndarray] | None = None) -> CompiledMLIR:
    """Lower MLIR text or a module (any level down to the LLVM dialect) and JIT it.

    `weights` binds external `memref.global` declarations (no initial value) by name to
    C-contiguous arrays of their size, which the code then reads in place (accel.weights).
    Raises `AccelError` (located diagnostics) when the input does not parse, a pass fails or
    an op is left that the CPU pipeline cannot lower; `ValueError` for bad options.
    """
    from accel import cache
    from accel.context import make_context
    from accel.pipeline import run_pipeline

    opts = _check_options(options)
    filename = opts["filename"]
    text = source if isinstance(source, str) else source.operation.get_asm(enable_debug_info=True)
    key = cache.cache_key(text, {k: opts[k] for k in CODE_OPTIONS}) if opts["cache"] else None
    hit = cache.lookup(key) if key is not None else None
    if hit is not None:
        try:
            sigs = {s["name"]: cache.signature_from_json(s) for s in hit["signatures"]}
        except (KeyError, TypeError, ValueError):
            sigs = None  # a well-formed entry from a broken writer: rebuild it
        specs = hit.get("weights", {})
        if sigs is not None and isinstance(specs, dict):
            rec = phases.current()
            if rec is not None:
                rec.cache_hit = True
            obj = hit.get("object")
            return CompiledMLIR.from_llvm_ir(hit["llvm_ir"], sigs, opts["opt_level"],
                                             hit.get("mlir_llvm", ""), cache_hit=True,
                                             weights=weights, weight_specs=specs,
                                             object_code=base64.b64decode(obj) if
                                             isinstance(obj, str) else None)
    enable_torch_mlir_extensions()
    with make_context() as ctx:
        load_torch_dialects(ctx)
        module = _load(text, filename)
        _mark_tensor_args_read_only(module)
        weight_specs = _external_globals(module)
        check_bindings(weight_specs, weights or {}, filename)
        fuse, bufferize, lower = pipelines(opts)
        if fuse:
            with phases.phase("fuse"):
                run_pipeline(module, pipeline_text(fuse), filename=filename, label="cpu-fuse")
            phases.snapshot("fuse", module)
        with phases.phase("bufferize"):
            run_pipeline(module, pipeline_text(bufferize), filename=filename,
                         label="cpu-bufferize")
        phases.snapshot("bufferize", module)
        signatures = {sig.name: sig for sig in _signatures(module)}
        with phases.phase("llvm-dialect"):
            run_pipeline(module, pipeline_text(lower), filename=filename,
                         label="cpu-lower-to-llvm")
            _check_all_llvm(module, filename)
        mlir_llvm = str(module)
        phases.snapshot("llvm-dialect", mlir_llvm)
        try:
            with phases.phase("llvm-ir"):
                llvm_ir = normalize_llvm_ir(translate_to_llvmir(module))
        except MLIRError as err:
            raise from_mlir_error(err, filename, context="translation to LLVM IR") from None
        phases.snapshot("llvm-ir", llvm_ir, suffix=".ll")
    compiled = CompiledMLIR.from_llvm_ir(llvm_ir, signatures, opts["opt_level"], mlir_llvm,
                                         weights=weights, weight_specs=weight_specs)
    if key is not None:
        cache.store(key, {"llvm_ir": llvm_ir, "mlir_llvm": mlir_llvm, "weights": weight_specs,
                          "object": base64.b64encode(compiled.object_code).decode(),
                          "signatures": [cache.signature_to_json(s)
                                         for s in signatures.values()]})
    return compiled


def _load(source: str | Module, filename: str) -> Module:
    """Parse into the current context; a given module is copied (lowering is destructive)."""
    if not isinstance(source, str):
        source = source.operation.get_asm(enable_debug_info=True)
    try:
        return Module.parse(source)
    except MLIRError as err:
        raise from_mlir_error(err, filename) from None


def _ops(op: Operation) -> Iterator[Operation]:
    """`op` and every op nested in it, outer first."""
    yield op
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield from _ops(child.operation)


def _top_level(module: Module) -> Iterator[Operation]:
    for op in module.body.operations:
        yield op.operation


def _is_public_definition(op: Operation) -> bool:
    if op.name == "func.func":
        visibility = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
        return len(op.regions[0].blocks) > 0 and (visibility is None or
                                                  ir.StringAttr(visibility).value == "public")
    if op.name == "llvm.func":
        linkage = str(op.attributes["linkage"]) if "linkage" in op.attributes else ""
        return len(op.regions[0].blocks) > 0 and not re.search(r"private|internal", linkage)
    return False


def _external_globals(module: Module) -> dict[str, int]:
    """`memref.global` declarations (no initial value): name -> byte size."""
    found = {}
    for op in _top_level(module):
        if op.name != "memref.global" or "initial_value" in op.attributes:
            continue
        memref = ir.MemRefType(ir.TypeAttr(op.attributes["type"]).value)
        bits = memref.element_type.width if hasattr(memref.element_type, "width") else 0
        count = 1
        for dim in memref.shape:
            count *= dim
        found[_symbol(op)] = count * bits // 8
    return found


def _symbol(op: Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _mark_tensor_args_read_only(module: Module) -> None:
    """Tensor arguments are values: bufferization must copy rather than write into them."""
    for op in _top_level(module):
        if op.name != "func.func" or not _is_public_definition(op):
            continue
        ftype = ir.TypeAttr(op.attributes["function_type"]).value
        old = list(ir.ArrayAttr(op.attributes["arg_attrs"])) if "arg_attrs" in op.attributes \
            else [ir.DictAttr.get({}) for _ in ftype.inputs]
        new = []
        for arg_type, attrs in zip(ftype.inputs, old, strict=True):
            entries = {a.name: a.attr for a in ir.DictAttr(attrs)}
            if isinstance(arg_type, ir.RankedTensorType):
                entries.setdefault("bufferization.writable", ir.BoolAttr.get(False))
            new.append(ir.DictAttr.get(entries))
        op.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


# -- signatures -----------------------------------------------------------------------------
class _Unsupported(Exception):
    """A type Python cannot pass or receive (the function stays uncallable, with a reason)."""


def _signatures(module: Module) -> list[Signature]:
    """Signatures of public functions at the memref level (func.func) or LLVM (llvm.func)."""
    out = []
    for op in _top_level(module):
        if not _is_public_definition(op):
            continue
        if op.name == "func.func":
            out.append(_func_signature(op))
        else:
            out.append(_llvm_func_signature(op))
    return out


def _func_signature(op: Operation) -> Signature:
    name = _symbol(op)
    ftype = ir.TypeAttr(op.attributes["function_type"]).value
    inputs, results = list(ftype.inputs), list(ftype.results)
    # C returns a struct (memref descriptor, complex) through a pointer argument.
    by_pointer = len(results) > 1 or (len(results) == 1 and isinstance(
        results[0], ir.MemRefType | ir.ComplexType))
    try:
        args = tuple(_value_spec(t) for t in inputs)
        res = tuple(_value_spec(t) for t in results)
    except _Unsupported as why:
        return Signature(name, (), (), f"_mlir_ciface_{name}", by_pointer, str(why))
    return Signature(name, args, res, f"_mlir_ciface_{name}", by_pointer)


def _value_spec(t: ir.Type) -> ValueSpec:
    text = str(t)
    if isinstance(t, ir.MemRefType):
        return _memref_spec(t)
    if text in DTYPES:
        return ValueSpec("scalar", DTYPES[text], text)
    raise _Unsupported(f"type {text} has no Python mapping")


def _memref_spec(t: ir.MemRefType) -> ValueSpec:
    text, element = str(t), str(t.element_type)
    if element not in DTYPES:
        raise _Unsupported(f"element type of {text} has no numpy mapping")
    if t.memory_space is not None:
        raise _Unsupported(f"{text} is not in the default memory space")
    dyn = ir.ShapedType.get_dynamic_size()
    shape = tuple(None if d == dyn else d for d in t.shape)
    identity = isinstance(t.layout, ir.AffineMapAttr) and \
        t.layout.value == ir.AffineMap.get_identity(t.rank)
    if identity:
        return ValueSpec("memref", DTYPES[element], text, shape)
    try:
        strides, offset = t.get_strides_and_offset()
    except Exception:  # noqa: BLE001 - the bindings raise a plain ValueError/RuntimeError
        raise _Unsupported(f"layout of {text} is not strided") from None
    dyn_so = ir.ShapedType.get_dynamic_stride_or_offset()
    return ValueSpec("memref", DTYPES[element], text, shape, identity=False,
                     strides=tuple(None if s == dyn_so else s for s in strides),
                     offset=None if offset == dyn_so else offset)


_LLVM_SCALARS = {"f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64"}


def _llvm_func_signature(op: Operation) -> Signature:
    """Raw LLVM-dialect functions: scalars by value, `!llvm.ptr` as an array's data pointer."""
    name = _symbol(op)
    ftype = ir.TypeAttr(op.attributes["function_type"]).value

    def spec(t: ir.Type) -> ValueSpec:
        text = str(t)
        if text in _LLVM_SCALARS:
            return ValueSpec("scalar", DTYPES[text], text)
        if text == "!llvm.ptr":
            return ValueSpec("pointer", None, text)
        raise _Unsupported(f"type {text} has no Python mapping")

    try:
        if ftype.is_var_arg:
            raise _Unsupported("variadic functions cannot be called")
        args = tuple(spec(t) for t in ftype.inputs)
        ret = str(ftype.return_type)
        results = () if ret == "!llvm.void" else (spec(ftype.return_type),)
        if results and results[0].kind != "scalar":
            raise _Unsupported(f"result type {ret} has no Python mapping")
    except _Unsupported as why:
        return Signature(name, (), (), name, False, str(why))
    return Signature(name, args, results, name, False)


def _check_all_llvm(module: Module, filename: str) -> None:
    """Every op must be in the LLVM dialect now; name the first one that is not.

    Casts left by partial conversions only point at the real culprit, so they are named
    only when nothing else is left.
    """
    left = [op for op in _ops(module.operation)
            if op.name != "builtin.module" and not op.name.startswith("llvm.")]
    if not left:
        return
    op = next((o for o in left if o.name != "builtin.unrealized_conversion_cast"), left[0])
    file, line, col = relocate(op.location, filename)
    raise AccelError(f"'{op.name}' op was not lowered to the LLVM dialect by the CPU "
                     "pipeline (no conversion for it)", file=file, line=line, col=col)


# -- JIT ------------------------------------------------------------------------------------
#: Libraries whose functions compiled code may call without declaring them: libm for math
#: intrinsics, libgcc_s for the compiler-rt helpers codegen emits (`__truncdfhf2`, ...).
_SYSTEM_LIBRARIES = ("c", "m", "gcc_s")


@cache
def _init_llvm() -> None:
    import ctypes.util

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for name in _SYSTEM_LIBRARIES:
        path = ctypes.util.find_library(name)
        if path is None:
            continue
        try:
            llvm.load_library_permanently(path)
        except RuntimeError:  # a missing helper library only matters if code needs it
            continue


def _target_machine(opt_level: int) -> llvm.TargetMachine:
    """A fresh host target machine: MCJIT takes ownership, so one must never be shared."""
    _init_llvm()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=opt_level, jit=True)


# Narrowing helpers that codegen calls for `fptrunc` where the CPU has no instruction and
# the system's libgcc may lack them. A missing one would be bound to address 0 by MCJIT
# (a crash at call time), so accel defines those the process does not have. Both round to
# odd into float first (exact-or-odd keeps enough bits), then to nearest-even: one correct
# rounding, no double-rounding error.
_ROUND_TO_ODD_FLOAT = """\
  %f = fptrunc double %d to float
  %back = fpext float %f to double
  %exact = fcmp ueq double %back, %d
  %notexact = xor i1 %exact, true
  %bits = bitcast float %f to i32
  %low = and i32 %bits, 1
  %even = icmp eq i32 %low, 0
  %fix = and i1 %even, %notexact
  %absback = call double @llvm.fabs.f64(double %back)
  %absd = call double @llvm.fabs.f64(double %d)
  %toobig = fcmp ogt double %absback, %absd
  %down = sub i32 %bits, 1
  %up = add i32 %bits, 1
  %nudged = select i1 %toobig, i32 %down, i32 %up
  %odd = select i1 %fix, i32 %nudged, i32 %bits
"""

def _bf16_rne(src: str) -> str:
    """Round the f32 bit pattern `%src` to the nearest-even bf16 (NaNs stay quiet NaNs)."""
    return f"""\
  %hi = lshr i32 %{src}, 16
  %lsb = and i32 %hi, 1
  %bias = add i32 %lsb, 32767
  %sum = add i32 %{src}, %bias
  %rne = lshr i32 %sum, 16
  %quiet = or i32 %hi, 64
  %r32 = select i1 %isnan, i32 %quiet, i32 %rne
  %r16 = trunc i32 %r32 to i16
  %r = bitcast i16 %r16 to bfloat
  ret bfloat %r
}}
"""


_SOFT_FLOAT_HELPERS: dict[str, str] = {
    "__truncdfbf2": """\
define bfloat @__truncdfbf2(double %d) {
%ROUND_TO_ODD%  %isnan = fcmp uno double %d, %d
""" + _bf16_rne("odd"),
    "__truncsfbf2": """\
define bfloat @__truncsfbf2(float %x) {
  %bits = bitcast float %x to i32
  %isnan = fcmp uno float %x, %x
""" + _bf16_rne("bits"),
    "__truncdfhf2": """\
define half @__truncdfhf2(double %d) {
%ROUND_TO_ODD%  %oddf = bitcast i32 %odd to float
  %r = fptrunc float %oddf to half
  ret half %r
}
""",
}


def soft_float_helpers_ir(names: list[str] | None = None) -> str:
    """LLVM IR defining the narrowing helpers in `names` (default: those the process lacks)."""
    if names is None:
        _init_llvm()
        names = [n for n in _SOFT_FLOAT_HELPERS if llvm.address_of_symbol(n) is None]
    if not names:
        return ""
    text = "declare double @llvm.fabs.f64(double)\n"
    return text + "".join(_SOFT_FLOAT_HELPERS[n].replace("%ROUND_TO_ODD%", _ROUND_TO_ODD_FLOAT)
                          for n in names)


def _quote(symbol: str) -> str:
    return '@"' + symbol.replace("\\", "\\5C").replace('"', "\\22") + '"'


def trampoline_ir(index: int, sig: Signature) -> str:
    """`void @__accel_call_<index>(ptr %slots)`: load arguments from slots, call the callee."""
    ret, params = sig.callee_llvm_types()
    lines = [f"declare {ret} {_quote(sig.callee)}({', '.join(params)})", "",
             f"define void @__accel_call_{index}(ptr %slots) {{"]
    operands = []
    n_args = len(sig.args)
    result_slot = n_args if sig.results else None
    if result_slot is not None:
        lines.append(f"  %rs = getelementptr inbounds ptr, ptr %slots, i64 {result_slot}")
        lines.append("  %r = load ptr, ptr %rs")
    if sig.results_by_pointer:
        operands.append("ptr %r")
    for i, arg in enumerate(sig.args):
        lines.append(f"  %s{i} = getelementptr inbounds ptr, ptr %slots, i64 {i}")
        lines.append(f"  %p{i} = load ptr, ptr %s{i}")
        if arg.kind == "scalar":
            ty = arg.dtype.llvm  # type: ignore[union-attr]
            lines.append(f"  %v{i} = load {ty}, ptr %p{i}")
            operands.append(f"{ty} %v{i}")
        else:
            operands.append(f"ptr %p{i}")
    call = f"call {ret} {_quote(sig.callee)}({', '.join(operands)})"
    if ret == "void":
        lines.append(f"  {call}")
    else:
        lines.append(f"  %ret = {call}")
        lines.append(f"  store {ret} %ret, ptr %r")
    lines += ["  ret void", "}"]
    return "\n".join(lines) + "\n"


def _parse_llvm(text: str, what: str) -> llvm.ModuleRef:
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as err:
        raise AccelError(f"internal error: llvmlite rejected the {what}: "
                         f"{' '.join(str(err).split())}") from None
    return mod


def _callee_types(mod: llvm.ModuleRef, symbol: str) -> tuple[str, list[str]] | None:
    try:
        fn = mod.get_function(symbol)
    except NameError:
        return None
    ftype = fn.global_value_type
    return str(ftype.get_function_return()), [str(t) for t in ftype.get_function_parameters()]


def _resolve_externals(mod: llvm.ModuleRef) -> None:
    """Bind every declared function to its address in this process (libc, libm, ...).

    Explicit binding makes `malloc`/`free` in compiled code the very functions the runtime's
    finalizers call, and turns a missing symbol into an error: inside MCJIT it would abort.
    """
    from accel.runtime import fallback_symbol, process_symbol

    for fn in mod.functions:
        if not fn.is_declaration or fn.name.startswith("llvm."):
            continue
        if llvm.address_of_symbol(fn.name) is not None:
            continue
        address = process_symbol(fn.name) or fallback_symbol(fn.name)
        if not address:
            raise AccelError(f"function '{fn.name}' is declared but defined nowhere (not in the "
                             "module, not in the process): load its library with "
                             "llvmlite.binding.load_library_permanently first")
        llvm.add_symbol(fn.name, address)


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int) -> None:
    """LLVM's optimisation pipeline at `opt_level` for `tm`'s CPU, as the JIT runs it."""
    if not opt_level:
        return
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    # Loops from static shapes have constant trip counts, and LLVM's full unrolling of them
    # turned a tiny GPT-2's 0.3 MB of IR into 15 MB and 95 s of compile (1.6 s without);
    # the vectoriser still interleaves inner loops.
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


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
    mod = _parse_llvm(llvm_ir, "LLVM IR")
    tm = _target_machine(opt_level)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    optimize(mod, tm, opt_level)
    return tm.emit_assembly(mod)


#: Binding external weights by name (a process-wide symbol table) and resolving them in
#: `finalize_object` must not interleave between two compilations.
_BIND_LOCK = threading.Lock()


def _jit(llvm_ir: str, signatures: dict[str, Signature], opt_level: int,
         weights: Mapping[str, np.ndarray],
         object_code: bytes | None = None) -> tuple[Any, dict[str, CompiledFunction], bytes]:
    """JIT `llvm_ir`; returns the engine, the callables and the host object code.

    With `object_code` (from an earlier `_jit` of the same IR on this host) nothing is
    optimised or compiled again: the object is loaded and linked as it is.
    """
    with phases.phase("codegen"):
        return _jit_unrecorded(llvm_ir, signatures, opt_level, weights, object_code)


def _jit_unrecorded(llvm_ir: str, signatures: dict[str, Signature], opt_level: int,
                    weights: Mapping[str, np.ndarray], object_code: bytes | None
                    ) -> tuple[Any, dict[str, CompiledFunction], bytes]:
    mod = _parse_llvm(_with_vector_math(llvm_ir, opt_level), "translated LLVM IR")
    callable_sigs = {}
    for index, (name, sig) in enumerate(signatures.items()):
        if sig.unsupported:
            continue
        found = _callee_types(mod, sig.callee)
        if found != sig.callee_llvm_types():
            raise AccelError(f"internal error: @{sig.callee} has LLVM type {found}, expected "
                             f"{sig.callee_llvm_types()}")
        mod.link_in(_parse_llvm(trampoline_ir(index, sig), f"trampoline of @{name}"))
        callable_sigs[name] = index
    helpers = soft_float_helpers_ir()
    if helpers:
        mod.link_in(_parse_llvm(helpers, "soft-float helpers"))
    from accel.backend.parallel import PARALLEL_FOR, parallel_runtime_ir

    if _callee_types(mod, PARALLEL_FOR) is not None:  # multi-threaded kernels' fork-join
        mod.link_in(_parse_llvm(parallel_runtime_ir(), "parallel runtime"))
    _resolve_externals(mod)
    for gv in mod.global_variables:
        if gv.is_declaration and gv.name not in weights and \
                llvm.address_of_symbol(gv.name) is None:
            # MCJIT would abort the process on an unresolved symbol.
            raise AccelError(f"global '{gv.name}' is declared but has no definition and no "
                             "weight bound to it (pass it in `weights`)")
    tm = _target_machine(opt_level)
    # The optimiser must see the target's layout: struct offsets must match ctypes'.
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    emitted: list[bytes] = []
    if object_code is None:
        optimize(mod, tm, opt_level)
        engine = llvm.create_mcjit_compiler(mod, tm)
        # MCJIT hands each object it compiles to the cache hook: keep it for the next time.
        engine.set_object_cache(notify_func=lambda _mod, data: emitted.append(bytes(data)))
    else:
        # `mod` only served to resolve externals; the code is the cached object's.
        empty = _parse_llvm("", "empty module")
        empty.triple, empty.data_layout = mod.triple, mod.data_layout
        engine = llvm.create_mcjit_compiler(empty, tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
        emitted.append(object_code)
    with _BIND_LOCK:
        for name, array in weights.items():
            llvm.add_symbol(name, array.ctypes.data)
        engine.finalize_object()
    obj = emitted[0] if emitted else b""
    rec = phases.current()
    if rec is not None and rec.want_object:
        rec.object_code = obj
    callables = {}
    for name, sig in signatures.items():
        address = 0
        if name in callable_sigs:
            address = engine.get_function_address(f"__accel_call_{callable_sigs[name]}")
            if not address:
                raise AccelError(f"internal error: no code for @{name} in the compiled object")
        callables[name] = CompiledFunction(sig, address)
    return engine, callables, obj


def host_free_address_in_jit() -> int:
    """Address the JIT resolves `free` to (a test checks it is libc's, used by finalizers)."""
    mod = _parse_llvm("declare void @free(ptr)\ndefine ptr @__accel_free_addr() {\n"
                      "  ret ptr @free\n}\n", "free probe")
    tm = _target_machine(0)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    probe = ctypes.CFUNCTYPE(ctypes.c_void_p)(engine.get_function_address("__accel_free_addr"))
    return probe() or 0
