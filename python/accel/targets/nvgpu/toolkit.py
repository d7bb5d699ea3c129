"""Where the CUDA pieces live, and whether a GPU is here: ptxas, libdevice, the driver.

Nothing here needs a GPU. `ptxas` and `libdevice.10.bc` come from NVIDIA's
`nvidia-cuda-nvcc` wheel (the `test` extra; a CUDA toolkit on PATH or in $CUDA_HOME works
too); the driver is `libcuda.so.1`, present only where a GPU driver is installed.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from accel.diagnostics import AccelError

#: `device` values for nvgpu: the SM architectures code is compiled for. sm_90a enables
#: Hopper's architecture-specific instructions (wgmma, setmaxnreg), which run only on sm_90.
ARCHS = ("sm_80", "sm_90", "sm_90a")
#: What `device=host` compiles for when no GPU is present (cross-compiling by default).
FALLBACK_ARCH = "sm_90"


def _nvidia_roots() -> list[Path]:
    """Folders of NVIDIA's pip wheels (nvidia/cu13, nvidia/cuda_nvcc, ...) on sys.path."""
    import sys

    roots: list[Path] = []
    for entry in sys.path:
        base = Path(entry) / "nvidia"
        if base.is_dir():
            roots += [p for p in sorted(base.iterdir()) if p.is_dir()]
    return roots


def _toolkit_dirs() -> list[Path]:
    dirs = [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    return dirs + _nvidia_roots() + [Path("/usr/local/cuda")]


@cache
def ptxas_path() -> str | None:
    """The `ptxas` executable: the nvidia-cuda-nvcc wheel's, a toolkit's, or PATH's."""
    for root in _toolkit_dirs():
        exe = root / "bin" / "ptxas"
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe)
    return shutil.which("ptxas")


@cache
def libdevice_path() -> str | None:
    """NVIDIA's libdevice bitcode (the `__nv_*` math functions kernels call)."""
    for root in _toolkit_dirs():
        for rel in ("nvvm/libdevice/libdevice.10.bc", "libdevice/libdevice.10.bc"):
            found = root / rel
            if found.is_file():
                return str(found)
    return None


def ptxas_check(ptx: str, arch: str, *, name: str = "kernel") -> str:
    """Assemble `ptx` for `arch` with ptxas (output discarded); returns ptxas' -v report.

    This is the check CI runs on every kernel: what ptxas accepts, the driver's JIT
    accepts too. Raises `AccelError` with ptxas' first error line when it rejects the PTX.
    """
    exe = ptxas_path()
    if exe is None:
        raise AccelError("ptxas not found: install the nvidia-cuda-nvcc wheel "
                         "(`pip install accel[test]`) or a CUDA toolkit")
    with tempfile.TemporaryDirectory(prefix="accel-ptxas-") as tmp:
        src = Path(tmp) / f"{name}.ptx"
        src.write_text(ptx)
        proc = subprocess.run([exe, f"-arch={arch}", "-v", str(src), "-o", os.devnull],
                              capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln.lower()),
                     proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "")
        raise AccelError(f"ptxas -arch={arch} rejected the PTX of {name}: {first.strip()}")
    return proc.stderr


@cache
def driver_library() -> ctypes.CDLL | None:
    """libcuda (the driver), or None where no NVIDIA driver is installed."""
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


@cache
def present_arch() -> str | None:
    """`sm_XY` of GPU 0, or None without a driver or a GPU. Uses the driver through ctypes
    (cuInit, cuDeviceGet, cuDeviceGetAttribute) so it works without cuda-bindings."""
    lib = driver_library()
    if lib is None:
        return None
    if lib.cuInit(0) != 0:
        return None
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return None
    dev = ctypes.c_int(0)
    if lib.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        return None
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76 (cuda.h).
    if lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev) != 0 or \
            lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev) != 0:
        return None
    return f"sm_{major.value}{minor.value}"


def resolve_arch(device: str) -> str:
    """The SM architecture `device` names; "host" is the present GPU's (the nearest of
    ARCHS below it), else FALLBACK_ARCH."""
    if device != "host":
        return device
    found = present_arch()
    if found is None:
        return FALLBACK_ARCH
    number = int(found[3:])
    usable = [a for a in ARCHS if not a.endswith("a") and int(a[3:]) <= number]
    return usable[-1] if usable else found


def require_gpu(what: str) -> None:
    """Raise the "no GPU" `AccelError` unless a GPU and its driver are present."""
    if driver_library() is None:
        raise AccelError(f"{what}: no NVIDIA driver (libcuda.so.1) on this machine; to "
                         "cross-compile without a GPU pass device=sm_80, sm_90 or sm_90a")
    if present_arch() is None:
        raise AccelError(f"{what}: the NVIDIA driver found no usable GPU; to cross-compile "
                         "without a GPU pass device=sm_80, sm_90 or sm_90a")
