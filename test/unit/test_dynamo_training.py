"""Training through `torch.compile(backend="accel")` and the select_graphs/filter_graphs
options, against eager PyTorch (fp32).

AOTAutograd splits each captured graph into a forward and a backward graph; accel compiles
both, so `loss.backward()` runs compiled code: checked with `accel.dynamo.stats` (graphs
compiled per kind) and `accel.dynamo.graphs` (which graph ran compiled, how often).
Tolerances: gradients rtol=1e-5, atol=1e-6 (a single step: float32 reductions of at most a
few thousand terms); parameters after a few optimizer steps rtol=1e-4, atol=1e-6.
Everything compiles at opt_level=1 (fusion on, LLVM faster than at 3), tiny GPT-2 at 0 (the
compile takes half as long).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402
import accel.dynamo  # noqa: E402 - registers the "accel" backend
from accel.options import OptionError  # noqa: E402
from samples import mlp_class  # noqa: E402

GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-6
STEP_RTOL, STEP_ATOL = 1e-4, 1e-6
OPTIONS = {"opt_level": 1}

MLP = mlp_class(16, 32, 4)


class CNN(torch.nn.Module):
    """conv -> BatchNorm (training mode: batch statistics, running statistics updated) ->
    relu -> maxpool -> linear. The conv has no bias: BatchNorm cancels it, and its gradient
    would be rounding noise around 0 that no relative tolerance can compare."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 4 * 4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


#: Each test starts from fresh dynamo state (conftest.fresh_dynamo).
pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _records(start: int) -> list[tuple[str, bool]]:
    return [(r.name, r.compiled) for r in accel.dynamo.graphs[start:]]


def _delta(before: dict[str, int]) -> dict[str, int]:
    return {k: v - before[k] for k, v in accel.dynamo.stats.items() if v != before[k]}


def _assert_same_grads(model: torch.nn.Module, reference: torch.nn.Module) -> None:
    for (name, got), (_, want) in zip(model.named_parameters(), reference.named_parameters(),
                                      strict=True):
        assert got.grad is not None, name
        torch.testing.assert_close(got.grad, want.grad, rtol=GRAD_RTOL, atol=GRAD_ATOL,
                                   msg=lambda m, n=name: f"{n}: {m}")


def _train(model: torch.nn.Module, step: Callable[[torch.nn.Module], torch.Tensor],
           make_optimizer: Callable[[Any], torch.optim.Optimizer], steps: int
           ) -> list[float]:
    optimizer = make_optimizer(model.parameters())
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = step(model)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


# -- numerics --------------------------------------------------------------------------------


def test_mlp_forward_and_backward_run_compiled() -> None:
    torch.manual_seed(0)
    model, x, target = MLP(), torch.randn(8, 16), torch.randn(8, 4)
    reference = copy.deepcopy(model)
    before, start = dict(accel.dynamo.stats), len(accel.dynamo.graphs)
    fast = torch.compile(model, backend="accel", options=OPTIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback
        out = fast(x)
        loss = torch.nn.functional.mse_loss(out, target)
        assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
        loss.backward()
    torch.nn.functional.mse_loss(reference(x), target).backward()
    torch.testing.assert_close(out, reference(x), rtol=GRAD_RTOL, atol=GRAD_ATOL)
    _assert_same_grads(model, reference)
    assert _delta(before) == {"compiled": 2, "forward": 1, "backward": 1}
    assert _records(start) == [("graph_0_forward", True), ("graph_0_backward", True)]
    assert [(r.kind, r.calls) for r in accel.dynamo.graphs[start:]] == [("forward", 1),
                                                                       ("backward", 1)]
    # The same model under no_grad: dynamo's grad-mode guard recompiles it for inference.
    with torch.no_grad():
        torch.testing.assert_close(fast(x), reference(x), rtol=GRAD_RTOL, atol=GRAD_ATOL)
    assert _records(start)[2:] == [("graph_1", True)]
    assert accel.dynamo.graphs[-1].kind == "inference"


def test_cnn_batchnorm_train_mode_grads_and_running_stats() -> None:
    """BatchNorm in training mode: AOTAutograd returns the new running mean/var and
    num_batches_tracked as extra forward outputs and writes them into the buffers."""
    torch.manual_seed(1)
    model = CNN().train()
    reference = copy.deepcopy(model)
    fast = torch.compile(model, backend="accel", options=OPTIONS)
    before = dict(accel.dynamo.stats)
    for seed in (0, 1):
        x = torch.randn(3, 2, 8, 8, generator=torch.Generator().manual_seed(seed))
        for m in (model, reference):
            m.zero_grad()
        (fast(x) ** 2).mean().backward()
        (reference(x) ** 2).mean().backward()
        _assert_same_grads(model, reference)
        for (name, got), (_, want) in zip(model.named_buffers(), reference.named_buffers(),
                                          strict=True):
            torch.testing.assert_close(got, want, rtol=GRAD_RTOL, atol=GRAD_ATOL, msg=name)
    assert int(model.bn.num_batches_tracked) == 2
    assert _delta(before) == {"compiled": 2, "forward": 1, "backward": 1}
    assert [r.calls for r in accel.dynamo.graphs[-2:]] == [2, 2]


@pytest.mark.parametrize("build, shape, make_optimizer", [
    (MLP, (8, 16), lambda p: torch.optim.Adam(p, lr=1e-2)),
    (CNN, (3, 2, 8, 8), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9,
                                                   weight_decay=1e-3)),
], ids=["mlp-adam", "cnn-sgd"])
def test_optimizer_steps_match_eager_training(build, shape, make_optimizer) -> None:
    """Eager optimizers on top of the compiled forward and backward: the parameters (and
    BatchNorm's buffers) after 4 steps match eager training."""
    torch.manual_seed(2)
    model = build().train()
    reference = copy.deepcopy(model)
    x = torch.randn(*shape)
    fast = torch.compile(model, backend="accel", options=OPTIONS)
    start = len(accel.dynamo.graphs)
    got = _train(model, lambda m: fast(x).square().mean(), make_optimizer, 4)
    want = _train(reference, lambda m: m(x).square().mean(), make_optimizer, 4)
    assert got == pytest.approx(want, rel=STEP_RTOL)
    assert got[-1] < got[0]  # it trains
    for (name, a), (_, b) in zip(model.state_dict().items(), reference.state_dict().items(),
                                 strict=True):
        torch.testing.assert_close(a, b, rtol=STEP_RTOL, atol=STEP_ATOL, msg=name)
    assert [(r.compiled, r.calls) for r in accel.dynamo.graphs[start:]] == [(True, 4)] * 2


@pytest.mark.slow
def test_tiny_gpt2_language_model_loss() -> None:
    """GPT-2 (2 layers, 64 wide, vocab 128, random weights, no hub) in training mode,
    dropout off; transformers' loss graph-breaks, so dynamo captures two graphs. At
    opt_level=0, which compiles in half the time of 1 (fusion is covered by the MLP/CNN
    tests)."""
    pytest.importorskip("transformers")
    from training_models import tiny_gpt2

    model = tiny_gpt2(3, layers=2, width=64, vocab=128, positions=32)
    reference = copy.deepcopy(model)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
    before, start = dict(accel.dynamo.stats), len(accel.dynamo.graphs)
    fast = torch.compile(model, backend="accel", options={"opt_level": 0})
    loss = fast(input_ids=ids, labels=ids, use_cache=False).loss
    loss.backward()
    want = reference(input_ids=ids, labels=ids, use_cache=False).loss
    want.backward()
    torch.testing.assert_close(loss, want, rtol=GRAD_RTOL, atol=GRAD_ATOL)
    _assert_same_grads(model, reference)
    assert _delta(before) == {"compiled": 4, "forward": 2, "backward": 2}
    assert all(r.compiled and r.calls == 1 for r in accel.dynamo.graphs[start:])


# -- what AOTAutograd hands over ----------------------------------------------------------


class Passthrough(torch.nn.Module):
    """Outputs that are an input, a detached copy, a repeat, and one needing no grad."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = torch.tanh(self.fc(x))
        return y, x, y.detach(), y, (x * 2).detach()


def test_outputs_passed_through_repeated_and_detached() -> None:
    torch.manual_seed(4)
    model = Passthrough()
    reference = copy.deepcopy(model)
    x = torch.randn(3, 6, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    got = torch.compile(model, backend="accel", options=OPTIONS)(x)
    want = reference(x_ref)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=GRAD_RTOL, atol=GRAD_ATOL)
    assert [g.requires_grad for g in got] == [w.requires_grad for w in want]
    (got[0].sum() + got[1].square().sum() + got[3].mean()).backward()
    (want[0].sum() + want[1].square().sum() + want[3].mean()).backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=GRAD_RTOL, atol=GRAD_ATOL)
    _assert_same_grads(model, reference)
    assert accel.dynamo.graphs[-1].compiled and accel.dynamo.graphs[-2].compiled


def test_two_forwards_one_backward_then_accumulation() -> None:
    """Each compiled call returns fresh memory: the activations saved by the first forward
    survive the second, and a second backward accumulates into .grad as eager does."""
    torch.manual_seed(8)
    model = MLP()
    reference = copy.deepcopy(model)
    fast = torch.compile(model, backend="accel", options=OPTIONS)
    x1, x2, x3 = torch.randn(8, 16), torch.randn(8, 16), torch.randn(8, 16)  # MLP's shapes
    for run in (fast, reference):
        (run(x1).square().sum() + run(x2).sum()).backward()
        run(x3).square().mean().backward()
    _assert_same_grads(model, reference)
    assert [(r.compiled, r.calls) for r in accel.dynamo.graphs[-2:]] == [(True, 3)] * 2


def _counting(x: torch.Tensor, w: torch.Tensor, seen: torch.Tensor) -> dict[str, Any]:
    seen.add_(1)  # an input updated in place: AOTAutograd writes the new value back
    return {"y": torch.tanh(x @ w), "rows": x.shape[0], "none": None, "seen": seen * 1}


def test_input_mutation_and_non_tensor_outputs_in_training() -> None:
    x, w = torch.randn(3, 4), torch.randn(4, 2, requires_grad=True)
    seen = torch.zeros(2)
    start = len(accel.dynamo.graphs)
    fast = torch.compile(_counting, backend="accel", options=OPTIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # compiled: no fallback
        for step in (1, 2):
            out = fast(x, w, seen)
            assert out["rows"] == 3 and out["none"] is None
            torch.testing.assert_close(seen, torch.full((2,), float(step)))
            torch.testing.assert_close(out["seen"], seen)
            out["y"].sum().backward()
    w_ref = w.detach().clone().requires_grad_()
    for _ in (1, 2):
        torch.tanh(x @ w_ref).sum().backward()
    torch.testing.assert_close(w.grad, w_ref.grad, rtol=GRAD_RTOL, atol=GRAD_ATOL)
    assert _records(start) == [("graph_0_forward", True), ("graph_0_backward", True)]


def test_dropout_is_compiled() -> None:
    """Dropout in training mode: the forward graph draws its mask from accel's counter-based
    generator, keyed by one draw from torch's generator (accel.training.rng); the backward
    reads the saved mask. Gradients equal eager's with that mask (more in
    test_training_dropout.py)."""
    from accel.training import rng

    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5),
                                torch.nn.Linear(8, 2)).train()
    reference = copy.deepcopy(model)
    x = torch.randn(4, 8)
    start = len(accel.dynamo.graphs)
    fast = torch.compile(model, backend="accel", options=OPTIONS)
    torch.manual_seed(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        fast(x).square().sum().backward()
    torch.manual_seed(6)
    keep = rng._below(rng.draw_key(), 0, (4, 8), 0.5)
    hidden = reference[0](x) * keep * 2.0
    reference[2](hidden).square().sum().backward()
    _assert_same_grads(model, reference)
    assert _records(start) == [("graph_0_forward", True), ("graph_0_backward", True)]
    assert accel.dynamo.graphs[-1].calls == 1


def test_symbolic_shapes_run_eagerly_with_a_warning() -> None:
    torch.manual_seed(7)
    model = MLP()
    reference = copy.deepcopy(model)
    x = torch.randn(5, 16)
    start = len(accel.dynamo.graphs)
    fast = torch.compile(model, backend="accel", options=OPTIONS, dynamic=True)
    with pytest.warns(UserWarning, match="non-tensor or symbolic-shape inputs"):
        fast(x).sum().backward()
    reference(x).sum().backward()
    _assert_same_grads(model, reference)
    assert _records(start) == [("graph_0_forward", False), ("graph_0_backward", False)]


def test_strict_target_raises_for_a_training_graph() -> None:
    def bessel(x: torch.Tensor) -> torch.Tensor:
        return torch.special.bessel_j0(x).sum()  # no torch-mlir lowering

    fast = torch.compile(bessel, backend="accel", options={"strict_target": True})
    with pytest.raises(Exception, match=r"unsupported op aten.special_bessel_j0"):
        fast(torch.randn(4, requires_grad=True))


# -- select_graphs / filter_graphs ---------------------------------------------------------


def _three_graphs(x: torch.Tensor) -> torch.Tensor:
    """Two graph breaks: dynamo captures graph_0, graph_1, graph_2 in this order."""
    y = torch.tanh(x) * 2
    torch._dynamo.graph_break()
    y = torch.sigmoid(y) + x
    torch._dynamo.graph_break()
    return (y * y).sum(dim=0)


@pytest.mark.parametrize("options, compiled", [
    ({}, [True, True, True]),
    ({"select_graphs": [0, "graph_2"]}, [True, False, True]),
    ({"filter_graphs": [1]}, [True, False, True]),
    ({"select_graphs": (1, 2), "filter_graphs": ["graph_2"]}, [False, True, False]),
], ids=["all", "select", "filter", "both"])
def test_select_and_filter_inference_graphs(options, compiled) -> None:
    x = torch.randn(3, 5)
    before, start = dict(accel.dynamo.stats), len(accel.dynamo.graphs)
    fast = torch.compile(_three_graphs, backend="accel", options={**OPTIONS, **options})
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # leaving a graph out is no warning
        torch.testing.assert_close(fast(x), _three_graphs(x), rtol=GRAD_RTOL,
                                   atol=GRAD_ATOL)
    names = ["graph_0", "graph_1", "graph_2"]
    assert _records(start) == list(zip(names, compiled, strict=True))
    assert all(r.reason == "not selected (select_graphs/filter_graphs)"
               for r in accel.dynamo.graphs[start:] if not r.compiled)
    assert accel.dynamo.stats["eager"] - before["eager"] == compiled.count(False)
    assert accel.dynamo.stats["inference"] - before["inference"] == compiled.count(True)


def test_select_training_parts_by_name() -> None:
    """An index selects a graph's forward and backward; a part's name just that part."""
    x = torch.randn(3, 5, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    start = len(accel.dynamo.graphs)
    fast = torch.compile(_three_graphs, backend="accel", options={
        **OPTIONS, "select_graphs": ["graph_0_backward", 2], "filter_graphs": [
            "graph_2_forward"]})
    fast(x).sum().backward()
    _three_graphs(x_ref).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=GRAD_RTOL, atol=GRAD_ATOL)
    assert sorted(_records(start)) == [
        ("graph_0_backward", True), ("graph_0_forward", False), ("graph_1_backward", False),
        ("graph_1_forward", False), ("graph_2_backward", True), ("graph_2_forward", False)]


def test_numbering_restarts_after_dynamo_reset() -> None:
    x = torch.randn(2, 5)
    options = {**OPTIONS, "select_graphs": [0]}
    for _ in range(2):
        start = len(accel.dynamo.graphs)
        with torch.no_grad():
            torch.compile(_three_graphs, backend="accel", options=options)(x)
        assert _records(start) == [("graph_0", True), ("graph_1", False), ("graph_2", False)]
        torch._dynamo.reset()


@pytest.mark.parametrize("options, message", [
    ({"select_graphs": "graph_0"}, r"option 'select_graphs' must be None or a list, got str"),
    ({"filter_graphs": [1.5]}, r"option 'filter_graphs' must list graph indices \(ints >= "
                               r"0\) or names .*; 1.5 is neither"),
    ({"select_graphs": ["graph0"]}, r"'graph0' is neither"),
    ({"select_graphs": [True]}, r"True is neither"),
    ({"select_graphs": [-1]}, r"-1 is neither"),
])
def test_bad_graph_lists_are_clean_errors(options, message) -> None:
    fast = torch.compile(torch.tanh, backend="accel", options=options)
    with pytest.raises(Exception, match=message) as info:
        fast(torch.randn(3))
    # dynamo wraps the backend's error in BackendCompilerFailed
    assert isinstance(getattr(info.value, "inner_exception", None), OptionError)


def test_graph_options_belong_to_torch_compile() -> None:
    with pytest.raises(OptionError, match=r"option 'select_graphs' applies to "
                                          r"torch.compile\(backend=\"accel\"\) only"):
        accel.compile(torch.nn.Linear(2, 2), (torch.randn(1, 2),),
                      options={"select_graphs": [0]})
