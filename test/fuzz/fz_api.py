"""API cases: the public functions called with wrong (and right) argument types and values.

Values are named in the case (`fz_cases.VALUES`) and built here, since JSON cannot hold them.
A call that succeeds with an argument that is certainly wrong is a defect; one that
succeeds with right arguments has its result checked against eager/numpy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from fz_execute import (
    ADD_X,
    ADD_Y,
    Env,
    Result,
    check_add,
    check_model,
    close,
    defect,
    guarded,
    model_reference,
    ok,
)
from fz_fixtures import ADD_MLIR


def value(name: str, env: Env) -> Any:
    """The Python value a case names."""
    import torch

    model, x, _ = model_reference(env)
    table: dict[str, Any] = {
        "none": None, "int0": 0, "int-1": -1, "int-huge": 2 ** 70, "float": 1.5,
        "nan": float("nan"), "str": "x", "str-long": "a" * 5000, "bytes": b"x",
        "list": [1], "list-nested": [[1], [2]], "dict": {}, "dict-bad": {1: object()},
        "object": object(), "lambda": lambda *a: None, "true": True, "ellipsis": ...,
        "set": {1}, "tuple-empty": (), "class": int, "str-main": "main",
        "ndarray": np.ones(4, np.float32), "ndarray-f64": np.ones(4),
        "ndarray-0d": np.array(1.0, np.float32),
        "ndarray-huge-view": np.broadcast_to(np.float32(1), (10 ** 6, 10 ** 6)),
        "tensor": torch.ones(2, 8), "tensor-int": torch.ones(2, 8, dtype=torch.int64),
        "tensor-grad": torch.ones(2, 8, requires_grad=True),
        # Missing, and inside this case's scratch folder: saving there may create it.
        "path-file": str(env.fixtures / "model.py"), "path-missing": str(env.work / "no/x/y"),
        "path-proc": "/proc/accel-fuzz", "module": torch.nn.ReLU(),
        "fixture-folder": str(env.fixtures / "model_artifact"), "mlir-text": ADD_MLIR,
        "model": model, "inputs": (torch.from_numpy(x.copy()),),
        "options-ok": {"cache": True},
    }
    return table[name]


#: Values certainly wrong where a dict of options or of weights goes (None: the default).
_NOT_A_DICT = {
    "int0", "int-1", "int-huge", "float", "nan", "str", "str-long", "bytes",
    "list", "list-nested", "dict-bad", "object", "lambda", "true", "ellipsis",
    "set", "tuple-empty", "class", "ndarray", "ndarray-f64", "ndarray-0d",
    "ndarray-huge-view", "tensor", "tensor-int", "tensor-grad", "path-file",
    "path-missing", "path-proc", "module", "fixture-folder", "mlir-text", "model",
    "inputs", "str-main",
}
#: Values certainly wrong for each parameter (others may be right or wrong).
_WRONG = {
    "source": {"none", "int0", "int-1", "int-huge", "float", "nan", "bytes", "list",
               "list-nested", "dict", "dict-bad", "object", "lambda", "true", "ellipsis",
               "set", "tuple-empty", "class", "ndarray", "ndarray-f64", "ndarray-0d",
               "ndarray-huge-view", "tensor", "tensor-int", "tensor-grad", "module", "model",
               "inputs", "options-ok"},
    "options": _NOT_A_DICT,
    "weights": _NOT_A_DICT,
    "model": {"none", "int0", "int-1", "int-huge", "float", "nan", "str", "str-long",
              "bytes", "list", "list-nested", "dict", "dict-bad", "object", "true",
              "ellipsis", "set", "tuple-empty", "ndarray", "ndarray-f64", "ndarray-0d",
              "ndarray-huge-view", "tensor", "tensor-int", "tensor-grad", "path-file",
              "path-missing", "path-proc", "fixture-folder", "mlir-text", "inputs",
              "options-ok", "str-main"},
    "inputs": {"none", "int0", "int-1", "int-huge", "float", "nan", "str", "str-long",
               "bytes", "dict", "dict-bad", "object", "lambda", "true", "ellipsis", "set",
               "class", "ndarray", "ndarray-f64", "ndarray-0d", "ndarray-huge-view",
               "tensor", "tensor-int", "tensor-grad", "path-file", "path-missing",
               "path-proc", "module", "fixture-folder", "mlir-text", "model", "options-ok",
               "str-main"},
    "dynamic_shapes": {"int0", "int-1", "int-huge", "float", "nan", "str", "str-long",
                       "bytes", "object", "lambda", "true", "ellipsis", "set", "class",
                       "ndarray", "ndarray-f64", "ndarray-0d", "ndarray-huge-view",
                       "tensor", "tensor-int", "tensor-grad", "module", "model",
                       "path-file", "path-missing", "path-proc", "fixture-folder",
                       "mlir-text", "str-main"},
    "folder": {"none", "int0", "int-1", "int-huge", "float", "nan", "list", "list-nested",
               "dict", "dict-bad", "object", "lambda", "true", "ellipsis", "set",
               "tuple-empty", "class", "ndarray", "ndarray-f64", "ndarray-0d",
               "ndarray-huge-view", "tensor", "tensor-int", "tensor-grad", "module", "model",
               "inputs", "options-ok", "path-file", "path-missing", "path-proc"},
    "n": {"int0", "int-1", "float", "nan", "str", "str-long", "bytes",
          "list", "list-nested", "dict", "dict-bad", "object", "lambda", "ellipsis", "set",
          "tuple-empty", "class", "ndarray", "ndarray-f64", "ndarray-0d",
          "ndarray-huge-view", "tensor", "tensor-int", "tensor-grad", "path-file",
          "path-missing", "path-proc", "module", "fixture-folder", "mlir-text", "model",
          "inputs", "options-ok", "str-main"},
}


def _certainly_wrong(args: dict[str, Any], kind: str) -> list[str]:
    wrong = []
    for param, name in args.items():
        if param == "folder" and kind == "save" and name in ("path-file", "path-proc"):
            wrong.append(f"{param}={name}")
        elif param == "folder" and kind == "save":
            continue  # saving creates folders: most names are fine
        elif kind == "jit" and param == "model" and name == "none":
            continue  # accel.jit(compile_options=...) without a function: a decorator
        elif isinstance(name, str) and name in _WRONG.get(param, ()):
            wrong.append(f"{param}={name}")
    return wrong


def _loaded(env: Env) -> Any:
    import accel

    if "loaded" not in env.memo:
        env.memo["loaded"] = accel.load(env.fixtures / "model_artifact")
    return env.memo["loaded"]


def _add(env: Env) -> Any:
    from accel.host.compile import compile_mlir

    if "add" not in env.memo:
        env.memo["add"] = compile_mlir(ADD_MLIR, {"cache": False})
    return env.memo["add"]


def run(case: dict[str, Any], env: Env) -> Result:
    kind = case["kind"].removeprefix("api-")
    names = case["args"]
    wrong = _certainly_wrong({k: v for k, v in names.items() if k not in ("args", "name")},
                             kind)

    def body() -> Result:
        import accel

        args = {k: [value(n, env) for n in v] if k == "args" else value(v, env)
                for k, v in names.items()}
        result = _call(kind, args, names, env, accel)
        if result["outcome"] == "ok" and wrong:
            return defect("accepted an invalid argument", ", ".join(wrong))
        return result

    return guarded(body)


def _call(kind: str, args: dict[str, Any], names: dict[str, Any], env: Env,
          accel: Any) -> Result:
    if kind == "compile_mlir":
        compiled = accel.compile_mlir(args["source"], args["options"], weights=args["weights"])
        return check_add(compiled, env) if names["source"] == "mlir-text" else ok()
    if kind == "compile":
        compiled = accel.compile(args["model"], args["inputs"], options=args["options"],
                                 dynamic_shapes=args["dynamic_shapes"])
        if names["model"] == "model" and names["inputs"] == "inputs":
            return check_model(compiled, env)
        return ok()
    if kind == "load":
        module = accel.load(args["folder"])
        return check_model(module, env, as_torch=False)
    if kind == "call":
        return _call_loaded(args["args"], names["args"], env)
    if kind == "invoke":
        compiled = _add(env)
        env.notify("execute")
        got = compiled.invoke(args["name"], *args["args"])
        if names["args"] == ["ndarray", "ndarray"]:  # ones + 2 * ones
            return ok() if close(got, np.full(4, 3.0), 1e-6, 1e-6) else defect(
                "wrong result", repr(got))
        return _accepted(names["args"], "invoke")
    if kind == "jit":
        fn = accel.jit(args["model"], compile_options=args["options"])
        if names["model"] == "model":
            return check_model(fn, env)
        return ok()
    if kind == "threads":
        try:
            accel.set_num_threads(args["n"])
        finally:
            accel.set_num_threads(1)
        return ok()
    folder = args["folder"]
    if names["folder"] == "fixture-folder":
        folder = str(env.work / "saved")  # never overwrite the fixtures
    elif isinstance(folder, str) and not folder.startswith("/"):
        folder = str(env.work / folder)
    saved = _loaded(env).save(folder)
    reloaded = accel.load(saved)
    return check_model(reloaded, env, as_torch=False)


def _call_loaded(values: list[Any], names: list[str], env: Env) -> Result:
    import torch

    module = _loaded(env)
    model, _, _ = model_reference(env)
    env.notify("execute")
    got = module(*values)
    try:
        tensors = [v if isinstance(v, torch.Tensor) else torch.from_numpy(np.asarray(v))
                   for v in values]
        with torch.no_grad():
            want = model(*tensors)
    except Exception:  # noqa: BLE001 - eager refuses these inputs: so must accel
        return defect("accepted inputs eager refuses", ", ".join(names))
    if not close(got, want.detach().numpy().astype(np.float64), 1e-4, 1e-4):
        return defect("wrong result", f"{names}: {got!r} vs eager {want!r}")
    return ok("numerics checked")


def _accepted(names: list[str], what: str) -> Result:
    """`invoke` with arguments other than two float32[4] arrays returned: a defect unless
    the arguments were two arrays numpy could have accepted as float32[4]."""
    if len(names) != 2 or any(n not in ("ndarray", "ndarray-f64") for n in names):
        return defect(f"{what} accepted arguments of the wrong kind", ", ".join(names))
    return ok()


__all__ = ["ADD_X", "ADD_Y", "Path", "run"]
