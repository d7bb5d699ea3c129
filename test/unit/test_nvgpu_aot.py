"""nvgpu GPU AOT libraries: C that embeds the PTX and dlopen()s the driver, built and linked
with gcc on a machine without CUDA; called from C (and, with `-m gpu`, checked on a GPU)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import accel
import numpy as np
import pytest
import torch
from accel.diagnostics import AccelError
from accel.targets.nvgpu import toolkit

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc absent")


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.b(torch.relu(self.a(x))), -1)


def _build(tmp: Path, **opts: object) -> accel.CompiledModule:
    torch.manual_seed(0)
    return accel.compile(MLP().eval(), (torch.randn(4, 16),), options={
        "target": "nvgpu", "device": "sm_90", "cache": False, "aot": True,
        "aot_name": "mlp", "output_folder": str(tmp), **opts})


HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include "mlp.h"
int main(void) {
  float in[4 * 16] = {0}, out[4 * 8];
  int status = mlp(in, out%s);
  printf("status %%d: %%s\n", status, mlp_last_error());
  return status == %d ? 0 : 1;
}
"""


def _run_harness(tmp: Path, extra_args: str, want: int) -> str:
    src = tmp / "main.c"
    src.write_text(HARNESS % (extra_args, want))
    exe = tmp / "main"
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", str(src), f"-I{tmp}", f"-L{tmp}",
                    "-lmlp", f"-Wl,-rpath,{tmp}", "-o", str(exe)], check=True)
    proc = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def default_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, accel.CompiledModule]:
    tmp = tmp_path_factory.mktemp("default")
    return tmp, _build(tmp)


def test_library_files_and_exports(default_build) -> None:
    tmp_path, fn = default_build
    lib = fn.aot_library
    assert {p.name for p in lib.files.values()} == {"mlp.h", "mlp.c", "mlp.o", "libmlp.so"}
    header = (tmp_path / "mlp.h").read_text()
    assert "int mlp(\n    const float * in0" in header and "float * out0" in header
    exported = subprocess.run(["nm", "-D", "--defined-only", str(lib.files["so"])],
                              capture_output=True, text=True, check=True).stdout
    assert sorted(line.split()[-1] for line in exported.splitlines()) == \
        ["mlp", "mlp_last_error"]
    needed = subprocess.run(["readelf", "-d", str(lib.files["so"])], capture_output=True,
                            text=True, check=True).stdout
    assert "libcuda" not in needed  # the driver is dlopen()ed at run time
    assert ".target sm_90" in (tmp_path / "mlp.c").read_text()


@pytest.mark.skipif(toolkit.driver_library() is not None, reason="a CUDA driver is present")
def test_called_from_c_without_a_driver_says_so(default_build) -> None:
    out = _run_harness(default_build[0], "", 3)
    assert "status 3: no NVIDIA driver (libcuda.so.1)" in out


def test_user_device_memory_takes_pool_and_stream(tmp_path: Path) -> None:
    lib = _build(tmp_path, user_device_memory=True).aot_library
    header = (tmp_path / "mlp.h").read_text()
    assert "uint64_t device_pool" in header and "void *stream" in header
    assert f"#define MLP_DEVICE_BYTES {lib.device_bytes}u" in header
    source = (tmp_path / "mlp.c").read_text()
    assert "cuMemAlloc(&" not in source  # no device allocation inside
    exported = subprocess.run(["nm", "-D", "--defined-only", str(lib.files["so"])],
                              capture_output=True, text=True, check=True).stdout
    assert {"mlp_device_bytes", "mlp_upload_weights"} <= set(exported.split())
    if toolkit.driver_library() is None:
        _run_harness(tmp_path, ", 0, NULL", 3)


def test_on_gpu_tensors_takes_device_pointers(default_build) -> None:
    from accel.targets.nvgpu.aot import render_header, render_source

    exe = default_build[1].compiled
    program = exe.programs["main"]
    header = render_header(program, "mlp", True, True, 0)
    assert "uint64_t in0" in header and "uint64_t out0" in header
    source = render_source(exe, program, "mlp", True, True)
    assert "p[0] = in0;" in source and "cuMemcpyHtoDAsync(p[0]" not in source


def test_host_fallback_has_no_gpu_library(tmp_path: Path) -> None:
    from accel.targets.nvgpu.aot import build_library
    from accel.targets.nvgpu.executable import GpuExecutable

    exe = GpuExecutable({}, {}, {}, "sm_90", {}, host=object(), host_reason="dynamic shape")
    with pytest.raises(AccelError, match="host CPU.*dynamic shape"):
        build_library(exe, "main", "mlp", tmp_path)


@pytest.mark.gpu
@pytest.mark.skipif(toolkit.present_arch() is None, reason="no NVIDIA GPU")
def test_library_numerics_on_gpu(default_build) -> None:
    tmp_path, fn = default_build
    lib = ctypes.CDLL(str(tmp_path / "libmlp.so"))
    x = np.random.default_rng(0).standard_normal((4, 16), dtype=np.float32)
    out = np.empty((4, 8), np.float32)
    assert lib.mlp(x.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p)) == 0
    np.testing.assert_allclose(out, fn(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)
