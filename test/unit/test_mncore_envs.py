"""MLSDK's CODEGEN_* variables (reference section 4.2.3): each one either changes the plan as
the reference describes (one test per variable, named in HONOURED_BY) or is refused with a
one-line reason, in option files and in the environment; none is silently ignored."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import accel
import numpy as np
import pytest
import torch
from accel.diagnostics import AccelError
from accel.options import OptionError
from accel.targets.mncore import layouts, option_json, schedule, timeline
from accel.targets.mncore.graph import GEMMS, gpt2_like
from samples import mlp_class

#: Every variable of the reference's section 4.2.3, in its order.
REFERENCE = (
    "CODEGEN_FIND_BEST_COMPILE_OPTIONS", "CODEGEN_FIND_BETTER_COMPILE_OPTIONS",
    "CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN", "CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT",
    "CODEGEN_SCHEDULE_PP_BEAM_WIDTH", "CODEGEN_USE_MERGE", "CODEGEN_USE_PARALLEL_MERGE",
    "CODEGEN_SA_STEPS", "CODEGEN_NUM_SA_THREADS", "CODEGEN_N_TRANSPOSE_THREADS",
    "CODEGEN_N_DEV_COPY_STREAMS_THREADS", "CODEGEN_ENABLE_SET_PARTIAL_LOCATION",
    "CODEGEN_GEMM_FORCE_CHANNEL_SPLIT", "CODEGEN_OP_DEF", "CODEGEN_SKIP_RESOLVE_NEGATIVE_INDICES",
    "CODEGEN_TIME_SLICE_SCATTERED_INDEXING_BCAST", "CODEGEN_LAYOUT_PLANNER_Z_HONOR_LAYOUT_SPEC",
    "CODEGEN_MAX_TIME_SLICE", "CODEGEN_IGNORE_LAYOUT_CHECK", "CODEGEN_ALLOW_UNUSED_LAYOUT_SPEC",
    "CODEGEN_USE_ADDR_FIRST_Z", "CODEGEN_LAYOUT_PLANNER_Z", "CODEGEN_ALARM",
    "CODEGEN_IGNORE_REUSED_VALUE_LAYOUT", "CODEGEN_DEFER_SIMPLIFY",
    "CODEGEN_NODE_SIM_ALLOW_UNEXPECTED_FAIL", "CODEGEN_FORCE_ATTENTION_GRAD_AFTER_FORWARD",
    "CODEGEN_AUTO_RECOMPUTE_HACK_FOR_QWEN", "CODEGEN_STOP_USING_GENERIC_INDEXING_GATHER_INDEX_ADD",
    "CODEGEN_GEMM_FORCE_WEIGHT_ON_DRAM", "CODEGEN_LPZ_SKIP_PROPAGATE_TIME", "CODEGEN_OPS_ON_HOST",
    "MNCORE_USE_EXTERNAL_DATA_FORMAT", "PFVM_DISABLE_CONSTANT_REUSE",
)
#: Honoured variable -> the test (module::function) showing its effect.
HONOURED_BY = {
    "CODEGEN_SA_STEPS": "test_mncore_target::test_environment_wins_over_option_json_envs",
    "CODEGEN_NUM_SA_THREADS": "test_mncore_schedule::test_sa_effort_follows_steps_and_run_iters",
    "CODEGEN_ALLOW_UNUSED_LAYOUT_SPEC": "test_mncore_target::test_layout_spec_errors",
    "CODEGEN_LAYOUT_PLANNER_Z_HONOR_LAYOUT_SPEC": "test_mncore_target::test_layout_spec_is_applied",
    "CODEGEN_IGNORE_LAYOUT_CHECK": "test_mncore_target::test_ignore_layout_check",
    "CODEGEN_MAX_TIME_SLICE": "test_mncore_schedule::test_max_time_slice",
    "CODEGEN_LAYOUT_PLANNER_Z": "test_mncore_schedule::test_planners_differ_and_lpz_is_cheapest",
    "CODEGEN_USE_MERGE": "test_mncore_envs::test_merge_and_parallel_merge",
    "CODEGEN_USE_PARALLEL_MERGE": "test_mncore_envs::test_merge_and_parallel_merge",
    "CODEGEN_FIND_BEST_COMPILE_OPTIONS": "test_mncore_envs::test_find_best_and_better",
    "CODEGEN_FIND_BETTER_COMPILE_OPTIONS": "test_mncore_envs::test_find_best_and_better",
    "CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN": "test_mncore_envs::test_beam_search_reorders",
    "CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT": "test_mncore_envs::test_beam_search_reorders",
    "CODEGEN_SCHEDULE_PP_BEAM_WIDTH": "test_mncore_envs::test_beam_search_reorders",
    "CODEGEN_N_TRANSPOSE_THREADS": "test_mncore_envs::test_transfer_threads_and_streams",
    "CODEGEN_N_DEV_COPY_STREAMS_THREADS": "test_mncore_envs::test_transfer_threads_and_streams",
    "CODEGEN_GEMM_FORCE_CHANNEL_SPLIT": "test_mncore_envs::test_gemm_forcing",
    "CODEGEN_GEMM_FORCE_WEIGHT_ON_DRAM": "test_mncore_envs::test_gemm_forcing",
    "CODEGEN_OPS_ON_HOST": "test_mncore_envs::test_ops_on_host",
    "CODEGEN_ALARM": "test_mncore_envs::test_alarm_interrupts_the_search",
    "MNCORE_USE_EXTERNAL_DATA_FORMAT": "test_mncore_envs::test_external_data_format",
}

GPT2 = gpt2_like(n_layer=2)
MLP = mlp_class(32, 64, 10)
torch.manual_seed(0)
MODEL = MLP().eval()
X = torch.randn(4, 32)


def test_every_documented_variable_is_honoured_or_refused() -> None:
    assert set(option_json.ENVS) == set(REFERENCE)
    honoured = {n for n, on in option_json.ENVS.items() if on}
    assert honoured == set(HONOURED_BY)
    assert set(option_json.REFUSED) == set(REFERENCE) - honoured
    for name, where in HONOURED_BY.items():
        module, test = where.split("::")
        assert hasattr(importlib.import_module(module), test), (name, where)
    doc = (Path(__file__).parents[2] / "docs/mncore.md").read_text()
    for name in REFERENCE:
        assert f"`{name}`" in doc, name


@pytest.mark.parametrize("name", sorted(option_json.REFUSED))
def test_refused_variables_are_one_line_errors(name: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "o.json"
    path.write_text(json.dumps({"envs": {name: "1"}}))
    with pytest.raises(OptionError, match=f"{name} is not supported by the emulated MN-Core: "
                                          f"{option_json.REFUSED[name][:20]}") as err:
        option_json.read(str(path))
    assert "\n" not in str(err.value)
    monkeypatch.setenv(name, "1")
    with pytest.raises(OptionError, match=f"environment: {name} is not supported"):
        option_json.effective({"option_json": None})


def _cost(scheduler: str = "reuse_consecutive", mode: str = "auto", envs: dict | None = None,
          planner: str = "lpz") -> schedule.CostModel:
    return schedule.CostModel(GPT2, layouts.plan(GPT2, planner, [], {}), "float", mode, 1.0,
                              scheduler, envs=envs or {})


def test_merge_and_parallel_merge() -> None:
    plain = _cost(mode="full")
    merged = _cost(mode="full", envs={"CODEGEN_USE_MERGE": "1"})
    tree = _cost(mode="full", envs={"CODEGEN_USE_MERGE": "1", "CODEGEN_USE_PARALLEL_MERGE": "1"})
    assert "l1_merge" not in plain.pattern.values()
    assert "l1_merge" in merged.pattern.values()  # L1Merge: only with CODEGEN_USE_MERGE
    gemms = [layer.name for layer in GPT2.layers if layer.op_type in GEMMS]
    assert all(tree.compute[g] <= merged.compute[g] <= plain.compute[g] for g in gemms)
    # O(log N) merge: fewer merge steps than the linear one for every merged GEMM
    assert any(tree.compute[g] < merged.compute[g] for g in gemms
               if merged.pattern[g] == "l1_merge")


def test_gemm_forcing() -> None:
    forced = _cost(mode="full", envs={"CODEGEN_GEMM_FORCE_CHANNEL_SPLIT": "1"})
    assert set(forced.pattern.values()) == {"channel_split"}
    assert sum(forced.compute.values()) > sum(_cost(mode="full").compute.values())
    # Weights on DRAM take no LM: with little SRAM, big GEMMs need fewer time slices and
    # stream less of their working set twice.
    plan = layouts.plan(GPT2, "lpz", [], {})
    small = {f: schedule.CostModel(GPT2, plan, "float", "auto", 0.01, "spill_opt",
                                   envs={"CODEGEN_GEMM_FORCE_WEIGHT_ON_DRAM": f})
             for f in ("0", "1")}
    kept, streamed = (schedule.simulate(GPT2, small[f], "spill_opt") for f in ("0", "1"))
    gemm = [(a, b) for a, b in zip(kept.steps, streamed.steps, strict=True)
            if a.op_type == "Gemm"]
    assert all(b.slices <= a.slices for a, b in gemm)
    assert any(b.slices < a.slices for a, b in gemm)
    assert sum(s.dma_bytes for s in streamed.steps) < sum(s.dma_bytes for s in kept.steps)


def test_ops_on_host() -> None:
    envs = {"CODEGEN_OPS_ON_HOST": "Tanh,Softmax"}
    found = schedule.simulate(GPT2, _cost(envs=envs), "reuse_consecutive")
    host = {s.op_type for s in found.steps if s.on_host}
    assert host == {"Tanh", "Softmax"}
    device = schedule.simulate(GPT2, _cost(), "reuse_consecutive")
    assert found.time_s > device.time_s  # the host link and the host's slower compute
    assert not any(s.on_host for s in device.steps)
    l3ir = _compile(envs={"CODEGEN_OPS_ON_HOST": "Where"})  # the MLP's ReLU
    host = [line for line in l3ir.splitlines() if line.endswith(" device=host")]
    assert len(host) == 1 and host[0].startswith("layer Where_0 ")


def _compile(envs: dict[str, str], monkeypatch: pytest.MonkeyPatch | None = None,
             **options: object) -> str:
    with pytest.MonkeyPatch.context() as mp:
        for k, v in envs.items():
            mp.setenv(k, v)
        fn = accel.compile(MODEL, (X,), options={"target": "mncore", "cache": False,
                                                 **options})
    np.testing.assert_allclose(fn(X).detach().numpy(), MODEL(X).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    return fn.compiled.files["l3ir.txt"]


def _summary(envs: dict[str, str], **options: object) -> dict:
    with pytest.MonkeyPatch.context() as mp:
        for k, v in envs.items():
            mp.setenv(k, v)
        fn = accel.compile(MODEL, (X,), options={"target": "mncore", "cache": False,
                                                 **options})
    return json.loads(fn.compiled.files["summary.json"])


def test_find_best_and_better() -> None:
    given = _summary({}, preset="debug")
    best = _summary({"CODEGEN_FIND_BEST_COMPILE_OPTIONS": "1"}, preset="debug")
    better = _summary({"CODEGEN_FIND_BETTER_COMPILE_OPTIONS": "1"}, preset="debug")
    assert len(best["compile_options_search"]) == 12 and len(better["compile_options_search"]) == 3
    assert given["compile_options_search"] == [
        {"layout_planner": "legacy", "scheduler": "always_from_dram",
         "time_us": round(given["perf_stats"]["ALL"]["time_us"], 3)}]
    t = {name: s["perf_stats"]["ALL"]["time_us"] for name, s in
         (("given", given), ("best", best), ("better", better))}
    assert t["best"] <= t["better"] < t["given"]
    assert best["scheduler"] != "always_from_dram"  # the plan changed: another strategy


def test_beam_search_reorders() -> None:
    cost = _cost("spill_opt")
    plain = schedule.schedule(GPT2, cost, "spill_opt", {}, 0)
    beam = schedule.schedule(GPT2, cost, "spill_opt",
                             {"CODEGEN_SCHEDULE_PP_BEAM_WIDTH": "3",
                              "CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN": "4",
                              "CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT": "10"}, 0)
    assert (plain.beam_turns, beam.beam_turns) == (0, 4)  # MAX_TURN bounds the turns
    assert beam.time_s <= plain.time_s
    pruned = schedule.schedule(GPT2, cost, "spill_opt",
                               {"CODEGEN_SCHEDULE_PP_BEAM_TURN_PRUNE_LIMIT": "1",
                                "CODEGEN_SCHEDULE_PP_BEAM_MAX_TURN": "-1"}, 0)
    assert 1 <= pruned.beam_turns  # stops after a turn without improvement
    with pytest.raises(AccelError, match=r"CODEGEN_SCHEDULE_PP_BEAM_WIDTH='0': must be at "
                                         r"least 1"):
        schedule.schedule(GPT2, cost, "spill_opt", {"CODEGEN_SCHEDULE_PP_BEAM_WIDTH": "0"}, 0)


def test_transfer_threads_and_streams() -> None:
    sizes = [1 << 20] * 8
    default = timeline.transfer_seconds(sizes, {})
    one_thread = timeline.transfer_seconds(sizes, {"CODEGEN_N_TRANSPOSE_THREADS": "1"})
    one_stream = timeline.transfer_seconds(sizes, {"CODEGEN_N_DEV_COPY_STREAMS_THREADS": "1"})
    assert one_thread > default and one_stream > default
    # one tensor: threads and streams cannot help ("only when multiple ... parallelized")
    assert timeline.transfer_seconds([1 << 20], {"CODEGEN_N_TRANSPOSE_THREADS": "1"}) == \
        timeline.transfer_seconds([1 << 20], {})
    summary = _summary({"CODEGEN_N_TRANSPOSE_THREADS": "1",
                        "CODEGEN_N_DEV_COPY_STREAMS_THREADS": "1"})
    assert summary["transfers"]["h2d_weights_us"] > _summary({})["transfers"]["h2d_weights_us"]


def test_alarm_interrupts_the_search() -> None:
    cost = _cost("auto_recompute_sa")
    with pytest.raises(AccelError, match=r"CODEGEN_ALARM=1: the compilation ran out of time "
                                         r"\(scheduling: simulated annealing\)"):
        schedule.schedule(GPT2, cost, "auto_recompute_sa",
                          {"CODEGEN_ALARM": "1", "CODEGEN_SA_STEPS": "10000000"}, 1)


def test_external_data_format(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    pytest.importorskip("onnxscript")
    import onnx

    external = tmp_path / "external.onnx"
    _compile({"MNCORE_USE_EXTERNAL_DATA_FORMAT": "1"}, out_onnx=str(external))
    # (without it the weights are inside: test_mncore_target's out_onnx test)
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("external")]) > 1
    model = onnx.load(str(external), load_external_data=False)
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def test_sa_expected_run_iters_and_preset_paths(tmp_path: Path) -> None:
    """sa_expected_run_iters counts iterations of the annealing loop (not capped at 200
    steps); MLSDK's preset paths name the shipped presets."""
    runs = _summary({"CODEGEN_SA_STEPS": "250"}, option_json="O1", sa_expected_run_iters=3)
    assert (runs["sa_steps"], runs["sa_runs"]) == (250, 3)
    path = "/opt/pfn/pfcomp/codegen/preset_options/O2.json"
    assert option_json.read(path) == option_json.read("O2")
    assert _summary({}, option_json=path)["options"]["simulation_mode"] == "default"
