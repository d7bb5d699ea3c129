"""The target spine: the registry, planned targets, presets, and a plug-in target."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import accel
import accel.settings
import numpy as np
import pytest
from accel import options, targets
from accel.diagnostics import AccelError

torch = pytest.importorskip("torch")


@pytest.fixture
def toy() -> Iterator[None]:
    targets.register("toy", "toy_target")
    yield
    targets.unregister("toy")


def test_registry_names_and_unknown_target() -> None:
    assert targets.names() == ("cpu", "mncore", "nvgpu", "rdu")
    with pytest.raises(AccelError, match=r"unknown target 'x' \(choose from cpu, mncore, "
                                         r"nvgpu, rdu\)"):
        targets.get("x")


@pytest.mark.parametrize("name", ["mncore", "rdu"])
def test_each_target_compiles_mlir_text(name: str) -> None:
    """A target's compile takes MLIR text with its resolved options (accel-compile of a
    .mlir file goes this way)."""
    from samples import ADD

    opts = accel.settings.merge({"target": name, "cache": False})
    executable = targets.get(name).compile(ADD, opts)
    assert type(executable).__module__.startswith(f"accel.targets.{name}")


def test_cpu_presets_are_data() -> None:
    cpu = targets.get("cpu")
    assert cpu.presets() == {"o0": {"opt_level": 0}, "o1": {"opt_level": 1},
                             "o3": {"opt_level": 3}}
    assert cpu.default_preset == "o3"
    resolved = accel.settings.merge({"preset": "o1"})
    assert resolved["preset"] == "o1" and resolved["opt_level"] == 1
    # options given win over the preset's
    assert accel.settings.merge({"preset": "o1", "opt_level": 2})["opt_level"] == 2


def test_every_option_once_with_scope_and_doc() -> None:
    for name, opt in options.OPTIONS.items():
        assert opt.name == name and opt.doc and opt.scope in options.SCOPES
        options.check_value(opt, opt.default, ("host", "cpu"))  # defaults are valid
    assert set(options.CODE_OPTIONS) >= {"opt_level", "disable_affine_fusion"}


def test_aot_device_list_matches_the_cpu_target() -> None:
    from accel.targets.cpu import DEVICES
    from accel.targets.cpu.aot import TARGET_CPUS

    assert set(DEVICES) == set(TARGET_CPUS)


def test_plug_in_target_runs_through_the_interface(toy: None, tmp_path: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh()).eval()
    x = torch.randn(3, 8)
    fn = accel.compile(model, (x,), options={"target": "toy", "cache": False})
    assert fn.options["preset"] == "fast" and fn.options["opt_level"] == 1
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-5)
    assert fn.compiled.calls == 1
    fn.save(tmp_path / "toy")
    manifest = json.loads((tmp_path / "toy" / "manifest.json").read_text())
    assert manifest["target"] == "toy"
    assert json.loads((tmp_path / "toy" / "toy.json").read_text()) == {"calls": 1}
    loaded = accel.load(tmp_path / "toy")
    np.testing.assert_allclose(loaded(x.numpy()), model(x).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    assert loaded.compiled.calls == 1
    assert "toy: 1 function(s)" in targets.get("toy").report(loaded.compiled)
    with pytest.raises(ValueError, match="target toy has no preset 'o3'"):
        accel.compile(model, (x,), options={"target": "toy", "preset": "o3"})
