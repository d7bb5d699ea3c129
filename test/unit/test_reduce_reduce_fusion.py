"""`accel-reduce-reduce-fusion`: fused attention against eager PyTorch.

Each case imports a PyTorch attention with `accel.import_torch`, runs the pass (checking
that it fired, by the batched matmuls it removed), compiles with `compile_mlir` and compares
with eager at rtol=1e-4. Block sizes are small and S is chosen so that both the looped full
blocks and the peeled remainder tiles run. Masked variants cover additive masks, causal
`masked_fill`/`where`, SDPA's `is_causal`/`attn_mask`, and rows masked entirely (NaN in
naive softmax, 0 in SDPA, as in eager).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import accel
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from accel.passes import OptionError, lookup_pass
from accel.pipeline import run_pipeline

RTOL, ATOL = 1e-4, 1e-5
PASS = "accel-reduce-reduce-fusion"


def _fuse_and_compile(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...], *,
                      block: int = 16, query_block: int = 8, options: str = ""
                      ) -> tuple[Any, int]:
    """(compiled module, number of attentions fused)."""
    module = accel.import_torch(fn, inputs)
    before = _function_level_matmuls(module)
    with module.context:
        run_pipeline(module, f"builtin.module({PASS}{{block-size={block} "
                             f"query-block-size={query_block} {options}}})")
    after = _function_level_matmuls(module)
    compiled = accel.compile_mlir(module, {"cache": False, "opt_level": 1,
                                           "disable_reduce_reduce_fusion": True})
    return compiled, (before - after) // 2


def _function_level_matmuls(module: Any) -> int:
    """Matmuls directly in a function body: the fused nest's tile products (inside its
    loops, or in its parallel body function's loops) are not counted."""
    from accel.passes.base import ops_named

    return sum(op.parent.name == "func.func" and "accel_attention" not in
               str(op.parent.attributes["sym_name"])
               for op in ops_named(module.operation, ("linalg.matmul", "linalg.batch_matmul")))


def _check(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...], *, fused: int = 1,
           **blocks: int) -> None:
    compiled, count = _fuse_and_compile(fn, inputs, **blocks)
    assert count == fused
    got = torch.from_numpy(np.asarray(compiled.invoke("main", *[x.numpy() for x in inputs])))
    with torch.no_grad():
        expected = fn(*inputs)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True)


def _qkv(*shape: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*shape, generator=g) for _ in range(3))
    return q, k, v


# --- the attention forms ---------------------------------------------------------------


def naive(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


def naive_additive_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        mask: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.transpose(-2, -1) * 0.125 + mask, dim=-1) @ v


def naive_causal_masked_fill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    s = q.shape[-2]
    future = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    scores = (q @ k.transpose(-2, -1) * 0.125).masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def naive_causal_where_tril(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    s = q.shape[-2]
    keep = torch.tril(torch.ones(s, s)) > 0
    scores = torch.where(keep, q @ k.transpose(-2, -1), torch.tensor(float("-inf")))
    return torch.softmax(scores, dim=-1) @ v


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v)


def sdpa_causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def sdpa_float_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    mask: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


# S = 8 (one block each way), 37 and 69 (full blocks plus remainders).
# 1 x 1 and 3 x 1: torch-mlir merges the unit heads dim into the rows, not into the batch.
SHAPES = [(2, 8, 4), (1, 3, 37, 8), (2, 2, 69, 16), (1, 1, 37, 8), (3, 1, 21, 8)]
UNMASKED = [naive, naive_causal_masked_fill, naive_causal_where_tril, sdpa, sdpa_causal]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", UNMASKED, ids=lambda f: f.__name__)
def test_attention_matches_eager(fn: Callable[..., torch.Tensor], shape: tuple[int, ...]) -> None:
    _check(fn, _qkv(*shape))


@pytest.mark.parametrize("fn", [naive_additive_mask, sdpa_float_mask], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mask_shape", [(37, 37), (3, 37, 37), (1, 1, 37)],
                         ids=["SxS", "per-head", "key-padding"])
def test_additive_masks(fn: Callable[..., torch.Tensor], mask_shape: tuple[int, ...]) -> None:
    q, k, v = _qkv(2, 3, 37, 8, seed=1)
    mask = torch.randn(*mask_shape, generator=torch.Generator().manual_seed(2))
    _check(fn, (q, k, v, mask))


def test_two_dimensional_attention() -> None:
    _check(naive, _qkv(45, 8))


def test_fully_masked_rows_match_eager() -> None:
    """Rows whose mask is -inf everywhere: NaN for naive softmax, 0 for SDPA (as eager)."""
    q, k, v = _qkv(1, 2, 20, 8, seed=3)
    mask = torch.zeros(20, 20)
    mask[3] = float("-inf")
    mask[17] = float("-inf")
    with torch.no_grad():
        assert torch.isnan(naive_additive_mask(q, k, v, mask)[0, 0, 3]).all()
    _check(naive_additive_mask, (q, k, v, mask))
    _check(sdpa_float_mask, (q, k, v, mask))


def test_default_block_sizes() -> None:
    _check(sdpa_causal, _qkv(1, 2, 200, 16), block=64, query_block=64)


# --- what must not fuse ----------------------------------------------------------------


def test_probabilities_used_elsewhere_are_left_alone() -> None:
    def returns_probs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Any:
        p = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return p @ v, p

    q, k, v = _qkv(2, 8, 4)
    _, count = _fuse_and_compile(returns_probs, (q, k, v))
    assert count == 0


def test_softmax_over_queries_is_left_alone() -> None:
    def wrong_axis(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-2, -1), dim=-2) @ v

    _, count = _fuse_and_compile(wrong_axis, _qkv(2, 8, 4))
    assert count == 0


def test_bad_block_size_is_an_option_error() -> None:
    cls = lookup_pass(PASS)
    assert cls is not None
    with pytest.raises(OptionError, match="block-size"):
        from accel.passes.base import instantiate

        instantiate(cls, "block-size=0")


# --- the model zoo with fusion on -------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_model_zoo_transformers(name: str) -> None:
    from test_model_zoo import BertHidden, GPT2Logits, _input_ids, _tiny_bert, _tiny_gpt2

    if name == "gpt2":
        model: torch.nn.Module = GPT2Logits(_tiny_gpt2(), explicit_mask=True).eval()
    else:
        model = BertHidden(_tiny_bert()).eval()
    compiled, count = _fuse_and_compile(model, (_input_ids(0),), block=5, query_block=6)
    assert count == 2  # one attention per layer
    ids = _input_ids(1)
    got = torch.from_numpy(np.asarray(compiled.invoke("main", ids.numpy())))
    with torch.no_grad():
        expected = model(ids)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)


# --- batch x heads across threads (accel_parallel_for) ----------------------------------
@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("fn,shape,mask_shape", [
    (sdpa_causal, (2, 3, 37, 8), None),
    (naive, (5, 69, 16), None),
    (naive_additive_mask, (2, 3, 37, 8), (3, 37, 37)),
    (sdpa_float_mask, (1, 2, 20, 8), (20, 20)),
], ids=["sdpa_causal", "naive-3d", "additive-per-head", "sdpa-mask"])
def test_parallel_batch_items_match_eager(monkeypatch, threads, fn, shape, mask_shape, count):
    threads(count)
    inputs = _qkv(*shape, seed=4)
    if mask_shape is not None:
        mask = torch.randn(*mask_shape, generator=torch.Generator().manual_seed(5))
        if fn is sdpa_float_mask:
            mask[3] = float("-inf")  # a fully masked row: 0, as eager
        inputs = (*inputs, mask)
    module = accel.import_torch(fn, inputs)
    with module.context:
        run_pipeline(module, f"builtin.module({PASS}{{block-size=16 query-block-size=8 "
                             "parallel-min-macs=0})")
    assert str(module).count("call @accel_parallel_for") == 1
    compiled = accel.compile_mlir(module, {"cache": False, "opt_level": 1,
                                           "disable_reduce_reduce_fusion": True})
    got = torch.from_numpy(np.asarray(compiled.invoke("main", *[x.numpy() for x in inputs])))
    with torch.no_grad():
        expected = fn(*inputs)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True)


def test_parallel_only_above_threshold() -> None:
    def fused_text(shape: tuple[int, ...], options: str = "") -> str:
        module = accel.import_torch(sdpa, _qkv(*shape))
        with module.context:
            run_pipeline(module, f"builtin.module({PASS}{{{options}}})")
        return str(module)

    assert "accel_parallel_for" in fused_text((1, 8, 128, 64))  # 2^23 multiply-adds
    assert "accel_parallel_for" not in fused_text((1, 2, 64, 32))  # tiny GPT-2 size
    assert "accel_parallel_for" not in fused_text((1, 8, 128, 64), "parallel=false")
    assert "accel_parallel_for" not in fused_text((128, 64), "parallel-min-macs=0")  # 2-D


def test_two_parallel_attentions_in_one_module() -> None:
    """Each gets its own entry/body functions; accel_parallel_for is declared once."""
    def two(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return sdpa(sdpa(q, k, v), k, v * 2) + naive(q, k, v)

    inputs = _qkv(2, 2, 24, 8, seed=6)
    compiled, count = _fuse_and_compile(two, inputs, options="parallel-min-macs=0")
    assert count == 3
    got = torch.from_numpy(np.asarray(compiled.invoke("main", *[x.numpy() for x in inputs])))
    torch.testing.assert_close(got, two(*inputs), rtol=RTOL, atol=ATOL)


# --- tile products on the GEMM kernels ---------------------------------------------------------
@pytest.mark.parametrize("fn,shape", [
    (sdpa, (2, 2, 160, 64)),  # full 128-blocks and 32-row/-key remainders
    (sdpa_causal, (1, 2, 128, 64)),
    (naive, (1, 2, 192, 80)),  # d = 80: the Q @ K^T tile has K = 80
], ids=["sdpa", "causal", "d80"])
def test_large_tiles_use_the_gemm_kernel(fn: Callable[..., torch.Tensor],
                                         shape: tuple[int, ...]) -> None:
    """With the default 128 x 128 blocks, the tiles' Q @ K^T and P @ V (remainders of at
    least 16 in each dimension too) are linalg.matmuls that accel-matmul-microkernel turns
    into calls of unpacked kernels (their operands sit in cache)."""
    from accel import phases

    inputs = _qkv(*shape, seed=7)
    with phases.recording(keep_ir=True) as rec:
        compiled = accel.compile(fn, inputs, options={"cache": False})
    fused = str(next(p.ir for p in rec.phases if p.name == "fuse"))
    bufferized = str(next(p.ir for p in rec.phases if p.name == "bufferize"))
    assert "linalg.batch_matmul" not in fused and "linalg.matmul" in fused
    assert "linalg.matmul" not in bufferized and "call @accel_gemm_128x" in bufferized
    assert "_d(" in bufferized or "_dc(" in bufferized
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), fn(*inputs), rtol=RTOL, atol=ATOL)


def test_exp_nonpositive_is_within_one_ulp() -> None:
    """The fused attention's exp(s - m) is an inline polynomial (`exp_nonpositive`), not a
    libm/libmvec call: over [-88, 0] it is within 1 ulp of exp (float64 truth), exact at
    0, and gives 0 below the normal range and for -inf, NaN for NaN."""
    from accel.passes._attention_template import exp_nonpositive

    n = 1 << 18
    body = "\n".join("    " + line for line in exp_nonpositive("%a"))
    source = f"""
func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %e = tensor.empty() : tensor<{n}xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                        iterator_types = ["parallel"]}}
      ins(%x : tensor<{n}xf32>) outs(%e : tensor<{n}xf32>) {{
  ^bb0(%a: f32, %o: f32):
{body}
    linalg.yield %xe_res : f32
  }} -> tensor<{n}xf32>
  return %r : tensor<{n}xf32>
}}"""
    compiled = accel.compile_mlir(source, {"cache": False})
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.uniform(0, 88, n // 2),
                        -rng.exponential(1.0, n // 2)]).astype(np.float32)
    special = [0.0, -0.0, -1e-30, -87.33, -87.34, -200.0, -np.inf, np.nan]
    x[:len(special)] = special
    got = np.asarray(compiled["main"](x)).astype(np.float64)
    truth = np.exp(x.astype(np.float64))
    normal = ~np.isnan(x) & (truth >= np.finfo(np.float32).tiny)
    ulps = np.abs(got[normal] - truth[normal]) / \
        np.spacing(truth[normal].astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 1.0, ulps.max()
    assert got[0] == 1.0 and got[1] == 1.0 and got[2] == 1.0
    assert got[5] == 0.0 and got[6] == 0.0 and np.isnan(got[7])
    assert np.all(np.abs(got[~normal & ~np.isnan(x)] - truth[~normal & ~np.isnan(x)]) < 1.2e-38)
