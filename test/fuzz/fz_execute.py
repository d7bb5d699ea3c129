"""Running one fuzz case inside a worker process and classifying what happened.

Outcomes (docs/fuzzing.md):
  ok      it worked (and, where the case can check numerics, the result is right)
  clean   a clean refusal: AccelError/TypeError/ValueError/MemoryError/NotImplementedError
          with a message, or a CLI exit != 0 with an `error:` line and no traceback
  defect  a traceback, "internal error", a leaked Python warning, an unexpected exception
          type, a wrong result, success where an error is due; signals and hangs are seen
          by the parent (`fz_pool.py`) and attributed to the case that was running
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Result = dict[str, Any]


@dataclass
class Env:
    """A worker's surroundings: fixtures, its scratch folder, objects reused across cases,
    and `notify` (tells the parent that the case now runs the input's own code)."""

    fixtures: Path
    work: Path
    notify: Callable[[str], None] = lambda phase: None
    memo: dict[str, Any] = field(default_factory=dict)


def ok(note: str = "") -> Result:
    return {"outcome": "ok", "reason": note}


def clean(reason: str) -> Result:
    return {"outcome": "clean", "reason": reason[:300]}


def defect(reason: str, message: str = "", detail: str = "") -> Result:
    return {"outcome": "defect", "reason": reason, "message": message[:2000],
            "detail": detail[-6000:]}


# -- exceptions -----------------------------------------------------------------------------
def clean_types() -> tuple[type[BaseException], ...]:
    from accel.diagnostics import AccelError
    from accel.runtime.symbols import RuntimeAssertionError

    # ZeroDivisionError: what compiled integer division by zero raises (like eager).
    return (AccelError, TypeError, ValueError, MemoryError, NotImplementedError,
            RuntimeAssertionError, ZeroDivisionError)


def classify_exception(err: BaseException) -> Result:
    """A clean refusal, or a defect with the traceback."""
    message = str(err)
    tb = "".join(traceback.format_exception(err))
    if isinstance(err, RecursionError | OverflowError) or not isinstance(err, clean_types()):
        return defect(f"unexpected {type(err).__name__}", message, tb)
    if "internal error" in message:
        return defect("internal error", message, tb)
    if not message.strip():
        return defect(f"{type(err).__name__} without a message", "", tb)
    return clean(f"{type(err).__name__}: {message.splitlines()[0]}")


def expecting(result: Result, case: dict[str, Any]) -> Result:
    """Success on an input that is certainly invalid is a defect."""
    if result["outcome"] == "ok" and case.get("expect") == "error":
        return defect("accepted an invalid input", "; ".join(map(str, case.get("why", []))))
    return result


def guarded(fn: Callable[[], Result]) -> Result:
    try:
        return fn()
    except SystemExit as err:
        return defect("SystemExit from the API", repr(err.code))
    except Exception as err:  # noqa: BLE001 - classified, not hidden
        return classify_exception(err)


# -- command-line tools ---------------------------------------------------------------------
_WARNING_LINE = re.compile(r"^\S+:\d+: \w*Warning: ", re.MULTILINE)
_ERROR_LINE = re.compile(r"(^|: )error: ", re.MULTILINE)
#: accel-opt words command-line errors as mlir-opt (LLVM's `cl`) does, without "error:".
_CL_ERROR = re.compile(r"^accel-opt: (Unknown command line argument '|for the -{1,2}[\w-]+ "
                       r"option: |option '-{1,2}[\w-]+' is not supported by accel-opt|Too many "
                       r"positional arguments)|^cannot open (input|output) file '", re.MULTILINE)
_NATIVE = ("Fatal Python error", "LLVM ERROR", "PLEASE submit a bug report", "Assertion `",
           "terminate called")


def run_cli(tool: str, argv: list[str]) -> tuple[int, str, str]:
    """Run a tool's main in this process: (exit status, stdout, stderr)."""
    from accel.cli import run_main
    from accel.tools import accel_compile, accel_opt, accel_run

    main = {"accel-opt": accel_opt.main, "accel-run": accel_run.run_tool,
            "accel-compile": accel_compile.main}[tool]
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv[0]
    sys.argv[0] = tool
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = run_main(main, argv)
            except SystemExit as exit_:
                code = exit_.code
                rc = code if isinstance(code, int) else 0 if code is None else 1
    finally:
        sys.argv[0] = saved
    return rc, out.getvalue(), err.getvalue()


def classify_cli(rc: int, stderr: str, case: dict[str, Any]) -> Result:
    if "Traceback (most recent call last)" in stderr:
        return defect("traceback", stderr[-2000:])
    if "internal error" in stderr:
        return defect("internal error", stderr[-2000:])
    for marker in _NATIVE:
        if marker in stderr:
            return defect(f"native message: {marker}", stderr[-2000:])
    if _WARNING_LINE.search(stderr):
        return defect("leaked Python warning", stderr[-2000:])
    if rc != 0:
        if not (_ERROR_LINE.search(stderr) or _CL_ERROR.search(stderr)):
            return defect(f"exit {rc} without an error: line", stderr[-2000:])
        first = next((line for line in stderr.splitlines()
                      if "error:" in line or _CL_ERROR.match(line)), "")
        return clean(f"exit {rc}: {first}")
    return expecting(ok(), case)


def cli_case(env: Env, tool: str, argv: list[str], case: dict[str, Any],
             native: Callable[[], str]) -> Result:
    rc, _, err = run_cli(tool, argv)
    return classify_cli(rc, err + native(), case)


# -- numerics -------------------------------------------------------------------------------
ADD_X = np.arange(4, dtype=np.float32) - 1.5
ADD_Y = np.array([0.5, -2.0, 3.25, 100.0], dtype=np.float32)


#: mm_conv_precision_mode values that round matmul operands or sums below f32 (the result
#: is then compared at the half-precision tolerance).
REDUCED = ("tf32", "fp16", "bf16", "mixed_fp16_fp32", "mixed_bf16_fp32")


def close(got: Any, want: np.ndarray, rtol: float, atol: float) -> bool:
    try:
        arr = np.asarray(got.detach() if hasattr(got, "detach") else got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return arr.shape == want.shape and bool(np.allclose(arr, want, rtol=rtol, atol=atol))


def check_add(compiled: Any, env: Env, options: dict[str, Any] | None = None) -> Result:
    """Run the fixture function (x + 2y) and compare with numpy."""
    env.notify("execute")
    got = compiled.invoke("main", ADD_X, ADD_Y)
    loose = bool(options) and (options.get("float_dtype") not in (None, "float", "double"))
    rtol = 1e-2 if loose else 1e-6
    if not close(got, (ADD_X + 2 * ADD_Y).astype(np.float64), rtol, rtol):
        return defect("wrong result", f"x + 2y = {got!r} with options {options!r}")
    return ok("numerics checked")


def model_reference(env: Env) -> tuple[Any, np.ndarray, np.ndarray]:
    """The fixture model, its input and its eager output."""
    if "model" not in env.memo:
        namespace: dict[str, Any] = {}
        exec((env.fixtures / "model.py").read_text(), namespace)  # noqa: S102 - our fixture
        model, _ = namespace["get_model"]()
        env.memo["model"] = model
    x = np.load(env.fixtures / "model_in.npy")
    return env.memo["model"], x, np.load(env.fixtures / "model_out.npy")


def check_model(fn: Callable[[Any], Any], env: Env, options: dict[str, Any] | None = None,
                as_torch: bool = True) -> Result:
    import torch

    _, x, want = model_reference(env)
    env.notify("execute")
    got = fn(torch.from_numpy(x.copy()) if as_torch else x.copy())
    loose = bool(options) and (options.get("float_dtype") not in (None, "float", "double")
                               or options.get("target") == "mncore"
                               or options.get("mm_conv_precision_mode") in REDUCED)
    rtol = 2e-2 if loose else 1e-4
    if not close(got, want.astype(np.float64), rtol, rtol):
        return defect("wrong result", f"model output {got!r} != eager {want!r} "
                      f"(options {options!r})")
    return ok("numerics checked")


def substitute(value: Any, env: Env) -> Any:
    """Placeholders of paths in case data: {fixtures}, {work}."""
    if isinstance(value, str):
        return value.replace("{fixtures}", str(env.fixtures)).replace("{work}", str(env.work))
    if isinstance(value, list):
        return [substitute(v, env) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, env) for k, v in value.items()}
    return value
