"""Training with dropout and SDPA: `compile_train_step` (cpu, rdu, accel-compile + load) and
`torch.compile(backend="accel")`.

Random ops become a counter-based generator (SplitMix64) on a key that every compiled call
draws from torch's default generator (`accel.training.rng`). Checked here: the generator
against a reference SplitMix64 and its uniformity; the compiled dropout mask equals the
generator's mask for the drawn key (so the kept fraction is 1-p within 5 sigma, kept values
are scaled by exactly 1/(1-p)); the backward uses the forward's mask (gradients are zero
exactly where the output was dropped; the loss is the one of the gradients' mask);
`torch.manual_seed` repeats a step's masks and successive steps draw different ones; SDPA
(causal, boolean mask, float mask) with dropout off matches eager (loss and parameters after
3 AdamW steps rtol 1e-4; gradients rtol 1e-5); with dropout on, the compiled forward equals
its FX graph run eagerly with the same key and a tiny task's loss decreases; default-config
HF BERT and GPT-2 (dropout 0.1, SDPA attention) train with no eager fallback.
"""

from __future__ import annotations

import copy
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402
import accel.dynamo  # noqa: E402 - registers the "accel" backend
from accel.diagnostics import AccelError  # noqa: E402
from accel.training import rng  # noqa: E402

F = torch.nn.functional
OPTIONS = {"opt_level": 1}
#: The attention models' graphs: opt_level 0 compiles them in half the time (the dropout
#: tests at opt_level 1 cover the generator's fused loops).
ATTENTION_OPTIONS = {"opt_level": 0}
STEP_RTOL, STEP_ATOL = 1e-4, 1e-6
GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-6
N, P = 1 << 16, 0.3


#: Each test starts from fresh dynamo state (conftest.fresh_dynamo).
pytestmark = pytest.mark.usefixtures("fresh_dynamo")


# -- the generator ---------------------------------------------------------------------------


def _splitmix64(key: int, count: int) -> list[int]:
    """Reference SplitMix64 (Steele et al.; Vigna's splitmix64.c) from state `key`."""
    out, state, mask = [], key, (1 << 64) - 1
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append(z ^ (z >> 31))
    return out


def test_generator_is_splitmix64_and_uniform() -> None:
    key = torch.tensor(0x1234_5678_9ABC_DEF, dtype=torch.int64)
    got = [v % (1 << 64) for v in rng.random_bits(key, 5, (6,)).tolist()]
    assert got == _splitmix64(int(key), 11)[5:]
    u = rng._uniform(key, 0, (N,), torch.float32)
    assert 0 <= float(u.min()) and float(u.max()) < 1
    assert abs(float(u.mean()) - 0.5) < 5 * math.sqrt(1 / 12 / N)
    kept = rng._below(key, 0, (N,), 1 - P).double().mean()
    assert abs(float(kept) - (1 - P)) < 5 * math.sqrt(P * (1 - P) / N)


# -- compile_train_step: one dropout, observed through an SGD step ---------------------------


class Dropped(torch.nn.Module):
    """loss = sum(dropout(w + b) * t) with w = 0: SGD with lr 1 leaves w = -grad exactly,
    grad = t * mask / (1-p); the loss reads the forward's mask, the gradient the backward's."""

    def __init__(self, n: int = N, p: float = P) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(n))
        self.p = p

    def forward(self, b: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return (F.dropout(self.w + b, self.p, self.training) * t).sum()


def dropped_loss(model: torch.nn.Module, b: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return model(b, t)


def dropped_batch(n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, generator=g), torch.rand(n, generator=g) + 1  # t in [1, 2)


def _one_step(step: Any, w: torch.Tensor, batch: tuple[torch.Tensor, ...], seed: int,
              p: float = P) -> torch.Tensor:
    """Run one step from w = 0 with the generator seeded; check it against the mask the
    generator gives for the key drawn from that seed; returns the mask."""
    b, t = batch
    torch.manual_seed(seed)
    want = rng._below(rng.draw_key(), 0, tuple(w.shape), 1 - p)
    with torch.no_grad():
        w.zero_()
    torch.manual_seed(seed)
    loss = step(b, t)
    grad = -w.detach()
    keep = grad != 0
    assert torch.equal(keep, want)  # the mask is the generator's for torch's draw
    n = keep.numel()
    assert abs(float(keep.double().mean()) - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    torch.testing.assert_close(grad[keep], t[keep] * (1 / (1 - p)), rtol=1e-6, atol=0)
    # The forward's mask is the backward's: the loss of the gradients' mask.
    torch.testing.assert_close(loss, (b * t)[keep].sum() / (1 - p), rtol=1e-4, atol=1e-3)
    return keep


@pytest.fixture(scope="module")
def cpu_step() -> tuple[Dropped, Any]:
    model = Dropped().train()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    return model, accel.compile_train_step(model, dropped_loss, opt, dropped_batch(),
                                           options=OPTIONS)


def test_dropout_mask_statistics_and_backward(cpu_step: tuple[Dropped, Any]) -> None:
    model, step = cpu_step
    assert step.graphs["forward"].inputs[-1] == "rng:key"
    assert "rng:key" not in step.graphs["backward"].inputs  # it reads the saved mask
    first = _one_step(step, model.w, dropped_batch(), seed=11)
    again = _one_step(step, model.w, dropped_batch(), seed=11)
    assert torch.equal(first, again)  # torch.manual_seed repeats the masks
    with torch.no_grad():
        model.w.zero_()
    step(*dropped_batch())  # no reseeding: the next step draws another mask
    second = model.w.detach() != 0
    agree = float((second == first).double().mean())
    assert abs(agree - (P * P + (1 - P) ** 2)) < 0.01  # independent masks


def test_dropout_on_rdu() -> None:
    model = Dropped(4096).train()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    step = accel.compile_train_step(model, dropped_loss, opt, dropped_batch(4096),
                                    options={"target": "rdu", **OPTIONS})
    _one_step(step, model.w, dropped_batch(4096), seed=5)


TRAIN_PY = """\
import torch


class Dropped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(4096))

    def forward(self, b, t):
        return (torch.nn.functional.dropout(self.w + b, 0.25, self.training) * t).sum()


def loss_fn(model, b, t):
    return model(b, t)


def get_training(batch_size=1):
    model = Dropped().train()
    g = torch.Generator().manual_seed(0)
    return model, loss_fn, torch.optim.SGD(model.parameters(), lr=1.0), (
        torch.randn(4096, generator=g), torch.rand(4096, generator=g) + 1)
"""


def test_dropout_through_accel_compile_and_load(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from accel.cli import run_main
    from accel.tools.accel_compile import main

    (tmp_path / "train.py").write_text(TRAIN_PY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["accel-compile"])
    assert run_main(main, ["train.py", "-o1", "--output-folder", "t"]) == 0
    step = accel.load(tmp_path / "t")
    w = step.model_state()["w"]
    _one_step(step, w, dropped_batch(4096), seed=9, p=0.25)


# -- SDPA ------------------------------------------------------------------------------------


class Attention(torch.nn.Module):
    """Three SDPA calls on one projection (causal; a boolean mask; a float mask), SDPA's
    dropout_p = p on the attention weights and dropout p on the result (in training).

    The projection has no bias: a key bias gets a gradient that is zero in exact arithmetic
    (softmax ignores a constant per query), rounding noise that AdamW turns into full-size
    steps, differently in any two implementations (docs/training.md, "Numerics")."""

    def __init__(self, p: float = 0.0, width: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(width, 3 * width, bias=False)
        self.out = torch.nn.Linear(width, 4)
        self.p, self.heads = p, heads

    def forward(self, x: torch.Tensor, bool_mask: torch.Tensor, float_mask: torch.Tensor
                ) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        p = self.p if self.training else 0.0
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        a = a + F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask, dropout_p=p)
        a = a + F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask, dropout_p=p)
        h = F.dropout(a.transpose(1, 2).reshape(b, s, d), p, self.training)
        return self.out(h.mean(1))


def attention_loss(model: torch.nn.Module, *batch: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(*batch[:3]), batch[3])


def attention_batch(seed: int = 0, b: int = 8, s: int = 8, d: int = 16
                    ) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, s, d, generator=g)
    bool_mask = (torch.rand(b, 1, s, s, generator=g) < 0.6) | torch.eye(s, dtype=torch.bool)
    float_mask = torch.randn(b, 1, s, s, generator=g)
    y = (x[:, :, :4].mean(1).argmax(1)).long()  # learnable from x
    return x, bool_mask, float_mask, y


def _eager_steps(model: torch.nn.Module, steps: int) -> list[float]:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = attention_loss(model, *attention_batch())
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def test_sdpa_without_dropout_matches_eager() -> None:
    torch.manual_seed(1)
    model = Attention(p=0.0).train()
    reference = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    step = accel.compile_train_step(model, attention_loss, opt, attention_batch(),
                                    options=ATTENTION_OPTIONS)
    assert "rng:key" not in step.graphs["forward"].inputs
    got = [float(step(*attention_batch())) for _ in range(3)]
    want = _eager_steps(reference, 3)
    assert got == pytest.approx(want, rel=STEP_RTOL)
    for (name, a), (_, b) in zip(model.named_parameters(), reference.named_parameters(),
                                 strict=True):
        torch.testing.assert_close(a, b, rtol=STEP_RTOL, atol=STEP_ATOL, msg=name)


def test_sdpa_without_dropout_matches_eager_through_torch_compile() -> None:
    torch.manual_seed(2)
    model = Attention(p=0.0).train()
    reference = copy.deepcopy(model)
    before = dict(accel.dynamo.stats)
    fast = torch.compile(model, backend="accel", options=ATTENTION_OPTIONS)
    *inputs, y = attention_batch()
    F.cross_entropy(fast(*inputs), y).backward()
    F.cross_entropy(reference(*inputs), y).backward()
    for (name, a), (_, b) in zip(model.named_parameters(), reference.named_parameters(),
                                 strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=GRAD_RTOL, atol=GRAD_ATOL, msg=name)
    assert accel.dynamo.stats["eager"] == before["eager"]
    assert accel.dynamo.stats["backward"] == before["backward"] + 1


def test_sdpa_with_dropout_trains_and_matches_its_graph() -> None:
    torch.manual_seed(3)
    model = Attention(p=0.1).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batch = attention_batch()
    step = accel.compile_train_step(model, attention_loss, opt, batch,
                                    options=ATTENTION_OPTIONS)
    forward = step.graphs["forward"]
    params = dict(model.named_parameters())
    args = [params[n.split(":", 1)[1]].detach() if n.startswith("param:") else
            batch[int(n.split(":")[1])] for n in forward.inputs[:-1]]
    key = rng.draw_key()
    got = step.compiled["forward"](*args, key)
    want = forward.module(*args, key)  # the rewritten graph, run eagerly
    masks = 0
    for name, a, b in zip(forward.outputs, got, want, strict=True):
        if b.dtype == torch.bool:
            masks += 1
            assert torch.equal(a, b), name
        else:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
    assert masks == 4  # three SDPA dropouts and one dropout, saved for the backward
    losses = [float(step(*batch)) for _ in range(25)]
    assert all(math.isfinite(v) for v in losses)
    assert sum(losses[-5:]) / 5 < 0.5 * losses[0], losses


# -- torch.compile ---------------------------------------------------------------------------


def test_torch_compile_dropout_mask_seeding_and_backward() -> None:
    fast = torch.compile(lambda x: F.dropout(x, P, True), backend="accel", options=OPTIONS)
    x = torch.randn(N) + 3  # no zeros: a zero output is a dropped element
    start = len(accel.dynamo.graphs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        masks = []
        for seed in (4, 4, None):
            if seed is not None:
                torch.manual_seed(seed)
                want = rng._below(rng.draw_key(), 0, (N,), 1 - P)
                torch.manual_seed(seed)
            leaf = x.clone().requires_grad_()
            out = fast(leaf)
            out.backward(torch.full_like(out, 2.0))
            keep = out.detach() != 0
            if seed is not None:
                assert torch.equal(keep, want)
            torch.testing.assert_close(out.detach()[keep], x[keep] / (1 - P), rtol=1e-6,
                                       atol=0)
            assert torch.equal(leaf.grad != 0, keep)  # the forward's mask
            torch.testing.assert_close(leaf.grad[keep], torch.full_like(x[keep], 2 / (1 - P)))
            masks.append(keep)
    assert torch.equal(masks[0], masks[1])
    assert not torch.equal(masks[1], masks[2])
    assert [(r.kind, r.compiled) for r in accel.dynamo.graphs[start:]] == [
        ("forward", True), ("backward", True)]


# -- random ops without a compiled generator --------------------------------------------------


class Shuffled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)[:, torch.randperm(8)]


def test_unsupported_random_op() -> None:
    model = Shuffled().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(2, 8)
    with pytest.raises(AccelError, match=r"train step of Shuffled: random op aten\.randperm "
                                         r"\(File .*test_training_dropout\.py"):
        accel.compile_train_step(model, lambda m, x: m(x).sum(), opt, (x,))
    fast = torch.compile(model, backend="accel", options=OPTIONS)
    with pytest.warns(UserWarning, match=r"running graph eagerly: .*random op aten\.randperm"):
        fast(x).sum().backward()
    assert model.fc.weight.grad is not None


# -- default-config transformers models --------------------------------------------------------


def _bert() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=128,
                                     max_position_embeddings=64, num_labels=3)
    model = transformers.BertForSequenceClassification(config).train()
    g = torch.Generator().manual_seed(0)
    return model, (torch.randint(0, 128, (4, 16), generator=g),
                   torch.randint(0, 3, (4,), generator=g))


@pytest.mark.slow
def test_default_bert_trains_through_compile_train_step() -> None:
    """HF defaults: hidden and attention dropout 0.1, SDPA attention."""
    model, batch = _bert()
    assert model.config.hidden_dropout_prob == 0.1
    assert model.config._attn_implementation == "sdpa"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = accel.compile_train_step(model, lambda m, ids, y: m(input_ids=ids, labels=y).loss,
                                    opt, batch, options={"opt_level": 0})
    assert "rng:key" in step.graphs["forward"].inputs
    losses = [float(step(*batch)) for _ in range(20)]
    assert all(math.isfinite(v) for v in losses)
    assert sum(losses[-5:]) / 5 < 0.8 * losses[0], losses


@pytest.mark.slow
def test_default_gpt2_trains_through_torch_compile() -> None:
    """HF defaults (dropout 0.1, SDPA attention); use_cache=False: the cache output is not
    what this tests."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128,
                                     n_positions=64, bos_token_id=127, eos_token_id=127)
    model = transformers.GPT2LMHeadModel(config).train()
    assert config.resid_pdrop == config.attn_pdrop == config.embd_pdrop == 0.1
    assert model.config._attn_implementation == "sdpa"
    ids = torch.randint(0, 128, (4, 16), generator=torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fast = torch.compile(model, backend="accel", options={"opt_level": 0})
    before, start = dict(accel.dynamo.stats), len(accel.dynamo.graphs)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = fast(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert all(math.isfinite(v) for v in losses)
    assert sum(losses[-5:]) / 5 < 0.9 * losses[0], losses
    assert accel.dynamo.stats["eager"] == before["eager"]
    records = accel.dynamo.graphs[start:]
    assert records and all(r.compiled and r.calls == 20 for r in records)
    assert {r.kind for r in records} == {"forward", "backward"}
