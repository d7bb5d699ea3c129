"""`accel-unsafe-math-canonicalize`: the rewrites fire, and the error they add is bounded.

Each function is compiled with the CPU JIT twice, after the pass and without it, on random
f32 inputs; errors are measured against a float64 reference of the same f32 inputs.
Stated bounds (u = 2**-24, the f32 unit roundoff; "ulp" is np.spacing of the reference):

- `x / sqrt(y)` -> `x * rsqrt(y)` (rsqrt lowers to 1/sqrt): three roundings instead of two,
  <= 4 ulp.
- `x / C` -> `x * (1/C)`: 1/C is correctly rounded, so two roundings, <= 2 ulp (exact for
  powers of two).
- `exp(a) * exp(b)` -> `exp(a + b)`: rounding a+b shifts the exponent by <= |a+b| u, so the
  relative error is <= (|a+b| + 4) u (libm's expf is within 1 ulp).
- a reassociated sum of 10**5 positive values: relative error <= 1e-5 (as the serial sum).
- through PyTorch, against eager: rtol = atol = 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest
from accel import compile_mlir
from accel.context import make_context
from accel.ir import ir
from accel.pipeline import run_pipeline
from samples import matmul_source, sum_source

RNG = np.random.default_rng(20261121)
N = 4096
U = 2.0**-24
PASS = "builtin.module(accel-unsafe-math-canonicalize)"
PASS_OFF = ("builtin.module(accel-unsafe-math-canonicalize{rsqrt=false reciprocal=false "
            "merge-exp=false reassociate-reductions=false})")

_MAP = "affine_map<(d0) -> (d0)>"


def _elementwise(name: str, inputs: int, body: str) -> str:
    """A 1-D f32 `linalg.generic` over `inputs` tensors whose body is `body` (yields %r)."""
    t = f"tensor<{N}xf32>"
    args = ", ".join(f"%a{i}: {t}" for i in range(inputs))
    ins = ", ".join(f"%a{i}" for i in range(inputs))
    bbargs = ", ".join(f"%in{i}: f32" for i in range(inputs))
    maps = ", ".join([_MAP] * (inputs + 1))
    return f"""
func.func @{name}({args}) -> {t} {{
  %e = tensor.empty() : {t}
  %r = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel"]}}
      ins({ins} : {", ".join([t] * inputs)}) outs(%e : {t}) {{
  ^bb0({bbargs}, %out: f32):
{body}
    linalg.yield %r : f32
  }} -> {t}
  return %r : {t}
}}"""


DIV_SQRT = _elementwise("f", 2, "    %s = math.sqrt %in1 : f32\n    %r = arith.divf %in0, %s : f32")
EXP_PRODUCT = _elementwise("f", 2, "    %x = math.exp %in0 : f32\n    %y = math.exp %in1 : f32\n"
                                   "    %r = arith.mulf %x, %y : f32")


SUM = sum_source("f", 100000)

LOOP_SUM = """
func.func @f(%x: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<?xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  return %r : f32
}"""


def _without_pass() -> dict[str, bool]:
    """compile_mlir options that keep the pass out, where its default pipeline runs it."""
    from accel.options import OPTIONS as DEFAULT_OPTIONS

    flag = "disable_unsafe_math_canonicalizations"
    return {flag: True} if flag in DEFAULT_OPTIONS else {}


def _transformed(src: str, pipeline: str) -> str:
    """`src` after `pipeline`, as text."""
    with make_context():
        module = ir.Module.parse(src)
        run_pipeline(module, pipeline)
        return str(module)


def _both(src: str) -> tuple[str, object, str, object]:
    """(IR with the pass, its compiled module, IR without, its compiled module)."""
    with make_context():
        original = str(ir.Module.parse(src))
    rewritten = _transformed(src, PASS)
    exact = compile_mlir(original, _without_pass())
    return rewritten, compile_mlir(rewritten, _without_pass()), original, exact


def _ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the f32 spacing at the float64 reference."""
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / spacing


def _div_constant_src(c: float) -> str:
    body = "    %r = arith.divf %in0, %c : f32"
    src = _elementwise("f", 1, body)
    return src.replace("  %e = tensor.empty()",
                       f"  %c = arith.constant {c:.17e} : f32\n  %e = tensor.empty()", 1)


# -- rewrites: IR changes with the pass, not without ----------------------------------------
@pytest.mark.parametrize("src, gone, present", [
    (DIV_SQRT, ["math.sqrt", "arith.divf"], ["math.rsqrt", "arith.mulf"]),
    (_div_constant_src(3.0), ["arith.divf"], ["arith.mulf", "0.333333343"]),
    (EXP_PRODUCT, ["arith.mulf"], ["arith.addf", "math.exp"]),
    (SUM, [], ["fastmath<reassoc,contract>"]),
    (LOOP_SUM, [], ["fastmath<reassoc,contract>"]),
], ids=["rsqrt", "reciprocal", "merge-exp", "generic-sum", "loop-sum"])
def test_pass_changes_ir_only_when_enabled(src, gone, present):
    with make_context():
        original = str(ir.Module.parse(src))
    rewritten = _transformed(src, PASS)
    assert rewritten != original
    for text in gone:
        assert text not in rewritten
    for text in present:
        assert text in rewritten
    assert _transformed(src, PASS_OFF) == original


def test_exp_product_merges_to_one_exp():
    rewritten = _transformed(EXP_PRODUCT, PASS)
    assert rewritten.count("math.exp") == 1


# -- numerics -------------------------------------------------------------------------------
def test_rsqrt_error_within_4_ulp():
    x = RNG.uniform(-100, 100, N).astype(np.float32)
    y = RNG.uniform(1e-3, 1e3, N).astype(np.float32)
    _, fast, _, exact = _both(DIV_SQRT)
    ref = x.astype(np.float64) / np.sqrt(y.astype(np.float64))
    fast_ulps = _ulps(fast.invoke("f", x, y), ref)
    exact_ulps = _ulps(exact.invoke("f", x, y), ref)
    assert fast_ulps.max() <= 4, fast_ulps.max()
    assert exact_ulps.max() <= 2, exact_ulps.max()


@pytest.mark.parametrize("c", [3.0, 7.0, 0.1, -1.7, 1e30, 4.0, 0.125])
def test_reciprocal_error_within_2_ulp(c):
    x = RNG.uniform(-1e3, 1e3, N).astype(np.float32)
    _, fast, _, exact = _both(_div_constant_src(c))
    ref = x.astype(np.float64) / np.float64(np.float32(c))
    got = fast.invoke("f", x)
    assert _ulps(got, ref).max() <= 2
    if np.log2(abs(c)) == int(np.log2(abs(c))):  # a power of two: bit for bit
        np.testing.assert_array_equal(got, exact.invoke("f", x))


def test_exp_merge_error_bounded_by_exponent_rounding():
    a = RNG.uniform(-5, 5, N).astype(np.float32)
    b = RNG.uniform(-5, 5, N).astype(np.float32)
    _, fast, _, exact = _both(EXP_PRODUCT)
    total = a.astype(np.float64) + b.astype(np.float64)
    ref = np.exp(total)
    # Rounding a + b costs |a + b| * U relative; each exp call may be 4 ulp (8 U) off (the
    # vectorised loop calls libmvec, docs/cpu-codegen.md): one exp for the merged form, two
    # and a product (17 U) for the exact one.
    bound = (np.abs(total) + 17) * U
    fast_rel = np.abs(fast.invoke("f", a, b) - ref) / ref
    exact_rel = np.abs(exact.invoke("f", a, b) - ref) / ref
    assert (fast_rel <= bound).all(), (fast_rel / bound).max()
    assert (exact_rel <= bound).all()


def test_exp_merge_avoids_overflow_of_factors():
    # In f32 exp(200) is inf and exp(-200) is 0, so their product is nan; exp(0) is 1.
    a = np.full(N, 200, np.float32)
    _, fast, _, exact = _both(EXP_PRODUCT)
    assert np.isnan(exact.invoke("f", a, -a)).all()
    np.testing.assert_array_equal(fast.invoke("f", a, -a), np.ones(N, np.float32))


@pytest.mark.parametrize("src", [SUM, LOOP_SUM], ids=["generic", "scf-for"])
def test_reassociated_sum_within_1e_5(src):
    x = RNG.uniform(0, 1, 100_000).astype(np.float32)
    rewritten, fast, _, exact = _both(src)
    ref = x.astype(np.float64).sum()
    got = float(np.asarray(fast.invoke("f", x)))
    assert abs(got - ref) <= 1e-5 * ref
    assert abs(float(np.asarray(exact.invoke("f", x))) - ref) <= 1e-5 * ref
    # The flags reach LLVM IR, where they let the loop vectoriser reorder the sum.
    assert "fadd reassoc contract float" in fast.llvm_ir
    assert "reassoc" not in exact.llvm_ir


# -- through PyTorch ----------------------------------------------------------------------
#: Elementwise fusion first: torch-mlir puts the sqrt (or each exp) and the divf (or mulf) in
#: separate linalg.generics, and the pass matches ops within one body.
TORCH_PIPELINE = ("builtin.module(func.func(linalg-fuse-elementwise-ops),"
                  "accel-unsafe-math-canonicalize)")


def _torch_cases():
    torch = pytest.importorskip("torch")
    return {
        "div-sqrt": (lambda x, y: x / torch.sqrt(y), "math.rsqrt"),
        "div-constant": (lambda x, y: x / 3.0 + y, "0.333333343"),
        "exp-product": (lambda x, y: torch.exp(x) * torch.exp(y), None),
        "layernorm": (torch.nn.LayerNorm(64), "reassoc"),
        "softmax-sum": (lambda x, y: torch.softmax(x, -1).sum(-1), "reassoc"),
    }


@pytest.mark.parametrize("case", ["div-sqrt", "div-constant", "exp-product", "layernorm",
                                  "softmax-sum"])
def test_torch_programs_match_eager(case):
    torch = pytest.importorskip("torch")
    import accel

    fn, marker = _torch_cases()[case]
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(32, 64, generator=gen)
    y = torch.rand(32, 64, generator=gen) * 4 + 0.1
    inputs = (x,) if isinstance(fn, torch.nn.Module) else (x, y)
    module = accel.import_torch(fn, inputs)
    with module.context:
        before = str(module)
        run_pipeline(module, TORCH_PIPELINE)
        after = str(module)
    assert after != before
    if marker is not None:
        assert marker.lower() in after.lower()
    if case == "exp-product":
        assert after.count("math.exp") == 1
    if case in ("div-sqrt", "div-constant"):
        assert "arith.divf" not in after
    got = compile_mlir(module, _without_pass()).invoke("main", *(t.numpy() for t in inputs))
    expected = fn(*inputs).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_named_matmul_accumulation_is_reassociated() -> None:
    """linalg.matmul's implicit body accumulates too: its addf gets the reduction flags (a
    batch-1 nn.Linear's dot products then vectorise), and the result stays within 1e-5."""
    src = matmul_source("mv", 1, 256, 64, zero="%zero", init="%acc")

    with make_context():
        module = ir.Module.parse(src)
        run_pipeline(module, "builtin.module(accel-unsafe-math-canonicalize)")
        generic = module.operation.get_asm(print_generic_op_form=True)
    assert "fastmath = #arith.fastmath<reassoc,contract>" in generic
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 256)).astype(np.float32)
    w = rng.standard_normal((256, 64)).astype(np.float32)
    got = compile_mlir(src, {"cache": False}).invoke("mv", x, w)
    np.testing.assert_allclose(got, x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)
