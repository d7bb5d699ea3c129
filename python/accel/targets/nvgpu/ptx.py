"""LLVM IR of one `gpu.module` -> PTX through llvmlite's NVPTX backend.

The torch-mlir wheel's LLVM has no NVPTX target (`gpu-module-to-binary` fails), llvmlite's
has, so kernels leave MLIR as LLVM IR (`translate_module_to_llvmir`, kernels carry the
`ptx_kernel` calling convention) and llvmlite optimises and prints them as PTX. The driver
JIT-compiles PTX when it is loaded (`cuModuleLoadData`): no ptxas is needed at run time.
"""

from __future__ import annotations

import re
from functools import cache

from accel.diagnostics import AccelError
from accel.llvm import engine as llvmx
from accel.llvm.normalize import normalize_llvm_ir
from accel.targets.nvgpu import toolkit

TRIPLE = "nvptx64-nvidia-cuda"
#: PTX ISA 8.0 (CUDA 12.0) covers sm_90a's wgmma and is JIT-compiled by every driver that
#: runs sm_90 (R525+); ptxas from CUDA 13 accepts it for sm_80 and sm_90 alike.
PTX_FEATURES = "+ptx80"

#: fp32 mul/add without the `contract` flag never fuse into FMA on NVPTX (the MLIR
#: translation writes none); contracting is what nvcc does by default (-fmad=true).
_CONTRACTIBLE = re.compile(r"= (fmul|fadd|fsub) (?!contract)")


#: Functions the CUDA driver itself provides to every kernel (PTX "system calls", resolved
#: by ptxas and the driver's JIT without any library): a failed `cf.assert` in a kernel
#: (index checks of gather/embedding) calls __assertfail, which traps with the message.
SYSTEM_CALLS = frozenset({"__assertfail", "vprintf"})


def _allow_fma(llvm_ir: str) -> str:
    return _CONTRACTIBLE.sub(r"= \1 contract ", llvm_ir)


#: Shared-memory globals (workgroup attributions) as MLIR writes them: `align 4` or none.
_SHARED = re.compile(r"^(@\S+ = .*addrspace\(3\) global [^\n]*?)(, align \d+)?$", re.M)


def _align_shared(llvm_ir: str) -> str:
    """Shared-memory globals 128-byte aligned: the vectorisers may widen their accesses to
    v4 loads, which fault on a 4-aligned base (found with the proven H100 lowering), and
    WMMA loads from shared memory need 32-byte aligned pointers."""
    return _SHARED.sub(r"\1, align 128", llvm_ir)


@cache
def _libdevice_bitcode() -> bytes:
    path = toolkit.libdevice_path()
    if path is None:
        raise AccelError("kernels call CUDA math functions (__nv_*) but libdevice.10.bc was "
                         "not found: install the nvidia-cuda-nvcc wheel or a CUDA toolkit")
    with open(path, "rb") as f:
        return f.read()


def _link_libdevice(mod: llvmx.ModuleRef, kernels: set[str], tm: llvmx.TargetMachine) -> None:
    """Link libdevice when a kernel calls `__nv_*` math, then make every non-kernel function
    internal so O3 inlines what is used and drops the rest (~350 functions); without it llc
    fails with "no libcall available" or leaves unresolved externs the driver rejects."""
    if not any(f.is_declaration and f.name.startswith("__nv_") for f in mod.functions):
        return
    lib = llvmx.parse_bitcode(_libdevice_bitcode(), "libdevice.10.bc")
    lib.triple, lib.data_layout = TRIPLE, str(tm.target_data)
    mod.link_in(lib)
    for fn in mod.functions:
        if not fn.is_declaration and fn.name not in kernels:
            fn.linkage = "internal"


def kernel_names(llvm_ir: str) -> list[str]:
    """The kernels (`ptx_kernel` functions) an LLVM IR module defines, in order."""
    return re.findall(r"^define\s+ptx_kernel\s+void\s+@\"?([\w.$]+)\"?", llvm_ir, re.M)


def emit_ptx(llvm_ir: str, arch: str, opt_level: int = 3, what: str = "kernel") -> str:
    """PTX for the kernels of `llvm_ir` (MLIR's translation of one gpu.module) on `arch`.

    Unresolved function declarations are an error here, not a driver failure later."""
    kernels = set(kernel_names(llvm_ir))
    if not kernels:
        raise AccelError(f"internal error: {what} defines no ptx_kernel function")
    mod = llvmx.parse(_align_shared(_allow_fma(normalize_llvm_ir(llvm_ir))),
                      f"LLVM IR of {what}")
    tm = llvmx.target_machine(opt_level, triple=TRIPLE, cpu=arch, features=PTX_FEATURES,
                              jit=False)
    llvmx.prepare(mod, tm, TRIPLE)
    _link_libdevice(mod, kernels, tm)
    llvmx.optimize(mod, tm, opt_level)
    missing = [f.name for f in mod.functions if f.is_declaration and
               not f.name.startswith("llvm.") and f.name not in SYSTEM_CALLS]
    if missing:
        raise AccelError(f"{what} calls functions no GPU library defines: "
                         f"{', '.join(sorted(missing))}")
    return tm.emit_assembly(mod)
