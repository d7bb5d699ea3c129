"""What torch-mlir's build writes as `torch_mlir/_version.py`; the PyPI wheel lacks it and
the e2e suite's `test_suite/__init__.py` imports it (accel's e2e harness, docs/e2e.md)."""

version = "20261001"
torch_version_for_comparison = None
