"""GPU ahead-of-time libraries: C that embeds the PTX and drives the CUDA driver (docs/nvgpu.md).

`build_library(exe, entry, name, out_dir, ...)` writes `<name>.h`, `<name>.c`, `<name>.o`
and `lib<name>.so`. The library dlopen()s `libcuda.so.1` on its first call, so it builds and
links on machines without CUDA (no CUDA header or library is needed: the few driver types
and functions are declared here, with the `_v2` symbol names cuda.h maps them to). Per
process it loads the PTX once, and (without `user_device_memory`) allocates one device
block for every buffer and uploads the weights once.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from accel.diagnostics import AccelError
from accel.targets.nvgpu.executable import GpuExecutable
from accel.targets.nvgpu.program import Buffer, Program
from accel.user_files import make_folder

#: Device buffers are 256-byte aligned, as cuMemAlloc's (full cache lines, vector loads).
ALIGN = 256
#: C types of buffer elements (f16/bf16 as uint16_t bit patterns, as the cpu AOT).
_C_TYPES = {"f32": "float", "f64": "double", "f16": "uint16_t", "bf16": "uint16_t",
            "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
            "i1": "bool", "ui8": "uint8_t"}
#: (C name, driver symbol, parameter list) of the driver functions the library calls.
_DRIVER = [
    ("cuInit", "cuInit", "unsigned"),
    ("cuDeviceGet", "cuDeviceGet", "int *, int"),
    ("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", "void **, int"),
    ("cuCtxSetCurrent", "cuCtxSetCurrent", "void *"),
    ("cuModuleLoadData", "cuModuleLoadData", "void **, const void *"),
    ("cuModuleGetFunction", "cuModuleGetFunction", "void **, void *, const char *"),
    ("cuMemAlloc", "cuMemAlloc_v2", "uint64_t *, size_t"),
    ("cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", "uint64_t, const void *, size_t, void *"),
    ("cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", "void *, uint64_t, size_t, void *"),
    ("cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", "uint64_t, uint64_t, size_t, void *"),
    ("cuLaunchKernel", "cuLaunchKernel", "void *, unsigned, unsigned, unsigned, unsigned, "
     "unsigned, unsigned, unsigned, void *, void **, void **"),
    ("cuStreamSynchronize", "cuStreamSynchronize", "void *"),
]


#: A call after a failed initialisation: the calling thread's error is the init error.
INIT_FAILED = ("  if (init_status) { snprintf(last_error, sizeof last_error, \"%s\", "
               "init_error); return init_status; }")


@dataclass
class GpuAotLibrary:
    """What `build_library` wrote."""

    name: str
    out_dir: Path
    device_bytes: int
    user_device_memory: bool
    on_gpu_tensors: bool
    files: dict[str, Path] = field(default_factory=dict)


def _layout(program: Program, on_gpu: bool) -> tuple[list[int], int]:
    """Offset of each buffer in the device block (-1: the caller's pointer), and its size."""
    offsets, size = [], 0
    for buf in program.buffers:
        if buf.kind == "arg" and on_gpu:
            offsets.append(-1)
            continue
        offsets.append(size)
        size += -(-max(buf.nbytes, 1) // ALIGN) * ALIGN
    return offsets, size


def _bytes_literal(data: bytes) -> str:
    rows = [", ".join(str(b) for b in data[i:i + 24]) for i in range(0, len(data), 24)]
    return "{\n  " + ",\n  ".join(rows) + "\n}" if data else "{0}"


def _c_string(text: str) -> str:
    lines = text.replace("\\", "\\\\").replace('"', '\\"').split("\n")
    return "\n".join(f'  "{ln}\\n"' for ln in lines)


def _ctype(buf: Buffer) -> str:
    found = _C_TYPES.get(buf.dtype)
    if found is None:
        raise AccelError(f"aot: element type {buf.dtype} has no C type in GPU libraries")
    return found


def _params(program: Program, name: str, on_gpu: bool, user_mem: bool) -> list[str]:
    params = []
    args = [b for b in program.buffers if b.kind == "arg"]
    for i, buf in enumerate(args):
        kind = "uint64_t" if on_gpu else f"const {_ctype(buf)} *"
        params.append(f"{kind} in{i}  /* input {i}: {buf.dtype} {buf.shape} */")
    for i, rid in enumerate(program.results):
        buf = program.buffers[rid]
        kind = "uint64_t" if on_gpu else f"{_ctype(buf)} *"
        params.append(f"{kind} out{i}  /* output {i}: {buf.dtype} "
                      f"{program.result_shape(i)} */")
    if user_mem:
        params += [f"uint64_t device_pool  /* {name}_device_bytes() bytes, 256-aligned */",
                   "void *stream  /* a CUstream / cudaStream_t */"]
    return params


def render_header(program: Program, name: str, on_gpu: bool, user_mem: bool,
                  device_bytes: int) -> str:
    upper = name.upper()
    params = ",\n    ".join(_params(program, name, on_gpu, user_mem)) or "void"
    extra = ""
    if user_mem:
        extra = (f"/* Device bytes the pool passed as device_pool must have. */\n"
                 f"#define {upper}_DEVICE_BYTES {device_bytes}u\n"
                 f"size_t {name}_device_bytes(void);\n"
                 f"/* Uploads the weights into a pool; once per pool, before calls. */\n"
                 f"int {name}_upload_weights(uint64_t device_pool, void *stream);\n")
    return f"""/* Generated by accel (target nvgpu): a GPU library of @{program.name}. */
#ifndef {upper}_H
#define {upper}_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {{
#endif
/* Status: 0 ok; 1 a CUDA driver call failed; 3 no NVIDIA driver or GPU
   ({name}_last_error() says which). */
int {name}(
    {params});
const char *{name}_last_error(void);
{extra}#ifdef __cplusplus
}}
#endif
#endif
"""


def render_source(exe: GpuExecutable, program: Program, name: str, on_gpu: bool,
                  user_mem: bool) -> str:
    offsets, device_bytes = _layout(program, on_gpu)
    modules = sorted({exe.kernels[k].module for k in program.kernels()})
    kernels = sorted(set(program.kernels()))
    out: list[str] = [
        f"/* Generated by accel (target nvgpu, {exe.arch}): @{program.name}. */",
        "#include <dlfcn.h>", "#include <pthread.h>", "#include <stdbool.h>",
        "#include <stddef.h>", "#include <stdint.h>", "#include <stdio.h>",
        "#include <string.h>", f'#include "{name}.h"', "",
        "#define API __attribute__((visibility(\"default\")))",
        "static __thread char last_error[256];",
        "static char init_error[256];  /* why the one-time initialisation failed */",
        f"API const char *{name}_last_error(void) {{ return last_error; }}", "",
        "static struct {",
    ]
    out += [f"  int (*{c})({params});" for c, _, params in _DRIVER]
    out += ["} cu;", "static int init_status = -1;",
            "static pthread_once_t once = PTHREAD_ONCE_INIT;"]
    if not user_mem:  # one device block per process: calls take turns
        out.append("static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;")
    for m in modules:
        out += [f"static const char ptx_{m}[] =", _c_string(exe.ptx_modules()[m]) + ";"]
    out += [f"static void *kernel_{i};  /* {k} */" for i, k in enumerate(kernels)]
    for i, buf in enumerate(program.buffers):
        if buf.kind == "weight":
            data = np.ascontiguousarray(exe.weights[buf.name]).tobytes()
        elif buf.kind == "const":
            data = bytes.fromhex(buf.data)
        else:
            continue
        out.append(f"static const unsigned char data_{i}[{max(len(data), 1)}] "
                   f"__attribute__((aligned(64))) = {_bytes_literal(data)};")
    out += [*([] if user_mem else ["static uint64_t device_block;"]), "",
            "#define CHECK(call, what) do { int err_ = (call); if (err_) { snprintf("
            "last_error, sizeof last_error, \"CUDA driver: %s failed (error %d)\", what, "
            "err_); return 1; } } while (0)", ""]
    uploads = [f"  CHECK(cu.cuMemcpyHtoDAsync(base + {offsets[i]}u, data_{i}, "
               f"{buf.nbytes}u, stream), \"uploading {buf.name}\");"
               for i, buf in enumerate(program.buffers) if buf.kind in ("weight", "const")]
    out += ["static int upload(uint64_t base, void *stream) {", *uploads,
            "  return cu.cuStreamSynchronize(stream) ? 1 : 0;", "}", ""]
    loads = ["static void init(void) {",
             "  void *lib = dlopen(\"libcuda.so.1\", RTLD_NOW | RTLD_LOCAL);",
             "  if (!lib) { snprintf(init_error, sizeof init_error, \"no NVIDIA driver "
             "(libcuda.so.1): %s\", dlerror()); init_status = 3; return; }"]
    for c, sym, _ in _DRIVER:
        loads += [f"  *(void **)&cu.{c} = dlsym(lib, \"{sym}\");",
                  f"  if (!cu.{c}) {{ snprintf(init_error, sizeof init_error, \"libcuda.so.1 "
                  f"lacks {sym}\"); init_status = 3; return; }}"]
    loads += ["  int dev; void *ctx, *mod;",
              "  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0)) { snprintf(last_error, "
              "sizeof last_error, \"the NVIDIA driver found no usable GPU\"); "
              "init_status = 3; return; }",
              "  if (cu.cuDevicePrimaryCtxRetain(&ctx, dev) || cu.cuCtxSetCurrent(ctx)) "
              "{ snprintf(init_error, sizeof init_error, \"no CUDA context\"); "
              "init_status = 1; return; }"]
    for i, k in enumerate(kernels):
        kernel = exe.kernels[k]
        loads += [f"  if (cu.cuModuleLoadData(&mod, ptx_{kernel.module}) || "
                  f"cu.cuModuleGetFunction(&kernel_{i}, mod, \"{kernel.entry}\")) "
                  f"{{ snprintf(init_error, sizeof init_error, \"loading {k} failed\"); "
                  "init_status = 1; return; }"]
    if not user_mem:
        loads += [f"  if (cu.cuMemAlloc(&device_block, {max(device_bytes, 1)}u) || "
                  "upload(device_block, 0)) { snprintf(init_error, sizeof init_error, "
                  "\"allocating or filling device memory failed\"); init_status = 1; "
                  "return; }"]
    loads += ["  init_status = 0;", "}", ""]
    out += loads
    if user_mem:
        out += [f"API size_t {name}_device_bytes(void) {{ return {device_bytes}u; }}",
                f"API int {name}_upload_weights(uint64_t device_pool, void *stream) {{",
                "  pthread_once(&once, init);", INIT_FAILED,
                "  return upload(device_pool, stream);", "}", ""]
    params = ",\n    ".join(p.split("  /*")[0] for p in
                            _params(program, name, on_gpu, user_mem))
    body = [f"API int {name}(\n    {params}) {{", "  pthread_once(&once, init);",
            INIT_FAILED, "  last_error[0] = 0;"]
    if user_mem:
        body += ["  uint64_t base = device_pool;"]
    else:
        body += ["  void *stream = NULL;", "  uint64_t base = device_block;",
                 "  pthread_mutex_lock(&lock);  /* one device block: one call at a time */"]
    body += [f"  uint64_t p[{len(program.buffers)}];"]
    arg_no = 0
    for i, buf in enumerate(program.buffers):
        if buf.kind == "arg" and on_gpu:
            body.append(f"  p[{i}] = in{arg_no};")
        else:
            body.append(f"  p[{i}] = base + {offsets[i]}u;")
        if buf.kind == "arg":
            if not on_gpu:
                body.append(f"  RUN(cu.cuMemcpyHtoDAsync(p[{i}], in{arg_no}, {buf.nbytes}u, "
                            f"stream), \"copying input {arg_no}\");")
            arg_no += 1
    scalars = 0
    for step in program.steps:
        if step.op == "copy":
            body.append(f"  RUN(cu.cuMemcpyDtoDAsync(p[{step.dst}], p[{step.src}], "
                        f"{step.nbytes}u, stream), \"a device copy\");")
            continue
        values = []
        for a in step.args:
            if isinstance(a, dict):  # index scalars are int64_t, as on the host
                ctype = _C_TYPES.get(a["type"], "int64_t")
                body.append(f"  static {ctype} s{scalars} = {a['scalar']};")
                values.append(f"&s{scalars}")
                scalars += 1
            else:
                values.append(f"&p[{a}]")
        kernel = kernels.index(step.kernel)
        body += [f"  {{ void *args[] = {{{', '.join(values) or 'NULL'}}};",
                 f"    RUN(cu.cuLaunchKernel(kernel_{kernel}, {', '.join(map(str, step.grid))}"
                 f", {', '.join(map(str, step.block))}, {step.shared_bytes}u, stream, args, "
                 f"NULL), \"launching {step.kernel}\"); }}"]
    for i, rid in enumerate(program.results):
        buf = program.buffers[rid]
        if on_gpu:
            body.append(f"  RUN(cu.cuMemcpyDtoDAsync(out{i}, p[{rid}], "
                        f"{program.result_nbytes(i)}u, "
                        f"stream), \"copying output {i}\");")
        else:
            body.append(f"  RUN(cu.cuMemcpyDtoHAsync(out{i}, p[{rid}], "
                        f"{program.result_nbytes(i)}u, "
                        f"stream), \"copying output {i}\");")
    if not on_gpu or not user_mem:
        body.append("  RUN(cu.cuStreamSynchronize(stream), \"synchronising\");")
    body += ["  status = 0;", "done:"]
    if not user_mem:
        body.append("  pthread_mutex_unlock(&lock);")
    body += ["  return status;", "}"]
    out += ["#define RUN(call, what) do { int err_ = (call); if (err_) { snprintf("
            "last_error, sizeof last_error, \"CUDA driver: %s failed (error %d)\", what, "
            "err_); status = 1; goto done; } } while (0)"]
    body.insert(4, "  int status = 1;")
    out += body
    return "\n".join(out) + "\n"


def build_library(exe: GpuExecutable, entry: str, name: str, out_dir: str | Path, *,
                  user_device_memory: bool = False,
                  on_gpu_tensors: bool = False) -> GpuAotLibrary:
    """Write and build the GPU library of function `entry` of `exe` (gcc from PATH)."""
    if exe.host is not None:
        raise AccelError(f"aot: the model runs on the host CPU ({exe.host_reason}); a GPU "
                         "library needs every op on the GPU")
    program = exe.programs.get(entry)
    if program is None:
        raise AccelError(f"aot: no function @{entry}")
    out = make_folder(out_dir, "the AOT output folder")
    _, device_bytes = _layout(program, on_gpu_tensors)
    header = out / f"{name}.h"
    source = out / f"{name}.c"
    header.write_text(render_header(program, name, on_gpu_tensors, user_device_memory,
                                    device_bytes))
    source.write_text(render_source(exe, program, name, on_gpu_tensors, user_device_memory))
    obj, so = out / f"{name}.o", out / f"lib{name}.so"
    flags = ["-O2", "-fPIC", "-fvisibility=hidden", "-std=c11", "-Wall", "-Werror",
             "-Wno-unused-function", "-Wno-unused-label"]
    _gcc([*flags, "-c", str(source), "-o", str(obj)])
    _gcc(["-shared", str(obj), "-o", str(so), "-ldl", "-lpthread"])
    return GpuAotLibrary(name, out, device_bytes, user_device_memory, on_gpu_tensors,
                         {"header": header, "source": source, "object": obj, "so": so})


def _gcc(args: list[str]) -> None:
    try:
        proc = subprocess.run(["gcc", *args], capture_output=True, text=True, timeout=600,
                              check=False)
    except FileNotFoundError:
        raise AccelError("aot: gcc not found (GPU libraries are C built with gcc)") from None
    if proc.returncode:
        first = proc.stderr.strip().splitlines()[:3]
        raise AccelError("aot: gcc failed: " + " | ".join(first))

