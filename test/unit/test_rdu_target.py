"""The rdu target end to end: sectioning levels, resource limits, chips, hypersections, the
emulated program's numerics against eager, the PEF artifact and clean errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import accel
import accel.rdu
import numpy as np
import pytest
import torch
from accel import targets
from accel.diagnostics import AccelError
from accel.options import OptionError
from accel.settings import merge as resolve
from samples import write_mlp_model_file

FAST = {"target": "rdu", "opt_level": 0, "cache": False}


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(8, 16)
        self.ln = torch.nn.LayerNorm(16)
        self.l2 = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.l2(torch.nn.functional.gelu(self.ln(self.l1(x)))), -1)


@pytest.fixture(scope="module")
def mlp() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return MLP().eval(), torch.randn(2, 8)


def _compile(model: torch.nn.Module, x: torch.Tensor, **options: Any) -> Any:
    fn = accel.compile(model, (x,), options={**FAST, **options})
    with torch.no_grad():
        np.testing.assert_allclose(fn(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    return fn


@pytest.mark.parametrize(("preset", "count"), [("o0", 5), ("o3", 1)])
def test_levels_match_eager(mlp: Any, preset: str, count: int) -> None:
    program = _compile(*mlp, preset=preset).compiled
    assert len(program.sections) == count
    assert all(len(s.ops) <= 2 for s in program.sections) or preset == "o3"
    assert [s.index for s in program.sections] == list(range(count))
    assert all(s.phase == "forward" and s.pcu > 0 and s.pmu > 0 and s.est_us > 0
               for s in program.sections)


def test_sections_respect_scaled_resources(mlp: Any) -> None:
    program = _compile(*mlp, resources_scaling_factors="0.02 1 1").compiled
    limits = program.limits
    assert (limits["section_pcu_limit"], limits["section_pmu_limit"]) == (20, 20)
    assert len(program.sections) > 1
    assert all(s.pcu <= 20 and s.pmu <= 20 for s in program.sections)


def test_four_factors_scale_forward_by_the_first() -> None:
    from accel.dialects.rdu_arch import ARCHS
    from accel.targets.rdu.program import arch_limits

    limits = arch_limits(ARCHS["sn10"], (0.5, 0.25, 0.1, 0.1))
    assert (limits["section_pcu_limit"], limits["section_pmu_limit"]) == (320, 320)
    assert resolve({"target": "rdu", "resources_scaling_factors": [1, 0.8, 0.8, 0.8]})


@pytest.mark.parametrize(("value", "message"), [
    ("1 1", "not 2, got '1 1'"), ("1 1 1 1 1", "not 5"), ("1 x 1", "numbers"), ("1 0 1", "(0, 1]")])
def test_bad_scaling_factors_are_one_line(value: str, message: str) -> None:
    with pytest.raises(OptionError, match="option 'resources_scaling_factors'") as err:
        resolve({"target": "rdu", "resources_scaling_factors": value})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_an_operator_larger_than_a_section_is_a_clean_error(mlp: Any) -> None:
    with pytest.raises(AccelError, match=r"rdu: operator linear:l1 needs 3 PCUs and "
                                         r"6 PMUs, more than one section may use on sn40l "
                                         r"\(5 PCUs, 5 PMUs after scaling\)"):
        accel.compile(mlp[0], (mlp[1],), options={**FAST, "resources_scaling_factors":
                                                  "0.005 1 1"})


def test_o0_section_too_large_names_it(mlp: Any) -> None:
    with pytest.raises(AccelError, match="section s0_linear .linear:l1. needs 3 PCUs"):
        accel.compile(mlp[0], (mlp[1],), options={**FAST, "preset": "o0",
                                                  "resources_scaling_factors": "0.005 1 1"})


def test_two_chips_balance_and_transfers(mlp: Any) -> None:
    program = _compile(*mlp, preset="o0", n_chips=2).compiled
    chips = [s.chip for s in program.sections]
    assert chips == sorted(chips) and set(chips) == {0, 1}
    first = next(s for s in program.sections if s.chip == 1)
    assert first.transfer_us > 0  # its input comes from chip 0
    assert "rdu: pipelined over 2 chips: one input every" in targets.get("rdu").report(program)


@pytest.mark.parametrize(("options", "message"), [
    ({"arch": "sn99"}, "option 'arch' must be one of sn10, sn20, sn30, sn40l"),
    ({"preset": "o1", "o1_rule_list": "gtp2"}, "unknown o1 rule list 'gtp2'"),
    ({"n_chips": 9}, "option 'n_chips' must be an int from 1 to 8"),
    ({"sectioning": "o2"}, "option 'sectioning' must be one of o0, o1, o3"),
    ({"opt_level": 1, "disable_affine_fusion": True}, "applies to target cpu, not rdu"),
])
def test_bad_options_fail_before_export(mlp: Any, options: dict[str, Any], message: str) -> None:
    with pytest.raises(AccelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        accel.compile(mlp[0], (mlp[1],), options={**FAST, **options})


def test_bad_rule_file_names_file_and_line(mlp: Any, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("- name: A\n  priority: 1\n  pattern: [Linear]\n")
    with pytest.raises(AccelError, match=f"{rules}:3: error: 'Linear' is not an operator kind"):
        accel.compile(mlp[0], (mlp[1],), options={**FAST, "preset": "o1",
                                                  "o1_rule_list": str(rules)})


def test_artifact_round_trip(mlp: Any, tmp_path: Path) -> None:
    model, x = mlp
    fn = _compile(model, x, preset="o0")
    folder = tmp_path / "mlp"
    fn.save(folder)
    assert (folder / "mlp.pef").is_file()
    table = json.loads((folder / "sections.json").read_text())
    assert {"pcu", "pmu"} <= set(table["arch_limits"])
    assert set(table["sections"][0]) >= {"name", "index", "phase", "ops", "pcu", "pmu",
                                         "hypersection", "chip", "est_us"}
    pef = json.loads((folder / "mlp.pef").read_text())
    assert pef["format"] == "accel-rdu-pef" and len(pef["schedule"]) == 5
    loaded = accel.load(folder)
    with torch.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert [s.name for s in loaded.compiled.sections] == [s.name for s in fn.compiled.sections]
    (folder / "mlp.pef").write_text("{}")
    with pytest.raises(AccelError, match="mlp.pef does not match its checksum"):
        accel.load(folder)


# -- hypersections ----------------------------------------------------------------------------
class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln = torch.nn.LayerNorm(16)
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.nn.functional.gelu(self.fc(self.ln(x)))


class Stack(torch.nn.Module):
    def __init__(self, region: bool) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block() for _ in range(3)])
        self.head = torch.nn.Linear(16, 4)
        self.region = region

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            if self.region:
                with accel.rdu.hypersection("block"):
                    x = block(x)
            else:
                x = block(x)
        return self.head(x)


@pytest.mark.parametrize("how", ["instances", "region"])
def test_o3_annotated_hypersections(how: str) -> None:
    torch.manual_seed(1)
    model = Stack(region=how == "region").eval()
    if how == "instances":
        for block in model.blocks:
            accel.rdu.hypersection(block)
    x = torch.randn(2, 16)
    program = _compile(model, x, enable_hypersection=True).compiled
    ((name, members),) = program.hypersections.items()
    assert len(members) == 3
    assert [s.hypersection for s in program.sections].count(name) == 3
    if how == "instances":  # annotations do nothing without the option
        plain = _compile(model, x).compiled
        assert not plain.hypersections and len(plain.sections) == 1


@pytest.fixture(scope="module")
def gpt2() -> tuple[Any, Any, Any]:
    """A 4-layer tiny GPT-2 (eval), its input ids, and its import (with provenance)."""
    transformers = pytest.importorskip("transformers")
    from accel.frontend.torch_import import import_program

    torch.manual_seed(2)
    config = transformers.GPT2Config(n_layer=4, n_embd=64, n_head=4, vocab_size=100,
                                     n_positions=32, bos_token_id=99, eos_token_id=99,
                                     attn_implementation="eager")

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = transformers.GPT2LMHeadModel(config).eval()

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                              use_cache=False, return_dict=False)[0]

    model = Logits().eval()
    ids = torch.randint(0, 100, (1, 8))
    program = import_program(model, (ids,), provenance=True)
    return model, ids, program


def test_gpt2_o1_one_hypersection_of_four_layers_matches_eager(gpt2: Any) -> None:
    model, ids, program = gpt2
    text = program.module.operation.get_asm(enable_debug_info=True)
    options = resolve({**FAST, "preset": "o1", "o1_rule_list": "gpt2"})
    compiled = targets.get("rdu").compile(text, options, weights=program.weights)
    ((name, members),) = compiled.hypersections.items()
    assert len(members) == 4
    labels = {s.name.split("_", 1)[1] for s in compiled.sections if not s.hypersection}
    assert {"Embedding", "AttentionMask", "Classification"} <= labels
    layer = next(s for s in compiled.sections if s.hypersection == name)
    assert any(op.startswith("layer_norm:") for op in layer.ops)
    with torch.no_grad():
        expected = model(ids).numpy()
    got = compiled["main"](ids.numpy())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_gpt2_o3_nlp_mode_cuts_at_layer_boundaries(gpt2: Any) -> None:
    from accel.context import make_context
    from accel.ir import Module, load_torch_dialects
    from accel.passes.rdu import sections
    from accel.passes.rdu.sectioning import Sectioning

    _, _, program = gpt2
    text = program.module.operation.get_asm(enable_debug_info=True)
    with make_context() as ctx:
        load_torch_dialects(ctx)
        module = Module.parse(text)
        with module.operation.location:
            Sectioning(level="o3", nlp=True, scaling="0.09,1,1").apply(module.operation)
        fn = next(op.operation for op in module.body.operations
                  if op.operation.name == "func.func")
        cut = sections.sections_of(fn.regions[0].blocks[0])
        layers = [{op.split(":")[1].split(".h.")[1].split(".")[0]
                   for op in (str(a.value) for a in s.attributes[sections.OPS_ATTR])
                   if ".h." in op} for s in cut]
    assert len(cut) > 2
    assert all(len(found) <= 1 for found in layers), layers  # no section spans two layers


@pytest.mark.parametrize(("options", "message"), [
    ({"level": "o2"}, "level must be one of o0, o1, o3, got 'o2'"),
    ({"level": "o1", "rule_list": "nope"}, "unknown o1 rule list 'nope'"),
    ({"scaling": "1,1"}, "scaling needs 3 floats (forward, backward, optimizer) or 4"),
    ({"arch": "sn99"}, "unknown RDU architecture 'sn99' (known: sn10, sn20, sn30, sn40l)"),
])
def test_pass_option_errors(options: dict[str, Any], message: str) -> None:
    from accel.context import make_context
    from accel.ir import Module
    from accel.passes.rdu.sectioning import Sectioning

    with make_context():
        module = Module.parse("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                              "  %0 = math.exp %a : tensor<4xf32>\n"
                              "  return %0 : tensor<4xf32>\n}")
        with pytest.raises(AccelError) as err:
            Sectioning(**options)(module)
    assert message in str(err.value).splitlines()[0]


def test_accel_compile_writes_pef_sections_and_summary(tmp_path: Path) -> None:
    from accel.tools.accel_compile import main

    model_py = write_mlp_model_file(tmp_path / "mlp.py", 8, 16, 4, batch=2,
                                    activation="GELU")
    out = tmp_path / "out"
    assert main([str(model_py), "--inference", "--target", "rdu", "-o0", "--pef-name", "mlp",
                 "--output-folder", str(out), "--option", "opt_level=0"]) == 0
    assert (out / "mlp.pef").is_file() and (out / "sections.json").is_file()
    log = (out / "compile.log").read_text()
    assert "rdu: 3 sections, 0 hypersections" in log
    assert "s1_gelu" in log


@pytest.mark.slow
def test_gpt2_default_hf_settings_o0_one_operator_per_section_with_hypersections() -> None:
    """-o0 is one PyTorch operator per section (SambaFlow: "each PyTorch operator is compiled
    independently"), with the default hypersections: the repeated layers' sections are
    listed one by one, each naming its instance and the body section it runs, compiled once
    and reused. HF's default attention (sdpa) and cache outputs; 2 chips."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(3)
    config = transformers.GPT2Config(n_layer=3, n_embd=32, n_head=2, vocab_size=64,
                                     n_positions=16)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 64, (1, 8))
    fn = accel.compile(model, (ids,), options={**FAST, "preset": "o0", "n_chips": 2})
    out = fn(ids)
    with torch.no_grad():
        ref = model(ids)
    np.testing.assert_allclose(out.logits.numpy(), ref.logits.numpy(), rtol=1e-4, atol=1e-5)
    assert len(out.past_key_values) == 3  # the cache, as eager returns it
    program = fn.compiled
    assert all(len(s.ops) == 1 for s in program.sections)
    assert [s.index for s in program.sections] == list(range(len(program.sections)))
    ((name, members),) = program.hypersections.items()
    body = program.bodies[name]
    inner = [s for s in program.sections if s.hypersection == name]
    assert len(inner) == len(body) * len(members) and len(body) > 10
    assert [s.instance for s in inner] == [m for m in members for _ in body]
    assert [s.body for s in inner] == body * len(members)
    assert [s.reused for s in inner] == [False] * len(body) + [True] * (len(inner) - len(body))
    # each instance's sections hold its own layer's operators
    layered = [s for s in inner if ".h." in s.ops[0]]
    assert len(layered) > len(members) and all(s.instance + "." in s.ops[0] for s in layered)
    (h,) = program.sections_json()["hypersections"]
    assert h["reused_sections"] == len(body) * (len(members) - 1)
    report = targets.get("rdu").report(program)
    assert f"of {len(body)} sections, compiled once: {h['reused_sections']} section compiles " \
           "reused" in report
    assert f"[@{name} {members[1]}: {body[0]}, reused]" in report
    assert {s.chip for s in program.sections} == {0, 1}
