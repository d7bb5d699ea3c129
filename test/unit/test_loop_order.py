"""Loop order on the CPU path: `accel-loop-interchange` and `accel-tile-transposes`.

Reductions over a leading dim and transposing copies, compiled with `accel.compile` and
compared with eager (rtol 1e-5 and atol 5e-5: the interchange keeps each element's order
of additions, eager's differs, and a sum of 256 normal values that ends near zero is 1e-5
apart in absolute terms; fixed seeds); the IR after bufferization shows the passes fired:
the input's loads take their last index from the innermost loop, and transposes loop in
blocks.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import accel
import pytest
import torch
from accel import phases
from accel.diagnostics import AccelError
from accel.passes import lookup_pass
from accel.pipeline import run_pipeline

RTOL, ATOL = 1e-5, 5e-5


def _compile(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> tuple[object, str]:
    with phases.recording(keep_ir=True) as rec:
        compiled = accel.compile(fn, inputs, options={"cache": False})
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), fn(*inputs), rtol=RTOL, atol=ATOL)
    return compiled, str(next(p.ir for p in rec.phases if p.name == "bufferize"))


def _with_innermost(ir_text: str, pattern: str) -> list[tuple[re.Match[str], str]]:
    """Each line matching `pattern` inside an affine loop, with the innermost loop's
    variable around it (the IR is printed indented, so indentation gives the nesting)."""
    stack: list[tuple[int, str]] = []
    found = []
    for line in ir_text.splitlines():
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        loop = re.match(r"\s*affine\.for (%\w+) =", line)
        if loop:
            stack.append((indent, loop.group(1)))
            continue
        match = re.search(pattern, line)
        if match and stack:
            found.append((match, stack[-1][1]))
    return found


def _loads_along_innermost(ir_text: str, shape: tuple[int, ...]) -> list[bool]:
    """For each `affine.load` of an f32 memref of `shape` (the input): is its last index the
    variable of the innermost loop around it?"""
    mtype = "x".join(map(str, shape)) + "xf32"
    loads = _with_innermost(ir_text, r"affine\.load %\w+\[([^\]]*)\] : memref<([^>]*)>")
    return [m.group(1).split(", ")[-1] == iv for m, iv in loads if m.group(2) == mtype]


@pytest.mark.parametrize("name,fn,shape", [
    ("sum0", lambda x: x.sum(0), (256, 96)),
    ("mean1", lambda x: x.mean(1), (3, 50, 40)),
    ("sum0_keepdim", lambda x: x.sum(0, keepdim=True) * 2, (130, 70)),
    ("amax0", lambda x: x.amax(0), (64, 33)),
    ("sum0_relu", lambda x: torch.relu(x.sum(0) - 1), (100, 64)),
])
def test_leading_dim_reductions_read_rows(name: str, fn: Callable[..., torch.Tensor],
                                          shape: tuple[int, ...]) -> None:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    _, ir_text = _compile(fn, x)
    loads = _loads_along_innermost(ir_text, shape)
    assert loads and all(loads), ir_text


@pytest.mark.parametrize("name,fn,shape", [
    ("t", lambda x: x.t().contiguous() * 2, (100, 70)),
    ("permute", lambda x: x.permute(0, 2, 1).contiguous() + 1, (3, 40, 50)),
    ("x_plus_xt", lambda x: x + x.t(), (64, 64)),
])
def test_transposes_are_blocked(name: str, fn: Callable[..., torch.Tensor],
                                shape: tuple[int, ...]) -> None:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    _, ir_text = _compile(fn, x)
    assert re.search(r"affine\.for %\w+ = 0 to \d+ step 8 \{", ir_text), ir_text


def test_copies_and_row_reductions_are_left_alone() -> None:
    x = torch.randn(64, 128)
    _, ir_text = _compile(lambda x: torch.softmax(x * 2, -1), x)
    assert "step 8" not in ir_text
    loads = _loads_along_innermost(ir_text, (64, 128))
    assert loads and all(loads)


def test_tile_option() -> None:
    assert lookup_pass("accel-tile-transposes") is not None
    module = accel.import_torch(lambda x: x.t().contiguous() + 1, (torch.randn(64, 64),))
    with pytest.raises(AccelError, match="tile must be at least 2"):
        with module.context:
            run_pipeline(module, "builtin.module(func.func(accel-tile-transposes{tile=1}))")


@pytest.mark.parametrize("name,make,shape", [
    ("depthwise", lambda: torch.nn.Conv2d(32, 32, 3, padding=1, groups=32), (1, 32, 40, 40)),
    ("depthwise_s2", lambda: torch.nn.Conv2d(16, 16, 5, stride=2, padding=2, groups=16),
     (2, 16, 41, 41)),
    ("maxpool", lambda: torch.nn.MaxPool2d(3, 1, 1), (1, 8, 40, 40)),  # init fused in
    ("avgpool", lambda: torch.nn.AvgPool2d(3, 1, 1), (1, 8, 40, 40)),  # and an epilogue
])
def test_window_loops_go_outside(name: str, make: Callable[[], torch.nn.Module],
                                 shape: tuple[int, ...]) -> None:
    """Depthwise convs and pools: the output's last index moves below the short window
    loops, so every store whose last index is a loop variable (the output, the per-row
    accumulators) stores along the innermost loop."""
    model = make().eval()
    x = torch.randn(*shape)
    _, ir_text = _compile(model, x)
    lasts = [(m.group(1).split(", ")[-1], iv)
             for m, iv in _with_innermost(ir_text, r"affine\.store %\w+, %\w+\[([^\]]*)\]")]
    stores = [last == iv for last, iv in lasts if re.fullmatch(r"%\w+", last)]
    assert stores and all(stores), ir_text
