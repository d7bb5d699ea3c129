"""Data-dependent shapes (accel.frontend.data_dependent): boolean masks, nonzero, unique,
masked_select, through accel.compile, torch.compile(backend="accel"), save/load and
accel-compile.

Every compiled result is compared with eager PyTorch on several inputs, among them one
whose mask selects nothing and one that selects everything: the shapes must be equal and the
values exact (gathers and scatters move values; sums compare at rtol 1e-6). Ops accel does
not lower give one `AccelError` naming the op and the model's source line.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import warnings

import accel
import pytest
import torch
from accel.diagnostics import AccelError

OPTIONS = {"opt_level": 1}


def _inputs(shape: tuple[int, ...]) -> list[torch.Tensor]:
    """Random inputs, then none positive, then all positive."""
    torch.manual_seed(0)
    x = torch.randn(*shape)
    return [torch.randn(*shape), torch.randn(*shape), -x.abs() - 0.1, x.abs() + 0.1]


def _flat(value: object) -> list[torch.Tensor]:
    return list(value) if isinstance(value, tuple | list) else [value]  # type: ignore[arg-type]


def _check(fn: object, shape: tuple[int, ...], compiled: object = None) -> object:
    """Compile `fn` (unless given) and compare it with eager on `_inputs(shape)`."""
    example = torch.randn(*shape)
    if compiled is None:
        compiled = accel.compile(fn, (example,), options=OPTIONS)
    for x in _inputs(shape):
        got, want = _flat(compiled(x)), _flat(fn(x))
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
            if w.is_floating_point():
                torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6, equal_nan=True)
            else:
                assert torch.equal(g, w), (g, w)
    return compiled


@pytest.mark.parametrize("shape", [(8,), (4, 5)])
def test_masked_sum_is_a_where(shape: tuple[int, ...]) -> None:
    """The issue's repro: `x[x > 0].sum()` failed on (8,) ('arith.cmpi' op requires all
    operands to have the same type) and hung on (4, 5). It becomes where(x > 0, x, 0).sum():
    no gather, no runtime size in the IR."""
    start = time.perf_counter()
    compiled = _check(lambda x: x[x > 0].sum(), shape)
    assert time.perf_counter() - start < 60
    text = compiled.module_text()
    assert "tm_tensor.scatter" not in text and "tensor.extract_slice" not in text


def test_masked_reductions() -> None:
    """mean, prod, a dtype, a row mask's sum(0), and the count itself."""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        rows = x[:, 0] > 0
        return (x[x > 0].mean(), (x * 0.5 + 1)[x > 0].prod(),
                x[x > 0].sum(dtype=torch.float64), x[rows].sum(0),
                (x > 0).int()[x > 0].sum(), x[x > 0].exp().sum() + x[x > 0].numel())

    _check(fn, (4, 5))


def test_selections_return_their_true_size() -> None:
    """x[mask] (whole, rows, columns, 3-d), masked_select (broadcast mask), nonzero,
    argwhere, nonzero(as_tuple=True), where(cond): computed at an upper bound, cut at run
    time; nonzero_static: its fixed size, filled past the count."""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        cube = x.reshape(2, 2, 5)
        return (x[x > 0], x[x[:, 0] > 0], x[:, x[0] > 0], cube[cube[..., 0] > 0],
                torch.masked_select(x, x[0] > 0), torch.nonzero(x > 0),
                torch.argwhere(cube > 0), *torch.nonzero(x > 0.5, as_tuple=True),
                *torch.where(x < 0), torch.nonzero_static(x > 0, size=8, fill_value=9),
                torch.relu(x[x > -0.5] - 0.2))

    _check(fn, (4, 5))


def test_unique() -> None:
    """torch.unique (values, inverse, counts; NaNs last and each distinct, as in eager) and
    unique_consecutive, float and integer. (Which NaN gets which of the NaNs' inverse
    indices is eager's sort's accident: not compared.)"""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        r = (x * 2).round()
        with_nan = torch.where(r > 2, torch.nan, r)
        return (*torch.unique(r, return_inverse=True, return_counts=True),
                *torch.unique(with_nan, return_counts=True),
                torch.unique(r.to(torch.int64)),
                *torch.unique_consecutive(r.abs(), return_inverse=True, return_counts=True))

    _check(fn, (4, 5))


def test_mask_assignment() -> None:
    """x[mask] = scalar / row / one value per selected entry, columns too, accumulate."""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b, c, d = x.clone(), x.clone(), x.clone(), x.clone()
        a[x > 0] = 1.0
        b[x[:, 0] > 0] = torch.arange(5.0)
        c[x > 0] = x[x > 0] * 2
        d[:, x[0] > 0] = x[:, x[0] > 0] * 3
        e = x.clone().index_put_((x > 0,), x[x > 0], accumulate=True)
        return a, b, c, d, e

    _check(fn, (4, 5))


def test_saved_and_loaded(tmp_path: object) -> None:
    """An artifact folder keeps the runtime sizes (accel.load)."""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x[x > 0], torch.unique((x * 2).round())

    compiled = accel.compile(fn, (torch.randn(4, 5),), options=OPTIONS)
    compiled.save(tmp_path / "a")  # type: ignore[operator]
    _check(fn, (4, 5), accel.load(tmp_path / "a"))  # type: ignore[operator]


class _UniqueRows(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.unique(x.round(), dim=0)  # UNIQUE-DIM


class _RepeatByTensor(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.repeat_interleave(x[0], (x[0] > 0).long() + 1)  # REPEAT


class _MaskAndIndex(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[x[:, 0] > 0, torch.tensor([1])]  # MIXED


def _line(marker: str) -> int:
    lines, start = inspect.getsourcelines(sys.modules[__name__])
    return next(i for i, text in enumerate(lines, start or 1) if f"# {marker}" in text)


@pytest.mark.parametrize("model, op, marker", [
    (_UniqueRows, "aten.unique_dim", "UNIQUE-DIM"),
    (_RepeatByTensor, "aten.repeat_interleave.Tensor", "REPEAT"),
    (_MaskAndIndex, "aten.index.Tensor", "MIXED"),
])
def test_unsupported_ops_give_one_line(model: type, op: str, marker: str) -> None:
    """What accel does not lower: one line, the op and the model's line, in seconds."""
    start = time.perf_counter()
    with pytest.raises(AccelError) as info:
        accel.compile(model(), (torch.randn(4, 5),), options=OPTIONS)
    assert time.perf_counter() - start < 30
    message = str(info.value)
    assert "\n" not in message
    assert f"unsupported data-dependent op {op}" in message
    assert f"{os.path.basename(__file__)}:{_line(marker)}" in message


def test_wrong_mask_shape_is_refused() -> None:
    """A mask whose shape is not the indexed dims' (eager: IndexError) is an AccelError."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[x[0] > 0] = 7.0  # a (5,) mask on dim 0 of size 4
        return y

    with pytest.raises(AccelError, match=r"mask's shape \[5\] does not match the shape \[4\]"):
        accel.compile(fn, (torch.randn(4, 5),), options=OPTIONS)


@pytest.mark.parametrize("capture", [False, True])
def test_torch_compile(capture: bool) -> None:
    """torch.compile(backend="accel"): by default dynamo breaks the graph at the data-
    dependent ops and accel compiles the pieces; with capture_dynamic_output_shape_ops
    the whole function reaches accel as one graph. Eager's results, no eager fallback."""
    import accel.dynamo

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = torch.sin(x)
        return y[y > 0].sum() * 2, torch.nonzero(y > 0.5), y[y > 0] + 1

    torch._dynamo.reset()
    before = dict(accel.dynamo.stats)  # counts for the whole process
    config = torch._dynamo.config
    with config.patch(capture_dynamic_output_shape_ops=capture, capture_scalar_outputs=capture), \
            warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns
        _check(fn, (4, 5), torch.compile(fn, backend="accel", options=OPTIONS))
    compiled = accel.dynamo.stats["compiled"] - before.get("compiled", 0)
    assert accel.dynamo.stats["eager"] == before.get("eager", 0)
    assert compiled == 1 if capture else compiled > 1
    torch._dynamo.reset()


MODEL_PY = """\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x[x > 0], x[x > 0].sum()


def get_model():
    return Model(), (torch.randn(4, 5),)
"""


def test_accel_compile_cli(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """accel-compile --inference of a model with a mask (in-process, as the console script
    runs it); accel.load calls the folder."""
    from accel.cli import run_main
    from accel.tools.accel_compile import main

    model = tmp_path / "masked.py"  # type: ignore[operator]
    model.write_text(MODEL_PY)
    monkeypatch.setattr(sys, "argv", ["accel-compile"])
    out = tmp_path / "out"  # type: ignore[operator]
    assert run_main(main, [str(model), "--inference", "-o1", "--output-folder", str(out)]) == 0
    _check(lambda x: (x[x > 0], x[x > 0].sum()), (4, 5), accel.load(out))
