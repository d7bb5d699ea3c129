"""What LLVM makes of accel's loops on this host: packed (SIMD) float arithmetic.

Reads the host assembly of the JIT's own optimisation (`accel.host.jit.host_assembly`):
softmax and layernorm reduce and normalise with packed instructions (`...ps` on xmm/ymm/zmm
registers), more of them with the unsafe-math pass's reassociated reductions.
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402
from accel.host.jit import host_assembly  # noqa: E402

PACKED = re.compile(r"\bv(?:add|sub|mul|div|max|min|fmadd\d*|fnmadd\d*)ps\s")


def _packed_ops(fn: object, x: torch.Tensor, **options: object) -> int:
    compiled = accel.compile(fn, (x,), options={"cache": False, **options})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), fn(x), rtol=1e-4, atol=1e-5)
    return len(PACKED.findall(host_assembly(compiled.compiled.llvm_ir)))


@pytest.mark.parametrize("name", ["softmax", "layernorm"])
def test_reductions_use_packed_float_instructions(name: str) -> None:
    fn = torch.nn.LayerNorm(256).eval() if name == "layernorm" else \
        (lambda x: torch.softmax(x, -1))
    x = torch.randn(8, 256)
    fast = _packed_ops(fn, x)
    strict = _packed_ops(fn, x, disable_unsafe_math_canonicalizations=True)
    assert fast > 0 and fast > strict


def test_rows_of_fourteen_are_vectorised() -> None:
    """A 14 x 14 feature map's rows (14 floats): LLVM's loop vectoriser skips loops under 16
    iterations unless accel lowers that bound (`VECTORIZER_MIN_TRIP_COUNT`). A single
    elementwise op over them uses packed instructions, also where its shape is odd."""
    from accel.llvm.engine import VECTORIZER_MIN_TRIP_COUNT

    assert VECTORIZER_MIN_TRIP_COUNT <= 14
    x = torch.randn(4, 3, 14, 14)
    assert _packed_ops(lambda t: t[..., 1:, 1:] * t[..., :-1, :-1], x) > 0


def test_a_bad_trip_count_knob_is_one_warning() -> None:
    import os
    import subprocess
    import sys

    code = ("import accel, torch\n"
            "f = accel.compile(lambda t: t * 2, (torch.ones(20),), options={'cache': False})\n"
            "assert float(f(torch.ones(20)).sum()) == 40.0\nprint('OK')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "ACCEL_VECTORIZER_MIN_TRIP_COUNT": "few"})
    assert run.returncode == 0 and "OK" in run.stdout, run.stderr[-2000:]
    assert "ACCEL_VECTORIZER_MIN_TRIP_COUNT='few' is not a whole number; using 4" in run.stderr
    assert "Traceback" not in run.stderr
