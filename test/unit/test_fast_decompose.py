"""accel.frontend.fast_decompose: torch's decomposed program, without its fixed cost.

Each case decomposes one exported program twice, through torch's own
`run_decompositions` and inside `fast_decompositions`, and compares the graphs' code (the
whole comparison over every op and zoo model, 267 programs, was run when the module was
written; here a sample that covers preserved CIA ops, decomposed CIA ops, training-mode
BatchNorm, dropout and an HF model).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from accel.frontend import hf_cache
from accel.frontend.decompositions import decompositions
from accel.frontend.fast_decompose import _cia_key, fast_decompositions
from accel.frontend.torch_import import _as_module, _export, _persistent_buffers
from torch.export import exported_program as ep

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def _exported(model: Any, inputs: tuple[Any, ...]) -> Any:
    hf_cache.register()
    module = _as_module(model)
    with _persistent_buffers(module):
        return _export(module, inputs, {}, None)


def _code(model: Any, inputs: tuple[Any, ...], fast: bool) -> str:
    exported = _exported(model, inputs)
    if fast:
        with fast_decompositions(exported):
            return exported.run_decompositions(decompositions()).graph_module.code
    return exported.run_decompositions(decompositions()).graph_module.code


def _hf_gpt2() -> tuple[Any, tuple[Any, ...]]:
    import zoo_models

    built = zoo_models.gpt2("tiny", dropout=True)
    return built.model.train(), built.inputs(0)


CASES = {
    # linear, layer_norm, dropout, upsample and friends are CIA ops: kept or decomposed.
    "linear-relu": (torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()),
                    (torch.randn(2, 8),)),
    "norms-dropout-train": (torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.GELU(approximate="tanh"),
        torch.nn.Dropout(0.5), torch.nn.Flatten(), torch.nn.LayerNorm(144)).train(),
        (torch.randn(2, 3, 8, 8),)),
    "functional-mix": (lambda x: F.interpolate(F.softmax(x, -1), scale_factor=2)
                       + torch.hypot(x, x).repeat_interleave(2, -1)[..., :16].unsqueeze(0)
                       .mean(0).reshape(1, 2, 4, 16).sum(0),
                       (torch.randn(2, 4, 8),)),
    # rms_norm, one_hot and nearest upsampling are CIA ops the table keeps as they are;
    # bilinear upsampling and matmul are decomposed by torch-mlir's Python entries.
    "preserved-cia": (lambda x, i: F.rms_norm(F.interpolate(x, scale_factor=2), (8,))
                      + F.interpolate(x, size=(4, 8), mode="bilinear").matmul(
                          F.one_hot(i, 8).float()),
                      (torch.randn(1, 2, 2, 4), torch.tensor([1, 3, 0, 7, 2, 2, 5, 6]))),
    "sdpa-einsum": (lambda q, k: torch.einsum("bhd,bhd->bh", F.scaled_dot_product_attention(
        q, k, k), k), (torch.randn(2, 3, 4), torch.randn(2, 3, 4))),
}


@pytest.mark.parametrize("name", [*CASES, "hf-gpt2-train"])
def test_graph_is_the_one_torch_gives(name: str) -> None:
    # Intent: the narrowed override and cached CIA list change nothing in the result.
    model, inputs = _hf_gpt2() if name == "hf-gpt2-train" else CASES[name]
    want = _code(model, inputs, fast=False)
    got = _code(model, inputs, fast=True)
    assert got == want


def test_torch_functions_are_restored_after_the_block_and_after_an_error() -> None:
    collect, override = ep._collect_all_valid_cia_ops, ep._override_composite_implicit_decomp
    exported = _exported(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    with fast_decompositions(exported):
        assert ep._override_composite_implicit_decomp is not override
    assert (ep._collect_all_valid_cia_ops, ep._override_composite_implicit_decomp) == (
        collect, override)
    with pytest.raises(RuntimeError, match="boom"), fast_decompositions(exported):
        raise RuntimeError("boom")
    assert (ep._collect_all_valid_cia_ops, ep._override_composite_implicit_decomp) == (
        collect, override)
    # Eager autograd through a CIA op is untouched afterwards.
    x = torch.randn(3, 4, requires_grad=True)
    F.linear(x, torch.ones(2, 4)).sum().backward()
    assert torch.equal(x.grad, torch.full((3, 4), 2.0))


def test_a_custom_op_registered_later_changes_the_cached_list_key() -> None:
    # Intent: the cache of preservable CIA ops is not stale after torch.library adds one.
    before = _cia_key()
    lib = torch.library.Library("accel_fast_decompose_test", "DEF")  # noqa: TOR901
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CompositeImplicitAutograd")
    try:
        assert _cia_key() != before
        model = lambda x: torch.ops.accel_fast_decompose_test.twice(x) + 1  # noqa: E731
        x = torch.randn(3)
        assert _code(model, (x,), fast=True) == _code(model, (x,), fast=False)
    finally:
        lib._destroy()


def test_the_knob_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_FAST_DECOMPOSE", "0")
    override = ep._override_composite_implicit_decomp
    with fast_decompositions(_exported(torch.nn.Linear(2, 2), (torch.randn(1, 2),))):
        assert ep._override_composite_implicit_decomp is override


def test_another_torch_without_the_internals_runs_torchs_own_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model, inputs = CASES["linear-relu"]
    want = _code(model, inputs, fast=False)
    monkeypatch.delattr(ep, "_override_composite_implicit_decomp")
    exported = _exported(model, inputs)
    with fast_decompositions(exported):
        assert not hasattr(ep, "_override_composite_implicit_decomp")
    monkeypatch.undo()
    assert _code(model, inputs, fast=True) == want
