"""Generated C of an AOT library: the header, the runtime around the model's code, README.

`runtime_source` renders the exported `int <NAME>(...)` for one signature: it builds the
memref descriptors, calls `_mlir_ciface_<entry>`, copies results into the caller's buffers
and frees temporaries; `__accel_assert_fail` and `__accel_alloc_fail` keep a thread-local
status and message for `<NAME>_last_error()` (or, on a worker thread of the parallel runtime,
fill the caller's failure cell); with a `MemoryPlan`, a static allocator over the caller's
pool.
"""

from __future__ import annotations

import re
from typing import Any

from accel.runtime.dtypes import DType
from accel.runtime.signature import Signature, ValueSpec
from accel.targets.cpu.aot.memory import ALIGN, MemoryPlan

#: The `allocated` pointer `memref.get_global` puts in descriptors of constant globals.
DEAD_BEEF = 0xDEADBEEF
#: Status codes of the generated function: a failed runtime check (assertion, integer
#: division by zero), a scratch pool too small, an allocation that failed.
STATUS_OK, STATUS_ASSERT, STATUS_POOL, STATUS_NOMEM = 0, 1, 2, 3

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


def _param(name: str, spec: ValueSpec, i: int, output: bool, static: bool
           ) -> tuple[str, str]:
    """Input or output `i` as a C parameter, and its comment."""
    role, const = ("out", "") if output else ("in", "const ")
    head = f"{'output' if output else 'input'} {i}: {spec.type_str}"
    if spec.kind == "scalar":
        ct = _ctype(spec.dtype)
        return ((f"{ct} *out{i}", f"{head}, written through the pointer") if output
                else (f"{ct} in{i}", f"{head} scalar"))
    if static:
        written = ", written by the call" if output else ""
        return (f"{const}{_ctype(spec.dtype)} *{role}{i}",
                f"{head}, {_count(spec)} elements, row-major {_shape_text(spec)}{written}"
                f"{_C_NOTE.get(spec.dtype.mlir, '')}")  # type: ignore[union-attr]
    filled = ("filled by the call; the caller owns out->allocated (free() it)" if output
              else f"sizes {_shape_text(spec)} ('?': any), filled by the caller")
    return f"{const}{_desc_type(name, spec)} *{role}{i}", f"{head} descriptor, {filled}"


def c_prototype(name: str, sig: Signature, static: bool, user_memory: bool,
                comments: bool = False) -> str:
    """`int NAME(const float *in0, ..., float *out0, ...)`, optionally one comment per arg."""
    params = [_param(name, spec, i, False, static) for i, spec in enumerate(sig.args)]
    params += [_param(name, spec, i, True, static) for i, spec in enumerate(sig.results)]
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
        f"/* Runs @{entry}. Returns 0 on success; {STATUS_ASSERT} if a runtime check "
        "failed (an assertion, an", f" * integer division by zero); {STATUS_NOMEM} if memory "
        "ran out" + (f"; {STATUS_POOL} if the scratch pool is too small" if user_memory
                     else "") + ".",
        f" * On failure the outputs are undefined and the message is in {name}_last_error().",
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
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
char *strncpy(char *dst, const char *src, size_t n);

#define EXPORT __attribute__((visibility("default")))
#define DEAD_BEEF ((uintptr_t)0xDEADBEEFu)

static _Thread_local char @__error[512];
static _Thread_local int @__failed;  /* the status of this thread's call, 0 while fine */

/* Failures on the parallel runtime's worker threads go to the caller's failure cell
 * {kind, payload}, kept under this key (glibc's pthread_key_t and pthread_once_t). */
int pthread_key_create(unsigned int *key, void (*destructor)(void *));
void *pthread_getspecific(unsigned int key);
int pthread_once(int *once, void (*init)(void));
int snprintf(char *dst, size_t n, const char *format, ...);
static int @__key_once;
static unsigned int @__key;
static void @__key_init(void) { pthread_key_create(&@__key, 0); }
unsigned int @__failure_key(void) {
  pthread_once(&@__key_once, @__key_init);
  return @__key;
}

static int @__forward(int64_t kind, int64_t payload) {
  int64_t *cell = (int64_t *)pthread_getspecific(@__failure_key());
  int64_t none = 0;
  if (!cell) return 0;
  if (__atomic_compare_exchange_n(&cell[0], &none, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    cell[1] = payload;
    __atomic_store_n(&cell[0], kind, __ATOMIC_RELEASE);
  }
  return 1;
}

/* Called by the compiled code for a failed runtime check (it then returns poison). */
void @__assert_fail(const char *message) {
  if (@__forward(1, (int64_t)(uintptr_t)message)) return;
  if (@__failed) return;
  @__failed = @STATUS_ASSERT@;
  strncpy(@__error, message ? message : "runtime assertion failed", sizeof @__error - 1);
  @__error[sizeof @__error - 1] = 0;
}

/* Called by the compiled code when malloc returned NULL (it then returns poison). */
void @__alloc_fail(int64_t bytes) {
  if (@__forward(2, bytes)) return;
  if (@__failed) return;
  @__failed = @STATUS_NOMEM@;
  snprintf(@__error, sizeof @__error, "out of memory: could not allocate %llu bytes",
           (unsigned long long)bytes);
}

static void @__set_error(int status, const char *message) {
  @__failed = status;
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
  /* Not the planned sequence (cannot happen for static shapes): report, never overflow;
   * NULL makes the compiled code return at once. */
  @__set_error(@STATUS_POOL@, "user memory: allocation sequence differs from the build-time "
               "plan");
  if (size <= sizeof @__spare) return @__spare;
  return NULL;
}

void @__free(void *p) { (void)p; }
"""


def runtime_source(name: str, sig: Signature, entry: str, static: bool,
                   plan: MemoryPlan | None, trace: bool = False) -> str:
    """The C runtime of the library: the exported wrapper and the symbols the code calls."""
    text = (_RUNTIME_COMMON.replace("@STATUS_ASSERT@", str(STATUS_ASSERT))
            .replace("@STATUS_NOMEM@", str(STATUS_NOMEM)))
    user_memory = plan is not None
    if trace:
        text += _RUNTIME_TRACE
    elif plan is not None:
        n = len(plan.sizes)
        text += (_RUNTIME_POOL.replace("@PLAN_N@", str(n))
                 .replace("@PLAN_SIZES@", ", ".join(map(str, [*plan.sizes, 0])))
                 .replace("@PLAN_OFFSETS@", ", ".join(map(str, [*plan.offsets, 0])))
                 .replace("@PLAN_PEAK@", str(plan.peak)).replace("@ALIGN@", str(ALIGN))
                 .replace("@STATUS_POOL@", str(STATUS_POOL)))
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
            f"    @__set_error({STATUS_POOL}, \"scratch pool too small: see @_scratch_bytes()\");",
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
    body.append(f"  if ({name}__failed) return {name}__failed;")
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
                     f"    if (!copy) {{ @__set_error({STATUS_NOMEM}, \"out of memory\"); "
                     f"return {STATUS_NOMEM}; }}",
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


def readme_text(lib: Any) -> str:
    """README.txt of an `AotLibrary`: files, the C prototype, how to build against it."""
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
        f"The return value is 0 on success, {STATUS_ASSERT} when a runtime check failed (an "
        f"assertion, an integer division by zero), {STATUS_NOMEM} when memory ran out "
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
