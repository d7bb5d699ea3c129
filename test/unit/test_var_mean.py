"""`var_mean` (BatchNorm's training statistics) as accel decomposes it
(`accel.frontend.decompositions._var_mean`): two float64-accumulated passes, no float64
copy of the input. Checked against eager's `torch.var_mean` (which accumulates in double):
the decomposition itself over dims, keepdim and corrections, on data whose mean dwarfs its
spread; the compiled function (`accel.compile` and `torch.compile(backend="accel")`); the
compiled code holds no float64 buffer of the input's size; and a BatchNorm training step
(`accel.compile_train_step`) whose running statistics and parameters match eager after three
steps.
"""

from __future__ import annotations

import re

import accel
import pytest
import torch
from accel import phases
from accel.frontend.decompositions import _var_mean


@pytest.mark.parametrize(("dim", "keepdim", "correction"), [
    ([0, 2, 3], True, 0), ([0, 2, 3], False, 1), ([-1], False, 1), (None, False, 1),
    ([1], True, 2), ([], True, 1)])
def test_decomposition_matches_eager(dim, keepdim, correction) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 5, 7, 9, generator=g) * 3 + 1000  # mean^2 / var ~ 1e5
    got = _var_mean(x, dim, correction=correction, keepdim=keepdim)
    want = torch.var_mean(x.double(), dim, correction=correction, keepdim=keepdim)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == torch.float32 and a.shape == b.shape
        torch.testing.assert_close(a.double(), b, rtol=2e-6, atol=0)


def test_edge_cases_as_eager() -> None:
    one = torch.tensor([[3.0]])
    var, mean = _var_mean(one, [1], correction=1)
    assert torch.isnan(var).all() and mean.tolist() == [3.0]  # 0 / 0, as eager
    same = torch.full((4, 8), 2.5)
    var, _ = _var_mean(same, [1], correction=1)
    assert var.tolist() == [0.0] * 4
    nan = torch.randn(3, 4)
    nan[1, 2] = float("nan")
    var, mean = _var_mean(nan, [1], correction=1)
    assert torch.isnan(var[1]) and torch.isnan(mean[1]) and not torch.isnan(var[0])
    assert _var_mean(torch.ones(3, dtype=torch.float64), [0]) is NotImplemented


class Stats(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.var_mean(x, dim=(0, 2, 3), correction=1, keepdim=True)


def test_compiled_var_mean_matches_eager() -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, 8, 12, 12, generator=g) * 0.5 + 40
    with phases.recording(keep_ir=True) as rec:
        fn = accel.compile(Stats(), (x,), options={"cache": False})
    for got, want in zip(fn(x), Stats()(x), strict=True):
        torch.testing.assert_close(got, want, rtol=2e-6, atol=0)
    # No float64 copy of x (torch-mlir's lowering allocates one per channel: 16x1x12x12).
    bufferized = next(p.ir for p in rec.phases if p.name.endswith("bufferize"))
    assert not re.search(r"memref\.alloc\(\) .*: memref<16x1x12x12xf64>", bufferized)
    assert "xf64>" not in "".join(line for line in bufferized.splitlines()
                                  if "memref.alloc()" in line)


def test_batchnorm_training_step_matches_eager() -> None:
    def build() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                                    torch.nn.ReLU(), torch.nn.Flatten(),
                                    torch.nn.Linear(8 * 10 * 10, 4)).train()
        return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def loss_fn(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(model(x), y)

    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(8, 3, 10, 10, generator=g) + 2, torch.randint(0, 4, (8,), generator=g)
    ref, ref_opt = build()
    model, opt = build()
    step = accel.compile_train_step(model, loss_fn, opt, (x, y), options={"cache": False})
    for _ in range(3):
        ref_opt.zero_grad()
        want = loss_fn(ref, x, y)
        want.backward()
        ref_opt.step()
        got = step(x, y)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values(),
                            strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.usefixtures("fresh_dynamo")
def test_var_mean_through_torch_compile() -> None:
    """The decomposition through the other entry point that decomposes graphs:
    torch.compile(backend="accel") on data whose mean dwarfs its spread (single-pass
    float32 statistics would lose most digits of the variance here)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(16, 8, 12, 12, generator=g) * 0.5 + 40
    compiled = torch.compile(Stats(), backend="accel", options={"cache": False})
    for got, want in zip(compiled(x), Stats()(x), strict=True):
        torch.testing.assert_close(got, want, rtol=2e-6, atol=0)
