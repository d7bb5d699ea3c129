"""accel-fold-flips in the default CPU pipeline: a flip (and a transpose of one) compiles to
one affine copy, through accel.compile and a train step, and the results match eager."""

from __future__ import annotations

import copy
import re

import accel
import accel.phases
import torch


class FlipTranspose(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(x, [2, 3]).transpose(0, 1) * 2.0 + 1.0


def test_flip_and_transpose_compile_to_an_affine_copy() -> None:
    x = torch.randn(4, 3, 5, 7)
    with accel.phases.recording(keep_ir=True) as rec:
        fn = accel.compile(FlipTranspose(), (x,), options={"cache": False})
    fused = next(p.ir for p in rec.phases if p.name == "fuse")
    assert "tensor.extract" not in fused  # the gather is gone
    assert "linalg.transpose" not in fused  # folded into the copy's map
    assert "-d2 + 4" in fused and "-d3 + 6" in fused
    for seed in range(2):
        y = torch.randn(4, 3, 5, 7, generator=torch.Generator().manual_seed(seed))
        torch.testing.assert_close(torch.as_tensor(fn(y)), FlipTranspose()(y), rtol=0, atol=0)


def test_a_conv_train_step_with_folded_flips_matches_eager() -> None:
    """A convolution's input gradient flips and transposes the weight: with the fold, the
    train step's gradients (hence the updated weights) still match eager."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 4, 3, stride=2, padding=1),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 5))
    eager = copy.deepcopy(model)
    x, y = torch.randn(2, 3, 8, 8), torch.tensor([1, 3])

    def loss_fn(m: torch.nn.Module, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(m(a), b)

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    eager_opt = torch.optim.SGD(eager.parameters(), lr=0.1)
    with accel.phases.recording(keep_ir=True) as rec:
        step = accel.compile_train_step(model, loss_fn, opt, (x, y), options={"cache": False})
    fused = next(p.ir for p in rec.phases if p.name == "backward-fuse")
    # No gather from a weight is left (the loss's gather by label stays).
    assert not re.search(r"tensor\.extract .*: tensor<\d+x\d+x3x3xf32>", fused)
    assert re.search(r"affine_map<\(d0, d1, d2, d3\) -> \(d1, d0, -d2 \+ 2, -d3 \+ 2\)>",
                     fused)
    for _ in range(2):
        loss = step(x, y)
        eager_opt.zero_grad()
        expected = loss_fn(eager, x, y)
        expected.backward()
        eager_opt.step()
        torch.testing.assert_close(torch.as_tensor(loss), expected.detach(), rtol=1e-5,
                                   atol=1e-6)
    for a, b in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-4, atol=1e-5)
