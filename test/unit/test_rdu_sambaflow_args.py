"""SambaFlow's compile arguments on the rdu target, with their documented meaning
(shared/reference/sambaflow-compile-arguments.txt): --compiler-configs-file,
--num-spatial-batches, --mac-v2, --debug listing the experimental arguments in --help, a
warning for --o1-rule-list without -o1, -ws as the minimum number of replicas, and
`accel.rdu` after a plain `import accel`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import accel
import numpy as np
import pytest
import torch
from accel.diagnostics import AccelError

FAST = {"target": "rdu", "opt_level": 0, "cache": False}


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(256, 512)
        self.out = torch.nn.Linear(512, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.nn.functional.gelu(self.fc(x))).reshape(-1, 4, 4)


@pytest.fixture(scope="module")
def net() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return Net().eval(), torch.randn(64, 256)


def _compile(net: Any, **options: Any) -> Any:
    model, x = net
    fn = accel.compile(model, (x,), options={**FAST, **options})
    with torch.no_grad():
        np.testing.assert_allclose(fn(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    return fn.compiled


def test_compiler_configs_file_sets_what_is_not_given(net: Any, tmp_path: Path) -> None:
    path = tmp_path / "configs.json"
    path.write_text(json.dumps({"arch": "sn30", "--n-chips": 2,
                                "resources-scaling-factors": [1, 0.5, 0.5]}))
    program = _compile(net, compiler_configs_file=str(path))
    assert program.arch.name == "sn30" and program.pipeline["n_chips"] == 2
    assert program.limits["scaling_factors"] == [1.0, 0.5, 0.5]
    given = _compile(net, compiler_configs_file=str(path), arch="sn10")
    assert given.arch.name == "sn10"  # options given directly win


@pytest.mark.parametrize(("content", "message"), [
    ({"n_chip": 2}, r"unknown setting 'n_chip' \(valid: sectioning, o1_rule_list"),
    ({"n_chips": 9}, r"setting 'n_chips': option 'n_chips' must be an int from 1 to 8"),
    ([1, 2], r"a compiler-configs file is a JSON object of settings, got list"),
])
def test_bad_compiler_configs_are_one_line_errors(net: Any, tmp_path: Path, content: Any,
                                                  message: str) -> None:
    path = tmp_path / "configs.json"
    path.write_text(json.dumps(content))
    with pytest.raises(AccelError, match=message) as err:
        accel.compile(net[0], (net[1],), options={**FAST, "compiler_configs_file": str(path)})
    assert "\n" not in str(err.value)


def test_spatial_batches_shrink_sections_and_must_divide_the_batch(net: Any) -> None:
    one = _compile(net, preset="o0")
    four = _compile(net, preset="o0", num_spatial_batches=4)
    fc1, fc4 = (next(s for s in p.sections if s.ops == ["linear:fc"]) for p in (one, four))
    assert fc4.pcu < fc1.pcu and fc4.pmu <= fc1.pmu
    # o3 under a tight chip: with smaller stages more fits in a section
    tight = "0.03 1 1"
    assert len(_compile(net, resources_scaling_factors=tight, num_spatial_batches=4).sections) \
        < len(_compile(net, resources_scaling_factors=tight).sections)
    with pytest.raises(AccelError, match=r"num_spatial_batches=3 does not divide the batch size "
                                         r"64 \(dim 0 of argument 0 of @main\)"):
        accel.compile(net[0], (net[1],), options={**FAST, "num_spatial_batches": 3})


def test_mac_v2_is_the_legacy_compiler(net: Any) -> None:
    new = _compile(net, preset="o0")
    legacy = _compile(net, preset="o0", mac_v2=True)
    assert all(len(s.ops) == 1 for s in new.sections)  # -o0: one operator per section
    assert len(legacy.sections) < len(new.sections)  # the view rides along
    assert any(s.ops[-1].startswith("view:") and len(s.ops) == 2 for s in legacy.sections)


def test_o1_rule_list_without_o1_warns(net: Any) -> None:
    with pytest.warns(UserWarning, match=r"--o1-rule-list gpt2 has no effect without -o1 "
                                         r"\(sectioning is o3\)"):
        accel.compile(net[0], (net[1],), options={**FAST, "o1_rule_list": "gpt2"})


def test_debug_lists_experimental_arguments_in_help(tmp_path: Path) -> None:
    from conftest import run_tool

    plain = run_tool("accel-compile", "--help")
    debug = run_tool("accel-compile", "--debug", "--help")
    assert plain.returncode == 0 and debug.returncode == 0
    for flag in ("--compiler-configs-file", "--mac-human-decision", "--num-spatial-batches",
                 "--model-parallel", "--mac-v2", "--n-chips"):
        assert flag in plain.stdout, flag
    assert "--sectioning" not in plain.stdout
    assert "--sectioning" in debug.stdout and "[experimental]" in debug.stdout
    # experimental arguments are accepted without --debug
    mlir = tmp_path / "add.mlir"
    from samples import ADD

    mlir.write_text(ADD)
    r = run_tool("accel-compile", str(mlir), "--target", "rdu", "--sectioning", "o0",
                 "--output-folder", str(tmp_path / "out"), "--option", "opt_level=0", "-q")
    assert r.returncode == 0, r.stderr


def test_world_size_is_a_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.distributed as dist
    from accel.training.distributed import world_size

    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        assert world_size(1) == 1
        with pytest.raises(AccelError, match=r"world_size=2 \(the minimum number of replicas, "
                                             r"-ws\), but the torch.distributed group has only "
                                             r"1 processes"):
            world_size(2)
        monkeypatch.setattr(dist, "get_world_size", lambda *a, **k: 4)
        assert world_size(2) == 4  # more replicas than the minimum: fine
    finally:
        monkeypatch.undo()
        dist.destroy_process_group()


def test_plain_import_accel_gives_accel_rdu() -> None:
    code = ("import sys, accel\n"
            "assert 'accel.rdu' not in sys.modules and 'torch' not in sys.modules\n"
            "import torch\n"
            "@accel.rdu.hypersection\n"
            "class Block(torch.nn.Module):\n"
            "    pass\n"
            "assert 'hypersection' in Block.accel_annotations\n"
            "print(type(accel.mlsdk.MNDevice('auto')).__name__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "MNDevice"
