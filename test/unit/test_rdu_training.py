"""Compiled training on the RDU target: phase-labelled sections, scaling factors per phase,
gradient-normalization sections, the all-reduce sections of data parallel, the train-step
folder's `<NAME>.pef` and `sections.json`, and the emulated step's numerics.

Numerics: the emulated step against eager training of the same model, max |compiled -
eager| <= 1e-5 * max |eager| per parameter after 3 steps (the emulation is the CPU target's
code, which rounds reductions in another order). The 2-process data-parallel run is
test_data_parallel.py's, parametrised over the rdu target.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import accel
import pytest
import torch
from accel.dialects.rdu_arch import lookup_arch, resource_limit
from accel.targets.rdu.training import allreduce_sections, step_sections
from training_models import classify, mlp, vector_batch

#: SambaFlow's four factors: forward, backward, gradient normalization, optimizer.
FACTORS = (1.0, 0.8, 0.5, 0.7)


def _eager(steps: int, clip: float | None) -> torch.nn.Module:
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for i in range(steps):
        opt.zero_grad()
        classify(model, *vector_batch(i)).backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
    return model


def _close(got: dict[str, torch.Tensor], want: torch.nn.Module) -> None:
    for name, ref in want.state_dict().items():
        err = (got[name] - ref).abs().max().item()
        assert err <= 1e-5 * ref.abs().max().item(), (name, err)


@pytest.fixture(scope="module")
def clipped_step() -> tuple[torch.nn.Module, object]:
    """An SGD-momentum step with clip_grad_norm on rdu -o0 with four scaling factors."""
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = accel.compile_train_step(
        model, classify, opt, vector_batch(0),
        options={"target": "rdu", "preset": "o0", "clip_grad_norm": 1.0,
                 "resources_scaling_factors": " ".join(map(str, FACTORS)),
                 "opt_level": 1})
    return model, step


def test_sections_carry_their_phase(clipped_step: tuple[torch.nn.Module, object]) -> None:
    _, step = clipped_step
    phases = {name: {s.phase for s in module.compiled.sections}
              for name, module in step.compiled.items()}
    assert phases["forward"] == {"forward"}
    assert phases["backward"] == {"backward"}
    # The total norm (clip_grad_norm) is SambaFlow's gradient normalization graph.
    assert phases["optimizer"] == {"grad_norm", "optimizer"}
    optimizer = step.compiled["optimizer"].compiled.sections
    first_update = next(i for i, s in enumerate(optimizer) if s.phase == "optimizer")
    assert all(s.phase == "grad_norm" for s in optimizer[:first_update]), \
        "the norm is computed before any parameter is updated"


def test_each_phase_uses_its_scaling_factor(clipped_step: tuple[torch.nn.Module, object]
                                            ) -> None:
    _, step = clipped_step
    doc = step_sections(step)
    arch = lookup_arch("sn40l")
    for phase, index in (("forward", 0), ("backward", 1), ("grad_norm", 2), ("optimizer", 3)):
        want = int(arch.pcus * FACTORS[index])
        assert doc["arch_limits"]["phases"][phase] == {"pcu": want, "pmu": want}
        assert resource_limit(arch, "pcus", phase, FACTORS) == want
    for s in doc["sections"]:
        limit = doc["arch_limits"]["phases"][s["phase"]]
        assert s["pcu"] <= limit["pcu"] and s["pmu"] <= limit["pmu"], s


def test_step_schedule_and_numerics(clipped_step: tuple[torch.nn.Module, object],
                                    tmp_path: Path) -> None:
    model, step = clipped_step
    doc = step_sections(step)
    order = [s["phase"] for s in doc["sections"]]
    # forward, then backward, then the norm and the update; numbered through, named by graph.
    assert order == sorted(order, key=["forward", "backward", "grad_norm",
                                       "optimizer"].index)
    assert [s["index"] for s in doc["sections"]] == list(range(len(order)))
    assert doc["sections"][0]["name"].startswith("forward.s0_")
    assert not doc["training"]["data_parallel"] and "allreduce" not in order
    for i in range(3):
        step(*vector_batch(i))
    _close(model.state_dict(), _eager(3, 1.0))

    # The train-step folder: the step's PEF index and sections.json, and accel.load runs it.
    from accel.training.artifact import save_step

    folder = save_step(step, tmp_path / "mlp-train", "mlp")
    index = json.loads((folder / "mlp.pef").read_text())
    assert index["kind"] == "train-step" and len(index["schedule"]) == len(order)
    from accel.artifact import sha256

    for phase in index["phases"]:
        assert sha256((folder / phase["pef"]).read_bytes()) == phase["sha256"]
    assert json.loads((folder / "sections.json").read_text())["sections"] == doc["sections"]
    loaded = accel.load(folder)
    for i in range(3, 5):
        loaded(*vector_batch(i))
    _close(loaded.state_dict()["model"], _eager(5, 1.0))


def test_accel_compile_data_parallel_adds_allreduce_sections(tmp_path: Path) -> None:
    from accel.tools.accel_compile import main

    model_py = tmp_path / "train.py"
    model_py.write_text(
        "import torch\n"
        "def loss_fn(model, x, y):\n"
        "    return torch.nn.functional.mse_loss(model(x), y)\n"
        "def get_training(batch_size=4):\n"
        "    torch.manual_seed(0)\n"
        "    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),"
        " torch.nn.Linear(16, 4))\n"
        "    opt = torch.optim.Adam(m.parameters(), lr=1e-3)\n"
        "    return m, loss_fn, opt, (torch.randn(batch_size, 8), torch.randn(batch_size, 4))\n")
    out = tmp_path / "out"
    assert main([str(model_py), "--target", "rdu", "--pef-name", "dp", "--output-folder",
                 str(out), "--data-parallel", "--world-size", "4",
                 "--resources-scaling-factors", "1", "0.8", "0.8",
                 "--option", "opt_level=0"]) == 0
    doc = json.loads((out / "sections.json").read_text())
    phases = [s["phase"] for s in doc["sections"]]
    assert phases == sorted(phases, key=["forward", "backward", "allreduce",
                                         "optimizer"].index)
    reduce = [s for s in doc["sections"] if s["phase"] == "allreduce"]
    assert len(reduce) == 1, "4 small gradients fit one 25 MB bucket"
    assert sorted(op.split(":")[1] for op in reduce[0]["ops"]) == \
        ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert doc["training"]["world_size"] == 4 and not doc["training"]["world_size_assumed"]
    assert doc["arch_limits"]["phases"]["allreduce"]["pcu"] == int(1040 * 0.8)
    log = (out / "compile.log").read_text()
    assert "rdu: data parallel over 4 replicas" in log
    assert "allreduce.s0_grads" in log and (out / "dp.pef").is_file()


def _fake_step(sizes: list[int], world: int | None) -> SimpleNamespace:
    params = {f"p{i}": torch.zeros(n) for i, n in enumerate(sizes)}
    return SimpleNamespace(spec=SimpleNamespace(names=list(params)), _params=params,
                           settings={"world_size": world})


def test_allreduce_buckets_and_cost() -> None:
    arch = lookup_arch("sn40l")
    mb = (1 << 20) // 4  # float32 elements per MiB
    # 10 + 10 + 10 MiB: the last two (backward's first gradients) share the first bucket.
    found = allreduce_sections(_fake_step([10 * mb, 10 * mb, 10 * mb], 8), arch, 0)
    assert [s.ops for s in found] == [["all_reduce:p2", "all_reduce:p1"], ["all_reduce:p0"]]
    assert all(s.phase == "allreduce" for s in found)
    # The ring moves 2 (W-1)/W of the bucket over the link: more replicas, more time,
    # bounded by twice the one-way transfer.
    times = [allreduce_sections(_fake_step([4 * mb], w), arch, 0)[0].est_us
             for w in (2, 4, 64)]
    assert times[0] < times[1] < times[2]
    one_way = 4 * (1 << 20) / (arch.link_gbps * 1e3)
    assert times[2] - times[0] < one_way * 1.1


GPT2_TRAIN = '''\
import torch
import transformers


def get_training(batch_size=2):
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=32,
                                     n_positions=8)          # defaults: dropout 0.1
    model = transformers.GPT2LMHeadModel(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)

    def loss_fn(m, ids):
        return m(input_ids=ids, labels=ids).loss

    return model, loss_fn, optimizer, (torch.randint(0, 32, (batch_size, 8)),)
'''


def _dropout_checks(step: object) -> None:
    """Same seed, same dropout masks (same loss at lr 0); another seed, other masks; with a
    learning rate the loss falls."""
    ids = torch.randint(0, 32, (2, 8), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(5)
    a = float(step(ids))
    torch.manual_seed(5)
    b = float(step(ids))  # lr 0: the parameters did not move
    torch.manual_seed(6)
    c = float(step(ids))
    assert a == b and a != c and 2.0 < a < 5.0  # ~log(32) for random weights
    step.optimizer.param_groups[0]["lr"] = 1e-2
    losses = [float(step(ids)) for _ in range(6)]
    assert losses[-1] < losses[0]


def test_dropout_step_on_rdu() -> None:
    """Compiled training with dropout on rdu (the cheap case of the GPT-2 tests below):
    seeded masks, phases in the sections."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Dropout(0.1),
                                torch.nn.Linear(64, 32)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)

    def loss_fn(m: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(m(torch.nn.functional.one_hot(
            ids, 32).float()), ids)

    step = accel.compile_train_step(model, loss_fn, optimizer,
                                    (torch.randint(0, 32, (2, 8))[:, 0],),
                                    options={"target": "rdu", "opt_level": 0})
    assert {s["phase"] for s in step_sections(step)["sections"]} == {"forward", "backward",
                                                                      "optimizer"}
    ids = torch.randint(0, 32, (2,), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(5)
    a = float(step(ids))
    torch.manual_seed(5)
    b = float(step(ids))
    torch.manual_seed(6)
    assert a == b != float(step(ids))


@pytest.mark.long  # ~30-50 s on 2 cores
def test_gpt2_training_with_default_dropout() -> None:
    """A HF GPT-2 train step with its default dropout (0.1) compiles for rdu and runs."""
    pytest.importorskip("transformers")
    namespace: dict[str, object] = {}
    exec(GPT2_TRAIN, namespace)  # noqa: S102 - the model file of the accel-compile test
    model, loss_fn, optimizer, batch = namespace["get_training"]()
    step = accel.compile_train_step(model, loss_fn, optimizer, batch,
                                    options={"target": "rdu", "opt_level": 0})
    phases = {s["phase"] for s in step_sections(step)["sections"]}
    assert phases == {"forward", "backward", "optimizer"}
    _dropout_checks(step)


@pytest.mark.long
def test_gpt2_training_with_default_dropout_through_accel_compile(tmp_path: Path) -> None:
    """The same through SambaFlow's path: accel-compile (training by default), accel.load."""
    from accel.tools.accel_compile import main

    pytest.importorskip("transformers")
    (tmp_path / "gpt2_train.py").write_text(GPT2_TRAIN)
    out = tmp_path / "out"
    assert main([str(tmp_path / "gpt2_train.py"), "--target", "rdu", "-o3", "--option",
                 "opt_level=0", "--output-folder", str(out), "-q"]) == 0
    doc = json.loads((out / "sections.json").read_text())
    assert {s["phase"] for s in doc["sections"]} == {"forward", "backward", "optimizer"}
    _dropout_checks(accel.load(out))
