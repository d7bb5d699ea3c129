"""Running a compiled model's actual kernels and kernel sequence on the host CPU.

`emulate_kernels(text, options, weights)` compiles `text` as the nvgpu target does up to
the outlined kernels, then:

- each `gpu.func` becomes a `func.func` whose block and thread ids and dims are arguments
  and whose memref parameters are flat buffers re-typed by `memref.reinterpret_cast`,
  exactly what a bare device pointer means to the kernel (base pointer, static layout);
- WMMA (tensor-core) ops become loops over whole tiles (`emulate_wmma`): lane 0 of each
  warp runs the warp's collective work;
- a `<kernel>__grid` wrapper runs it for every block and thread of a launch, in order;
- the cpu target compiles those, and the returned function interprets the `Program`
  (buffers, launches with their argument order and sizes, copies, results) on numpy
  buffers as the GPU runtime does on device memory.

So the outlining, the argument order read from `gpu.launch_func`, the launch sizes, the
views and the program reader are all checked against eager without a GPU; only the NVVM
lowering and PTX (upstream, and ptxas-checked) are not, nor the fragment layouts of the
hardware. Threads run one after another, so this is for small shapes (tests), and kernels
whose threads cooperate through memory (barriers, shuffles) are not emulated.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.host import signatures as abi
from accel.host.pipelines import pipeline_text
from accel.ir import Operation, enable_torch_mlir_extensions, ir, load_torch_dialects
from accel.runtime.dtypes import DTYPES
from accel.safe_parse import parse_module
from accel.targets.nvgpu import emulate_wmma, pipelines
from accel.targets.nvgpu.program import Program

#: The id and dim ops of a kernel, in the order the host function passes them.
_IDS = [(op, d) for op in ("block_id", "thread_id", "grid_dim", "block_dim") for d in "xyz"]
_ID_LINE = re.compile(r"^\s*(%[\w$.-]+) = gpu\.(block_id|thread_id|grid_dim|block_dim) ([xyz])"
                      r"\s*$")


def _flat_type(t: ir.MemRefType) -> tuple[str, int]:
    """(a 1-d identity memref covering every element a view of type `t` reaches, its size)."""
    strides, offset = t.get_strides_and_offset()
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(t.shape, strides, strict=True))
    return f"memref<{max(extent, 1)}x{t.element_type}>", max(extent, 1)


#: The host symbol `gpu.barrier` calls in cooperative kernels (bound to `_BARRIER`).
BARRIER_SYMBOL = "__accel_emu_barrier"
_WORKGROUP = ", #gpu.address_space<workgroup>"


@dataclass
class HostKernel:
    """One kernel as host code: `kind` "thread" (threads independent: loops over all),
    "warp" (WMMA only: lane 0 of each warp runs the warp's work) or "block" (barriers or
    shared memory: the block's threads run concurrently, `_run_block`)."""

    name: str
    text: str
    params: list[str]         # the launch's arguments (flat memrefs), then shared buffers
    kind: str
    shared: list[str] = field(default_factory=list)   # flat types of workgroup buffers


def _host_kernel(name: str, func: Operation) -> HostKernel:
    """The `func.func` text of one `gpu.func` (memref parameters as flat buffers)."""
    printed = str(func).splitlines()
    header, body = printed[0], printed[1:-1]
    names = re.findall(r"(%[\w$.-]+) ?: ", header.split(") kernel")[0])
    if " private(" in header:
        raise AccelError(f"emulation: kernel {name} has private memory attributions")
    block = func.regions[0].blocks[0]
    n_args = len(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).inputs)
    params, casts, shared = [], [], []
    for i, (arg_name, arg) in enumerate(zip(names, block.arguments, strict=True)):
        if isinstance(arg.type, ir.MemRefType):
            mt = ir.MemRefType(arg.type)
            flat, _ = _flat_type(mt)
            strides, offset = mt.get_strides_and_offset()
            params.append(flat)
            if i >= n_args:
                shared.append(flat)
            casts.append(f"  {arg_name} = memref.reinterpret_cast %__p{i} to offset: [{offset}]"
                         f", sizes: {list(mt.shape)}, strides: {strides} : {flat} to "
                         f"{str(mt).replace(_WORKGROUP, '')}")
        else:
            params.append(str(arg.type))
            casts.append(f"  {arg_name} = arith.addi %__p{i}, %__c0 : {arg.type}"
                         if str(arg.type) == "index" else f"  // {arg_name}")
    wmma = any(emulate_wmma.is_wmma(line) for line in body)
    kind = "block" if shared or any("gpu.barrier" in line for line in body) else \
        "warp" if wmma else "thread"
    if kind == "warp":
        emulate_wmma.check_collective(name, body)
    lines: list[str] = []
    if kind == "block" and wmma:  # every lane computes; lane 0 of each warp stores
        lines += ["  %__lin0 = arith.muli %__id4, %__id9 : index",
                  "  %__lin1 = arith.addi %__lin0, %__id3 : index",
                  "  %__lin2 = arith.muli %__id5, %__id9 : index",
                  "  %__lin3 = arith.muli %__lin2, %__id10 : index",
                  "  %__lin = arith.addi %__lin1, %__lin3 : index",
                  "  %__c32 = arith.constant 32 : index",
                  "  %__lane = arith.remui %__lin, %__c32 : index",
                  "  %__lane0 = arith.cmpi eq, %__lane, %__c0 : index"]
    for number, line in enumerate(body):
        line = line.replace(_WORKGROUP, "")
        match = _ID_LINE.match(line)
        if match:
            index = _IDS.index((match.group(2), match.group(3)))
            lines.append(f"  {match.group(1)} = arith.addi %__id{index}, %__c0 : index")
        elif line.strip() == "gpu.barrier":
            lines.append(f"  func.call @{BARRIER_SYMBOL}() : () -> ()")
        elif (host := emulate_wmma.translate(line, number, store_guard="%__lane0"
                                             if kind == "block" else None)) is not None:
            lines += host
        else:
            lines.append(emulate_wmma.fragment_types(line).replace("gpu.return", "return"))
    if any("gpu." in ln for ln in lines):
        raise AccelError(f"emulation: kernel {name} uses GPU ops with no host form")
    scalar_args = [f"%__p{i}: {t}" for i, t in enumerate(params)]
    ids = [f"%__id{i}: index" for i in range(len(_IDS))]
    # Scalars keep their names: non-index ones are used directly, so name them as printed.
    sig = ", ".join(a if params[i].startswith("memref") or params[i] == "index"
                    else f"{names[i]}: {params[i]}" for i, a in enumerate(scalar_args))
    # A block kernel is called per thread from Python: public, under its own name.
    header = f"func.func @{name}__thread" if kind == "block" else f"func.func private @{name}"
    text = "\n".join([f"{header}({sig}, {', '.join(ids)}) {{",
                      "  %__c0 = arith.constant 0 : index", *casts, *lines, "}"])
    return HostKernel(name, text, params, kind, shared)


def _grid_wrapper(name: str, params: list[str], collective: bool = False) -> str:
    """`<name>__grid(params..., grid xyz, block xyz)`: every block and thread in order
    (`collective`: warp-level kernels, lane 0 of each warp only)."""
    args = [f"%p{i}: {t}" for i, t in enumerate(params)]
    sizes = ["%gx", "%gy", "%gz", "%sx", "%sy", "%sz"]
    loops = ["%bz", "%by", "%bx", "%tz", "%ty", "%tx"]
    bounds = ["%gz", "%gy", "%gx", "%sz", "%sy", "%sx"]
    lines = [f"func.func @{name}__grid({', '.join(args + [s + ': index' for s in sizes])}) {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index"]
    if collective:
        lines.append("  %c32 = arith.constant 32 : index")
    for depth, (iv, bound) in enumerate(zip(loops, bounds, strict=True)):
        step = "%c32" if collective and iv == "%tx" else "%c1"
        lines.append("  " * (depth + 1) + f"scf.for {iv} = %c0 to {bound} step {step} {{")
    ids = "%bx, %by, %bz, %tx, %ty, %tz, %gx, %gy, %gz, %sx, %sy, %sz"
    call_args = ", ".join([f"%p{i}" for i in range(len(params))] + [ids])
    call_types = ", ".join(params + ["index"] * len(_IDS))
    lines.append("  " * 7 + f"func.call @{name}({call_args}) : ({call_types}) -> ()")
    lines += ["  " * (depth + 1) + "}" for depth in reversed(range(6))]
    lines += ["  return", "}"]
    return "\n".join(lines)


def emulate_kernels(text: str, opts: Mapping[str, Any], *,
                    weights: Mapping[str, np.ndarray] | None = None
                    ) -> dict[str, Callable[..., Any]]:
    """name -> a function running that function's kernel sequence on the host CPU."""
    from accel.context import make_context
    from accel.pipeline import run_pipeline

    enable_torch_mlir_extensions()
    with make_context() as ctx:
        load_torch_dialects(ctx)
        module = parse_module(text, opts.get("filename", "<input>"))
        abi.mark_tensor_args_read_only(module)
        fuse, bufferize, to_gpu, _ = pipelines.pipelines(opts)
        for passes in (fuse, bufferize, to_gpu):
            if passes:
                run_pipeline(module, pipeline_text(passes), label="nvgpu-emulate")
        return emulate_outlined(module, weights)


def emulate_outlined(module: Any, weights: Mapping[str, np.ndarray] | None = None
                     ) -> dict[str, Callable[..., Any]]:
    """`emulate_kernels` from a module of outlined kernels (`gpu.module`s) and host
    functions of allocations, views and `gpu.launch_func`s."""
    from accel.host.compile import compile_mlir
    from accel.targets.nvgpu.compile import _programs

    programs = _programs(module)
    funcs: list[str] = []
    kernels: dict[str, HostKernel] = {}
    for op in module.body.operations:
        if op.operation.name != "gpu.module":
            continue
        mod_name = str(op.attributes["sym_name"]).strip('"')
        for fn in op.regions[0].blocks[0].operations:
            if fn.operation.name != "gpu.func":
                continue
            entry = str(fn.attributes["sym_name"]).strip('"')
            name = f"{mod_name}__{entry}"
            kernel = _host_kernel(name, fn.operation)
            funcs.append(kernel.text)
            if kernel.kind != "block":
                funcs.append(_grid_wrapper(name, kernel.params, kernel.kind == "warp"))
            kernels[f"{mod_name}.{entry}"] = kernel
    if any(k.kind == "block" for k in kernels.values()):
        _bind_barrier()
        funcs.append(f"func.func private @{BARRIER_SYMBOL}()")
    from accel.settings import host_settings

    host = compile_mlir("module {\n" + "\n".join(funcs) + "\n}",
                        host_settings({}, opt_level=1, cache=False))
    return {name: _interpreter(program, host, kernels, dict(weights or {}))
            for name, program in programs.items()}


def _interpreter(program: Program, host: Any, kernels: dict[str, HostKernel],
                 weights: Mapping[str, np.ndarray]) -> Callable[..., Any]:
    def run(*inputs: np.ndarray) -> Any:
        memory: list[np.ndarray] = []
        for buf in program.buffers:
            dt = np.dtype(DTYPES[buf.dtype].numpy)
            if buf.kind == "arg":
                data = np.ascontiguousarray(inputs[buf.index], dtype=dt).tobytes()
            elif buf.kind == "weight":
                data = np.ascontiguousarray(weights[buf.name]).tobytes()
            elif buf.kind == "const":
                data = bytes.fromhex(buf.data)
            else:
                data = bytes(buf.nbytes)
            memory.append(np.frombuffer(bytearray(data), dtype=dt))
        for step in program.steps:
            if step.op == "copy":
                memory[step.dst].view(np.uint8)[:step.nbytes] = \
                    memory[step.src].view(np.uint8)[:step.nbytes]
                continue
            kernel = kernels[step.kernel]
            args: list[Any] = []
            launched = kernel.params[:len(kernel.params) - len(kernel.shared)]
            for a, t in zip(step.args, launched, strict=True):
                if isinstance(a, dict):
                    args.append(a["scalar"])
                else:
                    args.append(memory[a][:_elements(t)])
            if kernel.kind == "block":
                _run_blocks(host[f"{kernel.name}__thread"], kernel, args, step.grid, step.block)
            else:
                host[f"{kernel.name}__grid"](*args, *step.grid, *step.block)
        outs = [memory[r].view(np.uint8)[:program.result_nbytes(i)].view(memory[r].dtype)
                .reshape(program.result_shape(i)).copy() for i, r in enumerate(program.results)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    return run


def _elements(flat: str) -> int:
    """Elements of a flat `memref<NxT>` type."""
    return int(flat[len("memref<"):].split("x", 1)[0])


# -- cooperative (block) kernels: the block's threads run concurrently ----------------------
_LOCAL = threading.local()
#: Seconds a thread waits at a barrier before the launch is declared divergent.
BARRIER_TIMEOUT = 60.0


@ctypes.CFUNCTYPE(None)
def _BARRIER() -> None:  # noqa: N802 - a C symbol's stand-in
    barrier = getattr(_LOCAL, "barrier", None)
    if barrier is None:
        return
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        _LOCAL.broken = True


def _bind_barrier() -> None:
    from accel.llvm import engine

    engine.add_symbol(BARRIER_SYMBOL, ctypes.cast(_BARRIER, ctypes.c_void_p).value)


def _run_blocks(thread_fn: Callable[..., Any], kernel: HostKernel, args: list[Any],
                grid: list[int], block: list[int]) -> None:
    """Every block of a launch, one after another (`_run_block`)."""
    for bz, by, bx in itertools.product(range(grid[2]), range(grid[1]), range(grid[0])):
        _run_block(thread_fn, kernel, args, (bx, by, bz), grid, block)


def _run_block(thread_fn: Callable[..., Any], kernel: HostKernel, args: list[Any],
               block_id: tuple[int, int, int], grid: list[int], block: list[int]) -> None:
    """One block: its threads as OS threads (the compiled code releases the GIL),
    `gpu.barrier` a `threading.Barrier` of them all, workgroup buffers fresh (zeroed)."""
    count = block[0] * block[1] * block[2]
    shared = [np.zeros(_elements(t), dtype=np.dtype(DTYPES[t.split("x")[-1][:-1]].numpy))
              for t in kernel.shared]
    barrier = threading.Barrier(count, timeout=BARRIER_TIMEOUT)
    errors: list[BaseException] = []
    broken: list[bool] = []

    def one(tx: int, ty: int, tz: int) -> None:
        _LOCAL.barrier, _LOCAL.broken = barrier, False
        try:
            thread_fn(*args, *shared, *block_id, tx, ty, tz, *grid, *block)
        except BaseException as err:  # noqa: BLE001 - re-raised on the caller's thread
            errors.append(err)
            barrier.abort()
        finally:
            broken.append(_LOCAL.broken)
            _LOCAL.barrier = None

    threads = [threading.Thread(target=one, args=(tx, ty, tz), daemon=True)
               for tz, ty, tx in itertools.product(range(block[2]), range(block[1]),
                                                   range(block[0]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    if any(broken):
        raise AccelError(f"emulation: kernel {kernel.name}, block {block_id}: a barrier was "
                         f"not reached by all {count} threads (divergent gpu.barrier)")
