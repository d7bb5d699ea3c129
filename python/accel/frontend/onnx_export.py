"""The `out_onnx` option: the model as ONNX, written by torch's own exporter.

MN-Core's MLSDK writes the graph it compiled as ONNX next to its codegen folder; accel does
the same with `torch.onnx.export` (the torch.export-based exporter, through `onnxscript`), so
the file is a real, checkable ONNX model of what was compiled (same example inputs' shapes),
not a sketch of accel's layer graph. Only a torch model can be exported: MLIR input
(`compile_mlir`, `accel-opt`) has no ONNX exporter, and the target says so.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import Any

from accel.diagnostics import AccelError
from accel.frontend.program import model_name
from accel.frontend.torch_import import _EXPORT_LOCK, _as_module, _first_line


def export_onnx(model: Any, example_inputs: tuple[Any, ...], path: str | Path,
                dynamic_shapes: Any = None, external_data: bool = False) -> Path:
    """Write `model` at `example_inputs` as ONNX to `path`; AccelError naming the option.
    `external_data` (MN-Core's MNCORE_USE_EXTERNAL_DATA_FORMAT): the weights go to a
    separate `<path>.data` file instead of inside the model."""
    target = Path(path)
    where = f"option 'out_onnx' ({target})"
    try:
        import onnx  # noqa: F401 - the exporter needs both; say which is missing
        import onnxscript  # noqa: F401
    except ImportError as err:
        raise AccelError(f"{where}: writing ONNX needs the '{err.name}' package, which is not "
                         "installed (pip install 'accel[onnx]')") from None
    import torch

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AccelError(f"{where}: cannot create {target.parent}: {err.strerror}") from None
    module = _as_module(model)
    # The exporter reports progress with print(); accel's own progress bar is the report.
    with _EXPORT_LOCK, warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(module, tuple(example_inputs), str(target), verbose=False,
                              dynamic_shapes=dynamic_shapes, external_data=external_data)
        except SystemExit as err:
            raise AccelError(f"{where}: {model_name(model)} called sys.exit({err.code!r}) "
                             "while being exported") from None
        except OSError as err:
            raise AccelError(f"{where}: cannot write it: {err.strerror}") from None
        except Exception as err:  # noqa: BLE001 - the exporter raises many unrelated types
            raise AccelError(f"{where}: the ONNX exporter failed on {model_name(model)}: "
                             f"{_first_line(err)}") from None
    return target
