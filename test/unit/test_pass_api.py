"""The Python pass API: registration, typed options, running from Python, plugins, errors."""

from __future__ import annotations

import enum
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from accel.diagnostics import AccelError
from accel.ir import Module, ir
from accel.passes import ModulePass, register_pass, registered_passes
from accel.passes.base import OptionError, instantiate, split_options
from accel.pipeline import parse_pipeline, run_pipeline

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "test" / "Tools" / "accel-opt" / "Inputs" / "tag_funcs.py"

SRC = """
func.func @f(%a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  %1 = arith.addf %a, %a : f32
  %2 = arith.addf %0, %1 : f32
  return %2 : f32
}
"""


class Mode(enum.Enum):
    FAST = "fast"
    SAFE = "safe"


@register_pass
@dataclass(frozen=True)
class _Options(ModulePass):
    """Test pass with one option of every supported type."""

    name = "test-options"
    flag: bool = False
    count: int = 3
    ratio: float = 0.5
    label: str = "x"
    mode: Mode = Mode.SAFE
    level: Literal["o0", "o1", "o3"] = "o1"
    sizes: list[int] = field(default_factory=lambda: [1, 2])
    maybe: int | None = None
    max_depth: int = 2

    def apply(self, module) -> None:
        module.attributes["test.seen"] = ir.StringAttr.get(self.option_string())


def test_split_options_handles_quotes_braces_and_bare_flags() -> None:
    pairs = list(split_options('a=1 b="x y" c={1,2} d e=\'q\''))
    assert pairs == [("a", "1"), ("b", "x y"), ("c", "1,2"), ("d", None), ("e", "q")]


def test_options_are_typed() -> None:
    p = instantiate(_Options, "flag count=0x10 ratio=2.5 label='a b' mode=fast level=o3 "
                              "sizes=4,5,6 maybe=7")
    assert p == _Options(flag=True, count=16, ratio=2.5, label="a b", mode=Mode.FAST,
                         level="o3", sizes=[4, 5, 6], maybe=7)


def test_defaults_and_dash_spelling() -> None:
    assert instantiate(_Options, "") == _Options()
    assert instantiate(_Options, "max-depth=4").max_depth == 4
    assert instantiate(_Options, "max_depth=5").max_depth == 5


@pytest.mark.parametrize("text, message", [
    ("cuont=1", "unknown option 'cuont' (did you mean 'count'?)"),
    ("count=abc", "bad value 'abc' for option 'count' (expected int)"),
    ("flag=maybe", "bad value 'maybe' for option 'flag' (expected bool)"),
    ("mode=slow", "bad value 'slow' for option 'mode' (expected enum{fast|safe})"),
    ("level=o2", "bad value 'o2' for option 'level' (expected enum{o0|o1|o3})"),
    ("sizes=1,x", "bad value '1,x' for option 'sizes' (expected list[int])"),
    ("count", "option 'count' needs a value (int)"),
    ('label="open', "unterminated quote"),
])
def test_bad_options_list_the_valid_ones(text: str, message: str) -> None:
    with pytest.raises(OptionError) as info:
        instantiate(_Options, text)
    text_ = str(info.value)
    assert message in text_
    assert "valid options: flag: bool = false; count: int = 3; ratio: float = 0.5" in text_
    assert "mode: enum{fast|safe} = safe" in text_
    assert "sizes: list[int] = 1,2" in text_


def test_registration_guards() -> None:
    with pytest.raises(TypeError, match="frozen"):
        @register_pass
        @dataclass
        class NotFrozen(ModulePass):
            """Doc."""

            name = "not-frozen"

    with pytest.raises(TypeError, match="kebab-case"):
        @register_pass
        @dataclass(frozen=True)
        class BadName(ModulePass):
            """Doc."""

            name = "Bad Name"

    with pytest.raises(TypeError, match="docstring"):
        @register_pass
        @dataclass(frozen=True)
        class NoDoc(ModulePass):
            name = "no-doc"

    with pytest.raises(ValueError, match="already registered"):
        @register_pass
        @dataclass(frozen=True)
        class Clash(ModulePass):
            """Doc."""

            name = "test-options"


def test_registry_keys_equal_names_and_every_builtin_pass_has_a_lit_file() -> None:
    for key, cls in registered_passes().items():
        assert key == cls.name
        if cls.__module__.startswith("accel.passes."):
            assert (ROOT / "test" / "Transforms" / f"{key}.mlir").is_file(), key


def test_run_from_python_and_in_a_mixed_pipeline(ctx) -> None:
    module = Module.parse(SRC)
    _Options(count=5)(module)
    assert "count=5" in str(module.operation.attributes["test.seen"])
    run_pipeline(module, "builtin.module(func.func(cse),test-options{label=z},canonicalize)")
    assert 'label=z' in str(module.operation.attributes["test.seen"])
    assert str(module).count("arith.addf") == 2  # CSE ran


def test_plugin_file_of_the_documented_shape(ctx) -> None:
    from accel.passes import load_pass_plugin

    mod = load_pass_plugin(str(PLUGIN))
    assert load_pass_plugin(str(PLUGIN)) is mod  # loading twice is harmless
    module = Module.parse(SRC)
    run_pipeline(module, "builtin.module(func.func(canonicalize,cse),tag-funcs{attr=x},"
                         "func.func(count-ops),lower-affine)")
    func = module.body.operations[0]
    assert "x" in func.attributes
    assert ir.IntegerAttr(func.attributes["num_ops"]).value == 3


def test_pass_failure_and_python_exception_are_located_errors(ctx) -> None:
    from accel.passes import load_pass_plugin
    from accel.pipeline import RunConfig

    load_pass_plugin(str(PLUGIN))
    module = Module.parse(SRC)
    with pytest.raises(AccelError) as info:
        run_pipeline(module, "reject-addf", cfg=RunConfig(filename="f.mlir", reproducer=False))
    first = info.value.diagnostics[0]
    assert (first.file, first.line, first.col) == ("f.mlir", 3, 8)
    assert first.message == "arith.addf is not allowed here"
    with pytest.raises(AccelError, match="pass 'crash-in-python' raised RuntimeError: plugin bug"):
        run_pipeline(module, "crash-in-python", cfg=RunConfig(reproducer=False))


@pytest.mark.parametrize("pipeline, message", [
    ("builtin.module(cse", "1:19: error: missing ')'"),
    ("cse,,canonicalize", "1:5: error: expected a pass or op name"),
    ("cse{a=1", "unbalanced '{'"),
    ("cse)", "unexpected ')'"),
])
def test_pipeline_syntax_errors_are_located(pipeline: str, message: str) -> None:
    with pytest.raises(AccelError) as info:
        parse_pipeline(pipeline)
    assert message in info.value.format()


def test_reproducer_command_reproduces_the_failure(tmp_path: Path) -> None:
    from conftest import run_tool

    src = tmp_path / "in.mlir"
    src.write_text(SRC)
    first = run_tool("accel-opt", str(src), f"--load-pass-plugin={PLUGIN}", "-cse",
                     "-reject-addf")
    assert first.returncode == 1
    assert "Traceback" not in first.stderr
    command = re.search(r"note: reproduce with: (.*)", first.stderr).group(1)
    argv = shlex.split(command)
    assert argv[0] == "accel-opt"
    again = run_tool("accel-opt", *argv[1:])
    assert again.returncode == 1
    assert "arith.addf is not allowed here" in again.stderr
    repro_file = Path(argv[1])
    assert repro_file.read_text().startswith('"builtin.module"')
    repro_file.unlink()
    subprocess.run(["true"], check=True)
