"""`accel-compile`, run as `python -m accel.tools.accel_compile` (works before installing).

Most cases run in-process through `accel.cli.run_main` (what the console script calls) to
stay fast; a few run the module as a subprocess. Each run gets its own `ACCEL_CACHE_DIR` (a
temporary folder), never the user's.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import samples

ADD = samples.ADD + """
func.func @neg(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.negf ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""

MODEL_PY = """\
import torch


def get_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh()).eval()
    return model, (torch.randn(3, 6),)


def broken():
    raise RuntimeError("no weights here")
"""

#: A factory taking -b/--batch-size, returning a model in training mode (dropout).
BATCHED_PY = """\
import torch


def get_model(batch_size=2):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Dropout(0.5), torch.nn.ReLU())
    return model, (torch.randn(batch_size, 6),)
"""

#: A model whose factory warns (what --log-dir collects).
WARNS_PY = """\
import warnings

import torch


def get_model():
    warnings.warn("this layer is deprecated", UserWarning)
    return torch.nn.Linear(3, 2), (torch.randn(1, 3),)
"""

#: A training model file: get_training() for accel-compile's default (training) mode.
TRAIN_PY = """\
import torch


def loss_fn(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def get_training(batch_size=4):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(1)
    return model, loss_fn, optimizer, (torch.randn(batch_size, 6, generator=g),
                                       torch.randn(batch_size, 2, generator=g))
"""

PHASES = ("export", "torch-backend", "linalg", "fuse", "bufferize", "llvm-dialect", "llvm-ir")


def accel_compile(tmp_path: Path, *args: str, cwd: Path | None = None
                  ) -> subprocess.CompletedProcess:
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", *args],
                          capture_output=True, text=True, env=env, timeout=120, cwd=cwd)


@pytest.fixture
def run_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]):
    """`run_tool(*args) -> (exit status, stderr)`: in-process, in `tmp_path`, inputs there."""
    from accel.cli import run_main
    from accel.tools.accel_compile import main

    (tmp_path / "add.mlir").write_text(ADD)
    (tmp_path / "add.txt").write_text(ADD)
    (tmp_path / "model.py").write_text(MODEL_PY)
    (tmp_path / "batched.py").write_text(BATCHED_PY)
    (tmp_path / "warns.py").write_text(WARNS_PY)
    (tmp_path / "train.py").write_text(TRAIN_PY)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", ["accel-compile"])
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        rc = run_main(main, [a.format(dir=tmp_path) for a in args])
        return rc, capsys.readouterr().err

    return run


def one_error_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def option_json(folder: Path) -> dict:
    return json.loads((folder / "option.json").read_text())


def test_mlir_file(tmp_path: Path, run_tool) -> None:
    import accel

    rc, err = run_tool("add.mlir", "--output-folder", "a", "--entry", "neg", "--opt-level", "2")
    assert rc == 0, err
    assert err == "accel-compile: wrote a (entry @neg)\n"  # no progress output off a terminal
    assert not (tmp_path / "cache").exists()  # accel-compile compiles with cache=false
    out = tmp_path / "a"
    fn = accel.load(out)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(fn(x), -x)
    np.testing.assert_array_equal(fn.compiled.invoke("add", x, x), 2 * x)  # all functions kept
    assert (out / "input.mlir").read_text() == ADD
    assert sorted(p.name for p in (out / "ir").iterdir()) == [
        "01-fuse.mlir", "02-bufferize.mlir", "03-llvm-dialect.mlir", "04-llvm-ir.ll"]
    assert (out / "add.o").read_bytes().startswith(b"\x7fELF")
    assert option_json(out) == {
        "format": 1, "tool": "accel-compile", "pef_name": "add", "entry": "neg",
        "batch_size": None, "inference": False,
        "options": {"target": "cpu", "preset": "o3", "opt_level": 2, "device": "host",
                    "strict_target": False, "mm_conv_precision_mode": "default",
                    "float_dtype": None, "cache": False, "aot": False,
                    "aot_name": "accel_artifact", "user_memory": False,
                    "disable_affine_fusion": False, "disable_reduce_reduce_fusion": False,
                    "split_functions": None, "freeze_weights": False, "conv_layout": "nchw",
                    "disable_unsafe_math_canonicalizations": False, "disable_fast_math": False}}
    rc, err = run_tool("add.mlir", "--target", "cpu")
    assert rc == 0 and err == "accel-compile: wrote out/add (entry @add)\n", err
    assert (tmp_path / "out" / "add" / "manifest.json").is_file()


@pytest.mark.parametrize(("flag", "level"), [("-o0", 0), ("-o1", 1), ("-o3", 3), (None, 3)])
def test_optimisation_levels(tmp_path: Path, run_tool, flag: str | None, level: int) -> None:
    rc, err = run_tool("add.mlir", "--output-folder", "a", *([flag] if flag else []))
    assert rc == 0, err
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["target_files"]["opt_level"] == level
    assert option_json(tmp_path / "a")["options"]["opt_level"] == level


def test_model_py(tmp_path: Path) -> None:
    """The whole artifact folder of a .py model, by the real command, in ./out/<pef-name>."""
    torch = pytest.importorskip("torch")
    import accel

    (tmp_path / "model.py").write_text(MODEL_PY)
    r = accel_compile(tmp_path, "model.py", "--inference", "--pef-name", "mlp", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "accel-compile: wrote out/mlp (entry @main)\n"
    out = tmp_path / "out" / "mlp"
    names = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    expected = {"manifest.json", "module.ll", "model.mlir", "input.mlir", "mlp.o",
                "option.json", "compile.log",
                *(f"ir/{i:02d}-{name}{'.ll' if name == 'llvm-ir' else '.mlir'}"
                  for i, name in enumerate(PHASES, 1))}
    assert expected <= names, sorted(names)
    assert any(n.startswith("weights/") for n in names)
    assert (out / "mlp.o").read_bytes().startswith(b"\x7fELF")
    assert "!torch.vtensor" in (out / "input.mlir").read_text()  # the imported module
    assert "llvm.func" in (out / "ir" / "06-llvm-dialect.mlir").read_text()
    assert "define " in (out / "ir" / "07-llvm-ir.ll").read_text()
    settings = option_json(out)
    assert settings["pef_name"] == "mlp" and settings["entry"] == "get_model"
    assert settings["batch_size"] is None and settings["inference"] is True
    from accel.options import for_target
    # Every option of the target, defaults included (other targets' options do not apply).
    assert set(settings["options"]) == {o.name for o in for_target("cpu")}
    assert settings["options"]["cache"] is False and settings["options"]["opt_level"] == 3
    log = (out / "compile.log").read_text()
    for name in PHASES + ("codegen",):
        assert f"\nphase {name} " in log, log
    assert "phase get_model() " in log and "\ncache hit: no\n" in log
    assert "\ntotal " in log and "versions: accel " in log and "llvmlite" in log

    module, (x,) = samples.load_get_model(tmp_path, "model")
    with torch.no_grad():
        want = module(x)
    torch.testing.assert_close(accel.load(out)(x), want, rtol=1e-4, atol=1e-5)


def test_training_build(tmp_path: Path, run_tool) -> None:
    """Without --inference a .py model file compiles its get_training() train step: the
    folder holds forward, backward and optimizer as named phases (IR, objects, compile.log),
    and accel.load returns a step that trains the saved state exactly as eager would."""
    torch = pytest.importorskip("torch")
    import accel

    rc, err = run_tool("train.py", "-b", "4", "-o1", "--clip-grad-norm", "10",
                       "--output-folder", "t", "--num-iters", "1")
    assert rc == 0, err
    out = tmp_path / "t"
    for name in ("train.json", "state.pt", "forward/manifest.json", "backward/manifest.json",
                 "optimizer/manifest.json", "train-forward.o", "train-backward.o",
                 "train-optimizer.o", "option.json", "compile.log", "input.mlir"):
        assert (out / name).is_file(), name
    ir = sorted(p.name for p in (out / "ir").iterdir())
    for graph in ("forward", "backward", "optimizer"):
        for phase in ("export", "linalg", "llvm-dialect"):
            assert any(n.endswith(f"-{graph}-{phase}.mlir") for n in ir), (graph, phase, ir)
    log = (out / "compile.log").read_text()
    for graph in ("forward", "backward", "optimizer"):
        assert f"\nphase {graph}-codegen " in log, log
    assert "phase get_training() " in log and "train step: forward (" in log
    assert "ran the train step 1 time: mean " in log
    settings = option_json(out)
    assert settings["inference"] is False and settings["entry"] == "get_training"
    assert settings["options"]["clip_grad_norm"] == 10.0

    step = accel.load(out)
    namespace: dict = {}
    exec(compile(TRAIN_PY, "train.py", "exec"), namespace)  # noqa: S102
    model, loss_fn, opt, _ = namespace["get_training"](batch_size=4)
    for _ in range(3):
        x, y = torch.randn(4, 6), torch.randn(4, 2)
        got = step(x, y)
        opt.zero_grad()
        want = loss_fn(model, x, y)
        want.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        torch.testing.assert_close(got, want.detach(), rtol=1e-4, atol=1e-6)
    trained = step.state_dict()
    for name, value in model.state_dict().items():
        torch.testing.assert_close(trained["model"][name], value, rtol=1e-4, atol=1e-6)
    assert trained["optimizer"]["state"][0]["step"] == 3
    assert set(trained["model"]) == set(model.state_dict())


def test_option_json_reproduces(tmp_path: Path, run_tool) -> None:
    """-b, --inference, -o1 recorded in option.json; --option-json builds the same again,
    and flags given with it override it."""
    torch = pytest.importorskip("torch")
    import accel

    rc, err = run_tool("batched.py", "--pef-name", "b5", "-b", "5", "--inference", "-o1",
                       "--output-folder", "first")
    assert rc == 0, err
    assert "warning" not in err  # --inference: eval mode, no training-mode warning
    first = option_json(tmp_path / "first")
    assert (first["pef_name"], first["batch_size"], first["inference"]) == ("b5", 5, True)
    assert first["options"]["opt_level"] == 1
    manifest = json.loads((tmp_path / "first" / "manifest.json").read_text())
    assert manifest["inputs"][0]["shape"] == [5, 6]

    rc, err = run_tool("batched.py", "--option-json", "first/option.json",
                       "--output-folder", "again")
    assert rc == 0, err
    assert option_json(tmp_path / "again") == first
    assert (tmp_path / "again" / "module.ll").read_text() == \
        (tmp_path / "first" / "module.ll").read_text()
    assert (tmp_path / "again" / "b5.o").is_file()

    rc, err = run_tool("batched.py", "--option-json", "first/option.json", "-o0", "-b", "2",
                       "--output-folder", "over")
    assert rc == 0, err
    over = option_json(tmp_path / "over")
    assert over["options"]["opt_level"] == 0 and over["batch_size"] == 2
    assert over["inference"] is True and over["pef_name"] == "b5"

    model, (x,) = _batched_model(tmp_path, 5)
    model.eval()
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(accel.load(tmp_path / "again")(x), want, rtol=1e-4, atol=1e-5)


def _batched_model(tmp_path: Path, batch_size: int):
    namespace: dict = {}
    exec(compile(BATCHED_PY, str(tmp_path / "batched.py"), "exec"), namespace)  # noqa: S102
    return namespace["get_model"](batch_size=batch_size)


def test_warnings_and_log_dir(tmp_path: Path, run_tool) -> None:
    """Warnings of a compile go to stderr, compile.log and, with --log-dir, to
    DIR/<pef-name>.warnings.log, which is written (empty) even when the compile fails."""
    rc, err = run_tool("warns.py", "--log-dir", "logs", "--inference")
    assert rc == 0, err
    assert "accel-compile: warning: UserWarning: this layer is deprecated" in err
    log = (tmp_path / "logs" / "warns.warnings.log").read_text()
    assert log.startswith("warning: UserWarning: this layer is deprecated")
    assert "warning: UserWarning: this layer is deprecated" in \
        (tmp_path / "out" / "warns" / "compile.log").read_text()
    rc, err = run_tool("add.mlir", "--log-dir", "logs")
    assert rc == 0, err
    assert (tmp_path / "logs" / "add.warnings.log").read_text() == ""  # no warnings
    rc, err = run_tool("batched.py", "--log-dir", "logs")  # no get_training(): fails
    assert rc == 1 and "has no get_training()" in err
    assert (tmp_path / "logs" / "batched.warnings.log").read_text() == ""


def test_verbose(run_tool) -> None:
    rc, err = run_tool("add.mlir", "-v", "--output-folder", "a")
    assert rc == 0, err
    lines = err.splitlines()
    assert lines[0].startswith("[accel-compile] compiling add.mlir -> a (")
    for name in ("bufferize", "llvm-dialect", "llvm-ir", "codegen"):
        assert any(line.startswith(f"[accel-compile] {name} ") for line in lines), err
    assert lines[-1] == "accel-compile: wrote a (entry @add)"
    rc, debug_err = run_tool("add.mlir", "--debug", "--output-folder", "a")
    assert rc == 0 and "[accel-compile] codegen " in debug_err


def test_cache_opt_in(tmp_path: Path, run_tool) -> None:
    """--option cache=true: the second build is a cache hit, with no MLIR phases' IR."""
    for _ in range(2):
        rc, err = run_tool("add.mlir", "--option", "cache=true", "--output-folder", "a")
        assert rc == 0, err
    assert "cache hit: yes" in (tmp_path / "a" / "compile.log").read_text()
    assert not list((tmp_path / "a" / "ir").iterdir())  # the first build's IR is removed


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_display() -> None:
    import time

    from accel.tools.accel_compile import Progress

    term = _Terminal()
    with Progress(term, delay=0.0, interval=0.01) as progress:
        progress.phase_start("codegen")
        time.sleep(0.1)
    text = term.getvalue()
    assert "\r[accel-compile] codegen ... " in text and text.endswith("\r\x1b[K")
    quiet = _Terminal()
    with Progress(quiet, delay=5.0, interval=0.01) as progress:  # a fast compile: nothing
        progress.phase_start("codegen")
        time.sleep(0.05)
    assert quiet.getvalue() == ""
    piped = io.StringIO()  # not a terminal: nothing
    with Progress(piped, delay=0.0, interval=0.01) as progress:
        progress.phase_start("codegen")
        time.sleep(0.05)
    assert piped.getvalue() == ""


def test_help_and_version(tmp_path: Path) -> None:
    r = accel_compile(tmp_path, "--help")
    assert r.returncode == 0 and "get_model" in r.stdout and "--output-folder" in r.stdout
    for flag in ("--pef-name", "--inference", "--batch-size", "-o0", "-o1", "-o3", "--verbose",
                 "--debug", "--log-dir", "--target", "--option-json"):
        assert flag in r.stdout, flag
    r = accel_compile(tmp_path, "--version")
    assert r.returncode == 0 and r.stdout.startswith("accel-compile (accel ")


@pytest.mark.parametrize(("args", "message"), [
    ((), "accel-compile: error: the following arguments are required"),
    (("missing.mlir", "--output-folder", "x"),
     "accel-compile: error: no such file: 'missing.mlir'"),
    (("add.txt", "--output-folder", "x"), "accel-compile: error: MODEL must be a .py or .mlir"),
    (("add.mlir", "--output-folder", "x", "--entry", "nope"), "no public function @nope"),
    (("add.mlir", "--output-folder", "x", "--option", "verify_numerics=true"),
     "option 'verify_numerics' does not apply to .mlir input"),
    (("add.mlir", "--output-folder", "x", "--option", "oops"), "--option expects KEY=VALUE"),
    (("add.mlir", "--output-folder", "x", "--opt-level", "7"),
     "option 'opt_level' must be an int from 0 to 3, got 7"),
    (("add.mlir", "-o", "x"), "-o DIR is not an option: use --output-folder DIR"),
    (("add.mlir", "--output-folder", "x", "-o2"), "no optimisation level -o2"),
    (("add.mlir", "--output-folder", "x", "-o0", "-o1"),
     "argument -o1: not allowed with argument -o0"),
    (("add.mlir", "--output-folder", "x", "-b", "4"), "-b/--batch-size applies to .py models"),
    (("add.mlir", "--output-folder", "x", "--target", "rdu", "--option", "sectioning=o2"),
     "option 'sectioning' must be one of o0, o1, o3, got 'o2'"),
    (("model.py", "--output-folder", "x", "--target", "mncore", "--option",
      "scheduler=fastest"), "option 'scheduler' must be one of always_from_dram"),
    (("model.py", "--output-folder", "x", "--target", "gpu"),
     "option 'target' must be one of cpu, mncore, nvgpu, rdu, got 'gpu'"),
    (("model.py", "--inference", "--output-folder", "x", "-b", "4"),
     "-b/--batch-size needs get_model() to take a batch_size keyword argument"),
    (("model.py", "--output-folder", "x"),
     "model.py has no get_training(); pass --inference to compile inference"),
    (("model.py", "--inference", "--output-folder", "x", "--grad-accumulation-steps", "2"),
     "option 'grad_accumulation_steps' applies to compiled training"),
    (("train.py", "--output-folder", "x", "--aot"), "--aot builds a C library of an inference"),
    (("train.py", "--output-folder", "x", "--data-parallel", "-ws", "0"),
     "option 'world_size' must be None or an int >= 1, got 0"),
    (("model.py", "--output-folder", "x", "--entry", "get_model"),
     "get_model() must return (model, loss_fn, optimizer, example_batch)"),
    (("batched.py", "--output-folder", "x", "-b", "0"), "--batch-size must be at least 1"),
    (("model.py", "--output-folder", "x", "--pef-name", "a/b"),
     "--pef-name must be a plain file name"),
    (("model.py", "--output-folder", "x", "--option", "opt_level=9"),
     "option 'opt_level' must be an int from 0 to 3"),
    (("model.py", "--output-folder", "x", "--option", "bogus=1"), "unknown option 'bogus'"),
    (("model.py", "--output-folder", "x", "--entry", "broken"),
     "broken() failed: RuntimeError: no weights here"),
    (("model.py", "--output-folder", "x", "--entry", "absent"), "defines no function absent()"),
    (("model.py", "--output-folder", "x", "--option-json", "nope.json"),
     "no such file: 'nope.json'"),
])
def test_errors(tmp_path: Path, run_tool, args: tuple[str, ...], message: str) -> None:
    rc, err = run_tool(*args)
    line = one_error_line(subprocess.CompletedProcess(args, rc, "", err))
    assert message in line
    assert not (tmp_path / "x").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("content", "message"), [
    ('{"options": {"opt_level": 1,}}',
     "{dir}/o.json:1:29: error: invalid JSON: Expecting property name"),
    ("[1, 2]", "o.json: error: expected a JSON object, got list"),
    ('{"pef_name": "p", "bogus": 1}', "o.json: error: unknown key 'bogus' (valid: "),
    ('{"format": 2}', "o.json: error: format 2 is not supported"),
    ('{"batch_size": "8"}', "o.json: error: 'batch_size' must be an int or null, got \"8\""),
    ('{"inference": 1}', "o.json: error: 'inference' must be a bool, got 1"),
    ('{"options": {"bogus": 1}}', "unknown option 'bogus'"),
    ('{"options": {"opt_level": "3"}}',
     "option 'opt_level' must be an int from 0 to 3, got str '3'"),
])
def test_bad_option_json(tmp_path: Path, run_tool, content: str, message: str) -> None:
    (tmp_path / "o.json").write_text(content)
    rc, err = run_tool("model.py",
                       "--option-json", str(tmp_path / "o.json"), "--output-folder", "x")
    line = one_error_line(subprocess.CompletedProcess([], rc, "", err))
    assert message.format(dir=tmp_path) in line
    assert not (tmp_path / "x").exists()


def test_located_ir_error(tmp_path: Path) -> None:
    src = tmp_path / "bad.mlir"
    src.write_text("func.func @f() {\n  %x = arith.constant 1 : i32\n  return %y : i32\n}\n")
    r = accel_compile(tmp_path, str(src), "--output-folder", str(tmp_path / "out"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"{src}:3:"), r.stderr
    assert not (tmp_path / "out").exists()


def test_aot_library(tmp_path: Path, run_tool) -> None:
    """--aot writes lib<NAME>.so, <NAME>.o, <NAME>.h, README.txt; option.json keeps it."""
    rc, err = run_tool("model.py", "--inference", "--aot", "--aot-name", "tiny",
                       "--target-cpu", "generic", "--output-folder", "a", "--num-iters", "2")
    assert rc == 0, err
    out = tmp_path / "a"
    for name in ("libtiny.so", "tiny.o", "tiny.h", "README.txt", "manifest.json"):
        assert (out / name).is_file(), name
    assert "accel-compile: ran @main (libtiny.so) 2 times: mean " in err
    options = option_json(out)["options"]
    assert (options["aot"], options["aot_name"], options["device"], options["user_memory"]) \
        == (True, "tiny", "generic", False)
    assert "aot: README.txt libtiny.so tiny.h tiny.o (target cpu generic)" in \
        (out / "compile.log").read_text()
    # --option-json rebuilds the library too; flags still override its settings.
    rc, err = run_tool("model.py", "--option-json", "a/option.json", "--output-folder", "b",
                       "--user-memory")
    assert rc == 0, err
    assert option_json(tmp_path / "b")["options"]["user_memory"] is True
    assert "size_t tiny_scratch_bytes(void);" in (tmp_path / "b" / "tiny.h").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (("--aot-name", "x"), "--aot-name applies to AOT libraries: add --aot"),
    (("--aot", "--aot-name", "1x"), "option 'aot_name' must be a C identifier"),
    (("--aot", "--target-cpu", "i386"), "option 'device' must be one of host, generic, "),
])
def test_aot_errors(tmp_path: Path, run_tool, args: tuple[str, ...], message: str) -> None:
    rc, err = run_tool("add.mlir", "--output-folder", "x", *args)
    line = one_error_line(subprocess.CompletedProcess(args, rc, "", err))
    assert message in line
    assert not (tmp_path / "x").exists()


def test_target_cpu_choices_are_the_aot_targets() -> None:
    """--target-cpu (the `device` option) offers exactly what accel.aot builds for."""
    from accel import targets
    from accel.targets.cpu.aot import TARGET_CPUS

    devices = targets.get("cpu").devices()
    assert sorted(devices) == sorted(TARGET_CPUS) and devices[0] == "host"


# -- flags from the options table, AOT through Target.build_aot ------------------------------
@pytest.mark.skipif(__import__("shutil").which("gcc") is None, reason="gcc absent")
def test_aot_library_nvgpu_is_the_apis(tmp_path: Path, run_tool) -> None:
    """`--aot --target nvgpu` builds the GPU library through `Target.build_aot`, the same
    files as accel.compile(aot=True) (cross-compiled for sm_80: no GPU needed)."""
    torch = pytest.importorskip("torch")
    import accel

    rc, err = run_tool("model.py", "--inference", "--target", "nvgpu", "--device", "sm_80",
                       "--aot", "--aot-name", "tiny", "--output-folder", "g")
    assert rc == 0, err
    out = tmp_path / "g"
    for name in ("libtiny.so", "tiny.o", "tiny.h", "tiny.c"):
        assert (out / name).is_file(), name
    assert "aot: libtiny.so tiny.c tiny.h tiny.o (target nvgpu sm_80)" in \
        (out / "compile.log").read_text()
    namespace: dict = {}
    exec(compile(MODEL_PY, "model.py", "exec"), namespace)  # noqa: S102
    model, inputs = namespace["get_model"]()
    with torch.no_grad():
        accel.compile(model, inputs, options={
            "target": "nvgpu", "device": "sm_80", "aot": True, "aot_name": "tiny",
            "output_folder": str(tmp_path / "api"), "cache": False})
    assert (tmp_path / "api" / "tiny.h").read_text() == (out / "tiny.h").read_text()


@pytest.mark.parametrize("target", ["rdu", "mncore"])
def test_aot_refused_in_one_line(tmp_path: Path, run_tool, target: str) -> None:
    """A target without AOT libraries says so in one line, before compiling; accel.compile
    raises the same."""
    torch = pytest.importorskip("torch")
    import accel
    from accel.diagnostics import NotSupportedYet

    message = f"target '{target}' has no AOT libraries yet (option 'aot'; targets with " \
              "them: cpu, nvgpu)"
    rc, err = run_tool("model.py", "--inference", "--target", target, "--aot",
                       "--output-folder", "x")
    assert one_error_line(subprocess.CompletedProcess([], rc, "", err)) == \
        f"accel-compile: error: {message}"
    assert not (tmp_path / "x").exists()
    with pytest.raises(NotSupportedYet, match=re.escape(message)):
        accel.compile(torch.nn.Linear(2, 2), (torch.ones(1, 2),),
                      options={"target": target, "aot": True})


def test_option_values_parse_by_type(tmp_path: Path, run_tool) -> None:
    """One text parser for every option value: `--option sram_budget=0.5` is a number, as
    is the generated flag's value; aliases (PolyBlocks' names, with hyphens too) are
    accepted as --option names and as flags, recorded under the table's names."""
    rc, err = run_tool("add.mlir", "--target", "mncore", "--option", "sram_budget=0.5",
                       "--output-folder", "m")
    assert rc == 0, err
    assert option_json(tmp_path / "m")["options"]["sram_budget"] == 0.5
    rc, err = run_tool("add.mlir", "--target", "mncore", "--sram-budget", "0.25",
                       "--output-folder", "m2")
    assert rc == 0, err
    assert option_json(tmp_path / "m2")["options"]["sram_budget"] == 0.25
    rc, err = run_tool("add.mlir", "-o1", "--option", "polyblocks-disable-affine-fusion=true",
                       "--mlir-disable-fast-math", "--entry", "neg", "--output-folder", "p")
    assert rc == 0, err
    options = option_json(tmp_path / "p")["options"]
    assert options["disable_affine_fusion"] is True and options["disable_fast_math"] is True
    assert "polyblocks_disable_affine_fusion" not in options
    x = np.arange(4, dtype=np.float32)
    import accel

    np.testing.assert_array_equal(accel.load(tmp_path / "p")(x), -x)


@pytest.mark.parametrize(("args", "message"), [
    (("--option", "opt_levl=1"), "unknown option 'opt_levl' (did you mean 'opt_level'?)"),
    (("--option", "polyblocks_disable_afine_fusion=1"),
     "unknown option 'polyblocks_disable_afine_fusion' (did you mean "
     "'polyblocks_disable_affine_fusion'?)"),
    (("--option", "mlir_disable_fast_math=1", "--disable-fast-math"), None),
    (("--target", "mncore", "--option", "sram_budget=lots"),
     "option 'sram_budget' must be a number from 0.0 to 1.0, got str 'lots'"),
    (("--num-iters", "0"), "option 'num_iters' must be an int >= 1, got 0"),
    (("--user-memory",), "--user-memory applies to AOT libraries: add --aot"),
    (("--aot", "--option", "output_folder=elsewhere"),
     "option 'output_folder': accel-compile writes the AOT files into the artifact folder"),
])
def test_option_errors_are_short(tmp_path: Path, run_tool, args: tuple[str, ...],
                                 message: str | None) -> None:
    rc, err = run_tool("add.mlir", "--output-folder", "x", *args)
    if message is None:  # an alias and the name both given: the flag wins over --option
        assert rc == 0, err
        return
    line = one_error_line(subprocess.CompletedProcess(args, rc, "", err))
    assert line == f"accel-compile: error: {message}" if "output_folder" not in message \
        else message in line
    assert len(line) < 160
    assert not (tmp_path / "x").exists()


def test_earlier_option_json_aot_object_still_builds(tmp_path: Path, run_tool) -> None:
    """option.json's "aot" object (before AOT settings were options) is read as them."""
    (tmp_path / "old.json").write_text(json.dumps(
        {"format": 1, "entry": "neg", "options": {"opt_level": 1},
         "aot": {"name": "old", "target_cpu": "generic", "user_memory": False}}))
    rc, err = run_tool("add.mlir", "--option-json", "old.json", "--output-folder", "o")
    assert rc == 0, err
    options = option_json(tmp_path / "o")["options"]
    assert (options["aot"], options["aot_name"], options["device"]) == (True, "old", "generic")
    assert (tmp_path / "o" / "libold.so").is_file()


def test_settings_warnings_are_accel_compile_warnings(tmp_path: Path) -> None:
    """A target's check warns about options without effect while the settings are resolved,
    before the compile's warnings are collected: that warning leaked as Python's
    `file.py:37: UserWarning:` line and its source (found by the fuzz harness)."""
    (tmp_path / "add.mlir").write_text(ADD)
    r = accel_compile(tmp_path, "add.mlir", "--target", "rdu", "--option", "o1_rule_list=gpt2",
                      "--output-folder", "x", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "accel-compile: warning: UserWarning: rdu: --o1-rule-list gpt2 has no effect " \
           "without -o1" in r.stderr
    assert ".py:" not in r.stderr, r.stderr
    r = accel_compile(tmp_path, "add.mlir", "--target", "rdu", "--option", "o1_rule_list=gpt2",
                      "--option", "sectioning=bogus", "--output-folder", "y", cwd=tmp_path)
    assert r.returncode == 1
    assert ".py:" not in r.stderr and "Traceback" not in r.stderr, r.stderr
