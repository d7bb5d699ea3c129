"""Parallel code generation (accel.host.codegen): a big module is cut into parts of whole
functions, compiled in ACCEL_COMPILE_JOBS worker processes, and linked by the JIT; the
objects are the same bytes whatever the job count, and the program computes what eager does.
"""

from __future__ import annotations

from pathlib import Path

import accel
import numpy as np
import pytest
import torch
from accel import phases
from accel.diagnostics import AccelError
from accel.host import codegen
from accel.llvm import archive
from accel.llvm import engine as llvmx
from accel.llvm.elf import object_problem

# Six functions: @helper is private and called from two others, @k private and called only
# by its neighbour, @msg a private constant two functions read.
MODULE = """\
@msg = private constant [3 x i8] c"hi\\00"
@w = external global [4 x float]

define private i64 @helper(i64 %x) {
  %y = mul i64 %x, 3
  ret i64 %y
}

define i64 @a(i64 %x) {
  %y = call i64 @helper(i64 %x)
  %p = load i8, ptr @msg
  %z = zext i8 %p to i64
  %r = add i64 %y, %z
  ret i64 %r
}

define i64 @b(i64 %x) {
  %y = call i64 @helper(i64 %x)
  %r = add i64 %y, 1
  ret i64 %r
}

define private i64 @k(i64 %x) {
  %p = load i8, ptr getelementptr (i8, ptr @msg, i64 1)
  %z = zext i8 %p to i64
  %r = add i64 %x, %z
  ret i64 %r
}

define i64 @c(i64 %x) {
  %y = call i64 @k(i64 %x)
  %v = load float, ptr @w
  %i = fptosi float %v to i64
  %r = add i64 %y, %i
  ret i64 %r
}

define i64 @main(i64 %x) {
  %a = call i64 @a(i64 %x)
  %b = call i64 @b(i64 %a)
  %c = call i64 @c(i64 %b)
  ret i64 %c
}
"""


def _printed(text: str) -> str:
    return str(llvmx.parse(text, "test module"))


def _defined(part: str) -> set[str]:
    return {f.name for f in llvmx.parse(part, "part").functions if not f.is_declaration}


def test_parts_define_every_function_once_and_parse_alone() -> None:
    text = _printed(MODULE)
    parts = codegen.partition(text, parts=3)
    assert len(parts) == 3
    defined = [_defined(p) for p in parts]
    every = {"helper", "a", "b", "k", "c", "main"}
    assert set().union(*defined) == every
    assert sum(len(d) for d in defined) == len(every)  # no function twice
    owner = next(p for p, d in zip(parts, defined, strict=True) if "helper" in d)
    callers = {"a", "b"} - next(d for d in defined if "helper" in d)
    if callers:  # called from another part: external under its own name there
        assert "define i64 @helper" in owner
        assert any("declare i64 @helper" in p for p in parts if p is not owner)
    for part in parts:  # the constant is copied, private, into each part that reads it
        if "@msg" in part.split("@msg = ", 1)[-1]:
            assert "@msg = private constant" in part


def test_parts_depend_only_on_the_text() -> None:
    text = _printed(MODULE)
    assert codegen.partition(text, parts=3) == codegen.partition(text, parts=3)
    assert codegen.partition(text, parts=1) == [text]


@pytest.mark.parametrize("line", [
    "@state = internal global i64 0",             # writable: one definition only
    "@0 = private constant i8 1",                 # numbered: renumbering would break
    "@al = alias i64 (i64), ptr @main",
    'module asm ".globl extra"',                  # would be assembled into every part
    '@llvm.used = appending global [1 x ptr] [ptr @b], section "llvm.metadata"',
])
def test_modules_that_cannot_be_cut_stay_whole(line: str) -> None:
    text = _printed(line + "\n" + MODULE)
    assert codegen.partition(text, parts=3) == [text]


def test_a_constant_naming_a_function_of_another_part() -> None:
    """A read-only table of function pointers is copied with the table's functions
    declared (external where they were private), so each part parses and links alone."""
    text = _printed(MODULE.replace(
        "define i64 @main(i64 %x) {",
        "@table = private constant [2 x ptr] [ptr @helper, ptr @k]\n\n"
        "define i64 @main(i64 %x) {\n  %t = load ptr, ptr @table") )
    parts = codegen.partition(text, parts=6)
    main = next(p for p in parts if "define i64 @main" in p)
    assert "@table = private constant" in main
    for callee in ("helper", "k"):
        if f"define private i64 @{callee}" not in main:
            assert f"declare i64 @{callee}" in main
    cpu, features = llvmx.host_cpu()
    objs = codegen.emit_objects(parts, 1, cpu, features, jobs=1)
    assert object_problem(archive.bundle(objs)) is None


def test_the_used_list_goes_to_the_parts_whose_calls_name_it() -> None:
    """The JIT's libmvec variants are kept alive by `@llvm.compiler.used` (an appending
    global) and named by the `vector-function-abi-variant` attribute of the scalar call: a
    part whose calls carry that attribute gets the list and the variants' declarations, so
    its vectoriser may call them (a train step's graphs use exp and log); a part without
    such calls gets none, so a model that starts using exp elsewhere keeps its text."""
    variant = ('"vector-function-abi-variant"="_ZGV_LLVM_N8v_expf(_ZGVdN8v_expf)"')
    text = _printed("declare <8 x float> @_ZGVdN8v_expf(<8 x float>)\n"
                    "declare float @expf(float)\n"
                    "@llvm.compiler.used = appending global [1 x ptr] [ptr @_ZGVdN8v_expf], "
                    'section "llvm.metadata"\n' + MODULE.replace(
                        "define i64 @b(i64 %x) {\n",
                        "define i64 @b(i64 %x) {\n  %e = call float @expf(float 1.0) #0\n")
                    + f"\nattributes #0 = {{ {variant} }}\n")
    parts = codegen.partition(text, parts=3)
    assert len(parts) == 3
    for part in parts:
        llvmx.parse(part, "part")
        calls_exp = "call float @expf" in part
        assert ("@llvm.compiler.used = appending global [1 x ptr] [ptr @_ZGVdN8v_expf]"
                in part) == calls_exp
        assert ("declare <8 x float> @_ZGVdN8v_expf" in part) == calls_exp
    assert sum("call float @expf" in p for p in parts) == 1


def test_small_modules_are_not_cut() -> None:
    assert codegen.part_count(2 * codegen.LINES_PER_PART - 1) == 1
    assert codegen.part_count(2 * codegen.LINES_PER_PART) == 2
    assert codegen.part_count(10**9) == codegen.MAX_PARTS


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes even for these small modules."""
    monkeypatch.setattr(codegen, "PARALLEL_MIN_CHARS", 0)


def test_cut_module_objects_link_and_run(workers: None) -> None:
    cpu, features = llvmx.host_cpu()
    parts = codegen.partition(_printed(MODULE), parts=3)
    serial = codegen.emit_objects(parts, 2, cpu, features, jobs=1)
    parallel = codegen.emit_objects(parts, 2, cpu, features, jobs=3)
    assert serial == parallel  # the same bytes whatever the job count
    blob = archive.bundle(serial)
    assert archive.is_archive(blob) and archive.members(blob) == serial
    assert object_problem(blob) is None


@pytest.mark.parametrize("raw", ["0", "-2", "many"])
def test_bad_job_count_is_one_line(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(codegen.JOBS_ENV, raw)
    with pytest.raises(AccelError, match=r"^ACCEL_COMPILE_JOBS=.*expected a positive number"):
        codegen.compile_jobs()


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failing_part_is_one_error_line(workers: None, jobs: int) -> None:
    cpu, features = llvmx.host_cpu()
    with pytest.raises(AccelError, match=r"llvmlite rejected the code generation partition.*"
                                         r"\(code generation part 1\)$"):
        codegen.emit_objects(["define void @f() {\n  ret void\n}", "define void @g( {"], 1,
                             cpu, features, jobs=jobs)


def test_a_dying_worker_is_an_error_not_a_hang(workers: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codegen.sys, "executable", "/bin/false")
    cpu, features = llvmx.host_cpu()
    with pytest.raises(AccelError, match=r"^internal error: the compile worker for code "
                                         r"generation part \d exited with status 1"):
        codegen.emit_objects(["define void @f() {\n  ret void\n}"] * 2, 1, cpu, features,
                             jobs=2)


def test_damaged_archive_is_refused() -> None:
    cpu, features = llvmx.host_cpu()
    objs = codegen.emit_objects(codegen.partition(_printed(MODULE), parts=2), 1, cpu,
                                features, jobs=1)
    blob = archive.bundle(objs)
    assert "runs past the end" in object_problem(blob[:-100])
    assert object_problem(blob[:70] + b"\0" * 8 + blob[78:]).startswith("archive member 0")


class _Cnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def _compile(monkeypatch: pytest.MonkeyPatch, jobs: str, model: torch.nn.Module,
             x: torch.Tensor, cache_dir: str | None = None) -> tuple[object, phases.Recorder]:
    monkeypatch.setenv(codegen.JOBS_ENV, jobs)
    # Cut even this small model (~1000 lines) into several parts, for worker processes.
    monkeypatch.setattr(codegen, "LINES_PER_PART", 150)
    monkeypatch.setattr(codegen, "PARALLEL_MIN_CHARS", 0)
    options = {"cache": cache_dir is not None, "opt_level": 1}
    if cache_dir is not None:
        monkeypatch.setenv("ACCEL_CACHE_DIR", cache_dir)
    with phases.recording(keep_ir=False, want_object=True) as rec:
        fn = accel.compile(model, (x,), options=options)
    return fn, rec


def test_cut_model_matches_eager_and_jobs_give_the_same_bytes(
        monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    torch.manual_seed(0)
    model, x = _Cnn().eval(), torch.randn(2, 3, 8, 8)
    fn1, rec1 = _compile(monkeypatch, "1", model, x)
    fn2, rec2 = _compile(monkeypatch, "2", model, x, cache_dir=str(tmp_path))
    obj1, obj2 = rec1.object_code or b"", rec2.object_code or b""
    assert archive.is_archive(obj1) and len(archive.members(obj1)) >= 2
    assert obj1 == obj2
    want = model(x).detach().numpy()
    np.testing.assert_allclose(fn1(x).numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fn2(x).numpy(), want, rtol=1e-5, atol=1e-5)
    # The cache keeps the archive and links it again without compiling.
    fn3, rec3 = _compile(monkeypatch, "2", model, x, cache_dir=str(tmp_path))
    assert rec3.cache_hit and not rec2.cache_hit
    np.testing.assert_allclose(fn3(x).numpy(), want, rtol=1e-5, atol=1e-5)


def test_cut_train_step_matches_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """compile_train_step's forward, backward and optimizer graphs cut and compiled by two
    workers: two SGD-momentum steps of the BatchNorm CNN match eager's (rtol 1e-4)."""
    import copy

    from training_models import OPTIMIZERS, classify, cnn, image_batch

    monkeypatch.setenv(codegen.JOBS_ENV, "2")
    monkeypatch.setattr(codegen, "LINES_PER_PART", 150)
    monkeypatch.setattr(codegen, "PARALLEL_MIN_CHARS", 0)
    torch.manual_seed(0)
    model = cnn()
    eager = copy.deepcopy(model)
    opt, eager_opt = (OPTIMIZERS["sgd"](m.parameters()) for m in (model, eager))
    with phases.recording(keep_ir=False, want_object=True) as rec:
        step = accel.compile_train_step(model, classify, opt, image_batch(0),
                                        options={"cache": False})
    assert archive.is_archive(rec.object_code or b"")
    for i in range(2):
        batch = image_batch(i)
        got = step(*batch)
        eager_opt.zero_grad()
        want = classify(eager, *batch)
        want.backward()
        eager_opt.step()
        assert abs(float(got) - want.item()) <= 1e-4 * abs(want.item())
    for (name, p), q in zip(model.state_dict().items(), eager.state_dict().values(),
                            strict=True):
        scale = max(float(q.double().abs().max()), 1e-6)
        assert float((p.double() - q.double()).abs().max()) <= 1e-4 * scale, name


def test_ptxas_runs_in_parallel_and_names_the_first_refused_module(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """verify_ptx runs ptxas ACCEL_COMPILE_JOBS at a time; a refusal is one AccelError
    naming the first refused module in module order."""
    from accel.targets.nvgpu import toolkit
    from accel.targets.nvgpu.compile import verify_ptx

    if toolkit.ptxas_path() is None:
        pytest.skip("no ptxas (nvidia-cuda-nvcc) installed")
    good = (".version 8.0\n.target sm_90\n.address_size 64\n"
            ".visible .entry k() {\n  ret;\n}\n")

    class Exe:
        arch = "sm_90"

        def __init__(self, modules: dict[str, str]) -> None:
            self.modules = modules

        def ptx_modules(self) -> dict[str, str]:
            return self.modules

    monkeypatch.setenv(codegen.JOBS_ENV, "3")
    verify_ptx(Exe({f"m{i}": good for i in range(5)}))
    bad = {"m0": good, "m1": good.replace("ret;", "bogus;"), "m2": good,
           "m3": good.replace("ret;", "bogus2;")}
    with pytest.raises(AccelError, match=r"rejected the PTX of m1: "):
        verify_ptx(Exe(bad))


def test_gpu_kernels_ptx_from_workers_is_the_same(workers: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The nvgpu target emits its kernels' PTX in worker processes: the same text as one
    after another here, every kernel keeps its own module's PTX, and the repeated layer's
    kernels share one emission (same LLVM IR, same PTX)."""
    from accel.frontend.torch_import import import_program
    from accel.settings import merge as resolve
    from accel.targets import get as get_target

    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU(),
                                torch.nn.Linear(32, 32), torch.nn.GELU(),
                                torch.nn.Linear(32, 8), torch.nn.Softmax(-1)).eval()
    program = import_program(model, (torch.randn(4, 32),), func_name="main")
    text, weights = program.module.operation.get_asm(), dict(program.weights)
    opts = resolve({"target": "nvgpu", "device": "sm_90", "cache": False})
    emitted = _count_parallel_map(monkeypatch)
    ptx = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv(codegen.JOBS_ENV, jobs)
        exe = get_target("nvgpu").compile(text, opts, weights=weights)
        ptx[jobs] = {name: k.ptx for name, k in exe.kernels.items()}
    assert len(ptx["1"]) >= 2 and ptx["1"] == ptx["2"]
    modules = {name.split(".", 1)[0] for name in ptx["1"]}
    assert emitted[0] == len(set(ptx["1"].values())) < len(modules)  # layer 2's are layer 1's
    for name, text_ in ptx["2"].items():
        assert f".entry {name.split('.', 1)[1]}(" in text_


CNN_PY = """
import torch

def get_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10)).eval()
    return model, (torch.randn(2, 3, 8, 8),)
"""


def test_accel_compile_folder_keeps_the_parts_as_an_archive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """accel-compile of a model cut into parts: `<pef-name>.a` and `module.o` hold the
    parts' objects as one archive, and accel.load links it and matches eager."""
    from accel.cli import run_main
    from accel.tools.accel_compile import main

    (tmp_path / "cnn.py").write_text(CNN_PY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(codegen.JOBS_ENV, "2")
    monkeypatch.setattr(codegen, "LINES_PER_PART", 150)
    monkeypatch.setattr(codegen, "PARALLEL_MIN_CHARS", 0)
    assert run_main(main, ["cnn.py", "--inference", "--pef-name", "cnn", "-o1",
                           "--output-folder", "out"]) == 0
    out = tmp_path / "out"
    assert not (out / "cnn.o").exists()
    assert archive.is_archive((out / "cnn.a").read_bytes())
    assert archive.is_archive((out / "module.o").read_bytes())
    import importlib.util

    spec = importlib.util.spec_from_file_location("cnn_model", tmp_path / "cnn.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, (x,) = module.get_model()
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(accel.load(out)(x).numpy(), want, rtol=1e-5, atol=1e-5)


CTRL_C_SCRIPT = """
import os, signal, sys, torch, accel
signal.signal(signal.SIGINT, signal.default_int_handler)
from accel.host import codegen
codegen.LINES_PER_PART, codegen.PARALLEL_MIN_CHARS = 150, 0
real_call = codegen._Worker.call
def call(self, *args):
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the workers compile
    return real_call(self, *args)
codegen._Worker.call = call
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10)).eval()
try:
    accel.compile(model, (torch.randn(2, 3, 8, 8),), options={"cache": False,
                                                              "opt_level": 1})
    print("finished")
except KeyboardInterrupt as err:
    print(type(err).__name__, err)
"""


def test_ctrl_c_during_parallel_codegen_stops_and_leaves_no_worker(tmp_path: Path) -> None:
    """Ctrl-C while worker processes compile: the compile raises CompileInterrupted at
    once, and the process exits without waiting for the workers nor leaving them behind."""
    import os
    import subprocess
    import sys

    mark = f"accel-test-{os.getpid()}-{tmp_path.name}"
    env = {**os.environ, "ACCEL_COMPILE_JOBS": "2", "ACCEL_TEST_MARK": mark}
    run = subprocess.run([sys.executable, "-c", CTRL_C_SCRIPT], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "CompileInterrupted compiling Sequential interrupted", \
        run.stdout + run.stderr[-2000:]
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark.encode() in f.read():
                    left.append(pid)
        except OSError:
            continue
    assert not left, f"worker processes left behind: {left}"


def test_torch_compile_cut_graph_matches_eager(monkeypatch: pytest.MonkeyPatch,
                                               fresh_dynamo: None) -> None:
    """torch.compile(backend="accel") goes through the same JIT: its graph is cut and
    compiled by workers, and the call matches eager."""
    monkeypatch.setenv(codegen.JOBS_ENV, "2")
    monkeypatch.setattr(codegen, "LINES_PER_PART", 150)
    monkeypatch.setattr(codegen, "PARALLEL_MIN_CHARS", 0)
    calls = _count_parallel_map(monkeypatch)
    torch.manual_seed(0)
    model, x = _Cnn().eval(), torch.randn(2, 3, 8, 8)
    fast = torch.compile(model, backend="accel", options={"cache": False, "opt_level": 1})
    with torch.no_grad():
        got, want = fast(x), model(x)
    assert calls and calls[0] >= 2
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def _count_parallel_map(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets, for every `codegen.parallel_map` call, how many calls it ran."""
    counts: list[int] = []
    real_map = codegen.parallel_map

    def counting_map(function: str, work: list[tuple[object, ...]], *args: object,
                     **kwargs: object) -> list[object]:
        counts.append(len(work))
        return real_map(function, work, *args, **kwargs)

    monkeypatch.setattr(codegen, "parallel_map", counting_map)
    return counts
