"""Wrong API arguments are TypeError/ValueError/AccelError naming the argument, raised before
any work; too-deep and too-big inputs say what is too deep or too big (issue 14)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import accel
import numpy as np
import pytest
from accel.api import resolve_options
from accel.diagnostics import AccelError
from accel.host.compile import compile_mlir
from accel.options import OptionError
from samples import ADD

torch = pytest.importorskip("torch")


# -- compile_mlir ---------------------------------------------------------------------------
@pytest.mark.parametrize("source", [[ADD], 3, ADD.encode(), None])
def test_compile_mlir_source_of_the_wrong_type(source: object) -> None:
    with pytest.raises(TypeError, match=r"compile_mlir: source must be MLIR text \(str\)"):
        compile_mlir(source)  # type: ignore[arg-type]


@pytest.mark.parametrize("options", [[("cache", False)], 3, b"cache"])
def test_compile_mlir_options_of_the_wrong_type(options: object) -> None:
    with pytest.raises(TypeError, match="options must be a dict, got"):
        compile_mlir(ADD, options)  # type: ignore[arg-type]


@pytest.mark.parametrize(("weights", "message"), [
    ([1], r"weights must be a dict of name -> numpy array, got list"),
    ({"w": [1.0]}, r"weights\['w'\] must be a numpy array, got list"),
    ({1: np.ones(2)}, r"weights: names must be str")])
def test_compile_mlir_weights_of_the_wrong_type(weights: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        compile_mlir(ADD, {"cache": False}, weights=weights)  # type: ignore[arg-type]


def test_compile_mlir_is_for_the_cpu_target_only() -> None:
    """Other targets' options used to reach the CPU pipeline (KeyError)."""
    with pytest.raises(OptionError, match="compile_mlir compiles for the host CPU.*mncore"):
        compile_mlir(ADD, {"target": "mncore", "layout_spec": "x.json"})


# -- option values checked by the options table --------------------------------------------
@pytest.mark.parametrize(("name", "message"), [
    ("a" * 5000, "must be a C identifier .* at most 128 characters, got 'aaa.*"
                 r"\(5002 characters\)"),
    ("int", "is a C/C\\+\\+ keyword"), ("return", "is a C/C\\+\\+ keyword"),
    ("class", "is a C/C\\+\\+ keyword"), ("a-b", "must be a C identifier"),
    ("__x", "is reserved in C"), ("_Start", "is reserved in C"),
    ("malloc", "is a C library function")])
def test_aot_name_must_be_a_usable_c_name(name: str, message: str) -> None:
    with pytest.raises(OptionError, match=f"option 'aot_name' {message}"):
        resolve_options({"aot": True, "aot_name": name})


class _Traced(torch.nn.Module):
    """Records whether compile got as far as running the model."""

    def __init__(self) -> None:
        super().__init__()
        self.ran = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.ran = True
        return x + 1


def test_bad_aot_options_fail_before_any_work(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = _Traced()
    for options in ({"aot": True, "aot_name": "int"},
                    {"aot": True, "output_folder": str(tmp_path / "f" / "sub")}):
        (tmp_path / "f").write_text("a file in the way")
        with pytest.raises(OptionError):
            accel.compile(model, (torch.ones(2),), options={**options, "cache": False})
    assert not model.ran
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # no header, no library


def test_an_output_folder_that_cannot_be_made_names_path_and_reason(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OptionError, match=f"option 'output_folder' cannot be created: "
                                          f"'{blocker}' is a file, not a folder"):
        resolve_options({"aot": True, "output_folder": str(blocker / "out")})
    with pytest.raises(OptionError, match="option 'codegen_dir' cannot be created: .* is a "
                                          "file"):
        resolve_options({"target": "mncore", "codegen_dir": str(blocker / "cg")})
    assert resolve_options({"aot": True, "output_folder": str(tmp_path / "new" / "deep")})


def test_aot_folder_creation_failure_is_an_accel_error() -> None:
    """A folder the checks cannot foresee (/proc refuses mkdir even to root)."""
    from accel.targets.cpu.aot import build_library

    compiled = compile_mlir(ADD, {"cache": False})
    with pytest.raises(AccelError, match="cannot create the AOT output folder "
                                         "'/proc/accel-test/x'"):
        build_library(compiled, "addlib", "/proc/accel-test/x")


# -- accel.compile, accel.load, save ------------------------------------------------------
@pytest.mark.parametrize("folder", [3, None, 1.5, ["x"]])
def test_load_folder_of_the_wrong_type(folder: object) -> None:
    with pytest.raises(TypeError, match=r"accel.load: folder must be a path \(str or "
                                        r"os.PathLike\)"):
        accel.load(folder)


@pytest.mark.parametrize("folder", ["a" * 300, "x\0y"])
def test_load_folder_the_system_refuses(folder: str) -> None:
    """A name too long or with a NUL byte: fuzz case 1933 (OSError from the training-folder
    probe)."""
    with pytest.raises(AccelError, match="could not read artifact folder"):
        accel.load(folder)


def test_save_folder_of_the_wrong_type() -> None:
    compiled = accel.compile(torch.nn.ReLU(), (torch.ones(2),), options={"cache": False})
    with pytest.raises(TypeError, match="save: folder must be a path"):
        compiled.save(3)


def test_dynamic_shapes_of_the_wrong_type() -> None:
    model = _Traced()
    with pytest.raises(TypeError, match="dynamic_shapes must be None, a dict or a tuple"):
        accel.compile(model, (torch.ones(2),), dynamic_shapes=3)
    assert not model.ran


def test_example_inputs_of_the_wrong_shape_are_one_line() -> None:
    with pytest.raises(AccelError) as err:
        accel.compile(torch.nn.Linear(8, 4), (torch.randn(2, 5),), options={"cache": False})
    text = str(err.value)
    assert text.startswith("Linear does not accept its example inputs (input: "
                           "float32[2, 5]): ")
    assert "reduction dim" in text and "\n" not in text and "hint" not in text


def test_a_failure_after_export_does_not_blame_the_inputs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A decomposition that fails on a model that exported fine (HF GPT-2's sdpa path did,
    with a shape error) is accel's gap, not 'does not accept its example inputs'."""
    import accel.frontend.torch_import as torch_import

    def broken(*args: object, **kwargs: object) -> object:
        raise ValueError("Cannot view a tensor with shape [2, 8, 16]")

    def table() -> dict[object, object]:
        return {torch.ops.aten.add.Tensor: broken}

    monkeypatch.setattr(torch_import, "decompositions", table)
    with pytest.raises(AccelError) as err:
        accel.compile(lambda x: x + 1, (torch.ones(2),), options={"cache": False})
    text = str(err.value)
    assert "failed after torch.export: ValueError: Cannot view a tensor" in text, text
    assert "does not accept" not in text and "\n" not in text


def test_a_too_deep_model_says_so() -> None:
    model: torch.nn.Module = torch.nn.ReLU()
    for _ in range(3000):
        model = torch.nn.Sequential(model)
    with pytest.raises(AccelError, match="nests too deeply"):
        accel.compile(model, (torch.ones(2),), options={"cache": False})


# -- accel-compile ----------------------------------------------------------------------------
def _accel_compile(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "accel.tools.accel_compile", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=600, check=False)


def test_accel_compile_inputs_of_the_wrong_shape_are_one_clean_line(tmp_path: Path) -> None:
    """The model's example inputs do not fit (Linear(8, 4) given width 5): no fake-tensor
    traceback from torch's logging, one line naming the model, input and shapes."""
    model = tmp_path / "model.py"
    model.write_text("import torch\n\n\ndef get_model():\n"
                     "    return torch.nn.Linear(8, 4), (torch.randn(2, 5),)\n")
    proc = _accel_compile(str(model), "--inference", "-q", "--output-folder",
                          str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "fake_tensor" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == [proc.stderr.strip()]
    assert "Linear does not accept its example inputs (input: float32[2, 5])" in errors[0]


def test_accel_compile_checks_its_output_folder_first(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    source = tmp_path / "add.mlir"
    source.write_text(ADD)
    proc = _accel_compile(str(source), "--output-folder", str(tmp_path / "file" / "out"),
                          cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (f"accel-compile: error: --output-folder cannot be created: "
                                   f"'{tmp_path / 'file'}' is a file, not a folder, got "
                                   f"'{tmp_path / 'file' / 'out'}'")


def test_tools_report_recursion_and_memory_errors_in_words(
        capsys: pytest.CaptureFixture[str]) -> None:
    from accel.cli import run_main

    def deep(argv: list[str]) -> int:
        raise RecursionError("maximum recursion depth exceeded")

    def big(argv: list[str]) -> int:
        raise MemoryError()

    assert run_main(deep, []) == 1
    assert "error: the input nests too deeply" in capsys.readouterr().err
    assert run_main(big, []) == 1
    err = capsys.readouterr().err
    assert "error: the input ran out of memory" in err and "internal error" not in err


def test_a_model_too_big_to_allocate_says_how_big(tmp_path: Path) -> None:
    from accel.build.model_file import load_model_file

    model = tmp_path / "big.py"
    model.write_text(
        "def get_model():\n"
        "    raise RuntimeError('[enforce fail at alloc_cpu.cpp:127] err == 0. "
        "DefaultCPUAllocator: can\\'t allocate memory: you tried to allocate 4000000000000 "
        "bytes. Error code 12 (Cannot allocate memory)')\n")
    with pytest.raises(AccelError, match=r"get_model\(\) failed: the model needs 3,725.3 GiB"):
        load_model_file(model, "get_model")


def test_an_argument_numpy_cannot_view_is_a_type_error() -> None:
    compiled = compile_mlir(ADD, {"cache": False})
    with pytest.raises(TypeError, match=r"@add argument %arg0: .* got a Tensor that is not an "
                                        r"array \(Can't call numpy\(\) on Tensor that "
                                        r"requires grad"):
        compiled.invoke("add", torch.ones(4, requires_grad=True), np.ones(4, np.float32))


def test_attributes_nested_thousands_deep_are_no_recursion_error() -> None:
    """The mncore layout scan used to recurse into nested arrays (RecursionError inside an
    MLIR callback, reported as RuntimeError). Past safe_parse's nesting limit (256) the
    input is refused before parsing."""
    def source(depth: int) -> str:
        attr = "[" * depth + "1" + "]" * depth
        return f"func.func @deep() attributes {{a = {attr}}} {{\n  return\n}}\n"

    compiled = compile_mlir(source(240), {"cache": False})
    assert "deep" in compiled.functions
    with pytest.raises(AccelError, match=r"IR nests too deeply \(5001 levels"):
        compile_mlir(source(5000), {"cache": False})
