"""`accel.settings.Settings`: options resolved once at each entry point, frozen, handed down.

Counts calls of the options table's merge (`accel.settings.merge`) per compile through
every entry point (accel.compile on each target, @accel.jit, torch.compile,
compile_train_step, compile_mlir, accel-compile): each must be exactly 1 (before: 2 on
cpu, 3 through torch.compile, 4 on mncore). Every compiled program is also called and
compared with eager (rtol 1e-4, atol 1e-5), so the counts are of compiles that work.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402
import accel.settings as settings_module  # noqa: E402
from accel.options import OptionError  # noqa: E402
from accel.settings import Settings, host_settings, resolve  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The options each call of `accel.settings.merge` got, in order."""
    calls: list[dict] = []
    real = settings_module.merge

    def counting(options, **kwargs):
        calls.append(dict(options or {}))
        return real(options, **kwargs)

    monkeypatch.setattr(settings_module, "merge", counting)
    return calls


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()


@pytest.mark.parametrize("target", ["cpu", "rdu", "mncore"])
def test_accel_compile_resolves_once(resolutions: list[dict], target: str) -> None:
    model, x = _mlp(), torch.randn(2, 4)
    fn = accel.compile(model, (x,), options={"target": target, "opt_level": 1,
                                             "cache": False})
    torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)
    assert len(resolutions) == 1, resolutions
    assert isinstance(fn.options, type(fn.options)) and fn.options["target"] == target


def test_nvgpu_cross_compile_resolves_once(resolutions: list[dict]) -> None:
    fn = accel.compile(_mlp(), (torch.randn(2, 4),), options={
        "target": "nvgpu", "device": "sm_80", "cache": False})
    assert fn.compiled.kernels and len(resolutions) == 1, resolutions


def test_torch_compile_jit_and_training_resolve_once(resolutions: list[dict]) -> None:
    import accel.dynamo  # noqa: F401 - the backend

    model, x = _mlp(), torch.randn(2, 4)
    torch._dynamo.reset()
    fast = torch.compile(model, backend="accel", options={"opt_level": 1, "cache": False})
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=RTOL, atol=ATOL)
    torch._dynamo.reset()
    assert len(resolutions) == 1, resolutions

    resolutions.clear()
    jitted = accel.jit(model, compile_options={"opt_level": 1, "cache": False})
    torch.testing.assert_close(jitted(x), model(x), rtol=RTOL, atol=ATOL)
    jitted(torch.randn(3, 4))  # a second signature compiles again: no new resolution
    assert jitted.stats["compiles"] == 2 and len(resolutions) == 1, resolutions
    assert jitted.compile_options == {"opt_level": 1, "cache": False}

    resolutions.clear()
    train = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(train.parameters(), lr=0.1)
    batch = (torch.randn(3, 4), torch.randn(3, 2))
    step = accel.compile_train_step(
        train, lambda m, a, b: torch.nn.functional.mse_loss(m(a), b), opt, batch,
        options={"opt_level": 1, "cache": False, "grad_accumulation_steps": 1})
    loss = step(*batch)
    assert float(loss) > 0 and len(resolutions) == 1, resolutions


def test_accel_compile_cli_resolves_once(resolutions: list[dict], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from accel.cli import run_main
    from accel.tools.accel_compile import main

    (tmp_path / "m.py").write_text(
        "import torch\n\ndef get_model():\n    torch.manual_seed(0)\n"
        "    return torch.nn.Linear(4, 3).eval(), (torch.randn(2, 4),)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["accel-compile"])
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    assert run_main(main, ["m.py", "--inference", "-o1", "--target", "rdu", "-q",
                           "--output-folder", "out"]) == 0
    assert len(resolutions) == 1, resolutions
    x = torch.randn(2, 4)
    torch.manual_seed(0)
    want = torch.nn.Linear(4, 3)(x)
    torch.testing.assert_close(accel.load(tmp_path / "out")(x), want.detach(), rtol=RTOL,
                               atol=ATOL)

    from samples import ADD

    (tmp_path / "add.mlir").write_text(ADD)
    (tmp_path / "t.py").write_text(
        "import torch\n\ndef get_training():\n    torch.manual_seed(0)\n"
        "    m = torch.nn.Linear(4, 2)\n"
        "    return (m, lambda mm, a, b: torch.nn.functional.mse_loss(mm(a), b),\n"
        "            torch.optim.SGD(m.parameters(), lr=0.1),\n"
        "            (torch.randn(3, 4), torch.randn(3, 2)))\n")
    for args in (["add.mlir", "--output-folder", "a"], ["t.py", "--output-folder", "t"],
                 ["add.mlir", "--option-json", "out/option.json", "--entry", "add",
                  "--output-folder", "b"]):
        resolutions.clear()
        assert run_main(main, [*args, "-o1", "-q"]) == 0, args
        assert len(resolutions) == 1, (args, resolutions)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(accel.load(tmp_path / "a")(x, x), 2 * x)


def test_compile_mlir_resolves_once(resolutions: list[dict]) -> None:
    from samples import ADD

    fn = accel.compile_mlir(ADD, {"opt_level": 1})
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(fn.invoke("add", x, x), 2 * x)
    assert len(resolutions) == 1


def test_settings_are_frozen_and_replace_validates() -> None:
    s = resolve({"target": "rdu", "preset": "o1"})
    assert s["sectioning"] == "o1" and s.target == "rdu"
    assert s.given == {"target", "preset"}
    with pytest.raises(TypeError):
        s["opt_level"] = 0  # type: ignore[index]
    with pytest.raises(AttributeError):
        s.given = frozenset()  # type: ignore[misc]
    t = s.replace(n_chips=2, filename="<m>")
    assert (t["n_chips"], t["filename"], s["n_chips"]) == (2, "<m>", 1)
    assert "n_chips" in t.given
    with pytest.raises(OptionError, match="option 'n_chips' must be an int from 1 to 8"):
        s.replace(n_chips=0)
    with pytest.raises(OptionError, match="option 'sram_budget' applies to mncore, not rdu"):
        s.replace(sram_budget=0.5)
    assert s.view("rdu")["sectioning"] == "o1" and "opt_level" not in s.view("rdu")
    assert resolve(s) is s  # Settings pass through every entry unchanged


def test_for_host_derives_cpu_settings() -> None:
    """An emulated target's host program: cpu defaults, the carried values, the changes;
    the cpu target's check still refuses what it cannot honour."""
    s = resolve({"target": "rdu", "opt_level": 1, "mm_conv_precision_mode": "fp32"})
    host = s.for_host("opt_level", "mm_conv_precision_mode", cache=False, filename="<x>")
    assert isinstance(host, Settings) and host.target == "cpu"
    assert (host["opt_level"], host["mm_conv_precision_mode"], host["cache"],
            host["filename"]) == (1, "fp32", False, "<x>")
    assert "sectioning" not in host and host["preset"] == "o3"
    assert host_settings({}, opt_level=0)["opt_level"] == 0
    from accel.diagnostics import NotSupportedYet

    with pytest.raises(NotSupportedYet, match="float_dtype"):
        host_settings({"float_dtype": "half"}, "float_dtype")
    with pytest.raises(OptionError, match="does not apply to the host"):
        host_settings({}, sectioning="o1")


def test_explicit_option_wins_over_a_configs_file_even_at_its_default(tmp_path: Path) -> None:
    """Settings know what was given: rdu's compiler_configs_file fills only the options not
    given, judged by name (an explicit n_chips=1, the default, still wins)."""
    import json

    from accel.targets.rdu import config

    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"n_chips": 2, "arch": "sn30"}))
    filled = config.effective(resolve({"target": "rdu", "compiler_configs_file": str(path)}))
    assert (filled["n_chips"], filled["arch"]) == (2, "sn30")
    explicit = config.effective(resolve({"target": "rdu", "compiler_configs_file": str(path),
                                         "n_chips": 1}))
    assert (explicit["n_chips"], explicit["arch"]) == (1, "sn30")
    assert isinstance(explicit, Settings)
