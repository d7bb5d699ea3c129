"""The one llvmlite layer: initialise, parse, target machines, optimise, emit, the JIT's
symbol table and the host's facts.

The host JIT (`accel.host.jit`), the CPU AOT libraries, PTX (`accel.targets.nvgpu.ptx`)
and the compile cache's environment all go through these functions (no module outside
`accel.llvm` imports llvmlite; tests/unit/test_layering.py checks it), so LLVM is
initialised once, IR parse errors read the same everywhere, and the optimisation pipeline
(with its tuning) is written once. `ModuleRef`, `TargetMachine` and `ExecutionEngine` are
llvmlite's classes, re-exported for annotations.

    mod = parse(text, "translated LLVM IR")
    tm = target_machine(opt_level=3)                       # the host CPU, for the JIT
    tm = target_machine(cpu="x86-64-v3", reloc="pic", jit=False)   # an AOT library
    prepare(mod, tm); optimize(mod, tm, 3); obj = tm.emit_object(mod)
"""

from __future__ import annotations

from functools import cache

import llvmlite
import llvmlite.binding as llvm

from accel.diagnostics import AccelError

ModuleRef = llvm.ModuleRef
TargetMachine = llvm.TargetMachine
ExecutionEngine = llvm.ExecutionEngine

#: Libraries whose symbols compiled code may call: libc/libm for math and memory
#: intrinsics, libgcc_s for the compiler-rt helpers codegen emits (`__truncdfhf2`, ...).
_SYSTEM_LIBRARIES = ("c", "m", "gcc_s")


@cache
def init_native() -> None:
    """Initialise LLVM's host target and load the system libraries compiled code calls."""
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


@cache
def init_all_targets() -> None:
    """Initialise every target llvmlite was built with (NVPTX for PTX, ...)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def parse(text: str, what: str) -> llvm.ModuleRef:
    """Parse and verify LLVM IR; a rejection is an `AccelError` naming `what`."""
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as err:
        raise AccelError(f"internal error: llvmlite rejected the {what}: "
                         f"{' '.join(str(err).split())}") from None
    return mod


def parse_bitcode(data: bytes, what: str) -> llvm.ModuleRef:
    """Parse LLVM bitcode (libdevice); a rejection is an `AccelError` naming `what`."""
    try:
        return llvm.parse_bitcode(data)
    except RuntimeError as err:
        raise AccelError(f"{what} is not valid LLVM bitcode: "
                         f"{' '.join(str(err).split())}") from None


#: Appended to the features of AVX-512 targets. LLVM tunes Intel's AVX-512 CPUs (Skylake-X
#: to Sapphire Rapids, Rocket Lake, x86-64-v4) to vectorise loops at 256 bits, to spare
#: the clock drop of 512-bit instructions on early parts. accel's GEMM and convolution
#: kernels use 512-bit vectors there anyway (that drop is paid), and at 256 bits LLVM's
#: loops (softmax, exp, layernorm, elementwise) do half the work per instruction: attention
#: 8 x 1024 x 64 at 1 thread 17.2 -> 15.5 ms on the 2-core Xeon (docs/cpu-codegen.md).
PREFER_512_BIT = "-prefer-256-bit"


def with_wide_vectors(features: str) -> str:
    """`features` (an LLVM feature string) with PREFER_512_BIT where it has AVX-512."""
    if "+avx512f" in features.split(",") and PREFER_512_BIT not in features.split(","):
        return f"{features},{PREFER_512_BIT}" if features else PREFER_512_BIT
    return features


def host_cpu() -> tuple[str, str]:
    """(LLVM CPU name, feature string) of this machine (`with_wide_vectors`)."""
    return llvm.get_host_cpu_name(), with_wide_vectors(llvm.get_host_cpu_features().flatten())


def host_features() -> frozenset[str]:
    """The CPU features this machine has (`avx2`, `avx512f`, `fma`, ...), without signs."""
    return frozenset(name for name, on in llvm.get_host_cpu_features().items() if on)


def llvmlite_version() -> str:
    return llvmlite.__version__


def add_symbol(name: str, address: int) -> None:
    """Make `name` resolve to `address` in every JIT-linked module of this process."""
    llvm.add_symbol(name, address)


def address_of_symbol(name: str) -> int | None:
    """Where `name` resolves for the JIT (a loaded library's or an added symbol), or None."""
    return llvm.address_of_symbol(name)


def load_library(path: str) -> None:
    """Make a shared library's symbols visible to the JIT (raises RuntimeError if absent)."""
    llvm.load_library_permanently(path)


def mcjit(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> llvm.ExecutionEngine:
    """An MCJIT engine owning `mod` and `tm` (codegen runs at `finalize_object`)."""
    return llvm.create_mcjit_compiler(mod, tm)


def add_object(engine: llvm.ExecutionEngine, data: bytes) -> None:
    """Link previously emitted object code (a cache entry's, an artifact's) into `engine`."""
    engine.add_object_file(llvm.ObjectFileRef.from_data(data))


def target_machine(opt_level: int, *, triple: str | None = None, cpu: str | None = None,
                   features: str | None = None, reloc: str = "default",
                   jit: bool = True) -> llvm.TargetMachine:
    """A fresh target machine (MCJIT takes ownership, so one must never be shared).

    Defaults: this process's triple and the host CPU with its features.
    """
    if triple is None or triple == llvm.get_process_triple():
        init_native()
        triple = llvm.get_process_triple()
    else:
        init_all_targets()
    if cpu is None:
        cpu, host_features = host_cpu()
        features = host_features if features is None else features
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features or "", opt=opt_level,
                                        reloc=reloc, codemodel="default" if not jit else
                                        "jitdefault", jit=jit)


def prepare(mod: llvm.ModuleRef, tm: llvm.TargetMachine, triple: str | None = None) -> None:
    """Give `mod` the machine's triple and data layout: the optimiser must see the target's
    layout (struct offsets must match ctypes')."""
    mod.triple = triple or llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int) -> None:
    """LLVM's optimisation pipeline at `opt_level` for `tm`'s CPU."""
    if not opt_level:
        return
    _tune_llvm()
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    # Loops from static shapes have constant trip counts, and LLVM's full unrolling of them
    # turned a tiny GPT-2's 0.3 MB of IR into 15 MB and 95 s of compile (1.6 s without);
    # the vectoriser still interleaves inner loops.
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


#: LLVM's loop vectoriser leaves loops of fewer iterations than this scalar (LLVM's default:
#: 16). A 14 x 14 feature map's row is 14 floats: every elementwise and BatchNorm nest over
#: such maps ran one float at a time (a small CNN's backward 5.3 -> 3.9 ms at 4).
#: `ACCEL_VECTORIZER_MIN_TRIP_COUNT` overrides it (part of the compile cache's key).
VECTORIZER_MIN_TRIP_COUNT = 4


@cache
def _tune_llvm() -> None:
    """LLVM's process-wide options (set once, before the first optimisation; compile
    workers run `optimize` too and inherit the environment, so their code is the same)."""
    import os
    import warnings

    count = VECTORIZER_MIN_TRIP_COUNT
    raw = os.environ.get("ACCEL_VECTORIZER_MIN_TRIP_COUNT", "").strip()
    if raw:
        if raw.isdigit():
            count = int(raw)
        else:
            warnings.warn(f"ACCEL_VECTORIZER_MIN_TRIP_COUNT={raw!r} is not a whole number; "
                          f"using {count}", stacklevel=3)
    llvm.set_option("accel", f"-vectorizer-min-trip-count={count}")


def process_triple() -> str:
    return llvm.get_process_triple()
