"""`python -m accel`: what this installation is: versions, targets, devices, the cache.

    $ python -m accel
    accel 0.1.0 (/.../site-packages/accel)
    python 3.11.7, torch 2.13.0+cpu, torch-mlir 20261001, llvmlite 0.50.0
    targets: cpu, mncore, nvgpu, rdu
    devices:
      0: cpu AMD EPYC
      1: mncore mnc2emu0 (emulated)
    cache: /home/me/.cache/accel ($ACCEL_CACHE_DIR, else $XDG_CACHE_HOME/accel or ~/.cache/accel)

Imports neither torch nor the MLIR bindings (versions are read from the installed
packages' metadata), so it answers in well under a second; `accel-smi list` has the
devices' details.
"""

from __future__ import annotations

import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def report() -> str:
    """The text `python -m accel` prints."""
    import accel
    from accel import targets
    from accel.cache import cache_dir, usable
    from accel.tools.accel_smi import devices

    lines = [f"accel {accel.__version__} ({Path(accel.__file__).parent})",
             f"python {platform.python_version()}, "
             + ", ".join(f"{d} {_version(d)}" for d in ("torch", "torch-mlir", "llvmlite")),
             f"targets: {', '.join(targets.names())}",
             "devices:"]
    rows, note = devices()
    lines += [f"  {i}: {kind} {name}" + (" (emulated)" if state else "")
              for i, (kind, name, state) in enumerate(rows)]
    if note:
        lines.append(f"  ({note})")
    where = cache_dir()
    lines.append(f"cache: {where} ($ACCEL_CACHE_DIR, else $XDG_CACHE_HOME/accel or "
                 "~/.cache/accel)" + ("" if usable() else " (not usable: see the warning)"))
    return "\n".join(lines)


def main() -> int:
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
