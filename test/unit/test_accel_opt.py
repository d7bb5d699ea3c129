"""accel-opt as users run it: errors are located one-liners with exit 1, never tracebacks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_tool

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "test" / "Tools" / "accel-opt" / "Inputs" / "tag_funcs.py"
LOCATED = re.compile(r"^(\S+?):(\d+):(\d+): error: .+")

GOOD = "func.func @f(%a: f32) -> f32 {\n  %0 = arith.addf %a, %a : f32\n  return %0 : f32\n}\n"


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    return path


@pytest.mark.parametrize("text, line, col", [
    ("func.func @f() {\n  %0 = foo\n}\n", 2, 8),  # unknown op
    ("func.func @f(%a: i32) -> f32 {\n  return %a : i32\n}\n", 2, 3),  # verifier
    ("func.func @f( {\n", 1, 14),  # syntax (MLIR points just before the brace)
    ('"x.y"() : () -> ()\n', 1, 1),  # unregistered dialect
])
def test_bad_ir_is_a_located_error(tmp_path: Path, text: str, line: int, col: int) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    result = run_tool("accel-opt", str(path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    first = result.stderr.splitlines()[0]
    m = LOCATED.match(first)
    assert m, first
    assert (m.group(1), int(m.group(2))) == (str(path), line)
    assert int(m.group(3)) >= 1 and (col == 1 or int(m.group(3)) == col)


@pytest.mark.parametrize("args, message", [
    (["-no-such-pass"], "Unknown command line argument '-no-such-pass'"),
    (["--pass-pipeline=builtin.module(cse"], "expected pass pipeline to be wrapped with the "
                                             "anchor operation type"),
    (["--pass-pipeline=builtin.module(func.func(cse)"], "encountered unbalanced parentheses"),
    (["--canonicalize=bogus=1"], "no such option bogus"),
    ([f"--load-pass-plugin={PLUGIN}", "-tag-funcs{nope=1}"], "unknown option 'nope'"),
    ([f"--load-pass-plugin={PLUGIN}", "-crash-in-python"], "raised RuntimeError: plugin bug"),
    ([f"--load-pass-plugin={PLUGIN}", "-reject-addf"], "arith.addf is not allowed here"),
    (["--load-pass-plugin=/no/such/plugin.py"], "cannot load pass plugin"),
])
def test_bad_invocations_fail_cleanly(good: Path, args: list[str], message: str) -> None:
    result = run_tool("accel-opt", str(good), *args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert message in result.stderr.splitlines()[0]
    assert result.stdout == ""


def test_missing_input_file(tmp_path: Path) -> None:
    result = run_tool("accel-opt", str(tmp_path / "absent.mlir"))
    assert result.returncode == 1
    assert result.stderr.strip() == f"cannot open input file '{tmp_path / 'absent.mlir'}': " \
                                    "No such file or directory"  # mlir-opt's words


def test_stdin_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    result = run_tool("accel-opt", "-", "-cse", "-o", str(out), input=GOOD)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "arith.addf %arg0, %arg0 : f32" in out.read_text()


@pytest.mark.parametrize("arg", ["-canonicalize{", "-canonicalize{max-iterations=3"])
def test_unclosed_pass_options_are_an_error(good: Path, arg: str) -> None:
    # Found by the fuzz harness (seed 7): the pass used to run with no options at all.
    result = run_tool("accel-opt", str(good), arg, "-cse")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip() == (
        "accel-opt: for the -canonicalize option: options must be written "
        "-canonicalize{opt=value ...} or --canonicalize=\"opt=value ...\"; "
        f"got '{arg}'")
    assert run_tool("accel-opt", str(good), "-canonicalize{max-iterations=3}").returncode == 0


@pytest.mark.parametrize("pipeline, named", [
    ("builtin.module(sparse-vectorization)", "pass 'sparse-vectorization'"),
    ("builtin.module(func.func(cse),sparse-vectorization)", "sparse-vectorization"),
])
def test_a_pass_failing_without_a_diagnostic_is_a_named_error(
        good: Path, pipeline: str, named: str) -> None:
    # sparse-vectorization without `vl` only signals failure; mlir-opt prints nothing, and
    # accel-opt printed just the reproducer's notes (found by the fuzz harness, seed 7).
    result = run_tool("accel-opt", str(good), f"--pass-pipeline={pipeline}")
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{good}: error: ") and first.endswith(
        "failed without a diagnostic"), result.stderr
    assert named in first
    assert f"{good}: note: reproduce with: accel-opt" in result.stderr


def test_a_silent_pass_failure_is_a_named_accel_error_in_the_api() -> None:
    """The same error for `accel.pipeline.run_pipeline` callers, the file named."""
    from accel.context import make_context
    from accel.diagnostics import AccelError
    from accel.ir import Module
    from accel.pipeline import run_pipeline

    with make_context():
        module = Module.parse(GOOD)
        with pytest.raises(AccelError, match=r"^pass 'sparse-vectorization' failed without a "
                                             r"diagnostic$") as info:
            run_pipeline(module, "builtin.module(sparse-vectorization)", filename="m.mlir")
    assert info.value.diagnostics[0].file == "m.mlir"


def test_stdin_errors_are_named_stdin() -> None:
    result = run_tool("accel-opt", input="func.func @f() {\n  %0 = foo\n}\n")
    assert result.returncode == 1
    assert result.stderr.startswith("<stdin>:2:8: error:")


def test_list_passes_shows_accel_and_plugin_passes() -> None:
    result = run_tool("accel-opt", f"--load-pass-plugin={PLUGIN}", "--list-passes")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert re.search(r"^  accel-emit-c-interface\s+- Adds `llvm.emit_c_interface`", text, re.M)
    assert re.search(r"^  tag-funcs\s+- Adds a unit attribute `tag` to every func.func", text, re.M)
    assert re.search(r"^    --attr=<str> \(default: tag\)", text, re.M)
    assert re.search(r"^    --include-declarations=<bool> \(default: false\)", text, re.M)


def test_list_passes_shows_upstream_passes() -> None:
    text = run_tool("accel-opt", "--list-passes").stdout
    for name in ("canonicalize", "cse", "lower-affine", "convert-linalg-to-loops",
                 "one-shot-bufferize", "affine-loop-fusion", "convert-to-llvm"):
        assert re.search(rf"^  {re.escape(name)}\s+- \S", text, re.M), name
    assert re.search(r"^    --max-iterations=<\w+> \(default: 10\)", text, re.M)


# -- issue 28: accel-opt as a drop-in mlir-opt -------------------------------------------------
def _bundled_mlir_opt() -> str:
    from accel.ir import bindings_opt_tool

    return bindings_opt_tool()


VERIFY_CASES = """\
// Stacked @below designators bind to the next line without a designator.
// expected-error@below {{custom op 'foo' is unknown}}
// expected-error@below {{nothing}}
%0 = foo
// -----
func.func @near_miss(%a: i32) -> f32 {
  // expected-warning@+1 {{type of return operand}}
  return %a : i32
}
// -----
func.func @unexpected(%a: i32) -> f32 {
  return %a : i32
}
// -----
func.func @bad_regex() {
  // expected-error-re@+1 {{unbalanced {{(}}
  return
}
// -----
func.func @above(%a: i32) {
  return %a : i32
  // expected-error@above {{'func.return' op has 1 operands}}
}
// -----
// expected-note@+1 {{see existing symbol definition here}}
func.func @g() { return }
// expected-error@+1 {{redefinition of symbol named 'g'}}
func.func @g() { return }
// -----
// ----
func.func @n(%a: i32) {
  // expected-remark@unknown {{never}}
  return
}
"""


@pytest.mark.parametrize("flags", [["--verify-diagnostics"],
                                   ["--verify-diagnostics=only-expected"],
                                   ["--verify-diagnostics=all", "--mlir-disable-threading"],
                                   []])
def test_diagnostics_and_splitting_match_the_bundled_mlir_opt(tmp_path: Path,
                                                             flags: list[str]) -> None:
    """The same stdout, stderr and exit code as the real mlir-opt driver of the bundled MLIR
    (torch-mlir-opt) on expectations of every kind, near misses and split markers."""
    import subprocess

    path = tmp_path / "v.mlir"
    path.write_text(VERIFY_CASES)
    args = [str(path), "--split-input-file", *flags]
    ref = subprocess.run([_bundled_mlir_opt(), *args], capture_output=True, text=True)
    got = run_tool("accel-opt", *args)
    assert got.returncode == ref.returncode == 1
    assert got.stdout == ref.stdout
    if flags:  # without verify mode the bundled driver checks expectations too (a bug)
        assert got.stderr == ref.stderr
    assert "near miss with file split marker" in got.stderr


def test_verify_diagnostics_accepts_a_correct_file_and_ignores_current_op_notes(
        tmp_path: Path) -> None:
    path = tmp_path / "ok.mlir"
    path.write_text("func.func private @two() -> (i32, f32)\n"
                    "func.func @call() {\n"
                    "  // expected-error@below {{op result type mismatch at index 0}}\n"
                    "  // expected-note@below {{op result types: 'f32', 'i32'}}\n"
                    "  // expected-note@below {{function result types: 'i32', 'f32'}}\n"
                    "  %0:2 = call @two() : () -> (f32, i32)\n"
                    "  return\n"
                    "}\n")
    result = run_tool("accel-opt", str(path), "--verify-diagnostics")
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    plain = run_tool("accel-opt", str(path))  # outside verify mode the note is printed
    assert "note: see current operation:" in plain.stderr
    path.write_text(path.read_text().replace("index 0}}", "index 1}}"))  # now it must fail
    wrong = run_tool("accel-opt", str(path), "--verify-diagnostics")
    assert wrong.returncode == 1
    assert "error: unexpected error: 'func.call' op result type mismatch at index 0" in \
        wrong.stderr


@pytest.mark.parametrize("args, output", [
    (["--allow-unregistered-dialect=true", "--mlir-print-op-generic=true", "-p",
      "builtin.module(cse)"], '"func.func"() <{{function_type'),
    (["-mlir-print-local-scope", "-mlir-print-debuginfo", "--cse"], 'loc("{path}":2:8)'),
    (["--mlir-elide-elementsattrs-if-larger=2", "-cse"], "dense_resource<__elided__>"),
    (["-verify-each=false", "--mlir-disable-threading", "-canonicalize=max-iterations=1"],
     "return %0 : f32"),
    (["--split-input-file=// =====", "--output-split-marker=// SPLIT"], "// SPLIT\n"),
])
def test_mlir_opt_flags_take_effect(tmp_path: Path, args: list[str], output: str) -> None:
    path = tmp_path / "in.mlir"
    path.write_text(GOOD + "func.func @c() -> tensor<4xf32> {\n  %c = arith.constant dense<"
                    "[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>\n  return %c : tensor<4xf32>\n}\n"
                    "// =====\nfunc.func @h() { return }\n")
    result = run_tool("accel-opt", str(path), *args)
    assert result.returncode == 0, result.stderr
    assert output.format(path=path) in result.stdout


@pytest.mark.parametrize("args, first_line", [
    (["--log-actions-to=-"], "accel-opt: option '--log-actions-to' is not supported by "
                             "accel-opt: MLIR's action framework"),
    (["-mlir-print-value-users"], "option '--mlir-print-value-users' is not supported"),
    (["--mlir-disable-threadin"], "accel-opt: Unknown command line argument "
                                  "'--mlir-disable-threadin'.  Try: 'accel-opt --help'"),
    (["--allow-unregistered-dialect=yes"], "accel-opt: for the --allow-unregistered-dialect "
                                           "option: 'yes' is invalid value for boolean argument!"),
    (["--mlir-timing-display=flat"], "Cannot find option named 'flat'!"),
    (["-o"], "accel-opt: for the -o option: requires a value!"),
])
def test_unsupported_and_unknown_flags_are_refused_in_one_line(good: Path, args: list[str],
                                                               first_line: str) -> None:
    result = run_tool("accel-opt", str(good), *args)
    assert result.returncode == 1
    assert first_line in result.stderr.splitlines()[0]
    assert "unknown pass" not in result.stderr and result.stdout == ""


def test_every_flag_of_the_bundled_mlir_opt_is_known() -> None:
    """Each option the bundled mlir-opt driver lists is in accel-opt's table (supported or
    refused by name), never an unknown argument or a pass name."""
    import subprocess

    from accel.tools.opt_flags import BY_NAME

    text = subprocess.run([_bundled_mlir_opt(), "--help-hidden"], capture_output=True,
                          text=True).stdout
    general = text.split("Compiler passes to run")[0] + text.split("Generic Options:")[1]
    names = set(re.findall(r"^  -{1,2}([a-z][\w-]*)", general, re.M))
    assert len(names) > 100
    assert not names - set(BY_NAME), sorted(names - set(BY_NAME))


def test_timing_list_and_json_and_ir_printing_scope(good: Path) -> None:
    import json

    listing = run_tool("accel-opt", str(good), "-p", "builtin.module(func.func(cse))",
                       "--mlir-timing", "--mlir-timing-display=list")
    assert re.search(r"^\s+\d\.\d{4} \(\s*[\d.]+%\)  CSEPass$", listing.stderr, re.M)
    as_json = run_tool("accel-opt", str(good), "-p", "builtin.module(func.func(cse))",
                       "--mlir-timing", "--mlir-output-format=json")
    names = [t["name"] for t in json.loads(as_json.stderr)]
    assert names[0] == "Parser" and names[-2:] == ["Rest", "Total"], names
    dumps = run_tool("accel-opt", str(good), "-p", "builtin.module(func.func(cse),canonicalize)",
                     "--mlir-print-ir-before=cse", "-o", "/dev/null").stderr
    assert dumps.startswith("// -----// IR Dump Before CSEPass: cse //----- //\nfunc.func @f")
    assert "canonicalize" not in dumps
    scoped = run_tool("accel-opt", str(good), "-p", "builtin.module(func.func(cse))",
                      "--mlir-print-ir-after=cse", "--mlir-print-ir-module-scope").stderr
    assert "('func.func' operation: @f) //----- //\nmodule {" in scoped


def test_dump_pass_pipeline_spells_out_every_option(good: Path) -> None:
    result = run_tool("accel-opt", str(good), "-p=builtin.module(func.func(cse),inline)",
                      "-dump-pass-pipeline")
    assert result.stderr.startswith(
        "Pass Manager with 2 passes:\nbuiltin.module(\n  func.func(\n    cse\n  ),\n"
        "  inline{default-pipeline=canonicalize inlining-threshold=4294967295 "
        "max-iterations=4 }\n)\n")


def test_crash_reproducer_round_trips_through_run_reproducer(good: Path, tmp_path: Path) -> None:
    repro = tmp_path / "repro.mlir"
    failed = run_tool("accel-opt", str(good), f"--load-pass-plugin={PLUGIN}", "-cse",
                      "-reject-addf", f"--mlir-pass-pipeline-crash-reproducer={repro}")
    assert failed.returncode == 1
    assert f"reproducer generated at `{repro}`" in failed.stderr
    assert 'pipeline: "builtin.module(cse,reject-addf)"' in repro.read_text()
    again = run_tool("accel-opt", str(repro), f"--load-pass-plugin={PLUGIN}", "--run-reproducer")
    assert again.returncode == 1 and "arith.addf is not allowed here" in again.stderr


# -- reproducers, dump order, files: as the bundled mlir-opt (torch-mlir-opt) ------------------
FAILING = """\
module {
  func.func private @private_symbol()
  func.func @f() -> i32 {
    %0 = arith.constant 1 : i32
    %1 = arith.constant 1 : i32
    %2 = arith.addi %0, %1 : i32
    return %2 : i32
  }
  "foo.possibly_unknown_symbol_table"() ({
  }) : () -> ()
}
"""
FAILING_PIPELINE = "--pass-pipeline=builtin.module(func.func(cse),symbol-dce)"


def _both(tmp_path: Path, *args: str) -> tuple[object, object]:
    """accel-opt and torch-mlir-opt on FAILING (symbol-dce fails on it, after cse)."""
    import subprocess

    path = tmp_path / "fail.mlir"
    path.write_text(FAILING)
    argv = [str(path), "--allow-unregistered-dialect", FAILING_PIPELINE, *args]
    ref = subprocess.run([_bundled_mlir_opt(), *argv], capture_output=True, text=True)
    return run_tool("accel-opt", *argv), ref


def _without_accel_notes(stderr: str) -> str:
    """accel-opt adds its own reproducer notes (a temporary file) to a failed pass's error."""
    return "".join(ln for ln in stderr.splitlines(keepends=True) if "accel-repro-" not in ln)


@pytest.mark.parametrize("flags", [
    ["--mlir-print-ir-after-failure"],
    ["--mlir-print-ir-after-all", "--mlir-print-ir-before=symbol-dce"],
    ["--mlir-print-ir-after=cse", "--mlir-print-ir-module-scope"]])
def test_ir_dumps_and_a_failed_pass_error_print_in_mlir_opt_order(tmp_path: Path,
                                                                  flags: list[str]) -> None:
    got, ref = _both(tmp_path, "--mlir-disable-threading", *flags)
    assert got.returncode == ref.returncode == 1  # type: ignore[attr-defined]
    assert "IR Dump" in got.stderr  # type: ignore[attr-defined]
    assert _without_accel_notes(got.stderr) == ref.stderr  # type: ignore[attr-defined]


@pytest.mark.parametrize("local", [False, True])
def test_crash_reproducers_match_the_bundled_mlir_opt(tmp_path: Path, local: bool) -> None:
    """The global reproducer holds the whole pipeline; the local one only the pass that failed
    (symbol-dce) and the IR just before it (after cse). Errors and notes read the same."""
    mine, theirs = tmp_path / "mine.mlir", tmp_path / "theirs.mlir"
    extra = ["--mlir-pass-pipeline-local-reproducer", "--mlir-disable-threading"] if local else []
    got, _ = _both(tmp_path, f"--mlir-pass-pipeline-crash-reproducer={mine}", *extra)
    _, ref = _both(tmp_path, f"--mlir-pass-pipeline-crash-reproducer={theirs}", *extra)
    assert got.returncode == ref.returncode == 1  # type: ignore[attr-defined]
    assert got.stderr.replace(str(mine), "R") == ref.stderr.replace(str(theirs), "R")  # type: ignore[attr-defined]
    text = mine.read_text()
    assert ("symbol-dce)" in text) and (("cse" in text) != local)
    if local:
        assert text == theirs.read_text()
        assert "%c1_i32 = arith.constant 1 : i32\n    %0 = arith.addi %c1_i32, %c1_i32" in text


def test_local_reproducer_needs_threading_off(good: Path, tmp_path: Path) -> None:
    result = run_tool("accel-opt", str(good), "-cse", "--mlir-pass-pipeline-local-reproducer",
                      f"--mlir-pass-pipeline-crash-reproducer={tmp_path / 'r.mlir'}")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "<unknown>:0: error: Local crash reproduction may not be used " \
                            "without disabling mutli-threading first.\n"


def test_run_reproducer_reads_a_pipeline_with_braces_and_comments(good: Path,
                                                                  tmp_path: Path) -> None:
    path = tmp_path / "r.mlir"
    path.write_text(GOOD + '{-#\n  external_resources: {\n    mlir_reproducer: {\n'
                    '      // a comment: builtin.module(bogus)\n      verify_each: true,\n'
                    '      pipeline: "builtin.module(func.func(canonicalize{max-iterations=1 '
                    'top-down=false}))",\n      disable_threading: true\n    }\n  }\n#-}\n')
    result = run_tool("accel-opt", str(path), "--run-reproducer", "-dump-pass-pipeline")
    assert result.returncode == 0, result.stderr
    assert "canonicalize{" in result.stderr and "max-iterations=1 " in result.stderr
    assert "bogus" not in result.stderr


def test_unwritable_output_is_refused_first_in_mlir_opt_words(good: Path,
                                                              tmp_path: Path) -> None:
    target = tmp_path / "no" / "out.mlir"
    result = run_tool("accel-opt", str(good), "-cse", "-o", str(target))
    assert result.returncode == 1
    assert result.stderr == f"cannot open output file '{target}': No such file or directory\n"
    fine = tmp_path / "fine.mlir"
    failed = run_tool("accel-opt", str(good), "--pass-pipeline=bogus(", "-o", str(fine))
    assert failed.returncode == 1 and not fine.exists()  # probed, then removed again


def test_ir_tree_dir_keeps_only_the_passes_asked_for(good: Path, tmp_path: Path) -> None:
    import subprocess

    trees = {}
    for tool in ("accel", "bundled"):
        root = tmp_path / tool
        argv = [str(good), f"--mlir-print-ir-tree-dir={root}", "--mlir-disable-threading",
                "--pass-pipeline=builtin.module(func.func(cse,canonicalize,cse))",
                "--mlir-print-ir-after=cse"]
        if tool == "accel":
            assert run_tool("accel-opt", *argv).returncode == 0
        else:
            subprocess.run([_bundled_mlir_opt(), *argv], check=True, capture_output=True)
        trees[tool] = sorted(str(p.relative_to(root)) for p in root.rglob("*.mlir"))
    assert trees["accel"] == trees["bundled"]
    assert len(trees["accel"]) == 2 and all(t.endswith("_cse.mlir") for t in trees["accel"])
