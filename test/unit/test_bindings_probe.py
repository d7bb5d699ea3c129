"""Probes of the binding features accel relies on, so a wheel upgrade fails here, in one place."""

from __future__ import annotations

from accel.ir import (
    Context,
    ExternalPass,
    MLIRError,
    Module,
    PassManager,
    dialects,
    ir,
    provider_version,
    rewrite,
    translate_to_llvmir,
)

SRC = "func.func @f(%a: f32) -> f32 {\n  %0 = arith.addf %a, %a : f32\n  return %0 : f32\n}\n"


def test_pinned_provider() -> None:
    assert provider_version() == "20261001"


def test_parse_errors_carry_located_diagnostics() -> None:
    with Context():
        try:
            Module.parse("func.func @f() {\n  %0 = foo\n}")
        except MLIRError as err:
            diag = err.error_diagnostics[0]
            assert str(diag.location) == 'loc("-":2:8)'
            assert "custom op 'foo' is unknown" in diag.message
        else:
            raise AssertionError("parse should fail")


def test_python_passes_mix_with_textual_pipelines() -> None:
    seen: list[str] = []

    def py_pass(op: ir.Operation, p: ExternalPass) -> None:
        seen.append(op.name)

    with Context():
        module = Module.parse(SRC)
        pm = PassManager("builtin.module")
        pm.add("func.func(cse)")
        pm.add(py_pass, name="probe", argument="probe")
        pm.add("canonicalize")
        assert "func.func(cse),probe,canonicalize{" in str(pm)
        pm.run(module.operation)
    assert seen == ["builtin.module"]


def test_pass_failure_signal_raises_mlir_error() -> None:
    def failing(op: ir.Operation, p: ExternalPass) -> None:
        op.location.emit_error("nope")
        p.signal_pass_failure()

    with Context():
        module = Module.parse(SRC)
        pm = PassManager("builtin.module")
        pm.add(failing, name="failing")
        try:
            pm.run(module.operation)
        except MLIRError as err:
            assert err.error_diagnostics[0].message == "nope"
        else:
            raise AssertionError("pass should fail")


def test_unknown_pass_and_option_raise_value_error() -> None:
    with Context():
        for text, message in (("builtin.module(nosuch)", "does not refer to a registered pass"),
                              ("builtin.module(cse{x=1})", "no such option x")):
            try:
                PassManager.parse(text)
            except ValueError as err:
                assert message in str(err)
            else:
                raise AssertionError(text)


def test_rewrite_and_ext_modules_exist() -> None:
    assert hasattr(rewrite, "RewritePatternSet")
    assert hasattr(dialects.ext, "Dialect") and hasattr(dialects.ext, "Operation")


def test_llvm_translation() -> None:
    with Context():
        module = Module.parse(SRC)
        PassManager.parse("builtin.module(convert-to-llvm)").run(module.operation)
        text = translate_to_llvmir(module)
    assert "define float @f(float" in text
    assert "fadd float" in text
