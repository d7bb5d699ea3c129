"""Untrusted IR text, pass pipelines and number grammars (issue 14, part A).

Inputs that used to kill the process (SIGSEGV, SIGFPE) or mislead: each must now be one clean
located error. Cases that could crash if a fix regressed run the tools as subprocesses, so a
regression fails the test instead of killing pytest.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from accel.diagnostics import AccelError
from accel.safe_parse import (
    MAX_IR_DEPTH,
    check_integer_lists,
    check_nesting,
    parse_module,
    probe_in_child,
)
from conftest import run_tool

TRANSPOSE = textwrap.dedent("""\
    func.func @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
      %e = tensor.empty() : tensor<3x2xf32>
      %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = LIST
      return %t : tensor<3x2xf32>
    }
    """)
LIST_COL = TRANSPOSE.splitlines()[2].index("LIST") + 1

BAD_LISTS = {
    "[0, , 1]": (4, "expected an integer, found ','"),
    "[x]": (1, "expected an integer, found 'x'"),
    "[, ]": (1, "expected an integer, found ','"),
    "[99999999999999999999, 0]": (1, "99999999999999999999 is out of range for i64"),
    "[0x10000000000000000]": (1, "0x10000000000000000 is out of range for i64"),
    "[1 0]": (3, "expected ',' or ']', found '0'"),
    "[1, 0,]": (6, "expected an integer, found ']'"),
    "1, 0]": (0, "expected '[', found '1'"),
    "[1_0, 0]": (1, "expected an integer, found '1_0'"),
    "[\u0661, 0]": (1, "expected an integer, found '\u0661'"),
    "[+1, 0]": (1, "expected an integer, found '+1'"),
    "[1, 0": (None, "expected ',' or ']', found 'return'"),
}


def _opt_run(tmp_path: Path, pipeline: str, text: str | None = None
            ) -> tuple[Path, subprocess.CompletedProcess]:
    """(the input file, accel-opt's run of `pipeline` on `text` in it; AFFINE by default)."""
    path = tmp_path / "a.mlir"
    path.write_text(AFFINE if text is None else text)
    return path, run_tool("accel-opt", str(path), f"--pass-pipeline={pipeline}")


def _assert_crashed(path: Path, result: subprocess.CompletedProcess, pipeline: str,
                    signal: str) -> subprocess.CompletedProcess:
    """accel-opt lived through `pipeline` crashing with `signal`: exit status 1 and an error
    at the input file that names the pipeline and the signal."""
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"{path}: error: upstream pass pipeline '{pipeline}' "
                                    f"crashed ({signal})"), result.stderr
    return result


def _one_clean_error(result: subprocess.CompletedProcess, pattern: str) -> None:
    """Exit status 1 (not a signal), and stderr is exactly one error line matching (accel-opt
    prints it as mlir-opt does: followed by the source line and a caret under the column)."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    import re

    lines = result.stderr.rstrip().splitlines()
    if len(lines) == 3:
        assert re.fullmatch(r" *\^~*", lines[2]), result.stderr  # source line and caret
        lines = lines[:1]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "Fatal Python" not in result.stderr
    assert re.search(pattern, lines[0]), lines[0]


# -- item 1: damaged integer lists --------------------------------------------------------
@pytest.mark.parametrize("bad", BAD_LISTS)
def test_damaged_integer_lists_are_located_errors(bad: str) -> None:
    offset, message = BAD_LISTS[bad]
    text = TRANSPOSE.replace("LIST", bad)
    with pytest.raises(AccelError) as info:
        check_integer_lists(text, "m.mlir", line_offset=10)
    d = info.value.diagnostics[0]
    assert d.message == f"'linalg.transpose' permutation: {message}" or \
        d.message.startswith(f"'linalg.transpose' permutation: {message}")
    if offset is not None:
        assert (d.file, d.line, d.col) == ("m.mlir", 13, LIST_COL + offset)


def test_broadcast_and_reduce_lists_are_checked_too() -> None:
    broadcast = ("func.func @f(%a: tensor<3xf32>, %o: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
                 "  %r = linalg.broadcast ins(%a : tensor<3xf32>) outs(%o : tensor<2x3xf32>) "
                 "dimensions = [0,]\n  return %r : tensor<2x3xf32>\n}\n")
    reduce = ("func.func @f(%a: tensor<2x3xf32>, %o: tensor<2xf32>) -> tensor<2xf32> {\n"
              "  %r = linalg.reduce { arith.addf } ins(%a : tensor<2x3xf32>) "
              "outs(%o : tensor<2xf32>) dimensions = [x]\n  return %r : tensor<2xf32>\n}\n")
    with pytest.raises(AccelError, match=r"'linalg.broadcast' dimensions: expected an integer"):
        check_integer_lists(broadcast)
    with pytest.raises(AccelError, match=r"'linalg.reduce' dimensions: expected an integer"):
        check_integer_lists(reduce)


def test_well_formed_lists_comments_strings_and_generic_form_are_vouched_for() -> None:
    for good in ("[1, 0]", "[0x1, 0]", "[1, // c\n 0]", "[- 0, 1]", "[true, false]"):
        assert check_integer_lists(TRANSPOSE.replace("LIST", good)) is True
    commented = "// linalg.transpose ins() outs() permutation = [x]\n" + \
        TRANSPOSE.replace("LIST", "[1, 0]")
    assert check_integer_lists(commented) is True
    quoted = 'func.func private @f() attributes {n = "linalg.transpose permutation = [,]"}\n'
    assert check_integer_lists(quoted) is True
    generic = ('%t = "linalg.transpose"(%a, %e) <{permutation = array<i64: 1, 0>}> ({})'
               " : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>")
    assert check_integer_lists(generic) is True
    # A shape the checker does not follow is not vouched for: the forked probe decides.
    odd = TRANSPOSE.replace("permutation = LIST", "perm = [1, 0]")
    assert check_integer_lists(odd) is False


def test_the_probe_turns_a_parser_crash_into_an_error(ctx) -> None:
    """The forked parse is the safety net for shapes the checker cannot vouch for."""
    with pytest.raises(AccelError) as info:
        probe_in_child(TRANSPOSE.replace("LIST", "[x]"), "m.mlir")
    d = info.value.diagnostics[0]
    assert (d.file, d.line, d.col) == ("m.mlir", 1, 1)
    assert d.message == "the MLIR parser crashed on this input (SIGSEGV)"
    probe_in_child(TRANSPOSE.replace("LIST", "[1, 0]"))  # a good parse: no error
    probe_in_child("func.func @f( {")  # a clean parse error is left to the real parse


def test_parse_module_forks_only_when_the_checker_cannot_vouch(ctx, monkeypatch) -> None:
    import accel.safe_parse as sp

    probes: list[str] = []
    monkeypatch.setattr(sp, "probe_in_child", lambda text, *a: probes.append(text))
    module = parse_module(TRANSPOSE.replace("LIST", "[1, 0]"), "m.mlir")
    assert "permutation = [1, 0]" in str(module) and probes == []
    odd = TRANSPOSE.replace("permutation = LIST", "perm = [1, 0]")
    with pytest.raises(AccelError, match=r"m.mlir|expected 'permutation'") as info:
        parse_module(odd, "m.mlir")
    assert probes == [odd]
    assert info.value.diagnostics[0].line == 3


def test_accel_opt_and_accel_run_report_a_damaged_list(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(TRANSPOSE.replace("LIST", "[0, , 1]"))
    where = rf"bad.mlir:3:{LIST_COL + 4}: error: 'linalg.transpose' permutation: expected an "
    _one_clean_error(run_tool("accel-opt", str(path)), where)
    _one_clean_error(run_tool("accel-run", str(path), "--input", "2x3xf32=0"), where)


def test_compile_mlir_raises_for_a_damaged_list() -> None:
    script = ("import accel\nfrom accel.diagnostics import AccelError\n"
              f"text = {TRANSPOSE.replace('LIST', '[, ]')!r}\n"
              "try:\n    accel.compile_mlir(text, {'cache': False})\n"
              "except AccelError as err:\n    print('raised:', err)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    # str(err) is the located line (what an API caller prints)
    assert ("raised: <input>:3:93: error: 'linalg.transpose' permutation: expected an integer, "
            "found ','") in result.stdout


def test_a_damaged_model_mlir_of_a_loaded_artifact_is_an_error() -> None:
    """`CompiledModule.module` parses the artifact's model.mlir on first use."""
    script = ("from accel.compiled_module import CompiledModule\n"
              "from accel.diagnostics import AccelError\n"
              "m = CompiledModule.__new__(CompiledModule)\n"
              "m._module = None\n"
              f"m._module_text = {TRANSPOSE.replace('LIST', '[1,,0]')!r}\n"
              "try:\n    m.module\nexcept AccelError as err:\n    print('raised:', err.format())\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"raised: model.mlir:3:{LIST_COL + 3}: error: "
                                    "'linalg.transpose' permutation: expected an integer")


# -- item 4: nesting ------------------------------------------------------------------------
def test_deeply_nested_ir_is_refused_before_the_parser_recurses(tmp_path: Path) -> None:
    deep = "module {" * 5000 + "}" * 5000
    with pytest.raises(AccelError, match=rf"IR nests too deeply \(5000 levels of brackets, "
                                         rf"max {MAX_IR_DEPTH}\)") as info:
        check_nesting(deep, "d.mlir")
    d = info.value.diagnostics[0]
    assert (d.line, d.col) == (1, 8 * MAX_IR_DEPTH + 8)  # the first '{' too deep
    with pytest.raises(AccelError, match=r"IR nests too deeply \(100001 levels"):
        check_nesting("func.func private @f(" + "tuple<" * 100000 + "i32" + ">" * 100000 + ")")
    # Strings, comments and `->` do not count; the limit itself is fine.
    check_nesting('"' + "(" * 5000 + '"\n// ' + "[" * 5000 + "\n" + "(a) -> " * 5000)
    check_nesting("module {" * MAX_IR_DEPTH + "}" * MAX_IR_DEPTH)
    path = tmp_path / "deep.mlir"
    path.write_text(deep)
    _one_clean_error(run_tool("accel-opt", str(path)),
                     r"deep.mlir:1:\d+: error: IR nests too deeply \(5000 levels")


def test_ir_at_the_nesting_limit_still_compiles_and_runs(ctx) -> None:
    depth = 200  # 200 nested regions + func + module: under the limit
    body = ("func.func @main(%b: i1, %m: memref<1xf32>) {\n  %c0 = arith.constant 0 : index\n"
            "  %c = arith.constant 2.5 : f32\n" + "scf.if %b {\n" * depth
            + "memref.store %c, %m[%c0] : memref<1xf32>\n" + "}\n" * depth + "return\n}\n")
    import numpy as np
    from accel import compile_mlir

    out = np.zeros(1, np.float32)
    compile_mlir(body, {"cache": False}).invoke("main", True, out)
    assert out[0] == 2.5


def test_deeply_nested_pipelines_are_an_error_not_a_recursion_error() -> None:
    from accel.pipeline import MAX_PIPELINE_DEPTH, PipelineSyntaxError, parse_pipeline

    text = "builtin.module(" * 5000 + "cse" + ")" * 5000
    with pytest.raises(PipelineSyntaxError,
                       match=rf"pass pipeline nests too deeply \(5000 levels, max "
                             rf"{MAX_PIPELINE_DEPTH}\)"):
        parse_pipeline(text)
    result = run_tool("accel-opt", "-", f"--pass-pipeline={text}", input="")
    _one_clean_error(result, r"<pass-pipeline>:1:\d+: error: pass pipeline nests too deeply")


# -- item 2: upstream passes given bad options, and passes that crash -----------------------
AFFINE = textwrap.dedent("""\
    func.func @f(%a: memref<16xf32>, %b: memref<16xf32>) {
      affine.for %i = 0 to 16 {
        %v = affine.load %a[%i] : memref<16xf32>
        affine.store %v, %b[%i] : memref<16xf32>
      }
      return
    }
    """)


@pytest.mark.parametrize(("element", "message"), [
    ("func.func(affine-loop-unroll-jam{unroll-jam-factor=0})",
     "option 'unroll-jam-factor' of pass 'affine-loop-unroll-jam': 0 is out of range (min 1; "
     "the pass crashes on smaller values)"),
    ("func.func(affine-loop-unroll-jam{unroll-jam-factor=2147483648})",
     "option 'unroll-jam-factor' of pass 'affine-loop-unroll-jam': 2147483648 is out of range "
     "(max 2147483647; the pass crashes on larger values)"),
    ("func.func(affine-loop-unroll{unroll-num-reps=2147483647})",
     "option 'unroll-num-reps' of pass 'affine-loop-unroll': 2147483647 is out of range "
     "(max 1024; the pass runs for hours on larger values)"),
    ("func.func(affine-loop-tile{tile-sizes=4,0})",
     "option 'tile-sizes' of pass 'affine-loop-tile': 0 is out of range (min 1;"),
    ("linalg-block-pack-matmul{block-factors=0,1,1}",
     "option 'block-factors' of pass 'linalg-block-pack-matmul': 0 is out of range (min 1;"),
    ("canonicalize{max-iterations=99999999999999999999}",
     "option 'max-iterations' of pass 'canonicalize': 99999999999999999999 is out of range "
     "(int64: from -9223372036854775808 to 9223372036854775807)"),
    ("func.func(affine-loop-tile{tile-size=4294967296})",
     "option 'tile-size' of pass 'affine-loop-tile': 4294967296 is out of range (uint: from 0 "
     "to 4294967295)"),
    ("canonicalize{max-iterations=1_0}", "'1_0' is not an integer"),
    ("canonicalize{max-iterations=\uff11}", "'\uff11' is not an integer"),
    ("canonicalize{max-iterations=010}", "'010' is not an integer (leading zeros read as octal)"),
    ("func.func(affine-loop-tile{separate=maybe})", "'maybe' is not a bool (true or false)"),
    ("func.func(affine-loop-fusion{compute-tolerance=abc})", "'abc' is not a number"),
    # Fuzz case 2265: an empty list element was a SIGSEGV in the bindings' list parser.
    ("arith-emulate-unsupported-floats{source-types=,target-type=f32}",
     "option 'source-types' of pass 'arith-emulate-unsupported-floats': empty element"),
    # The bindings took `{=1}` and ignored it.
    ("canonicalize{=1}", "pass 'canonicalize': '' is not an option name"),
])
def test_bad_upstream_options_are_refused_before_the_pass_runs(element: str,
                                                               message: str) -> None:
    from accel.pipeline import PipelineSyntaxError, parse_pipeline, plan

    with pytest.raises(PipelineSyntaxError) as info:
        plan(parse_pipeline(f"builtin.module({element})"))
    assert message in info.value.diagnostics[0].message, info.value
    assert info.value.diagnostics[0].file == "<pass-pipeline>"


@pytest.mark.parametrize(("pipeline", "pattern"), [
    # A module pipeline nested under func.func: LLVM ERROR, SIGABRT, in PassManager.parse.
    ("builtin.module(func.func(sparsifier))",
     r"<pass-pipeline>:1:26: error: pass 'sparsifier' runs on 'builtin.module', not on "
     r"'func.func'$"),
    ("builtin.module(inline{op-pipelines=func.func(sparsifier)})",
     r"error: option 'op-pipelines' of pass 'inline': pass 'sparsifier' runs on "
     r"'builtin.module', not on 'func.func'$"),
    # Pipelines held in options are built when the pass runs: checked before...
    ("builtin.module(inline{default-pipeline=bogus})",
     r"error: option 'default-pipeline' of pass 'inline': unknown pass or pipeline 'bogus'$"),
    ("builtin.module(composite-fixed-point-pass{name=x pipeline=func.func("
     "affine-loop-unroll-jam{unroll-jam-factor=0})})",
     r"error: option 'pipeline' of pass 'composite-fixed-point-pass': option "
     r"'unroll-jam-factor' of pass 'affine-loop-unroll-jam': 0 is out of range"),
])
def test_pipelines_that_made_mlir_abort_are_errors(tmp_path: Path, pipeline: str,
                                                   pattern: str) -> None:
    _one_clean_error(_opt_run(tmp_path, pipeline)[1], pattern)


def test_an_option_pipeline_that_aborts_at_run_time_runs_isolated(tmp_path: Path) -> None:
    """...and run in a child: `sparsifier` as the inliner's default pipeline aborts there."""
    pipeline = "builtin.module(inline{default-pipeline=sparsifier})"
    result = _assert_crashed(*_opt_run(tmp_path, pipeline), pipeline, "SIGABRT")
    assert result.stderr.splitlines()[0].endswith(" on this input"), result.stderr
    assert "LLVM ERROR" not in result.stderr


def test_llvm_option_complaints_are_one_line_not_stray_stderr(capfd) -> None:
    from accel.pipeline import PipelineSyntaxError, parse_pipeline, plan

    with pytest.raises(PipelineSyntaxError, match=r"pass 'affine-loop-fusion': option 'mode': "
                                                  r"'bogus' is not one of its values"):
        plan(parse_pipeline("builtin.module(func.func(affine-loop-fusion{mode=bogus}))"))
    assert capfd.readouterr().err == ""  # LLVM's own print was captured, not leaked


def test_the_fragile_unroll_jam_cannot_kill_accel_opt(tmp_path: Path) -> None:
    _, result = _opt_run(tmp_path, "builtin.module(func.func(affine-loop-unroll-jam"
                                   "{unroll-jam-factor=0}))")
    _one_clean_error(result, r"error: option 'unroll-jam-factor' of pass "
                             r"'affine-loop-unroll-jam': 0 is out of range")


def test_a_crashing_upstream_pass_runs_in_a_child_and_fails_cleanly(tmp_path: Path) -> None:
    """affine-loop-fusion segfaults on this shape (test_affine_fusion.CRASH_SHAPE); as a
    fragile pass it runs in a forked child, so accel-opt reports it and lives."""
    from test_affine_fusion import CRASH_SHAPE

    pipeline = ("builtin.module(func.func(affine-loop-tile{tile-size=8},"
                "affine-loop-fusion{mode=sibling}))")
    path, result = _opt_run(tmp_path, pipeline, CRASH_SHAPE)
    _assert_crashed(path, result, pipeline, "SIGSEGV")
    first, *notes = result.stderr.strip().splitlines()
    assert first.endswith(" on this input"), first
    assert all(n.startswith(f"{path}: note: ") for n in notes) and notes  # at the error
    assert "Fatal Python" not in result.stderr


def test_convert_to_llvm_under_func_func_fails_cleanly(tmp_path: Path) -> None:
    pipeline = "builtin.module(func.func(convert-to-llvm))"
    _assert_crashed(*_opt_run(tmp_path, pipeline), pipeline, "SIGSEGV")


def test_isolated_upstream_steps_give_the_in_process_result(ctx) -> None:
    from accel.ir import Module, ir
    from accel.pass_run import RunConfig
    from accel.pipeline import run_pipeline

    pipeline = "builtin.module(cse,func.func(affine-loop-tile{tile-sizes=4}),canonicalize)"
    module = Module.parse(AFFINE)
    module.operation.attributes["test.kept"] = ir.UnitAttr.get()
    run_pipeline(module, pipeline, cfg=RunConfig(reproducer=False))
    text = str(module)
    assert "affine.for %arg2 = 0 to 16 step 4" in text and "test.kept" in text


def test_warnings_of_an_isolated_step_are_relayed(ctx) -> None:
    from accel.ir import Module
    from accel.pass_run import Element, RunConfig, UpstreamStep, _run_isolated

    module = Module.parse(AFFINE)
    cfg = RunConfig(filename="a.mlir", reproducer=False)
    step = UpstreamStep(("func.func",), [Element("affine-data-copy-generate",
                                                 "fast-mem-capacity=0")])
    _run_isolated(module.operation, step, cfg)
    assert [(d.severity, d.file, d.line) for d in cfg.emitted] == [("warning", "a.mlir", 2)]
    assert "exceeds fast memory capacity" in cfg.emitted[0].message
    assert "memref.alloc" in str(module)  # the copy buffers the pass added


# -- item 3: pipeline grammar -----------------------------------------------------------------
def _accel_opt(capfd, *argv: str, text: str = AFFINE, tmp: Path) -> tuple[int, str]:
    from accel.cli import run_main
    from accel.tools.accel_opt import main

    path = tmp / "in.mlir"
    path.write_text(text)
    code = run_main(main, [str(path), *argv])
    return code, capfd.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["-cse", "-bogus-pass"], "accel-opt: Unknown command line argument '-bogus-pass'."),
    (["-cse", "-bogus-pass(builtin.module())"],
     "accel-opt: Unknown command line argument '-bogus-pass(builtin.module())'."),
    (["--pass-pipeline=builtin.module(cse, bogus-pass(builtin.module()))"],
     "<pass-pipeline>:1:21: error: unknown pass or pipeline 'bogus-pass'"),
    (["--pass-pipeline=builtin.module(csee(func.func()))"],
     "<pass-pipeline>:1:16: error: unknown pass or pipeline 'csee' (did you mean 'cse'?)"),
    (["--pass-pipeline=builtin.module(cse(func.func(cse)))"],
     "<pass-pipeline>:1:16: error: pass 'cse' takes no nested pipeline"),
    (["--pass-pipeline="], "<pass-pipeline>:1:1: error: empty pass pipeline '': it names no "
                           "pass (to only parse, verify and print the input, leave out "
                           "--pass-pipeline)"),
    (["--pass-pipeline=builtin.module()"], "error: empty pass pipeline 'builtin.module()'"),
    (["-accel-reduce-reduce-fusion=block-size=99999999999999999999"],
     "error: option 'block-size' of pass 'accel-reduce-reduce-fusion': 99999999999999999999 "
     "is out of range (min -9223372036854775808, max 9223372036854775807)"),
    (["-accel-reduce-reduce-fusion=block-size=1_0"],
     "error: pass 'accel-reduce-reduce-fusion': bad value '1_0' for option 'block_size'"),
    (["-accel-reduce-reduce-fusion=block-size=\u0661\u0660"],
     "error: pass 'accel-reduce-reduce-fusion': bad value '\u0661\u0660' for option"),
])
def test_pipeline_grammar_errors(capfd, tmp_path: Path, argv: list[str], message: str) -> None:
    code, err = _accel_opt(capfd, *argv, tmp=tmp_path)
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_a_plugin_may_not_shadow_an_upstream_pass(capfd, tmp_path: Path) -> None:
    plugin = tmp_path / "shadow.py"
    plugin.write_text(textwrap.dedent('''\
        from dataclasses import dataclass
        from accel.passes import ModulePass, register_pass


        @register_pass
        @dataclass(frozen=True)
        class MyCse(ModulePass):
            """Not the real CSE."""

            name = "cse"

            def apply(self, module) -> None:
                pass
        '''))
    code, err = _accel_opt(capfd, f"--load-pass-plugin={plugin}", "-cse", tmp=tmp_path)
    assert code == 1
    assert err.strip().startswith(f"{plugin}:")  # at the class, in the plugin file
    assert err.strip().endswith(": error: loading pass plugin failed: ValueError: pass name "
                                "'cse' of class MyCse shadows the upstream MLIR pass 'cse' "
                                "(Eliminate common sub-expressions); choose another name")
    from accel.passes import lookup_pass

    assert lookup_pass("cse") is None


# -- item 5: number grammars --------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["2x3xf32=1_0", "2x3xf32=\u0661", "2x3xf32=\uff11",
                                  "\uff12x3xf32=1", "i8=0b1", "i8=0o7", "i8=1_0",
                                  "i8=\u0663", "2x3xf32=0x10"])
def test_accel_run_inputs_take_plain_ascii_numbers(spec: str) -> None:
    from accel.tools.accel_run import parse_input

    with pytest.raises(AccelError, match=r"--input '.*': "):
        parse_input(spec)


@pytest.mark.parametrize(("text", "message"), [
    ("((4 _PE:1, 2:1), (2_W:1))", "column 5: no space may separate '4' from '_' in '4_LEVEL'"),
    ("((\uff14_PE:1, 2:1), (2_W:1))", "column 3: expected a factor size (a positive integer)"),
    ("((\u0664_PE:1, 2:1), (2_W:1))", "column 3: expected a factor size (a positive integer)"),
    ("((4_PE:\u0661, 2:1), (2_W:1))", "column 8: expected a stride (a non-negative integer)"),
    ("((99999999999999999999_PE:1), (2_W:1))",
     "column 3: 99999999999999999999 is out of range (max 9223372036854775807)"),
])
def test_mncore_layout_grammar_is_strict(text: str, message: str) -> None:
    from accel.dialects.mncore_layout import Layout, LayoutSyntaxError

    with pytest.raises(LayoutSyntaxError) as info:
        Layout.parse(text)
    assert str(info.value).startswith(message), str(info.value)
    assert str(Layout.parse("((4_PE:1, 2 : 1), (2_W:1))")) == "((4_PE:1, 2:1), (2_W:1))"


@pytest.mark.parametrize("value", ["1_0", "\uff18", " 8x", "0x8"])
def test_codegen_integers_are_plain_ascii(value: str) -> None:
    from accel.targets.mncore.option_json import int_env

    with pytest.raises(AccelError, match=r"CODEGEN_SA_STEPS=.*: expected an integer"):
        int_env({"CODEGEN_SA_STEPS": value}, "CODEGEN_SA_STEPS", 1)
    assert int_env({"CODEGEN_SA_STEPS": "12"}, "CODEGEN_SA_STEPS", 1) == 12
    with pytest.raises(AccelError, match=r"CODEGEN_MAX_TIME_SLICE='0': must be at least 1"):
        int_env({"CODEGEN_MAX_TIME_SLICE": "0"}, "CODEGEN_MAX_TIME_SLICE", 256, minimum=1)
