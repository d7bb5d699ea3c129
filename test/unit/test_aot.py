"""AOT libraries (`accel.aot`): C harnesses built with gcc against lib<NAME>.so / <NAME>.o.

Each model test compiles a C harness generated from the library's signature, runs it on
inputs written by the test and compares its outputs with torch eager. The harness wraps
`malloc` (`-Wl,--wrap=malloc`, static link) and counts the calls made inside the model call,
which is how the user-memory variant is shown to allocate nothing.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import accel
import numpy as np
import pytest
import torch
from accel.runtime.signature import descriptor_type
from accel.targets.cpu.aot import ALIGN, AotLibrary, build_library, plan_memory

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

#: What a library may need at run time (ld-linux for thread-local storage).
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libmvec.so.1", "ld-linux-x86-64.so.2"}
RTOL, ATOL = 1e-4, 1e-5


# -- harness --------------------------------------------------------------------------------
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "@NAME@.h"

static long mallocs;
static int counting;
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n) {
  if (counting) mallocs++;
  return __real_malloc(n);
}

static void *load(const char *dir, const char *name, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  void *buf = malloc(bytes ? bytes : 1);
  FILE *f = fopen(path, "rb");
  if (!f || (bytes && fread(buf, bytes, 1, f) != 1)) {
    fprintf(stderr, "read %s\n", path);
    exit(3);
  }
  fclose(f);
  return buf;
}

static void save(const char *dir, const char *name, const void *buf, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || (bytes && fwrite(buf, bytes, 1, f) != 1)) {
    fprintf(stderr, "write %s\n", path);
    exit(3);
  }
  fclose(f);
}

int main(int argc, char **argv) {
  const char *dir = argv[1];
  (void)argc;
@LOADS@
  counting = 1;
  int status = @CALL@;
  counting = 0;
@SAVES@
  printf("status %d mallocs %ld\n%s\n", status, mallocs, @NAME@_last_error());
  return 0;
}
"""


def harness_source(lib: AotLibrary) -> str:
    sig, name = lib.signature, lib.name
    loads, saves, operands = [], [], []
    for i, spec in enumerate(sig.args):
        nbytes = int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.numpy.itemsize
        loads.append(f'  void *in{i} = load(dir, "in{i}.bin", {nbytes});')
        operands.append(f"in{i}")
    for i, spec in enumerate(sig.results):
        nbytes = int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.numpy.itemsize
        loads.append(f'  void *out{i} = load(dir, "out{i}.bin", {nbytes});')
        saves.append(f'  save(dir, "out{i}.bin", out{i}, {nbytes});')
        operands.append(f"out{i}")
    if lib.user_memory:
        loads.append(f"  size_t pool = argc > 2 ? (size_t)atol(argv[2]) : {name}_scratch_bytes();")
        loads.append("  void *scratch = malloc(pool + 1);")
        operands += ["scratch", "pool"]
    return (HARNESS.replace("@LOADS@", "\n".join(loads)).replace("@SAVES@", "\n".join(saves))
            .replace("@CALL@", f"{name}({', '.join(operands)})").replace("@NAME@", name))


def build_harness(lib: AotLibrary, static: bool) -> Path:
    src = lib.out_dir / f"harness_{'static' if static else 'shared'}.c"
    src.write_text(harness_source(lib))
    exe = src.with_suffix("")
    cmd = ["gcc", "-O1", "-Wall", f"-I{lib.out_dir}", str(src)]
    if static:
        cmd += [str(lib.object_path), "-Wl,--wrap=malloc", "-lmvec", "-lm"]
    else:
        cmd += [f"-L{lib.out_dir}", f"-l{lib.name}", f"-Wl,-rpath,{lib.out_dir}",
                "-Wl,--wrap=malloc"]
    cmd += ["-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


def run_harness(lib: AotLibrary, exe: Path, inputs: list[np.ndarray], work: Path,
                pool: int | None = None, sentinel: float = 0.0
                ) -> tuple[list[np.ndarray], int, int, str]:
    """(outputs, status, mallocs inside the call, last error)."""
    work.mkdir(parents=True, exist_ok=True)
    for i, (spec, x) in enumerate(zip(lib.signature.args, inputs, strict=True)):
        (work / f"in{i}.bin").write_bytes(np.ascontiguousarray(x, spec.dtype.numpy).tobytes())
    for i, spec in enumerate(lib.signature.results):
        (work / f"out{i}.bin").write_bytes(np.full(spec.shape, sentinel,
                                                   spec.dtype.numpy).tobytes())
    args = [str(exe), str(work)] + ([str(pool)] if pool is not None else [])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True)
    first, _, error = proc.stdout.partition("\n")
    _, status, _, mallocs = first.split()
    outs = [np.fromfile(work / f"out{i}.bin", spec.dtype.numpy).reshape(spec.shape)
            for i, spec in enumerate(lib.signature.results)]
    return outs, int(status), int(mallocs), error.strip()


def eager(model: torch.nn.Module, inputs: list[np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        out = model(*(torch.from_numpy(x) for x in inputs))
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def check_model(model: torch.nn.Module, inputs: list[np.ndarray], tmp: Path, name: str,
                options: dict | None = None) -> AotLibrary:
    """Build the library, run the shared and static harnesses, compare with torch eager."""
    with torch.no_grad():
        compiled = accel.compile(model, tuple(torch.from_numpy(x) for x in inputs),
                                 options={"cache": False, **(options or {})})
    lib = build_library(compiled, name, tmp / name)
    assert {p.name for p in (tmp / name).iterdir()} >= {f"lib{name}.so", f"{name}.o",
                                                         f"{name}.h", "README.txt"}
    expected = eager(model, inputs)
    for static in (False, True):
        exe = build_harness(lib, static)
        outs, status, mallocs, error = run_harness(lib, exe, inputs, tmp / f"run-{static}")
        assert (status, error) == (0, "")
        for got, want in zip(outs, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    got = lib.call(*inputs)  # the same library through ctypes
    np.testing.assert_allclose(got, expected[0], rtol=RTOL, atol=ATOL)
    return lib


# -- models ---------------------------------------------------------------------------------
def mlp() -> tuple[torch.nn.Module, list[np.ndarray]]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10)).eval()
    return model, [np.random.default_rng(0).standard_normal((4, 32), np.float32)]


def cnn() -> tuple[torch.nn.Module, list[np.ndarray]]:
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(8 * 8 * 8, 10)).eval()
    return model, [np.random.default_rng(1).standard_normal((2, 3, 16, 16), np.float32)]


@pytest.fixture(scope="module")
def mlp_lib(tmp_path_factory: pytest.TempPathFactory) -> AotLibrary:
    model, inputs = mlp()
    return check_model(model, inputs, tmp_path_factory.mktemp("mlp"), "mlp")


def test_mlp_library_matches_torch(mlp_lib: AotLibrary) -> None:
    header = mlp_lib.header_path.read_text()
    assert "int mlp(\n    const float *in0,  /* input 0: memref<4x32xf32>" in header
    assert "float *out0  /* output 0: memref<4x10xf32>" in header
    assert "const char *mlp_last_error(void);" in header
    assert "#define MLP_IN0_ELEMENTS 128" in header


def test_cnn_library_matches_torch(tmp_path: Path) -> None:
    model, inputs = cnn()
    check_model(model, inputs, tmp_path, "cnn")


@pytest.mark.slow
def test_tiny_gpt2_library_matches_torch(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")

    class Logits(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                              use_cache=False, return_dict=False)[0]

    torch.manual_seed(3)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=128,
                                     n_positions=32, bos_token_id=127, eos_token_id=127,
                                     attn_implementation="eager")
    model = Logits(transformers.GPT2LMHeadModel(config).eval()).eval()
    ids = np.random.default_rng(2).integers(0, 128, (2, 16), dtype=np.int64)
    check_model(model, [ids], tmp_path, "gpt2", options={"opt_level": 1})


def test_library_needs_only_libc_and_libm(mlp_lib: AotLibrary) -> None:
    needed = subprocess.run(["readelf", "-d", str(mlp_lib.so_path)], capture_output=True,
                            text=True, check=True).stdout
    libs = {line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line}
    assert libs <= ALLOWED_NEEDED, libs
    if shutil.which("ldd"):
        ldd = subprocess.run(["ldd", str(mlp_lib.so_path)], capture_output=True, text=True,
                             check=True).stdout
        assert not any(w in ldd for w in ("python", "torch", "llvm", "stdc++")), ldd
    dyn = {line.split()[-1] for line in subprocess.run(
        ["nm", "-D", "--defined-only", str(mlp_lib.so_path)], capture_output=True, text=True,
        check=True).stdout.splitlines()}
    assert dyn == {"mlp", "mlp_last_error"}
    # The static object exports the same two symbols: the rest (code, weights) is local.
    globals_ = {line.split()[-1] for line in subprocess.run(
        ["nm", "--defined-only", "-g", str(mlp_lib.object_path)], capture_output=True,
        text=True, check=True).stdout.splitlines()}
    assert globals_ == {"mlp", "mlp_last_error"}


def test_concurrent_calls_through_ctypes(mlp_lib: AotLibrary) -> None:
    model, _ = mlp()
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((4, 32), np.float32) for _ in range(8)]
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        for _ in range(20):
            results[i] = mlp_lib.call(xs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(xs):
        np.testing.assert_allclose(results[i], eager(model, [x])[0], rtol=RTOL, atol=ATOL)


# -- user memory ----------------------------------------------------------------------------
def test_user_memory_makes_no_heap_allocation(tmp_path: Path) -> None:
    model, inputs = cnn()
    with torch.no_grad():
        compiled = accel.compile(model, (torch.from_numpy(inputs[0]),),
                                 options={"cache": False})
    default = build_library(compiled, "cnn", tmp_path / "default")
    pooled = build_library(compiled, "cnn_pool", tmp_path / "pool", user_memory=True)
    assert pooled.scratch_bytes > 0
    header = pooled.header_path.read_text()
    assert "size_t cnn_pool_scratch_bytes(void);" in header
    assert "void *scratch,  /* scratch pool" in header
    undefined = subprocess.run(["nm", "-u", str(pooled.object_path)], capture_output=True,
                               text=True, check=True).stdout.split()
    assert not {"malloc", "free", "calloc", "realloc", "aligned_alloc"} & set(undefined)

    out_default, status, mallocs_default, _ = run_harness(
        default, build_harness(default, static=True), inputs, tmp_path / "r1")
    assert status == 0 and mallocs_default > 0  # the harness does see the model's mallocs
    exe = build_harness(pooled, static=True)
    out_pool, status, mallocs, error = run_harness(pooled, exe, inputs, tmp_path / "r2")
    assert (status, mallocs, error) == (0, 0, "")
    np.testing.assert_array_equal(out_pool[0], out_default[0])
    np.testing.assert_allclose(out_pool[0], eager(model, inputs)[0], rtol=RTOL, atol=ATOL)
    # Exactly scratch_bytes is enough (the harness's pool may be unaligned)...
    _, status, _, _ = run_harness(pooled, exe, inputs, tmp_path / "r3",
                                  pool=pooled.scratch_bytes)
    assert status == 0
    # ...and a smaller pool is an error that writes nothing.
    outs, status, mallocs, error = run_harness(pooled, exe, inputs, tmp_path / "r4",
                                               pool=pooled.scratch_bytes // 2, sentinel=7.0)
    assert status == 2 and mallocs == 0
    assert "scratch pool too small" in error
    assert (outs[0] == 7.0).all()
    # The ctypes view of the same library.
    np.testing.assert_array_equal(pooled.call(*inputs), out_default[0])
    assert pooled.call_status(*inputs, scratch=np.empty(16, np.uint8))[1] == 2


def test_plan_memory_reuses_dead_blocks() -> None:
    events = [("alloc", 0, 100), ("alloc", 1, 200), ("free", 0, 0), ("alloc", 2, 64),
              ("free", 1, 0), ("alloc", 3, 300), ("free", 2, 0)]
    plan = plan_memory(events)
    spans = {i: (off, off + -(-size // ALIGN) * ALIGN)
             for i, (off, size) in enumerate(zip(plan.offsets, plan.sizes, strict=True))}
    assert all(off % ALIGN == 0 for off in plan.offsets)

    def disjoint(a: int, b: int) -> bool:
        return spans[a][1] <= spans[b][0] or spans[b][1] <= spans[a][0]

    assert disjoint(0, 1) and disjoint(1, 2) and disjoint(2, 3)
    # Block 3 (live after 0 and 1 died) reuses their space: the peak is below the sum.
    assert plan.peak < sum(-(-s // ALIGN) * ALIGN for s in plan.sizes)


# -- MLIR input: runtime assertions, dynamic shapes, target CPUs --------------------------
from samples import SAFE_DIV, load_get_model  # noqa: E402 - shared inputs


def test_failed_assertion_returns_status_and_message(tmp_path: Path) -> None:
    lib = build_library(SAFE_DIV, "safe_div_lib", tmp_path)
    a = np.ones(4, np.float32)
    outs, status = lib.call_status(a, np.array([1, 0, 1, 1], np.float32))
    assert status == 1 and "division by zero" in lib.last_error()
    np.testing.assert_array_equal(lib.call(a, 2 * a), a / 2)  # not sticky
    assert lib.last_error() == ""


DYNAMIC = """
func.func @scale(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x3xf32>
  %e = tensor.empty(%n) : tensor<?x3xf32>
  %r = linalg.add ins(%a, %a : tensor<?x3xf32>, tensor<?x3xf32>)
      outs(%e : tensor<?x3xf32>) -> tensor<?x3xf32>
  return %r : tensor<?x3xf32>
}
"""


def test_dynamic_shapes_use_descriptors(tmp_path: Path) -> None:
    lib = build_library(DYNAMIC, "scale", tmp_path)
    assert not lib.static_shapes
    header = lib.header_path.read_text()
    assert "typedef struct { float *allocated; float *aligned; int64_t offset; " \
           "int64_t sizes[2]; int64_t strides[2]; } scale_memref_2d_f32;" in header
    assert "const scale_memref_2d_f32 *in0" in header and "scale_memref_2d_f32 *out0" in header
    so = ctypes.CDLL(str(lib.so_path))
    desc = descriptor_type(2)
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    arg = desc(x.ctypes.data, x.ctypes.data, 0, (5, 3), (3, 1))
    out = desc()
    assert so.scale(ctypes.byref(arg), ctypes.byref(out)) == 0
    assert tuple(out.sizes) == (5, 3)
    got = np.ctypeslib.as_array(ctypes.cast(out.aligned, ctypes.POINTER(ctypes.c_float)),
                                (5, 3)).copy()
    ctypes.CDLL(None).free(ctypes.c_void_p(out.allocated))  # the caller owns the result
    np.testing.assert_array_equal(got, 2 * x)
    with pytest.raises(Exception, match="user_memory needs static shapes"):
        build_library(DYNAMIC, "scale2", tmp_path / "um", user_memory=True)


@pytest.mark.parametrize("cpu", ["generic", "x86-64-v2", "x86-64-v3"])
def test_target_cpus(tmp_path: Path, cpu: str) -> None:
    model, inputs = mlp()
    with torch.no_grad():
        compiled = accel.compile(model, (torch.from_numpy(inputs[0]),), options={"cache": False})
    lib = build_library(compiled, "mlp_cpu", tmp_path, target_cpu=cpu)
    if cpu == "generic" and shutil.which("objdump"):
        # Baseline x86-64: SSE2 at most, no AVX (ymm) registers anywhere.
        asm = subprocess.run(["objdump", "-d", str(lib.so_path)], capture_output=True,
                             text=True, check=True).stdout
        assert "%ymm" not in asm and "%zmm" not in asm
    if cpu != "x86-64-v3" or "avx2" in Path("/proc/cpuinfo").read_text():
        np.testing.assert_allclose(lib.call(*inputs), eager(model, inputs)[0],
                                   rtol=RTOL, atol=ATOL)


def test_bad_names_and_cpus(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="C identifier"):
        build_library(SAFE_DIV, "lib-x", tmp_path)
    with pytest.raises(ValueError, match="C library function"):
        build_library(SAFE_DIV, "malloc", tmp_path)
    with pytest.raises(ValueError, match="target CPU"):
        build_library(SAFE_DIV, "x", tmp_path, target_cpu="pentium")


# -- accel-compile and the example ----------------------------------------------------------
def test_accel_compile_aot_mlir(tmp_path: Path) -> None:
    (tmp_path / "div.mlir").write_text(SAFE_DIV)
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", "div.mlir",
                           "--aot", "--aot-name", "div", "--target-cpu", "generic",
                           "--output-folder", "o", "--num-iters", "3"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "o"
    for f in ("libdiv.so", "div.o", "div.h", "README.txt", "manifest.json"):
        assert (out / f).is_file(), f
    assert "ran @safe_div (libdiv.so) 3 times" in proc.stderr
    options = json.loads((out / "option.json").read_text())["options"]
    assert (options["aot"], options["aot_name"], options["device"]) == (True, "div", "generic")


def test_example_makefile(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("needs make")
    example = tmp_path / "aot"
    shutil.copytree(ROOT / "examples" / "aot", example)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "ACCEL_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(["make", "-C", str(example), "all"], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    build = example / "build"
    assert {"libmlp.so", "mlp.o", "mlp.h"} <= {p.name for p in build.iterdir()}
    model, (x,) = load_get_model(example, "mlp")  # examples/aot/mlp.py
    x.numpy().tofile(tmp_path / "in.bin")
    want = eager(model.eval(), [x.numpy()])[0]
    for exe in ("main", "main-static"):
        subprocess.run([str(build / exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                       check=True, timeout=60)
        got = np.fromfile(tmp_path / "out.bin", np.float32).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


STRIDED = """
func.func @cols(%a: memref<4x6xf32>) -> memref<4x2xf32> {
  %s = memref.subview %a[0, 1] [4, 2] [1, 2]
      : memref<4x6xf32> to memref<4x2xf32, strided<[6, 2], offset: 1>>
  %o = memref.alloc() : memref<4x2xf32>
  memref.copy %s, %o : memref<4x2xf32, strided<[6, 2], offset: 1>> to memref<4x2xf32>
  return %o : memref<4x2xf32>
}

func.func @check(%n: i64, %x: f32) -> (i64, f32) {
  %c0 = arith.constant 0 : i64
  %ok = arith.cmpi sgt, %n, %c0 : i64
  cf.assert %ok, "n must be positive"
  %y = arith.addf %x, %x : f32
  return %n, %y : i64, f32
}
"""


def test_strided_copies_and_scalars(tmp_path: Path) -> None:
    """memrefCopy comes from the library's runtime; scalars pass by value / by pointer."""
    lib = build_library(STRIDED, "cols", tmp_path / "a", entry="cols")
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(lib.call(x), x[:, 1:5:2])
    lib = build_library(STRIDED, "check", tmp_path / "b", entry="check")
    assert "int64_t in0" in lib.header_path.read_text()
    so = ctypes.CDLL(str(lib.so_path))
    n, y = ctypes.c_int64(), ctypes.c_float()
    assert so.check(ctypes.c_int64(5), ctypes.c_float(1.5), ctypes.byref(n),
                    ctypes.byref(y)) == 0
    assert (n.value, y.value) == (5, 3.0)
    assert so.check(ctypes.c_int64(-1), ctypes.c_float(0), ctypes.byref(n),
                    ctypes.byref(y)) == 1
    assert "n must be positive" in lib.last_error()


def test_accel_compile_aot_option(tmp_path) -> None:  # noqa: ANN001 - pytest fixture
    """`accel.compile(..., options={"aot": True, ...})` builds the library next to the JIT."""
    import accel

    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh()).eval()
    x = torch.randn(3, 6)
    fn = accel.compile(model, (x,), options={"aot": True, "aot_name": "tiny",
                                             "output_folder": str(tmp_path)})
    assert {p.name for p in tmp_path.iterdir()} >= {"libtiny.so", "tiny.o", "tiny.h"}
    with torch.no_grad():
        want = model(x).numpy()
    out = fn.aot_library.call(x.numpy())
    np.testing.assert_allclose(out[0] if isinstance(out, tuple) else out, want, rtol=1e-4,
                               atol=1e-5)
    with pytest.raises(ValueError, match="aot_name"):
        accel.compile(model, (x,), options={"aot": True, "aot_name": "not-c"})


def test_num_iters_runs_the_call_repeatedly() -> None:
    import accel

    model = torch.nn.Linear(6, 4).eval()
    x = torch.randn(3, 6)
    fn = accel.compile(model, (x,), options={"num_iters": 5})
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-5)
    assert fn.last_seconds is not None and fn.last_seconds > 0
