"""Smoke test of an installed accel, run by the interpreter of a fresh venv outside the tree.

`python smoke.py` (in an empty folder): checks that `accel` is imported from site-packages
(not from a checkout), runs `python -m accel`, `accel-opt --version`, `accel-compile --help`,
compiles a small model with `accel.compile` and with `accel-compile --inference`, calls both
and compares them with PyTorch eager (rtol 1e-4, atol 1e-5). Prints one line per check and
exits non-zero at the first failure. Used by test/unit/test_packaging.py and `make matrix`.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

MODEL = '''
import torch


def get_model(batch_size=2):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    return model, (torch.randn(batch_size, 16),)
'''


def _tool(name: str, *args: str) -> str:
    """Run a console script of this venv; returns its stdout (raises with stderr on failure)."""
    exe = Path(sys.executable).parent / name
    result = subprocess.run([str(exe), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"FAIL {name} {' '.join(args)}: exit {result.returncode}\n"
                         f"{result.stderr[-2000:]}")
    return result.stdout


def main() -> int:
    import accel
    import torch

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    where = Path(accel.__file__).resolve()
    if site not in where.parents:
        raise SystemExit(f"FAIL accel imported from {where}, not from {site}")
    print(f"ok   import accel {accel.__version__} from {where.parent} (torch {torch.__version__})")

    about = subprocess.run([sys.executable, "-m", "accel"], capture_output=True, text=True)
    if about.returncode != 0 or "cpu" not in about.stdout:
        raise SystemExit(f"FAIL python -m accel: {about.stdout}{about.stderr[-2000:]}")
    print("ok   python -m accel")

    print("ok   accel-opt --version:", _tool("accel-opt", "--version").strip().splitlines()[0])
    if "--inference" not in _tool("accel-compile", "--help"):
        raise SystemExit("FAIL accel-compile --help does not describe --inference")
    print("ok   accel-compile --help")

    Path("model.py").write_text(MODEL)
    sys.path.insert(0, str(Path.cwd()))
    from model import get_model

    model, inputs = get_model()
    expected = model(*inputs)
    fn = accel.compile(model, inputs, options={"opt_level": 1})
    torch.testing.assert_close(fn(*inputs), expected, rtol=1e-4, atol=1e-5)
    print("ok   accel.compile: matches eager")

    _tool("accel-compile", "model.py", "--inference", "-b", "2", "--pef-name", "mlp", "-o0")
    loaded = accel.load("out/mlp")
    torch.testing.assert_close(loaded(*inputs), expected, rtol=1e-4, atol=1e-5)
    print("ok   accel-compile + accel.load: matches eager")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
