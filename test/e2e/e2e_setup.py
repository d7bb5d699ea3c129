"""Makes torch-mlir's e2e suite importable next to the torch-mlir wheel (docs/e2e.md).

The suite (`projects/pt1/python/torch_mlir_e2e_test` of llvm/torch-mlir) is not in the
wheel. `setup(suite_dir)` puts it on `sys.path` with four fixes for what the wheel lacks:

- `torch_mlir._version` (written by torch-mlir's build, imported by `test_suite/__init__.py`):
  `shims/torch_mlir/_version.py`; `torch_mlir` is a namespace package, so it merges.
- torchvision (imported at top level by `vision_models.py` and `conv.py`): `shims/torchvision`,
  whose functions raise, so the 5 tests that use it fail eagerly and the rest run.
- `configs/__init__.py` imports configs that need modules outside the wheel (TorchScript,
  lazy tensors, onnx): the package is pre-registered without running it, so
  `configs.native_torch` and `configs.fx_importer_backend` import on their own.
- `multiprocess` (imported by `framework.py` for `run_tests`, which the harness does not use):
  a stub when the package is missing (`pip install -e .[e2e]` installs the real one).
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIMS = HERE / "shims"
#: The vendored 100-test sample (`make check`): what `make_sample.py` kept of the suite.
SAMPLE_SUITE = HERE / "suite_sample"
PACKAGE = "torch_mlir_e2e_test"
#: Where the package lives inside a torch-mlir checkout.
IN_CHECKOUT = Path("projects/pt1/python")


def find_package(suite_dir: str | os.PathLike) -> Path:
    """The folder holding `torch_mlir_e2e_test`: `suite_dir` itself, or a torch-mlir
    checkout's `projects/pt1/python`. Raises `FileNotFoundError` saying what to do."""
    root = Path(suite_dir).expanduser()
    for candidate in (root, root / IN_CHECKOUT):
        if (candidate / PACKAGE / "framework.py").is_file():
            return candidate.resolve()
    raise FileNotFoundError(
        f"no {PACKAGE} under '{root}' (looked for {PACKAGE}/framework.py there and in "
        f"{IN_CHECKOUT}): set E2E_SUITE_DIR to a torch-mlir checkout (docs/e2e.md)")


def _stub_multiprocess() -> None:
    try:
        importlib.import_module("multiprocess")
    except ImportError:
        stub = types.ModuleType("multiprocess")
        stub.set_start_method = lambda *a, **k: None  # type: ignore[attr-defined]
        stub.cpu_count = os.cpu_count  # type: ignore[attr-defined]
        sys.modules["multiprocess"] = stub


def setup(suite_dir: str | os.PathLike) -> Path:
    """Make `torch_mlir_e2e_test` from `suite_dir` importable; returns its parent folder."""
    parent = find_package(suite_dir)
    for path in (str(SHIMS), str(parent)):
        if path not in sys.path:
            sys.path.insert(0, path)
    _stub_multiprocess()
    configs = types.ModuleType(f"{PACKAGE}.configs")
    configs.__path__ = [str(parent / PACKAGE / "configs")]  # type: ignore[attr-defined]
    importlib.import_module(PACKAGE)
    sys.modules[configs.__name__] = configs
    return parent


def all_tests() -> dict[str, object]:
    """Every registered test of the suite set up above, by unique name."""
    from torch_mlir_e2e_test.registry import GLOBAL_TEST_REGISTRY
    from torch_mlir_e2e_test.test_suite import register_all_tests

    if not GLOBAL_TEST_REGISTRY:
        register_all_tests()
    return {t.unique_name: t for t in GLOBAL_TEST_REGISTRY}
