"""The mncore target end to end: emulation against eager, float_dtype, presets and
option_json precedence, codegen_dir (contents, reproduction, load_codegen_dir), layout_spec
errors, out_onnx. Planner/scheduler unit tests: test_mncore_schedule.py."""

from __future__ import annotations

import json

import accel
import numpy as np
import pytest
import torch
from accel import targets
from accel.diagnostics import AccelError
from accel.options import OptionError
from accel.settings import merge as resolve
from accel.targets.mncore import option_json
from samples import ADD, mlp_class  # noqa: E402

torch.manual_seed(0)


MLP = mlp_class(32, 64, 10)


MODEL = MLP().eval()
X = torch.randn(4, 32)
REF = MODEL(X).detach().numpy()


def compile_mlp(**options):
    return accel.compile(MODEL, (X,), options={"target": "mncore", **options})


def run(fn) -> np.ndarray:
    return fn(X).detach().numpy()


# -- precision --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def by_dtype():
    return {fd: run(compile_mlp(float_dtype=fd)) for fd in (None, "float", "mixed", "half",
                                                            "double")}


def test_float_matches_eager(by_dtype) -> None:
    np.testing.assert_allclose(by_dtype["float"], REF, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(by_dtype[None], by_dtype["float"])


def test_double_is_closer_than_float(by_dtype) -> None:
    exact = MODEL.double()(X.double()).detach().numpy()
    MODEL.float()
    assert by_dtype["double"].dtype == np.float32
    assert np.abs(by_dtype["double"] - exact).max() <= np.abs(by_dtype["float"] - exact).max()


@pytest.mark.parametrize("dtype", ["mixed", "half"])
def test_half_precisions_round(by_dtype, dtype) -> None:
    """mixed/half differ from float by half-precision rounding: more than float's error,
    within a few half ulps of the outputs."""
    err = np.abs(by_dtype[dtype] - REF).max()
    assert err > 10 * np.abs(by_dtype["float"] - REF).max()
    np.testing.assert_allclose(by_dtype[dtype], REF, rtol=1e-2, atol=1e-2)


# -- presets and option_json ------------------------------------------------------------------
def test_presets_are_json_files_and_spine_presets() -> None:
    from accel import targets

    spine = targets.get("mncore").presets()
    assert list(spine) == list(option_json.PRESETS)
    assert targets.get("mncore").default_preset == "O1"
    files = {name: option_json.read(name) for name in option_json.PRESETS}
    for name, data in files.items():
        assert spine[name] == {"option_json": name} and data["name"] == name
    assert files["debug"]["args"]["scheduler"] == "always_from_dram"
    assert files["O0"]["args"]["scheduler"] == "reuse_consecutive"  # the safe default
    steps = [int(files[f"O{i}"]["envs"]["CODEGEN_SA_STEPS"]) for i in (1, 2, 3, 4)]
    assert all(files[f"O{i}"]["args"]["scheduler"] == "auto_recompute_sa" for i in (1, 2, 3, 4))
    assert steps == sorted(steps) and steps[0] < steps[-1]  # O2+ search grows
    assert files["O3"]["envs"]["CODEGEN_USE_MERGE"] == "1"


def summary_of(fn) -> dict:
    return json.loads(fn.compiled.files["summary.json"])


def l3ir_head(fn) -> str:
    return fn.compiled.files["l3ir.txt"].splitlines()[0]


def test_options_given_directly_win_over_option_json() -> None:
    fn = compile_mlp(option_json="O2", scheduler="spill_opt", float_dtype="float")
    assert "scheduler=spill_opt" in l3ir_head(fn)
    assert "simulation_mode=default" in l3ir_head(fn)  # from O2's args
    fn = compile_mlp(preset="debug")
    assert "planner=legacy scheduler=always_from_dram" in l3ir_head(fn)


def test_environment_wins_over_option_json_envs(monkeypatch) -> None:
    assert summary_of(compile_mlp(option_json="O2"))["sa_steps"] == 1000
    monkeypatch.setenv("CODEGEN_SA_STEPS", "37")
    assert summary_of(compile_mlp(option_json="O2"))["sa_steps"] == 37


@pytest.mark.parametrize(("content", "message"), [
    ({"args": ["--no_such_option=1"]}, r"unknown option 'no_such_option' in args"),
    ({"envs": {"CODEGEN_NOPE": "1"}}, r"unknown environment variable 'CODEGEN_NOPE'"),
    ({"args": ["--scheduler=fastest"]}, r"option 'scheduler' must be one of"),
    ({"args": ["scheduler"]}, r"args are '--name=value'"),
    ({"other": 1}, r"must be a JSON object with keys name, envs, args"),
])
def test_bad_option_json_is_a_clean_error(tmp_path, content, message) -> None:
    path = tmp_path / "opts.json"
    path.write_text(json.dumps(content))
    with pytest.raises(OptionError, match=message):
        compile_mlp(option_json=str(path))


def test_unknown_option_json_file_and_options() -> None:
    with pytest.raises(OptionError, match=r"cannot read .*O9.*O0, O1, O2, O3, O4, debug"):
        compile_mlp(option_json="O9")
    with pytest.raises(OptionError, match=r"option 'layout_planner' must be one of lpz, bidi"):
        compile_mlp(layout_planner="z")
    with pytest.raises(OptionError, match=r"option 'sram_budget' must be > 0"):
        compile_mlp(sram_budget=0.0)
    with pytest.raises(OptionError, match=r"option 'scheduler' applies to target mncore"):
        accel.compile(MODEL, (X,), options={"scheduler": "spill_opt"})


# -- codegen_dir ------------------------------------------------------------------------------
def test_codegen_dir_contents_reproduction_and_reload(tmp_path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    fn = compile_mlp(codegen_dir=str(first), float_dtype="mixed", scheduler="spill_opt")
    for name in ("option.json", "l3ir.txt", "layout.html", "summary.json", "profile.json",
                 "logs/layout.log", "logs/schedule.log", "logs/host-compile.log"):
        assert (first / name).is_file(), name
    summary = json.loads((first / "summary.json").read_text())
    assert summary["flops"] >= 2 * 4 * (32 * 64 + 64 * 10)
    assert {"name", "op", "shape", "layout", "time_us", "sram"} <= set(summary["layers"][0])
    assert summary["perf_stats"]["ALL"]["time_us"] > 0
    assert {"compute", "dma", "relayout"} <= set(summary["perf_stats"])
    trace = json.loads((first / "profile.json").read_text())["traceEvents"]
    assert {e["cat"] for e in trace if e.get("ph") == "X"} >= {"dma", "Gemm"}
    page = (first / "layout.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page and "_PE:" in page
    l3ir = (first / "l3ir.txt").read_text()
    assert any(line.startswith("layer Gemm_0 Gemm(") for line in l3ir.splitlines())
    # option.json reproduces the build exactly, whatever the options given now default to.
    compile_mlp(codegen_dir=str(second), option_json=str(first / "option.json"))
    assert (second / "l3ir.txt").read_text() == l3ir
    loaded = accel.load_codegen_dir(first)
    np.testing.assert_array_equal(run(loaded), run(fn))


def test_out_onnx_writes_the_model_as_checked_onnx(tmp_path) -> None:
    """The file is a real ONNX model of what was compiled: it passes onnx's checker, has
    the MLP's Gemms, and its input has the example input's shape."""
    onnx = pytest.importorskip("onnx")
    path = tmp_path / "sub" / "g.onnx"
    fn = compile_mlp(out_onnx=str(path))
    np.testing.assert_allclose(run(fn), REF, rtol=1e-4, atol=1e-5)
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node].count("Gemm") == 2
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == list(X.shape)


def test_out_onnx_from_mlir_input_is_a_clean_error(tmp_path) -> None:
    with pytest.raises(AccelError, match=r"out_onnx.*written from a torch model"):
        targets.get("mncore").compile(ADD, resolve({"target": "mncore",
                                                    "out_onnx": str(tmp_path / "g.onnx")}))
    assert not (tmp_path / "g.onnx").exists()


def test_out_onnx_into_an_unwritable_place_names_it(tmp_path) -> None:
    pytest.importorskip("onnxscript")
    (tmp_path / "file").write_text("")
    with pytest.raises(AccelError, match=r"out_onnx.*cannot create"):
        compile_mlp(out_onnx=str(tmp_path / "file" / "g.onnx"))


# -- layout_spec ------------------------------------------------------------------------------
def write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_layout_spec_is_applied(tmp_path, monkeypatch) -> None:
    layout = "((4_L1B:1), (64_MAB:1))"
    bad = write(tmp_path, "s.json", [{"trigger": "FixOutput", "op_type": "Gemm",
                                      "shape": [4, 64], "layout": layout}])
    with pytest.raises(AccelError, match=r"does not fit shape \[4, 64\]: MAB spans 64"):
        compile_mlp(layout_spec=bad)
    layout = "((4_L1B:1), (16_MAB:1, 4_PE:1))"
    spec = write(tmp_path, "t.json", [{"trigger": "FixOutput", "op_type": "Gemm",
                                       "shape": [4, 64], "layout": layout}])
    honoured = compile_mlp(layout_spec=spec, layout_planner="bidi").compiled.files["l3ir.txt"]
    assert f"-> %11 shape=[4, 64] layout={layout} " in honoured
    # lpz without CODEGEN_LAYOUT_PLANNER_Z_HONOR_LAYOUT_SPEC: its own layout, then a relayout.
    free = compile_mlp(layout_spec=spec, layout_planner="lpz").compiled.files["l3ir.txt"]
    assert f"-> %11 shape=[4, 64] layout={layout} " not in free
    assert f"dst={layout} " in free
    monkeypatch.setenv("CODEGEN_LAYOUT_PLANNER_Z_HONOR_LAYOUT_SPEC", "1")
    honoured = compile_mlp(layout_spec=spec, layout_planner="lpz").compiled.files["l3ir.txt"]
    assert f"-> %11 shape=[4, 64] layout={layout} " in honoured


def test_layout_spec_errors(tmp_path, monkeypatch) -> None:
    unused = write(tmp_path, "u.json", [{"trigger": "SwitchInput", "op_type": "Softmax",
                                         "shape": [4, 64], "layout": "((4_L1B:1), (64:1))"}])
    with pytest.raises(AccelError, match=r"u.json\[0\]: entry \(SwitchInput Softmax \[4, 64\]\) "
                                         r"matches no operation.*CODEGEN_ALLOW_UNUSED"):
        compile_mlp(layout_spec=unused)
    monkeypatch.setenv("CODEGEN_ALLOW_UNUSED_LAYOUT_SPEC", "1")
    compile_mlp(layout_spec=unused)
    syntax = write(tmp_path, "x.json", [{"trigger": "FixOutput", "op_type": "Gemm",
                                         "shape": [4, 64], "layout": "((4_L3B:1), (64:1))"}])
    with pytest.raises(AccelError, match=r"x.json\[0\]: invalid layout .*column 5"):
        compile_mlp(layout_spec=syntax)
    trig = write(tmp_path, "t.json", [{"trigger": "Fix", "op_type": "Gemm", "shape": [4, 64],
                                       "layout": "((4:1), (64:1))"}])
    with pytest.raises(AccelError, match=r"trigger must be SwitchInput or FixOutput"):
        compile_mlp(layout_spec=trig)
    gemm = write(tmp_path, "g.json", [{"key": "Gemm_0", "A": "((4:1), (32:1)",
                                       "BT": "((64:1), (32:1))", "C": "((4:1), (64:1))"}])
    with pytest.raises(AccelError, match=r"g.json\[0\].A: invalid layout"):
        compile_mlp(gemm_layout_spec=gemm)
    with pytest.raises(AccelError, match=r"option 'layout_spec': cannot read"):
        compile_mlp(layout_spec=str(tmp_path / "missing.json"))


def test_ignore_layout_check(tmp_path, monkeypatch) -> None:
    spec = write(tmp_path, "s.json", [{"trigger": "SwitchInput", "op_type": "Gemm",
                                       "shape": [4, 32], "layout": "((4_L1B:1), (64_MAB:1))"}])
    with pytest.raises(AccelError, match=r"does not fit"):
        compile_mlp(layout_spec=spec, layout_planner="legacy")
    monkeypatch.setenv("CODEGEN_IGNORE_LAYOUT_CHECK", "1")
    fn = compile_mlp(layout_spec=spec, layout_planner="legacy")
    assert "dst=((4_L1B:1), (64_MAB:1))" in fn.compiled.files["l3ir.txt"]


def test_runs_layer_by_layer_in_schedule_order(tmp_path) -> None:
    fn = compile_mlp(codegen_dir=str(tmp_path), scheduler="auto_recompute_sa")
    program = json.loads((tmp_path / "layers.json").read_text())
    # The host runs one function per layer, in the l3ir program's (the schedule's) order.
    written = [line.split(" -> ")[1].split()[0]
               for line in (tmp_path / "l3ir.txt").read_text().splitlines()
               if line.startswith("layer ")]
    assert [out for _fn, _args, out in program["layers"]] == written
    assert len(written) >= 7
    assert "layer functions, run in schedule order" in (tmp_path / "logs/split.log").read_text()
    assert set(fn.compiled.functions) == {"main"}  # layer functions are internal
    np.testing.assert_allclose(run(fn), REF, rtol=1e-4, atol=1e-5)


def test_spec_layout_is_checked_at_the_tensor_width(tmp_path) -> None:
    """4 lanes fit a long word of f16 but not of f32: the entry fits its shape in general
    (checked when loaded) and fails on the f32 tensor it applies to."""
    layout = "((4_L1B:1), (16_MAB:1, 4_W:1))"
    spec = write(tmp_path, "w.json", [{"trigger": "FixOutput", "op_type": "Gemm",
                                       "shape": [4, 64], "layout": layout}])
    with pytest.raises(AccelError, match=r"w.json\[0\]: layout .* does not fit FixOutput tensor "
                                         r"%11 \[4, 64\]: W spans 4 lanes"):
        compile_mlp(layout_spec=spec, float_dtype="float")
    fn = compile_mlp(layout_spec=spec, float_dtype="mixed", layout_planner="bidi")
    np.testing.assert_allclose(run(fn), REF, rtol=1e-2, atol=1e-2)


MODEL_PY = """\
import torch


def get_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh()).eval(), \\
        (torch.randn(3, 6),)
"""


def test_accel_compile_target_mncore(tmp_path, monkeypatch, capsys) -> None:
    """accel-compile --target mncore (in process): an artifact accel.load runs, with the
    mncore reports; the target's options through --option."""
    from accel.cli import run_main
    from accel.tools.accel_compile import main

    (tmp_path / "model.py").write_text(MODEL_PY)
    monkeypatch.chdir(tmp_path)
    status = run_main(main, ["model.py", "--inference", "--target", "mncore", "--output-folder",
                             "out",
                             "--option", "float_dtype=mixed", "--option",
                             "scheduler=spill_opt", "--option", "codegen_dir=cg"])
    assert status == 0, capsys.readouterr().err
    assert "scheduler=spill_opt" in (tmp_path / "out" / "l3ir.txt").read_text()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh()).eval()
    x = torch.randn(3, 6)
    for folder in ("out", "cg"):
        got = accel.load(tmp_path / folder)(x).numpy()
        np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-2, atol=1e-2)


def test_codegen_dir_reports_of_the_dashboard(tmp_path) -> None:
    """MLSDK's codegen_dir reports (reference 4.4.6-4.4.8): trace.json (the compilation's
    phases and the modelled device timeline), layout_plan_history.html (each layout
    decision), time_slice.txt/.html (the schedule and layouts before time slicing)."""
    compile_mlp(codegen_dir=str(tmp_path), sram_budget=1e-5)
    trace = json.loads((tmp_path / "trace.json").read_text())
    phases = [e["name"] for e in trace["traceEvents"] if e.get("pid") == 0 and e["ph"] == "X"]
    assert phases[:4] == ["graph", "layout", "schedule", "split"]
    assert any(e.get("pid") == 1 and e.get("cat") == "Gemm" for e in trace["traceEvents"])
    history = (tmp_path / "layout_plan_history.html").read_text()
    assert "Layout plan history (lpz)" in history
    for phase in ("<td>start</td>", "<td>forward</td>", "<td>backward</td>", "<td>final</td>"):
        assert phase in history, phase
    text = (tmp_path / "time_slice.txt").read_text().splitlines()
    assert text[0].startswith("# time_slice @main: ")
    layers = [line for line in text if line.startswith("layer ")]
    assert len(layers) == len(json.loads((tmp_path / "summary.json").read_text())["layers"])
    assert any(line.endswith(" time-sliced") for line in layers)  # a tiny SRAM budget
    html_text = (tmp_path / "time_slice.html").read_text()
    assert "Layers run in several time slices" in html_text and "<td>%11</td>" in html_text
