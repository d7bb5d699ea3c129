"""Compiling linalg on tensors for an NVIDIA GPU: `compile_gpu(text, options) -> GpuExecutable`.

1. `pipelines.FUSE`, `BUFFERIZE`: fused linalg on memrefs, identity layouts everywhere.
2. Signatures are read at this memref level (as the cpu target does).
3. `pipelines.to_gpu`: every loop nest -> a kernel in a `gpu.module`, the host function
   keeps allocations, views and `gpu.launch_func`s (`program.read_program` reads them).
4. `KERNEL_TO_NVVM` on each `gpu.module`, then LLVM IR -> PTX (`ptx.emit_ptx`, libdevice).

A function whose host side keeps an op with no GPU form runs on the host instead (the
whole module through the cpu target, with a logged note), or, with `strict_target`, is an
`AccelError` naming the op.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from accel import phases
from accel.diagnostics import AccelError, from_mlir_error
from accel.host import signatures as abi
from accel.host.pipelines import pipeline_text
from accel.ir import (
    InsertionPoint,
    MLIRError,
    Module,
    Operation,
    llvm,
)
from accel.targets.nvgpu import pipelines, toolkit
from accel.targets.nvgpu.executable import GpuExecutable, Kernel
from accel.targets.nvgpu.program import HostOnly, Program, read_program

log = logging.getLogger("accel.nvgpu")


def compile_gpu(text: str, opts: Mapping[str, Any], *,
                weights: Mapping[str, np.ndarray] | None = None) -> GpuExecutable:
    """PTX kernels and kernel sequences for every public function of `text`."""
    from accel.pipeline import RunConfig, run_pipeline

    filename = opts.get("filename", "<input>")
    arch = toolkit.resolve_arch(opts["device"])
    weights = dict(weights or {})
    key = cache_key(text, opts) if opts.get("cache") else None
    if key is not None:
        hit = from_cache(key, opts, weights)
        if hit is not None:
            return hit
    with abi.parsed(text, filename, weights) as (module, weight_specs):
        fuse, bufferize, to_gpu, to_nvvm = pipelines.pipelines(opts)
        # The accel dialects' verifiers run after the first pipeline only (as on cpu).
        first, later = RunConfig(filename=filename), RunConfig(filename=filename,
                                                               verify_dialects=False)
        with phases.phase("bufferize"):
            if fuse:
                run_pipeline(module, pipeline_text(fuse), label="nvgpu-fuse", cfg=first)
            run_pipeline(module, pipeline_text(bufferize), label="nvgpu-bufferize",
                         cfg=later if fuse else first)
        phases.snapshot("bufferize", module)
        signatures = {sig.name: sig for sig in abi.signatures_of(module)}
        try:
            with phases.phase("gpu"):
                run_pipeline(module, pipeline_text(to_gpu), label="nvgpu-to-gpu", cfg=later)
                programs = _programs(module)
            phases.snapshot("gpu", module)
            with phases.phase("nvvm"):
                run_pipeline(module, pipeline_text([f"gpu.module({','.join(to_nvvm)})"]),
                             label="nvgpu-to-nvvm", cfg=later)
            phases.snapshot("nvvm", module)
            kernels = _kernels(module, arch, opts["opt_level"])
        except (HostOnly, AccelError) as err:
            return _host_fallback(text, opts, weights, err)
    exe = GpuExecutable(signatures, programs, kernels, arch, weights, opts)
    if key is not None:
        _store(key, exe, weight_specs)
    return exe


# -- the compile cache ----------------------------------------------------------------------
def cache_key(text: str, opts: Mapping[str, Any]) -> str:
    """The compile-cache key of `text` for nvgpu: code options plus the resolved arch."""
    from accel import cache
    from accel.options import code_options

    return cache.cache_key(text, {**code_options(opts), "target": "nvgpu",
                                  "arch": toolkit.resolve_arch(opts["device"])})


def _store(key: str, exe: GpuExecutable, weight_specs: Mapping[str, int]) -> None:
    from accel import cache
    from accel.runtime.signature import signature_to_json

    cache.store(key, b"", {  # no host object: the PTX is text, in the metadata
        "signatures": [signature_to_json(s) for s in exe.functions.values()],
        "nvgpu": {"arch": exe.arch, "weights": dict(weight_specs),
                  "programs": [p.to_json() for p in exe.programs.values()],
                  "kernels": {n: [k.module, k.entry] for n, k in exe.kernels.items()},
                  "ptx": exe.ptx_modules()},
    })


def from_cache(key: str, opts: Mapping[str, Any],
               weights: Mapping[str, np.ndarray]) -> GpuExecutable | None:
    """The executable cache entry `key` holds, or None (no entry, or one that does not fit
    these weights: it is compiled again)."""
    from accel import cache
    from accel.runtime.signature import signature_from_json

    entry = cache.lookup(key, {"nvgpu": dict, "signatures": list})
    if entry is None:
        return None
    hit = entry.metadata
    try:
        data = hit["nvgpu"]
        if set(data["weights"]) - set(weights):
            return None
        sigs = {s["name"]: signature_from_json(s) for s in hit["signatures"]}
        programs = {p["name"]: Program.from_json(p) for p in data["programs"]}
        kernels = {n: Kernel(m, e, data["ptx"][m]) for n, (m, e) in data["kernels"].items()}
    except (KeyError, TypeError, ValueError):
        return None
    rec = phases.current()
    if rec is not None:
        rec.cache_hit = True
    return GpuExecutable(sigs, programs, kernels, data["arch"], dict(weights), opts)


def emulate_on_host(text: str, opts: Mapping[str, Any], *,
                    weights: Mapping[str, np.ndarray] | None = None) -> Any:
    """The GPU loop structure run on the host CPU: the module through FUSE, BUFFERIZE and
    `to_gpu` up to the block x thread mapping (flattened nests, one-thread serial runs,
    copies as loops), then compiled by the cpu target, whose `scf.parallel` lowering runs
    blocks and threads as loops. Checks everything accel does to the loops against eager
    without a GPU (the NVVM lowering and PTX after it are upstream's and ptxas')."""
    from accel.host.compile import compile_mlir
    from accel.pipeline import run_pipeline

    filename = opts.get("filename", "<input>")
    with abi.parsed(text, filename, None) as (module, _):
        # Hand-written kernels (WMMA, flash attention) are gpu.launches: loops stay loops.
        fuse, bufferize, to_gpu, _ = pipelines.pipelines(opts, kernels=False)
        mapped = to_gpu[:to_gpu.index(pipelines.LAUNCH_MARK)]
        for passes in (fuse, bufferize, mapped):
            if passes:
                run_pipeline(module, pipeline_text(passes), filename=filename,
                             label="nvgpu-emulate")
        lowered = str(module)
    from accel.settings import host_settings

    return compile_mlir(lowered, host_settings(opts, "opt_level", cache=False,
                                               filename=filename), weights=weights)


def _programs(module: Module) -> dict[str, Program]:
    found = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and "sym_visibility" not in op.attributes and \
                len(op.regions[0].blocks):
            program = read_program(module.operation, op)
            found[program.name] = program
    return found


def _kernels(module: Module, arch: str, opt_level: int) -> dict[str, Kernel]:
    """PTX of every gpu.module; each kernel is "module.entry". The modules' LLVM IR is
    translated here (MLIR); their PTX is emitted by `ACCEL_COMPILE_JOBS` worker processes
    (LLVM's NVPTX backend, libdevice linked: most of the time of a model's kernels)."""
    from accel.host.codegen import parallel_map

    translated: list[tuple[str, str, list[str]]] = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "gpu.module":
            continue
        name = str(op.attributes["sym_name"]).strip('"')
        _check_lowered(op, name)
        try:
            kernel_module = _kernel_module(op)
            with phases.phase("llvm-ir"):
                llvm_ir = llvm.translate_module_to_llvmir(kernel_module.operation)
        except MLIRError as err:
            raise from_mlir_error(err, f"<kernel {name}>",
                                  context="translation to LLVM IR") from None
        translated.append((name, llvm_ir, _entries(op)))
    # Repeated layers give gpu.modules of the same LLVM IR (each kernel is `main_kernel` in
    # its own module): the PTX of each distinct text is emitted once (tiny GPT-2: 88
    # modules, 37 texts).
    first: dict[str, str] = {}
    for name, llvm_ir, _ in translated:
        first.setdefault(llvm_ir, name)
    with phases.phase("ptx"):
        ptx = parallel_map("accel.targets.nvgpu.ptx:emit_ptx",
                           [(llvm_ir, arch, max(opt_level, 1), f"kernel {name}")
                            for llvm_ir, name in first.items()], what="GPU kernel")
    by_text = dict(zip(first, ptx, strict=True))
    kernels: dict[str, Kernel] = {}
    for name, llvm_ir, entries in translated:
        for entry in entries:
            kernels[f"{name}.{entry}"] = Kernel(name, entry, by_text[llvm_ir])
    return kernels


def _kernel_module(gpu_module: Operation) -> Module:
    """A builtin.module of copies of `gpu_module`'s ops (what the translation to LLVM IR
    takes), cloned: printing and parsing each kernel cost more than translating it."""
    with gpu_module.context, gpu_module.location:
        kernel_module = Module.create()
        with InsertionPoint(kernel_module.body):
            for child in gpu_module.regions[0].blocks[0].operations:
                child.operation.clone()
    return kernel_module


#: Dialects a kernel may hold when it is translated to LLVM IR. Anything else makes the
#: translation fail, and this MLIR then crashes the process, so it is refused first.
_LOWERED = ("llvm.", "nvvm.")


def _check_lowered(gpu_module: Operation, name: str) -> None:
    """AccelError naming the first op of `gpu_module` the NVVM lowering left behind."""
    def visit(op: Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = child.operation
                    if not child.name.startswith(_LOWERED):
                        raise AccelError(f"kernel {name}: {child.name} at {child.location} "
                                         "has no NVVM lowering")
                    visit(child)

    visit(gpu_module)


def _entries(gpu_module: Operation) -> list[str]:
    """Names of the kernels (`llvm.func`s marked `nvvm.kernel`) of a lowered gpu.module."""
    return [str(op.attributes["sym_name"]).strip('"')
            for op in gpu_module.regions[0].blocks[0].operations
            if op.name == "llvm.func" and "nvvm.kernel" in op.attributes]


def _host_fallback(text: str, opts: Mapping[str, Any], weights: Mapping[str, np.ndarray],
                   err: Exception) -> GpuExecutable:
    """The whole module on the host CPU (strict_target: an error naming the op)."""
    from accel.host.compile import compile_mlir

    reason = str(err)
    if opts.get("strict_target"):
        raise AccelError(f"target nvgpu (strict_target): {reason}; cannot run on the GPU")
    log.warning("accel nvgpu: running on the host CPU instead of the GPU: %s", reason)
    from accel.settings import host_settings

    host = compile_mlir(text, host_settings(opts, "opt_level", "cache", "mm_conv_precision_mode",
                                            filename=opts.get("filename", "<input>")),
                        weights=weights)
    return GpuExecutable(dict(host.functions), {}, {}, toolkit.resolve_arch(opts["device"]),
                         dict(weights), opts, host=host, host_module=text, host_reason=reason)


def verify_ptx(exe: GpuExecutable) -> None:
    """ptxas -arch=<exe.arch> on every PTX module of `exe` (AccelError if one is refused).

    The ptxas processes run `ACCEL_COMPILE_JOBS` at a time (GPT-2 small: ~100 modules,
    34 s one after another), once per distinct PTX text; a refusal names the first refused
    module in module order, whatever the job count."""
    from concurrent.futures import ThreadPoolExecutor

    from accel.host.codegen import compile_jobs

    first: dict[str, str] = {}  # repeated layers' modules share their PTX: checked once
    for module, text in exe.ptx_modules().items():
        first.setdefault(text, module)
    modules = [(module, text) for text, module in first.items()]
    with ThreadPoolExecutor(max(1, min(compile_jobs(), len(modules)))) as pool:
        futures = [pool.submit(toolkit.ptxas_check, text, exe.arch, name=module)
                   for module, text in modules]
        for future in futures:
            future.result()
