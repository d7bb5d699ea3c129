"""A compiled model returns what eager returns: 1-tuples, lists, dicts, nested containers,
constants, namedtuples and HF ModelOutputs are rebuilt around the flat results
(accel.frontend.outputs), after a front-cache hit and from a saved artifact too. Values
match eager at rtol 1e-5 (the same float32 code paths as every other test)."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import accel
import numpy as np
import pytest
import torch

Pair = collections.namedtuple("Pair", "first second")


class Returns(torch.nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> Any:
        y = self.lin(x)
        return {
            "tensor": lambda: y,
            "pair": lambda: (y, x * 2),
            "one_tuple": lambda: (y,),
            "list": lambda: [y, x * 2, y + 1],
            "dict": lambda: {"logits": y, "extra": (x * 2, [y - 1])},
            "constant": lambda: (y, 3, 2.5),
            "namedtuple": lambda: Pair(y, x * 2),
        }[self.kind]()


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _same(got[key], want[key])
    elif isinstance(want, tuple | list):
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            _same(a, b)
    else:
        assert got == want


KINDS = ["tensor", "pair", "one_tuple", "list", "dict", "constant", "namedtuple"]


@pytest.mark.parametrize("kind", KINDS)
def test_outputs_have_eager_structure(kind: str, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)
    model = Returns(kind).eval()
    x = torch.randn(2, 4)
    want = model(x)
    first = accel.compile(model, (x,))
    _same(first(x), want)
    again = accel.compile(model, (x,))  # the front cache: still structured
    _same(again(x), want)
    if kind != "namedtuple":  # its spec has no text form: never cached (still structured)
        assert again.cache_hit
    saved = accel.load(first.save(tmp_path / "artifact"))
    if kind == "namedtuple":  # the artifact holds the flat results (documented)
        assert type(saved(x)) is tuple
    else:
        _same(saved(x), want)


class Counts(torch.nn.Module):
    """Python numbers computed from tensors: non-strict torch.export cannot trace `int(t)`,
    accel retries strictly (dynamo), and the call returns Python numbers, as eager."""

    def forward(self, x: torch.Tensor, n: torch.Tensor) -> Any:
        return x * 2, int(n.sum()) + 1


class AddInts(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> int:
        return int(a) + int(b)


def test_python_number_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    x, n, n2 = torch.randn(3), torch.tensor([2, 5]), torch.tensor([4, -4])
    model = Counts()
    fn = accel.compile(model, (x, n))
    _same(fn(x, n), model(x, n))
    _same(fn(x, n2), model(x, n2))  # computed per call (1 here), not a constant
    again = accel.compile(model, (x, n))  # the front cache keeps it
    assert again.cache_hit
    _same(again(x, n2), model(x, n2))
    _same(accel.load(fn.save(tmp_path / "artifact"))(x, n2), model(x, n2))
    a, b = torch.tensor(3), torch.tensor(-10)
    add = accel.compile(AddInts(), (a, b), options={"cache": False})
    assert add(a, b) == -7 and type(add(a, b)) is int
    assert add(a.numpy(), b.numpy()) == -7


def test_numpy_calls_get_numpy_leaves() -> None:
    model = Returns("dict").eval()
    x = torch.randn(2, 4)
    got = accel.compile(model, (x,), options={"cache": False})(x.numpy())
    assert isinstance(got, dict) and isinstance(got["logits"], np.ndarray)
    np.testing.assert_allclose(got["extra"][1][0], (model.lin(x) - 1).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_a_hugging_face_model_returns_its_model_output() -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50,
                                     n_positions=16, bos_token_id=49, eos_token_id=49)
    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(config).eval()

    class NoCache(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gpt2 = gpt2

        def forward(self, ids: torch.Tensor) -> Any:
            return self.gpt2(ids, use_cache=False)

    ids = torch.randint(0, 50, (2, 8))
    got = accel.compile(NoCache(), (ids,), options={"cache": False})(ids)
    want = gpt2(ids, use_cache=False)
    assert type(got) is type(want)
    torch.testing.assert_close(got.logits, want.logits, rtol=1e-4, atol=1e-5)
