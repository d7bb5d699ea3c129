"""accel's additions to torch-mlir's decomposition table, applied to every `torch.export`.

Each entry fixes an op that torch-mlir lowers unlike eager PyTorch, or not at all, by
rewriting it into ops it lowers correctly. A decomposition may return `NotImplemented` to
leave a call as it is (e.g. for dtypes it does not concern). Every entry is tested against
eager in test/unit/test_op_coverage.py or test/unit/test_dtypes.py.
"""

from __future__ import annotations

from typing import Any

from accel.ir import torch_decompositions


def _reciprocal(x: Any) -> Any:
    """`1 / x` as a division: torch-mlir lowers `aten.reciprocal` with an assert that x has
    no zero ("unimplemented: tensor with zero element"), where eager PyTorch returns inf."""
    import torch

    dtype = x.dtype if x.is_floating_point() or x.is_complex() else torch.get_default_dtype()
    one = torch.ops.aten.scalar_tensor.default(1.0, dtype=dtype)
    return torch.ops.aten.div.Tensor(one, x)


def _hypot(a: Any, b: Any) -> Any:
    """hypot without overflow: max * sqrt(1 + (min/max)^2) (torch-mlir has no lowering)."""
    import torch

    big = torch.maximum(torch.abs(a), torch.abs(b))
    small = torch.minimum(torch.abs(a), torch.abs(b))
    ratio = torch.where(big == 0, torch.zeros_like(big), small / big)
    scaled = big * torch.sqrt(1 + ratio * ratio)
    return torch.where(torch.isinf(big), big, scaled)


def _copysign(a: Any, b: Any) -> Any:
    """|a| with the sign of b, -0.0 included (torch's decomposition needs prims.signbit)."""
    import torch

    dtype = torch.result_type(a, b)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    a, b = a.to(dtype), b.to(dtype)
    negative = (b < 0) | ((b == 0) & (torch.ops.aten.div.Tensor(1.0, b) < 0))
    return torch.where(negative, -torch.abs(a), torch.abs(a))


def _gelu_tanh(x: Any, approximate: str = "none") -> Any:
    """torch's own decomposition for tanh-approximate gelu, which matches eager (torch-mlir's
    lowering drifts 5e-5); exact gelu stays as it is (`NotImplemented`: not decomposed)."""
    import torch
    from torch._decomp import decomposition_table

    if approximate != "tanh":
        return NotImplemented
    return decomposition_table[torch.ops.aten.gelu.default](x, approximate=approximate)


def decompositions() -> dict[Any, Any]:
    """torch-mlir's decomposition table plus accel's fixes for ops it lowers unlike eager."""
    import torch

    aten = torch.ops.aten
    table = torch_decompositions()
    table[aten.gelu.default] = _gelu_tanh
    table[aten.reciprocal.default] = _reciprocal
    table[aten.hypot.default] = _hypot
    table[aten.copysign.Tensor] = _copysign
    return table
