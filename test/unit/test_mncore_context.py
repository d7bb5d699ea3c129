"""MLSDK's device and context API on the emulated MN-Core (`accel.mlsdk`, reference 4.1 and
4.5): device selection, registered parameters that stay on the device across calls, input
proxies, explicit D2H, asynchronous H2D whose overlap with compute shows in profile.json
and the estimated step time, a training loop against eager training, CacheOptions, and
load_codegen_dir."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import accel
import pytest
import torch
from accel.diagnostics import AccelError

mlsdk = accel.mlsdk


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 8))


def test_device_selection() -> None:
    assert mlsdk.MNDevice("auto").index == 0
    assert mlsdk.MNDevice(0).name == mlsdk.MNDevice("mncore2:auto").name == "mnc2emu0"
    with pytest.raises(AccelError, match=r"mlsdk: no MN-Core device 3: give a Device Index "
                                         r"or 'auto' \(devices: 0: mnc2emu0\)"):
        mlsdk.MNDevice(3)


@pytest.fixture(scope="module")
def inference(tmp_path_factory: pytest.TempPathFactory):
    model = _mlp()

    def infer(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"y": model(inp["x"])}

    context = mlsdk.Context(mlsdk.MNDevice("auto"))
    context.register_param(model.parameters())
    x = torch.randn(256, 64)
    folder = tmp_path_factory.mktemp("cg") / "infer"
    compiled = context.compile(infer, {"x": x}, mlsdk.storage.path(folder))
    return model, context, compiled, x


def test_registered_parameters_stay_on_the_device(inference) -> None:
    model, context, compiled, x = inference
    out = compiled({"x": x})
    assert isinstance(out["y"], mlsdk.TensorProxy)
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(out["y"].cpu(), want, rtol=1e-4, atol=1e-5)
    weight = model[0].weight
    proxy = context.get_registered_value_proxy(weight)
    with torch.no_grad():
        weight.mul_(2.0)  # the host copy changes; the device keeps its own
    try:
        torch.testing.assert_close(compiled({"x": x})["y"].cpu(), want, rtol=1e-4, atol=1e-5)
        proxy.load_from(weight)  # explicit H2D of the new value
        with torch.no_grad():
            doubled = model(x)
        torch.testing.assert_close(compiled({"x": x})["y"].cpu(), doubled, rtol=1e-4,
                                   atol=1e-5)
        torch.testing.assert_close(proxy.cpu(), weight.detach())  # explicit D2H
    finally:
        with torch.no_grad():
            weight.mul_(0.5)
        proxy.load_from(weight)
    with pytest.raises(AccelError, match="this tensor was not registered"):
        context.get_registered_value_proxy(torch.zeros(2))


def test_input_proxies_clone_and_errors(inference) -> None:
    model, _, compiled, x = inference
    proxies = compiled.allocate_input_proxy()
    assert set(proxies) == {"x"} and proxies["x"].shape == (256, 64)
    with pytest.raises(AccelError, match="its proxy was allocated but never loaded"):
        compiled(proxies)
    data = x.clone()
    proxies["x"].load_from(data, clone=True)
    data.zero_()  # clone=True copied it when called
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(compiled(proxies)["y"].cpu(), want, rtol=1e-4, atol=1e-5)
    data = x.clone()
    proxies["x"].load_from(data, clone=False)
    data.zero_()  # clone=False: a reference, so the change is seen
    with torch.no_grad():
        zero = model(torch.zeros_like(x))
    torch.testing.assert_close(compiled(proxies)["y"].cpu(), zero, rtol=1e-4, atol=1e-5)
    with pytest.raises(AccelError, match=r"TensorProxy x is \[256, 64\] torch.float32, got a "
                                         r"tensor \[2, 64\]"):
        proxies["x"].load_from(torch.zeros(2, 64))
    with pytest.raises(AccelError, match=r"takes a dict with keys \['x'\]"):
        compiled({"z": x})


def test_prefetched_h2d_overlaps_compute(inference, tmp_path: Path) -> None:
    """Loading batch k+1 while batch k computes (two proxy sets) hides H2D under compute:
    profile.json shows H2D spans inside compute spans and the step time falls."""
    model, _, _, x = inference

    def infer(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"y": model(inp["x"])}

    batches = [torch.randn(256, 64) for _ in range(5)]
    steps = {}
    for mode in ("implicit", "prefetch"):
        context = mlsdk.Context()
        context.register_param(model.parameters())
        compiled = context.compile(infer, {"x": x}, str(tmp_path / mode))
        if mode == "implicit":
            for b in batches:
                compiled({"x": b})["y"].cpu()
        else:
            buffers = [compiled.allocate_input_proxy(), compiled.allocate_input_proxy()]
            buffers[0]["x"].load_from(batches[0])
            for i in range(len(batches)):
                out = compiled(buffers[i % 2])
                if i + 1 < len(batches):
                    buffers[(i + 1) % 2]["x"].load_from(batches[i + 1])
                out["y"].cpu()
        steps[mode] = compiled.estimated_step_us
        profile = json.loads((tmp_path / mode / "profile.json").read_text())
        runtime = [e for e in profile["traceEvents"] if e.get("pid") == 1 and e["ph"] == "X"]
        assert {e["cat"] for e in runtime} == {"h2d", "compute", "d2h"}
        assert any(e["pid"] == 0 for e in profile["traceEvents"])  # the compiler's timeline
        hidden = profile["runtime"]["h2d_overlapping_compute_us"]
        assert (hidden > 0) == (mode == "prefetch")
    assert steps["prefetch"] < steps["implicit"]


def test_training_loop_matches_eager_and_stays_on_device(tmp_path: Path) -> None:
    model = _mlp()
    reference = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)

    def train_step(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inp["x"]), inp["t"])
        loss.backward()
        optimizer.step()
        return {"loss": loss}

    context = mlsdk.Context(mlsdk.MNDevice(0),
                            cache_options=mlsdk.CacheOptions(tmp_path / "cache"))
    context.register_param(model.parameters())
    torch.manual_seed(1)
    data = [(torch.randn(16, 64), torch.randint(0, 8, (16,))) for _ in range(4)]
    compiled = context.compile(train_step, {"x": data[0][0], "t": data[0][1]},
                               str(tmp_path / "train"))
    host_before = model[0].weight.detach().clone()
    for x, t in data:
        loss = compiled({"x": x, "t": t})["loss"].cpu()
        ref_opt.zero_grad()
        ref_loss = torch.nn.functional.cross_entropy(reference(x), t)
        ref_loss.backward()
        ref_opt.step()
        assert float(loss.detach()) == pytest.approx(ref_loss.item(), rel=1e-4)
    torch.testing.assert_close(model[0].weight.detach(), host_before)  # host untouched
    on_device = context.get_registered_value_proxy(model[0].weight).cpu()
    torch.testing.assert_close(on_device, reference[0].weight.detach(), rtol=1e-4, atol=1e-5)
    meta = json.loads((tmp_path / "train" / "mlsdk.json").read_text())
    assert meta["kind"] == "train_step" and meta["outputs"] == ["loss"]
    assert compiled.device_us > 0 and compiled.estimated_step_us > compiled.device_us


def test_cache_options_reuse_node_simulations(inference, tmp_path: Path) -> None:
    model, _, _, x = inference

    def infer(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"y": model(inp["x"])}

    found = []
    for _ in range(2):
        context = mlsdk.Context(cache_options=mlsdk.CacheOptions(tmp_path / "cache"))
        compiled = context.compile(infer, {"x": x}, options={"option_json": "O2"})
        found.append(json.loads(compiled.compiled.compiled.files["summary.json"])
                     ["node_simulation"])
    assert found[0]["simulated"] == 2 and found[0]["reused"] == 0  # the MLP's two GEMMs
    assert found[1] == {"simulated": 0, "reused": 2, "cache": str(tmp_path / "cache")}
    assert (tmp_path / "cache" / "node_simulations.json").is_file()


def test_training_function_errors() -> None:
    model = _mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def two_outputs(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out = model(inp["x"])
        loss = out.pow(2).mean()
        loss.backward()
        optimizer.step()
        return {"loss": loss, "out": out}

    context = mlsdk.Context()
    with pytest.raises(AccelError, match=r"trains 4 parameter\(s\) that are not registered"):
        context.compile(two_outputs, {"x": torch.randn(2, 64)})
    context.register_param(model)
    with pytest.raises(AccelError, match="returns only its loss .* output 'out' is another"):
        context.compile(two_outputs, {"x": torch.randn(2, 64)})


def test_load_codegen_dir(inference) -> None:
    model, context, compiled, x = inference
    loaded = context.load_codegen_dir(compiled.codegen_dir)
    assert loaded.input_names == ["x"] and loaded.output_names == ["y"]
    torch.testing.assert_close(loaded({"x": x})["y"].cpu(), compiled({"x": x})["y"].cpu())
