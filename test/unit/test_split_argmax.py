"""`accel-split-argmax`: argmax/argmin/max(dim)/min(dim) against eager, NaN and ties included.

Exact comparison: indices must be equal, values equal (NaN where eager has NaN). Before the
pass, a NaN in a row gave the index of the max before it (eager gives the NaN's).
"""

from __future__ import annotations

from collections.abc import Callable

import accel
import pytest
import torch
from accel import phases


def _special(rows: int, cols: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(rows, cols, generator=g)
    x[1, 3] = float("nan")  # NaN after the max of its row...
    x[2, 0] = float("nan")  # ...first...
    x[2, cols - 1] = float("nan")  # ...and twice
    x[3] = float("-inf")
    x[4] = float("inf")
    x[5] = 1.0  # ties: the first index wins
    x[6, :4] = float("inf")
    return x


CASES: dict[str, Callable[[torch.Tensor], object]] = {
    "argmax_last": lambda x: x.argmax(-1),
    "argmax_first": lambda x: x.argmax(0),
    "argmin_last": lambda x: x.argmin(-1),
    "max_dim": lambda x: torch.max(x, 1),
    "min_dim0": lambda x: torch.min(x, 0),
    "argmax_keepdim": lambda x: x.argmax(1, keepdim=True) * 2,
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("shape", [(9, 37), (300, 1024)], ids=["small", "large"])
def test_matches_eager(name: str, shape: tuple[int, int]) -> None:
    fn = CASES[name]
    x = _special(*shape)
    with phases.recording(keep_ir=True) as rec:
        compiled = accel.compile(fn, (x,), options={"cache": False})
    got, want = compiled(x), fn(x)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
    # The pass fired: no generic carries a value and an index together any more.
    bufferized = str(next(p.ir for p in rec.phases if p.name == "bufferize"))
    assert "arith.cmpf ogt" not in bufferized and "arith.cmpf olt" not in bufferized
    assert "arith.minsi" in bufferized
