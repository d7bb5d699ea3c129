"""The frontend: PyTorch models -> linalg-on-tensors MLIR, and what it hands on.

`torch_import` (torch.export, torch-mlir's FX importer and pipelines), `decompositions`,
`weights` (weights as buffers, never IR text), `program` (the imported program, its
mutations), `fingerprint` (what the front cache keys on). The frontend imports no target
and no cache: it builds nothing of the runtime (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any


def import_torch(model: Any, example_inputs: tuple[Any, ...], **kwargs: Any) -> Any:
    """PyTorch -> linalg-on-tensors MLIR module (`accel.frontend.torch_import`)."""
    from accel.frontend.torch_import import import_torch as run

    return run(model, example_inputs, **kwargs)
