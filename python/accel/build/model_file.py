"""Model files for accel-compile: a `model.py` with `get_model()` (inference, returning
(model, example_inputs) or (model, example_inputs, example_kwargs)) and/or `get_training()`
(training, returning (model, loss_fn, optimizer, example_batch)), called with
`batch_size=N` when asked. Running it runs its
Python: a model file is as trusted as any program the user runs."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from accel.build.settings import _read
from accel.diagnostics import AccelError, out_of_memory, too_deep

#: The default factories: inference (--inference) and training.
INFERENCE_FACTORY = "get_model"
TRAINING_FACTORY = "get_training"


def _takes_batch_size(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD or (
        p.name == "batch_size" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in params)


def _call_factory(path: Path, factory: str, batch_size: int | None, returns: str) -> Any:
    """Import `path` and call its `factory()` (with `batch_size=`); what it returned."""
    _read(path)  # a clear error for a missing/unreadable file
    spec = importlib.util.spec_from_file_location(f"_accel_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise AccelError("cannot be imported as a Python module", file=str(path))
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
        fn = getattr(module, factory, None)
        if not callable(fn):
            if factory == TRAINING_FACTORY:
                raise AccelError(f"{path} has no {TRAINING_FACTORY}(); pass --inference to "
                                 f"compile inference ({INFERENCE_FACTORY}()): without it "
                                 f"accel-compile compiles training, from {TRAINING_FACTORY}"
                                 f"(batch_size=N) returning {returns}")
            raise AccelError(f"defines no function {factory}() returning {returns}",
                             file=str(path))
        if batch_size is None:
            return fn()
        if _takes_batch_size(fn):
            return fn(batch_size=batch_size)
        raise AccelError(f"-b/--batch-size needs {factory}() to take a batch_size "
                         f"keyword argument, e.g. def {factory}(batch_size=1)",
                         file=str(path))
    except AccelError:
        raise
    except RecursionError:
        raise AccelError(f"{factory}() failed: {too_deep('its model')}", file=str(path)) \
            from None
    except Exception as err:  # noqa: BLE001 - user code: report it in one line
        memory = out_of_memory(err)
        if memory is not None:
            raise AccelError(f"{factory}() failed: the model {memory}", file=str(path)) \
                from None
        raise AccelError(f"{factory}() failed: {type(err).__name__}: {err}",
                         file=str(path)) from None
    finally:
        sys.path.remove(folder)


def load_model_file(path: Path, factory: str, batch_size: int | None = None
                    ) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """Import `path` and call its `factory()` (with `batch_size=`); (model, example_inputs,
    example_kwargs): the factory returns the first two, or all three (keyword arguments of
    the call to compile, e.g. an HF cache and `use_cache=True`)."""
    result = _call_factory(path, factory, batch_size, "(model, example_inputs)")
    if not (isinstance(result, tuple | list) and len(result) in (2, 3)
            and isinstance(result[1], tuple | list)
            and (len(result) == 2 or isinstance(result[2], dict))):
        raise AccelError(f"{factory}() must return (model, example_inputs tuple) or (model, "
                         f"example_inputs tuple, example_kwargs dict), got "
                         f"{type(result).__name__}", file=str(path))
    return result[0], tuple(result[1]), dict(result[2]) if len(result) == 3 else {}


def load_training_file(path: Path, factory: str, batch_size: int | None = None
                       ) -> tuple[Any, Any, Any, tuple[Any, ...]]:
    """`factory()` of `path` for training: (model, loss_fn, optimizer, example_batch)."""
    returns = "(model, loss_fn, optimizer, example_batch)"
    result = _call_factory(path, factory, batch_size, returns)
    if not (isinstance(result, tuple | list) and len(result) == 4
            and isinstance(result[3], tuple | list)):
        raise AccelError(f"{factory}() must return {returns} with example_batch a tuple, got "
                         f"{type(result).__name__}"
                         + (f" of {len(result)}" if isinstance(result, tuple | list) else ""),
                         file=str(path))
    return result[0], result[1], result[2], tuple(result[3])
