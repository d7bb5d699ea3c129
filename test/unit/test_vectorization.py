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
