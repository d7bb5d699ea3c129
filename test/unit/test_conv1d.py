"""1-D convolutions (Whisper's and wav2vec's stems) run as 2-D ones over a unit height.

`accel.frontend.decompositions._conv1d_as_2d` rewrites `aten.convolution` with one spatial
dim into unsqueeze -> 2-D convolution -> squeeze, so the CPU target's convolution kernels
(im2col + GEMM, or the direct ones) run it instead of `linalg.conv_1d_ncw_fcw`'s loops.
Checked through accel.compile (strides, padding, dilation, groups, bias), torch.compile and
a compiled training step, each against eager.
"""

from __future__ import annotations

import copy

import accel
import pytest
import torch
from accel import phases

RTOL = ATOL = 1e-4


class Stem(torch.nn.Module):
    """Whisper-like: conv k3 p1, GELU, conv k3 s2 p1, GELU; then a dilated grouped conv."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv1d(20, 48, 3, padding=1)
        self.c2 = torch.nn.Conv1d(48, 48, 3, stride=2, padding=1)
        self.c3 = torch.nn.Conv1d(48, 16, 5, dilation=2, groups=4, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gelu = torch.nn.functional.gelu
        return self.c3(gelu(self.c2(gelu(self.c1(x)))))


def _stem() -> Stem:
    torch.manual_seed(0)
    return Stem().eval()


def test_conv1d_compiles_as_2d_and_matches_eager() -> None:
    model, x = _stem(), torch.randn(2, 20, 120)
    with phases.recording(keep_ir=True) as rec, torch.no_grad():
        compiled = accel.compile(model, (x,), options={"cache": False, "opt_level": 1})
    linalg = str(next(p.ir for p in rec.phases if p.name == "linalg"))
    assert "conv_1d" not in linalg and "linalg.conv_2d" in linalg
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)


def test_conv1d_through_torch_compile() -> None:
    model, x = _stem(), torch.randn(1, 20, 64)
    compiled = torch.compile(model, backend="accel", options={"cache": False, "opt_level": 1})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)


@pytest.mark.slow
def test_conv1d_training_step_matches_eager() -> None:
    model = _stem().train()
    eager = copy.deepcopy(model)
    opt, eager_opt = (torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
                      for m in (model, eager))

    def loss_fn(m: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(m(x), y)

    batches = [(torch.randn(4, 20, 40, generator=torch.Generator().manual_seed(i)),
                torch.randn(4, 16, 12, generator=torch.Generator().manual_seed(100 + i)))
               for i in range(3)]
    step = accel.compile_train_step(model, loss_fn, opt, batches[0],
                                    options={"cache": False, "opt_level": 1})
    for x, y in batches:
        loss = step(x, y)
        eager_opt.zero_grad()
        eager_loss = loss_fn(eager, x, y)
        eager_loss.backward()
        eager_opt.step()
        torch.testing.assert_close(torch.as_tensor(loss), eager_loss.detach(),
                                   rtol=RTOL, atol=ATOL)
    for (name, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-3, atol=1e-4, msg=name)
