"""Model zoo: `accel.compile(model.eval(), example_inputs)` against eager PyTorch (fp32).

MLP, LeNet-style CNN (batchnorm, max/avg pooling), 2-layer LSTM and GRU (batch_first), and
tiny GPT-2 / BERT built offline from `transformers` configs with random weights, on
input_ids of shape (2, 16). The same models also go through
`torch.compile(model, backend="accel", options={"strict_target": True})`, checked against
eager and against `accel.dynamo.stats` (accel compiled the graph, none ran eagerly).
Workarounds: docs/model-zoo.md.

Tolerances: rtol=1e-4, atol=1e-5 everywhere (float32; every reduction here has at most a
few hundred terms and the transformer stacks are 2 layers deep; observed errors < 1e-6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import accel
import accel.dynamo  # registers the "accel" torch.compile backend
import pytest
import torch
import transformers  # the `test` extra installs it: a missing install must fail, not skip

RTOL, ATOL = 1e-4, 1e-5
#: The transformer tests compile at opt_level=1: the generated code is identical in
#: numerics, and LLVM at -O3 takes ~45 s per tiny transformer (vs ~3 s at -O1).
TRANSFORMER_OPTIONS = {"opt_level": 1}
BATCH, SEQ, VOCAB = 2, 16, 128


def _check(fn: accel.CompiledModule, model: torch.nn.Module, *inputs: torch.Tensor,
           expected: torch.Tensor | None = None) -> None:
    got = fn(*inputs)
    if expected is None:
        with torch.no_grad():
            expected = model(*inputs)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)


# --- small torch.nn models ------------------------------------------------------------


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
            torch.nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.net(x), dim=-1)


class LeNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.BatchNorm2d(6), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(6, 16, 5), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.AvgPool2d(2))
        self.classifier = torch.nn.Sequential(
            torch.nn.Linear(16 * 5 * 5, 120), torch.nn.ReLU(), torch.nn.Linear(120, 84),
            torch.nn.ReLU(), torch.nn.Linear(84, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).flatten(1))


class Recurrent(torch.nn.Module):
    """A 2-layer batch_first LSTM or GRU; returns the top layer's outputs at every step."""

    def __init__(self, cell: type[torch.nn.RNNBase]) -> None:
        super().__init__()
        self.rnn = cell(input_size=8, hidden_size=16, num_layers=2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


def _mlp() -> MLP:
    torch.manual_seed(0)
    return MLP().eval()


def test_mlp() -> None:
    model = _mlp()
    fn = accel.compile(model, (torch.randn(8, 32),))
    _check(fn, model, torch.randn(8, 32))


def _lenet() -> LeNet:
    torch.manual_seed(1)
    model = LeNet()
    with torch.no_grad():  # non-trivial running statistics for the eval-mode batchnorms
        for bn in (model.features[1], model.features[5]):
            bn.running_mean.copy_(torch.randn_like(bn.running_mean) * 0.1)
            bn.running_var.copy_(torch.rand_like(bn.running_var) + 0.5)
            bn.weight.copy_(torch.rand_like(bn.weight) + 0.5)
            bn.bias.copy_(torch.randn_like(bn.bias) * 0.1)
    return model.eval()


def test_lenet_with_batchnorm_and_pooling() -> None:
    model = _lenet()
    fn = accel.compile(model, (torch.randn(2, 1, 28, 28),))
    _check(fn, model, torch.randn(2, 1, 28, 28))


# torch.export warns that nn.RNNBase assigns `_flat_weights` during export: harmless here.
@pytest.mark.filterwarnings("ignore:The tensor attributes self.rnn:UserWarning")
@pytest.mark.parametrize("cell", [torch.nn.LSTM, torch.nn.GRU], ids=["lstm", "gru"])
def test_two_layer_rnn(cell: type[torch.nn.RNNBase]) -> None:
    torch.manual_seed(2)
    model = Recurrent(cell).eval()
    fn = accel.compile(model, (torch.randn(BATCH, 5, 8),))
    _check(fn, model, torch.randn(BATCH, 5, 8))


# --- tiny transformers (random weights, no hub) ----------------------------------------


def _input_ids(seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(seed))


def _tiny_gpt2() -> transformers.GPT2LMHeadModel:
    torch.manual_seed(3)
    # attn_implementation="eager": with "sdpa", torch.export fails inside torch's sdpa
    # decomposition ("Cannot view a tensor with shape [2, 16, 64] and strides (64, 128, 1)").
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=64, vocab_size=VOCAB, n_positions=32,
        bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1, attn_implementation="eager")
    return transformers.GPT2LMHeadModel(config).eval()


def _tiny_bert() -> transformers.BertModel:
    torch.manual_seed(4)
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, max_position_embeddings=32, attn_implementation="eager")
    return transformers.BertModel(config).eval()


class GPT2Logits(torch.nn.Module):
    """input_ids -> logits. `explicit_mask` passes an all-ones attention_mask; without it,
    transformers' packed-sequence detection (an `aten.cumsum`, i.e. `tm_tensor.scan`) is in
    the graph."""

    def __init__(self, model: torch.nn.Module, *, explicit_mask: bool) -> None:
        super().__init__()
        self.model = model
        self.explicit_mask = explicit_mask

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        mask = torch.ones_like(input_ids) if self.explicit_mask else None
        return self.model(input_ids=input_ids, attention_mask=mask, use_cache=False,
                          return_dict=False)[0]


class BertHidden(torch.nn.Module):
    """input_ids -> last_hidden_state."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, return_dict=False)[0]


@pytest.mark.slow
@pytest.mark.parametrize("explicit_mask", [True, False], ids=["mask", "no-mask"])
def test_tiny_gpt2_lm_head(explicit_mask: bool) -> None:
    """With and without an explicit all-ones attention mask; the reference is the plain
    model call (no mask)."""
    model = _tiny_gpt2()
    wrapped = GPT2Logits(model, explicit_mask=explicit_mask).eval()
    fn = accel.compile(wrapped, (_input_ids(0),), options=TRANSFORMER_OPTIONS)
    ids = _input_ids(1)
    with torch.no_grad():
        expected = model(input_ids=ids, use_cache=False).logits
    assert expected.shape == (BATCH, SEQ, VOCAB)
    _check(fn, wrapped, ids, expected=expected)


@pytest.mark.slow
def test_tiny_bert() -> None:
    model = _tiny_bert()
    # Non-persistent buffers (torch-mlir issue 4744) are handled inside import_torch.
    assert any(m._non_persistent_buffers_set for m in model.modules())
    wrapped = BertHidden(model).eval()
    fn = accel.compile(wrapped, (_input_ids(0),), options=TRANSFORMER_OPTIONS)
    # ...and the user's module is left as it was.
    assert any(m._non_persistent_buffers_set for m in model.modules())
    ids = _input_ids(1)
    with torch.no_grad():
        expected = model(input_ids=ids).last_hidden_state
    assert expected.shape == (BATCH, SEQ, 64)
    _check(fn, wrapped, ids, expected=expected)


# --- the same models through torch.compile(backend="accel") ----------------------------


def _dynamo_check(model: torch.nn.Module, make_inputs: Callable[[int], tuple[Any, ...]], *,
                  options: dict[str, Any] | None = None,
                  select: Callable[[Any], torch.Tensor] = lambda out: out) -> None:
    """`torch.compile(model, backend="accel")` (strict) on two input sets of one shape vs
    eager: accel compiles exactly one graph (no graph break, no recompile) and the backend
    runs nothing eagerly. `select` picks the tensor to compare out of the model's output."""
    before = dict(accel.dynamo.stats)
    fast = torch.compile(model, backend="accel",
                         options={"strict_target": True, **(options or {})})
    with torch.no_grad():
        for seed in (0, 1):
            inputs = make_inputs(seed)
            got, expected = select(fast(*inputs)), select(model(*inputs))
            assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
            torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    stats = accel.dynamo.stats
    assert (stats["compiled"] - before["compiled"], stats["eager"] - before["eager"]) == (1, 0)


def _randn(*shape: int) -> Callable[[int], tuple[torch.Tensor]]:
    return lambda seed: (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)),)


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("build, make_inputs", [
    (_mlp, _randn(8, 32)),
    (_lenet, _randn(2, 1, 28, 28)),
], ids=["mlp", "lenet"])
def test_torch_compile_cnn_and_mlp(build: Callable[[], torch.nn.Module],
                                   make_inputs: Callable[[int], tuple[Any, ...]]) -> None:
    _dynamo_check(build(), make_inputs)


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("cell", [torch.nn.LSTM, torch.nn.GRU], ids=["lstm", "gru"])
def test_torch_compile_two_layer_rnn(cell: type[torch.nn.RNNBase]) -> None:
    torch.manual_seed(2)
    model = Recurrent(cell).eval()
    # Dynamo graph-breaks on nn.LSTM/GRU/RNN by default: the RNN then runs eagerly without
    # reaching the backend (no warning, nothing compiled). allow_rnn lets dynamo trace it.
    with torch._dynamo.config.patch(allow_rnn=True):
        _dynamo_check(model, _randn(BATCH, 5, 8))


@pytest.mark.usefixtures("fresh_dynamo")
def test_torch_compile_rnn_needs_allow_rnn() -> None:
    """Pins dynamo's default documented in docs/model-zoo.md: without allow_rnn an RNN never
    reaches the accel backend, even with strict_target."""
    model = Recurrent(torch.nn.GRU).eval()
    before = dict(accel.dynamo.stats)
    fast = torch.compile(model, backend="accel", options={"strict_target": True})
    x = torch.randn(BATCH, 5, 8)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x))
    assert accel.dynamo.stats == before


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_dynamo")
def test_torch_compile_tiny_gpt2() -> None:
    """The plain model call: no attention mask (the cumsum is in the graph) and the default
    use_cache=True (the KV cache's tensors are extra graph outputs)."""
    _dynamo_check(_tiny_gpt2(), lambda seed: (_input_ids(seed),), options=TRANSFORMER_OPTIONS,
                  select=lambda out: out.logits)


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_dynamo")
def test_torch_compile_tiny_bert() -> None:
    _dynamo_check(_tiny_bert(), lambda seed: (_input_ids(seed),), options=TRANSFORMER_OPTIONS,
                  select=lambda out: out.last_hidden_state)
