"""Models, losses and optimizers shared by the compiled-training tests (test_training.py,
test_data_parallel.py, test_dynamo_training.py, test_rdu_training.py), and the SGD and
entry-point checks of the CNN layout/kernel tests (test_blocked_layout.py,
test_pool_taps.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class CNN(torch.nn.Module):
    """Two conv -> BatchNorm -> ReLU -> pool stages and a linear head (8x8 inputs).

    The convolutions have no bias: a bias before BatchNorm gets a gradient that is zero up
    to rounding, and Adam's normalisation turns that rounding noise into full-size steps
    (in eager PyTorch as much as compiled: two runs of eager differ there too)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.conv2 = torch.nn.Conv2d(4, 8, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 2 * 2, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.nn.functional.avg_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


class MLP(torch.nn.Module):
    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, width)
        self.fc2 = torch.nn.Linear(width, width)
        self.fc3 = torch.nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.tanh(self.fc2(torch.relu(self.fc1(x)))))


def classify(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the model's logits: the CNN's and the MLP's loss_fn."""
    return torch.nn.functional.cross_entropy(model(x), y)


def language_model(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """GPT-2's own causal-LM loss (labels = inputs, shifted inside the model)."""
    return model(input_ids=ids, labels=ids, use_cache=False).loss


GPT2_VOCAB, GPT2_SEQ = 64, 8


def tiny_gpt2(seed: int = 3, *, layers: int = 2, width: int = 32, vocab: int = GPT2_VOCAB,
              positions: int = 16) -> torch.nn.Module:
    """A tiny GPT-2 LM (random weights, no hub; dropout 0: compiled training has no RNG)."""
    import transformers

    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        n_layer=layers, n_head=2, n_embd=width, vocab_size=vocab, n_positions=positions,
        bos_token_id=vocab - 1, eos_token_id=vocab - 1,
        attn_implementation="eager", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return transformers.GPT2LMHeadModel(config).train()


def cnn(seed: int = 1) -> torch.nn.Module:
    torch.manual_seed(seed)
    return CNN().train()


def mlp(seed: int = 2) -> torch.nn.Module:
    torch.manual_seed(seed)
    return MLP().train()


def image_batch(seed: int, batch: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 1, 8, 8, generator=g), torch.randint(0, 10, (batch,), generator=g)


def vector_batch(seed: int, batch: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 16, generator=g), torch.randint(0, 10, (batch,), generator=g)


def token_batch(seed: int, batch: int = 2) -> tuple[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, GPT2_VOCAB, (batch, GPT2_SEQ), generator=g),)


#: Optimizer factories: name -> f(params). The Adam eps is torch's default.
OPTIMIZERS: dict[str, Callable[[Any], torch.optim.Optimizer]] = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.05),
    "sgd-nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                                              weight_decay=1e-2),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "adamw-amsgrad": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05,
                                                 amsgrad=True),
}


def assert_sgd_steps_match(make: Callable[[], torch.nn.Module], x: torch.Tensor,
                           y: torch.Tensor, options: dict[str, Any], steps: int = 3) -> None:
    """`steps` SGD steps of a compiled classifier train step give eager's losses (1e-4)."""
    import accel

    ours, ref = make(), make()
    loss = torch.nn.CrossEntropyLoss()
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (ours, ref))
    step = accel.compile_train_step(ours, lambda m, a, b: loss(m(a), b), opt, (x, y),
                                    options=options)
    for _ in range(steps):
        got = float(step(x, y).detach())
        ref_opt.zero_grad()
        want_t = loss(ref(x), y)
        want_t.backward()
        ref_opt.step()
        want = want_t.item()
        assert abs(got - want) <= 1e-4 * abs(want), (got, want)


def assert_entry_point_matches(model: torch.nn.Module, kind: str, options: dict[str, Any],
                               x: torch.Tensor,
                               close: Callable[[torch.Tensor, torch.Tensor], None]) -> None:
    """`model` compiled through `@accel.jit` ("accel.jit") or `torch.compile` with the
    accel backend, strict ("torch.compile"), called on `x` and `2 * x`: `close(got, want)`
    against eager for each (dynamo reset before and after)."""
    import accel
    import accel.dynamo  # noqa: F401 - registers the "accel" backend

    torch._dynamo.reset()
    with torch.no_grad():
        if kind == "accel.jit":
            fn = accel.jit(model, compile_options=options)
        else:
            fn = torch.compile(model, backend="accel",
                               options={**options, "strict_target": True})
        close(fn(x), model(x))
        close(fn(2 * x), model(2 * x))
    torch._dynamo.reset()
