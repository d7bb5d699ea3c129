"""What each kind of fuzz case runs (`run_case`), for the families of `fz_cases.py`."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import fz_damage
import fz_mutate
from fz_execute import (
    Env,
    Result,
    check_add,
    check_model,
    classify_exception,
    clean,
    cli_case,
    defect,
    expecting,
    guarded,
    ok,
    substitute,
)
from fz_fixtures import ADD_MLIR

Native = Callable[[], str]


def run_case(case: dict[str, Any], env: Env, native: Native) -> Result:
    """Run `case`; the classification of its outcome."""
    kind = case["kind"]
    if kind.startswith("api-"):
        import fz_api

        return fz_api.run(case, env)
    if kind.startswith("artifact-"):
        return fz_damage.run(case, env, native)
    return _KINDS[kind](case, env, native)


# -- ir and pipelines -----------------------------------------------------------------------
def _text(case: dict[str, Any]) -> str:
    """The case's MLIR text (deeply nested inputs are made here from `nest`)."""
    if "nest" in case:
        return fz_mutate.deep_nesting(*case["nest"])
    return case["text"]


def _input_file(env: Env, text: str) -> str:
    path = env.work / "input.mlir"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return str(path)


def _accel_opt(case: dict[str, Any], env: Env, native: Native) -> Result:
    source = str(env.fixtures / case["input"]) if "input" in case else _input_file(
        env, _text(case))
    return cli_case(env, "accel-opt", [source, *case["args"]], case, native)


def _accel_run(case: dict[str, Any], env: Env, native: Native) -> Result:
    return cli_case(env, "accel-run", [_input_file(env, _text(case)), *case["args"]], case,
                    native)


def _compile_mlir(case: dict[str, Any], env: Env, native: Native) -> Result:
    from accel.host.compile import compile_mlir

    def body() -> Result:
        compile_mlir(_text(case), {"cache": False, "filename": "input.mlir"})
        return expecting(ok(), case)

    return guarded(body)


# -- options --------------------------------------------------------------------------------
def _options_compile_mlir(case: dict[str, Any], env: Env, native: Native) -> Result:
    from accel.host.compile import compile_mlir

    options = substitute(case["options"], env)

    def body() -> Result:
        compiled = compile_mlir(ADD_MLIR, dict(options))
        return expecting(check_add(compiled, env, options), case)

    return guarded(body)


def _options_compile(case: dict[str, Any], env: Env, native: Native) -> Result:
    import accel
    import torch

    options = substitute(case["options"], env)

    def body() -> Result:
        model, x, _ = _model(env)
        compiled = accel.compile(model, (torch.from_numpy(x),), options=dict(options))
        return expecting(check_model(compiled, env, options), case)

    return guarded(body)


def _model(env: Env) -> tuple[Any, Any, Any]:
    from fz_execute import model_reference

    return model_reference(env)


def _accel_compile(case: dict[str, Any], env: Env, native: Native) -> Result:
    source = case["source"]
    argv = [str(env.fixtures / source), "--output-folder", str(env.work / "out"), "-q",
            *substitute(case["options"], env)]
    if source.endswith(".py"):
        argv.append("--inference")
    return cli_case(env, "accel-compile", argv, case, native)


# -- grammar --------------------------------------------------------------------------------
def _layout(case: dict[str, Any], env: Env, native: Native) -> Result:
    from accel.dialects.mncore_layout import Layout

    def body() -> Result:
        layout = Layout.parse(case["text"])
        again = Layout.parse(str(layout))
        if again != layout:
            return defect("layout does not round-trip", f"{case['text']!r} -> {layout}")
        layout.check(tuple(case["shape"]), "f32", "lm")
        return ok()

    return guarded(body)


def _layout_ir(case: dict[str, Any], env: Env, native: Native) -> Result:
    text = case["text"].replace("\\", "\\\\").replace('"', '\\"')
    shape = "x".join(str(d) for d in case["shape"]) or "4"
    ir = (f"func.func @f(%a: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{\n"
          f'  %0 = "mncore.annotate"(%a) {{layout = #mncore.layout<"{text}">, '
          f'memory = "lm"}} : (tensor<{shape}xf32>) -> tensor<{shape}xf32>\n'
          f"  return %0 : tensor<{shape}xf32>\n}}\n")
    return cli_case(env, "accel-opt", [_input_file(env, ir), "-mncore-strip-layouts"], case,
                    native)


def _rules(case: dict[str, Any], env: Env, native: Native) -> Result:
    from importlib import resources

    from accel.passes.rdu.rules import RULES_PACKAGE, parse_rules

    text = case.get("text")
    if text is None:
        shipped = resources.files(RULES_PACKAGE).joinpath(f"rules/{case['shipped']}.yaml")
        rng = random.Random(case["mutations_seed"])
        text, names = fz_mutate.mutate(shipped.read_text("utf-8"), rng)
        case["mutations"] = names

    def body() -> Result:
        parse_rules(text, "fuzz.yaml")
        return ok()

    return guarded(body)


def _run_input(case: dict[str, Any], env: Env, native: Native) -> Result:
    shape_type = case["spec"].split("=", 1)[0]
    ir = ("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
          "  return %a : tensor<4xf32>\n}\n")
    return cli_case(env, "accel-run", [_input_file(env, ir), "--input", case["spec"]],
                    {**case, "expect": case.get("expect", "any")
                     if shape_type else "error"}, native)


def _selftest(case: dict[str, Any], env: Env, native: Native) -> Result:
    """The harness's own test (test_fuzz_slice.py): a crash, a hang, a traceback."""
    import os
    import signal
    import time

    what = case["what"]
    if what == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == "hang":
        time.sleep(3600)
    if what == "traceback":
        return cli_case(env, "accel-opt", ["--load-pass-plugin=/nonexistent.py"], case,
                        lambda: "Traceback (most recent call last):\n")
    return guarded(lambda: {}["missing"])


_KINDS: dict[str, Callable[[dict[str, Any], Env, Native], Result]] = {
    "selftest": _selftest,
    "accel-opt": _accel_opt, "accel-run": _accel_run, "compile_mlir": _compile_mlir,
    "options-compile_mlir": _options_compile_mlir, "options-compile": _options_compile,
    "accel-compile": _accel_compile, "layout": _layout, "layout-ir": _layout_ir,
    "rules": _rules, "run-input": _run_input,
}

__all__ = ["classify_exception", "clean", "run_case"]
