"""Loading out-of-tree pass files (`accel-opt --load-pass-plugin=my_passes.py`)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback
from types import ModuleType

from accel.diagnostics import AccelError, Diagnostic


def load_pass_plugin(path: str) -> ModuleType:
    """Import a Python file whose `@register_pass` classes become available by name."""
    if not os.path.isfile(path):
        raise AccelError("cannot load pass plugin: no such file", file=path)
    real = os.path.realpath(path)
    mod_name = "accel_plugin_" + hashlib.sha1(real.encode()).hexdigest()[:12]
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, real)
    if spec is None or spec.loader is None:
        raise AccelError("cannot load pass plugin: not a Python file", file=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        del sys.modules[mod_name]
        raise AccelError(f"invalid pass plugin: {err.msg}", file=path, line=err.lineno or 1,
                         col=err.offset or 1) from None
    except Exception as err:  # noqa: BLE001 - the plugin's bug, reported at its line
        del sys.modules[mod_name]
        frames = [f for f in traceback.extract_tb(err.__traceback__)
                  if os.path.realpath(f.filename) == real]
        line = frames[-1].lineno if frames else 1
        raise AccelError(diagnostics=[Diagnostic(
            "error", f"loading pass plugin failed: {type(err).__name__}: {err}", path, line, 1)]
        ) from None
    return module
