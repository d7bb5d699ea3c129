"""The model zoo (benchmarks/zoo_models.py) against eager PyTorch, as users bring the models.

HF GPT-2, BERT (and BertForSequenceClassification), RoBERTa, Llama and Mistral (grouped-query
attention, Mistral with a sliding window shorter than the sequence), T5, ViT, the Whisper
encoder and CLIP, each built offline from its config with random weights and DEFAULT options
(attention implementation "sdpa", `use_cache=True`, the config's dropout probabilities);
ResNet-18/50 and MobileNetV2 after torchvision's definitions. Tiny sizes (2 layers, width
64; 32x32 images at 1/8 of ResNet's width).

Per model:
- inference (eval mode) through `accel.compile(model, inputs)` and through
  `torch.compile(model, backend="accel", options={"strict_target": True})` (two input
  sets), against the eager call on the same inputs: every compared output (logits,
  hidden states, pooled outputs, image/text embeddings) within rtol 1e-4 and atol
  max(1e-5 x (1 + max |eager|), 2 x max |eager float32 - eager float64|): the second term
  is eager's own rounding, which for the tiny ResNet-50 (logits ~1, built through 16
  residual blocks) is 5e-5; the output's structure as eager's (the HF ModelOutput class);
  and `accel.dynamo.stats`: accel compiled every graph dynamo gave it, none ran eagerly;
- training: 3 AdamW steps through `accel.compile_train_step` against eager training of a
  copy (dropout probabilities set to 0 for this comparison), in train mode, with an eager
  float64 copy as the yardstick of rounding: the loss at each step within rel 1e-4, and at
  the end every parameter and buffer within 1e-4 x max |eager| -- or, where eager float32
  is itself further than that from float64, within 4x that distance. Adam's first steps
  are lr * g / (|g| + eps): an element whose gradient is near zero (attention key biases,
  whose exact gradient is 0; shifts that start at 0) takes a step set by rounding, in
  eager float32 as much as in accel: where the float64 run's RMS gradient is below 1e-6
  (100 eps) after some step, an element may differ by up to 2 x lr x steps (any step,
  either sign). Tiny ResNet-50 and MobileNetV2 in train-mode BatchNorm at batch 2 are
  chaotic in the same way: eager float32 and float64 losses part by 1-5% after one or two
  steps, so there the bound is eager's own spread.

`make check` runs a representative subset (GPT-2, BERT, ResNet-18; training: GPT-2); the
other models are marked `long` and run in `make zoo`. Compiles use opt_level 1 (LLVM -O1:
the same numerics as -O3, much faster to build); each model's `accel.compile` is shared by
the tests that need it.
"""

from __future__ import annotations

import copy
import functools
import sys
from pathlib import Path
from typing import Any

import accel
import accel.dynamo  # registers the "accel" torch.compile backend
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.zoo_models import CNNS, TRANSFORMERS, ZOO, Built  # noqa: E402

OPTIONS = {"opt_level": 1}
RTOL, ATOL = 1e-4, 1e-5
TRAIN_RTOL, TRAIN_STEPS, LR = 1e-4, 3, 1e-3
#: Training: accel may differ from eager by this many times eager float32's own distance
#: from eager float64 where that distance is above the tolerance (see the docstring).
SPREAD = 4
#: The models `make check` runs; the others are marked `long` (`make zoo` runs them).
CHECK_SUBSET = ("gpt2", "bert", "resnet18")
#: Training in `make check`: GPT-2 only. A CNN training step takes minutes to compile on 2 cores
#: (issue 25) and test_training.py already trains a CNN; BERT trains in test_training_dropout.py.
TRAIN_SUBSET = ("gpt2",)
#: Models whose default `use_cache=True` returns an HF cache object.
CACHED = ("gpt2", "llama", "mistral", "t5")


def _models(names: list[str], subset: tuple[str, ...] = CHECK_SUBSET) -> list[Any]:
    return [pytest.param(n, marks=() if n in subset else pytest.mark.long)
            for n in names]


ALL = _models(TRANSFORMERS + CNNS)


@functools.cache
def _built(name: str) -> Built:
    return ZOO[name]("tiny")


@functools.cache
def _compiled(name: str) -> accel.CompiledModule:
    built = _built(name)
    return accel.compile(built.model, built.inputs(0), options=OPTIONS)


def _tensors(value: Any) -> tuple[torch.Tensor, ...]:
    return value if isinstance(value, tuple) else (value,)


def _float64(batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    return tuple(t.double() if t.is_floating_point() else t for t in batch)


@functools.cache
def _float64_spread(name: str, seed: int) -> tuple[float, ...]:
    """Per compared output: max |eager float32 - eager float64| on inputs(seed)."""
    built = _built(name)
    exact = copy.deepcopy(built.model).double()
    inputs = built.inputs(seed)
    with torch.no_grad():
        want = _tensors(built.select(built.model(*inputs)))
        ref = _tensors(built.select(exact(*_float64(inputs))))
    return tuple((w.double() - r).abs().max().item() for w, r in zip(want, ref, strict=True))


def _assert_matches(got: Any, want: Any, what: str, name: str, seed: int) -> None:
    spread = _float64_spread(name, seed)
    for i, (g, w) in enumerate(zip(_tensors(got), _tensors(want), strict=True)):
        assert isinstance(g, torch.Tensor) and g.dtype == w.dtype, f"{what}[{i}]"
        atol = max(ATOL * (1.0 + w.abs().max().item()), 2 * spread[i])
        torch.testing.assert_close(g, w, rtol=RTOL, atol=atol,
                                   msg=lambda m, i=i: f"{what}[{i}]: {m}")


def _assert_call_matches(built: Built, fn: Any, name: str) -> None:
    """Compiled `fn` returns what eager returns (the same type, close values) on inputs(1)."""
    inputs = built.inputs(1)
    with torch.no_grad():
        want = built.model(*inputs)
    got = fn(*inputs)
    assert type(got) is type(want)
    _assert_matches(built.select(got), built.select(want), name, name, 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_accel_compile(name: str) -> None:
    built = _built(name)
    fn = _compiled(name)
    _assert_call_matches(built, fn, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", _models(list(CACHED)))
def test_accel_compile_without_cache(name: str) -> None:
    """The decoders with `use_cache=False` too (no cache object in the output)."""
    built = ZOO[name]("tiny")
    built.model.config.use_cache = False
    fn = accel.compile(built.model, built.inputs(0), options=OPTIONS)
    _assert_call_matches(built, fn, name)


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("name", ALL)
def test_torch_compile(name: str) -> None:
    built = _built(name)
    before = dict(accel.dynamo.stats)
    fast = torch.compile(built.model, backend="accel",
                         options={"strict_target": True, **OPTIONS})
    with torch.no_grad():
        for seed in (0, 1):
            inputs = built.inputs(seed)
            got, want = fast(*inputs), built.model(*inputs)
            assert type(got) is type(want)
            _assert_matches(built.select(got), built.select(want), f"{name} seed {seed}",
                            name, seed)
    compiled = accel.dynamo.stats["compiled"] - before["compiled"]
    eager = accel.dynamo.stats["eager"] - before["eager"]
    assert compiled >= 1 and eager == 0, (compiled, eager)


# --- training ------------------------------------------------------------------------------


def _eager_step(model: torch.nn.Module, opt: torch.optim.Optimizer, loss_fn: Any,
                batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    opt.zero_grad()
    loss = loss_fn(model, *batch)
    loss.backward()
    opt.step()
    return loss.detach()


#: Adam's step is lr * m / (sqrt(v) + eps): where the float64 run's RMS gradient sqrt(v) is
#: below this (100 eps) after some step, an absolute gradient error at float32's rounding
#: (~1e-9 for gradients of ~0.03) moves the step by more than the tolerance (CLIP's k_proj:
#: a gradient of 4e-10 at the first step).
ILL_RMS = 1e-6


def _ill_conditioned(model: torch.nn.Module, opt: torch.optim.Optimizer
                     ) -> dict[str, torch.Tensor]:
    """Per parameter name, the elements whose Adam step the rounding of their gradient
    decides (a mask; only parameters that have some)."""
    beta2 = opt.param_groups[0]["betas"][1]
    masks = {}
    for name, p in model.named_parameters():
        state = opt.state.get(p, {})
        if "exp_avg_sq" not in state:
            continue
        v_hat = state["exp_avg_sq"] / (1 - beta2 ** float(state["step"]))
        mask = v_hat.sqrt() < ILL_RMS
        if mask.any():
            masks[name] = mask
    return masks


@pytest.mark.slow
@pytest.mark.parametrize("name", _models(TRANSFORMERS + CNNS, TRAIN_SUBSET))
def test_train_steps(name: str) -> None:
    built = ZOO[name]("tiny", dropout=False)
    model = built.model.train()
    eager, exact = copy.deepcopy(model), copy.deepcopy(model).double()
    opt, eager_opt, exact_opt = (torch.optim.AdamW(m.parameters(), lr=LR)
                                 for m in (model, eager, exact))
    step = accel.compile_train_step(model, built.loss, opt, built.inputs(0), options=OPTIONS)
    ill: dict[str, torch.Tensor] = {}
    for i in range(TRAIN_STEPS):
        batch = built.inputs(i)
        loss = step(*batch)
        want = _eager_step(eager, eager_opt, built.loss, batch)
        exact_loss = _eager_step(exact, exact_opt, built.loss, _float64(batch))
        for key, mask in _ill_conditioned(exact, exact_opt).items():  # at any step
            ill[key] = ill[key] | mask if key in ill else mask
        err = abs(loss.item() - want.item())
        spread = abs(want.item() - exact_loss.item())
        assert err <= max(TRAIN_RTOL * abs(want.item()), SPREAD * spread), \
            f"{name} loss, step {i}: {loss.item()} vs {want.item()} (float64 {exact_loss.item()})"
    got, ref, ex = model.state_dict(), eager.state_dict(), exact.state_dict()
    assert got.keys() == ref.keys()
    for key in ref:
        g, w = got[key], ref[key]
        assert g.shape == w.shape and g.dtype == w.dtype, key
        if not w.is_floating_point():
            assert torch.equal(g, w), key
            continue
        diff = (g.double() - w.double()).abs()
        if key in ill:  # any Adam step, of either sign, is rounding there
            assert (diff[ill[key]] <= 2 * LR * TRAIN_STEPS).all(), key
            diff = diff.masked_fill(ill[key], 0)
        err = diff.max().item()
        scale = w.double().abs().max().item()
        eager_err = (w.double() - ex[key]).abs().max().item()
        assert err <= max(TRAIN_RTOL * scale, SPREAD * eager_err), \
            f"{name} {key}: max |accel - eager| {err:.3g}, scale {scale:.3g}, " \
            f"max |eager - float64 eager| {eager_err:.3g}"
