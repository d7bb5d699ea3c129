"""nvgpu's hand-written shared-memory kernels: flash attention (accel-nvgpu-flash-attention:
one kernel, no S x S buffer) and the tiled SGEMM (accel-nvgpu-register-tile-matmul). Their
barriers and shared-memory tiles run on the host (cooperative emulation) against eager;
ptxas accepts them."""

from __future__ import annotations

import math
import re

import accel
import numpy as np
import pytest
import torch
from accel.frontend.torch_import import import_program
from accel.settings import merge as resolve
from accel.targets import get as get_target
from accel.targets.nvgpu import toolkit
from accel.targets.nvgpu.compile import verify_ptx
from accel.targets.nvgpu.emulate import emulate_kernels

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="no ptxas")
needs_gpu = pytest.mark.skipif(toolkit.present_arch() is None, reason="no CUDA GPU")
CROSS = {"target": "nvgpu", "device": "sm_90", "cache": False}


class Sdpa(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


class Naive(torch.nn.Module):
    """softmax(q k^T / 8) v: a scale op on the scores, d = 24, dv = 24."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-1, -2) / 8.0, -1) @ v


class Causal(torch.nn.Module):
    """SDPA's causal mask: a score op adding a -inf/0 tensor, read per score."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


class Masked(torch.nn.Module):
    """An additive mask broadcast over heads ([B, 1, S, S]) and a fully masked row (row 0
    of batch 1: -inf everywhere): eager's naive softmax gives NaN there."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-1, -2) * 0.25 + mask, -1) @ v


class SdpaMask(torch.nn.Module):
    """SDPA with a boolean mask; one row fully masked: SDPA's guard gives 0 there."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class Softcap(torch.nn.Module):
    """tanh on the scores (a body the kernel does not re-state): the kernel-per-op path."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.tanh(q @ k.transpose(-1, -2)), -1) @ v


def _case(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    g = torch.Generator().manual_seed(0)
    shapes = {  # rows and keys not multiples of the 64-row blocks or 32-key tiles
        "sdpa-f32": (Sdpa(), (2, 2, 80, 16), torch.float32),
        "sdpa-f16": (Sdpa(), (1, 2, 80, 16), torch.float16),
        "naive": (Naive(), (2, 70, 24), torch.float32),
        "causal": (Causal(), (1, 2, 40, 8), torch.float32),
        "masked": (Masked(), (2, 2, 40, 8), torch.float32),
        # f16 of tensor-core sizes (64-row blocks, 32-key tiles, d % 16): the WMMA kernel
        "sdpa-f16-wmma": (Sdpa(), (1, 2, 128, 64), torch.float16),
        "causal-f16-wmma": (Causal(), (2, 2, 64, 32), torch.float16),
        # d = 256: the WMMA kernel's O tile would pass 48 KiB of shared memory; the FMA
        # kernel shrinks its key tiles to fit
        "sdpa-f16-d256": (Sdpa(), (1, 1, 64, 256), torch.float16),
        "softcap": (Softcap(), (2, 40, 8), torch.float32),
        "boolmask": (SdpaMask(), (1, 2, 40, 8), torch.float32),
        "boolmask-f16-wmma": (SdpaMask(), (1, 2, 64, 32), torch.float16),
    }
    model, shape, dtype = shapes[name]
    inputs = tuple(torch.randn(*shape, generator=g).to(dtype) for _ in range(3))
    if name == "masked":
        mask = torch.where(torch.rand(2, 1, 40, 40, generator=g) < 0.3, -math.inf, 0.0)
        mask[1, 0, 0, :] = -math.inf
        inputs = (*inputs, mask)
    if name.startswith("boolmask"):
        keys = shape[2]
        keep = torch.rand(1, 1, keys, keys, generator=g) < 0.7
        keep[0, 0, 3, :] = False
        inputs = (*inputs, keep)
    return model, inputs


def _compiled(name: str, **options):  # noqa: ANN202, ANN003 - test helper
    model, inputs = _case(name)
    program = import_program(model, inputs, func_name="main")
    text = program.module.operation.get_asm()
    opts = resolve({**CROSS, **options})
    return text, opts, get_target("nvgpu").compile(text, opts)


def _score_elements(inputs: tuple[torch.Tensor, ...]) -> int:
    q, k = inputs[0], inputs[1]
    return math.prod(q.shape[:-1]) * k.shape[-2]


@needs_ptxas
@pytest.mark.parametrize("name", ["sdpa-f32", "sdpa-f16", "naive", "causal", "masked",
                                  "sdpa-f16-wmma", "causal-f16-wmma", "sdpa-f16-d256",
                                  "boolmask", "boolmask-f16-wmma"])
def test_one_kernel_no_score_buffer(name: str) -> None:
    """One kernel with barriers does the attention; no buffer as large as the scores."""
    _, inputs = _case(name)
    _, _, exe = _compiled(name)
    assert exe.host is None, exe.host_reason
    flash = [k for k in exe.kernels.values() if "bar.sync" in k.ptx]
    assert len(flash) == 1
    assert ".shared .align 128" in flash[0].ptx  # vectorised shared accesses stay aligned
    # f16 models of tensor-core sizes: S = Q K^T and O += P V on WMMA; others FMA units
    assert ("wmma.mma.sync" in flash[0].ptx) == name.endswith("-wmma")
    shared = sum(int(x) for x in re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]",
                                            flash[0].ptx))
    assert 0 < shared <= 48 * 1024  # static shared memory of one block
    made = [b.nbytes for b in exe.programs["main"].buffers if b.kind != "arg"]
    # O(S*d): no buffer as large as the f32 scores (B*H*S*S; a causal mask the model
    # builds is S*S), or, where d > S, than an f32 copy of an input
    assert max(made) < 4 * max(_score_elements(inputs), max(x.numel() for x in inputs) + 1)
    verify_ptx(exe)


def test_disable_tensor_core_keeps_flash_on_the_fma_units() -> None:
    _, _, exe = _compiled("sdpa-f16-wmma", disable_tensor_core=True)
    flash = [k for k in exe.kernels.values() if "bar.sync" in k.ptx]
    assert len(flash) == 1 and "mma" not in flash[0].ptx


def test_option_off_and_other_score_ops_keep_the_score_matrix() -> None:
    for name, options in (("naive", {"disable_reduce_reduce_fusion": True}), ("softcap", {})):
        _, inputs = _case(name)
        _, _, exe = _compiled(name, **options)
        assert not any("bar.sync" in k.ptx for k in exe.kernels.values())
        assert max(b.nbytes for b in exe.programs["main"].buffers) >= \
            _score_elements(inputs) * 4


@pytest.mark.parametrize("name", ["sdpa-f32", "sdpa-f16", "naive", "causal", "masked",
                                  "sdpa-f16-wmma", "causal-f16-wmma", "boolmask",
                                  "boolmask-f16-wmma"])
def test_flash_kernel_matches_eager_on_host(name: str) -> None:
    """The kernel itself (its blocks' threads concurrently, barriers, shared tiles) on the
    host against eager: f32 within 1e-5, f16 within its rounding; masks read per score,
    broadcast over heads; a fully masked row NaN as eager's."""
    model, inputs = _case(name)
    text, opts, _ = _compiled(name)
    run = emulate_kernels(text, opts)["main"]
    got = run(*(x.numpy() for x in inputs))
    want = model(*inputs)
    tol = 2e-3 if inputs[0].dtype == torch.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.double().numpy(), rtol=tol,
                               atol=tol, equal_nan=True)
    if name == "masked":
        assert np.isnan(got[1, :, 0]).all() and not np.isnan(got[0]).any()
    if name.startswith("boolmask"):  # SDPA's guard: a fully masked row is 0, as eager
        assert (got[0, :, 3] == 0).all() and not np.isnan(got).any()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_flash_attention_on_gpu(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(1)
    inputs = tuple(torch.randn(2, 4, 512, 64, generator=g).to(dtype) for _ in range(3))
    fn = accel.compile(Sdpa(), inputs, options={"target": "nvgpu", "cache": False})
    tol = 2e-3 if dtype == torch.float16 else 1e-4
    torch.testing.assert_close(torch.as_tensor(fn(*inputs)), Sdpa()(*inputs), rtol=tol,
                               atol=tol)


class Matmul(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


#: (A shape, B shape, block tile): 128 x 128 x 8 tiles (2 blocks, 3 k-slices) and a batch
#: of 64 x 64 x 16 tiles.
SGEMM = {"128x24x256": ((128, 24), (24, 256), 128), "2x64x32x64": ((2, 64, 32), (2, 32, 64), 64)}


@pytest.mark.parametrize("name", list(SGEMM))
def test_sgemm_shared_tiles_match_eager_on_host(name: str) -> None:
    a_shape, b_shape, tile = SGEMM[name]
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(*a_shape, generator=g), torch.randn(*b_shape, generator=g)
    text = import_program(Matmul(), (a, b), func_name="main").module.operation.get_asm()
    opts = resolve(CROSS)
    exe = get_target("nvgpu").compile(text, opts)
    ptx = [k.ptx for k in exe.kernels.values() if "bar.sync" in k.ptx]
    assert len(ptx) == 1
    # 8 x 8 (4 x 4) sums per thread, fed by 16-byte shared loads
    assert ptx[0].count("fma.rn.f32") >= (64 if tile == 128 else 16)
    assert "ld.shared.v4.f32" in ptx[0] or "ld.shared.v4.b32" in ptx[0]
    if toolkit.ptxas_path() is not None:
        verify_ptx(exe)
    got = emulate_kernels(text, opts)["main"](a.numpy(), b.numpy())
    np.testing.assert_allclose(got, (a @ b).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@needs_gpu
def test_sgemm_on_gpu() -> None:
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(512, 384, generator=g), torch.randn(384, 256, generator=g)
    fn = accel.compile(Matmul(), (a, b), options={"target": "nvgpu", "cache": False})
    torch.testing.assert_close(torch.as_tensor(fn(a, b)), a @ b, rtol=1e-4, atol=1e-4)


#: Blocked WMMA (64 x 64 x 32 tiles, 4 warps, shared slices): f16 into f16 (f32 sums, one
#: rounding), batched f16 into f32, and tf32.
WMMA_BLOCKED = {
    "f16": ((64, 96), (96, 128), torch.float16, "default"),
    "bmm-f16-f32": ((2, 64, 32), (2, 32, 64), torch.float16, "mixed_fp16_fp32"),
    "tf32": ((128, 64), (64, 64), torch.float32, "tf32"),
}


@pytest.mark.parametrize("name", list(WMMA_BLOCKED))
def test_blocked_wmma_matches_eager_on_host(name: str) -> None:
    a_shape, b_shape, dtype, mode = WMMA_BLOCKED[name]
    g = torch.Generator().manual_seed(4)
    a = torch.randn(*a_shape, generator=g).to(dtype)
    b = torch.randn(*b_shape, generator=g).to(dtype)
    text = import_program(Matmul(), (a, b), func_name="main").module.operation.get_asm()
    opts = resolve({**CROSS, "mm_conv_precision_mode": mode})
    exe = get_target("nvgpu").compile(text, opts)
    ptx = [k.ptx for k in exe.kernels.values() if "wmma.mma" in k.ptx]
    assert len(ptx) == 1 and "bar.sync" in ptx[0]
    assert ".shared .align 128" in ptx[0]  # WMMA pointers: 32-byte aligned
    assert re.search(r"wmma\.load\.a\.sync\.aligned\.row\.m16n16k\d+\.shared", ptx[0])
    if toolkit.ptxas_path() is not None:
        verify_ptx(exe)
    got = emulate_kernels(text, opts)["main"](a.numpy(), b.numpy())
    q = (lambda t: t.double()) if mode != "tf32" else \
        (lambda t: torch.from_numpy(_tf32(t.numpy())).double())
    want = (q(a) @ q(b)).numpy()
    tol = 2e-3 if dtype == torch.float16 else 1e-4
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=tol, atol=tol)


def _tf32(x: np.ndarray) -> np.ndarray:
    b = x.view(np.uint32).astype(np.uint64)
    finite = (b & 0x7F800000) != 0x7F800000
    return np.where(finite, (b + 0x1000) & 0xFFFFE000, b).astype(np.uint32).view(np.float32)


# -- a real model: HF GPT-2 (2 layers), every kernel through ptxas and run on the host -------
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_hf_gpt2_kernels_match_eager_on_host(dtype: str) -> None:
    """Every matmul stays named through elementwise fusion (outlined around it) and takes
    its kernel, attention is one kernel per layer, and the whole kernel sequence run on the
    host matches eager. f32 (eager attention, its mask added per score): register tiles and
    the FMA flash kernel. f16 (SDPA attention, 64 tokens): the Conv1D matmuls on WMMA
    (torch's f32 upcast copies folded away) and the WMMA flash kernel."""
    from training_models import tiny_gpt2

    half = dtype == "f16"
    model = tiny_gpt2(width=64, positions=64).eval() if half else tiny_gpt2().eval()
    model.config.use_cache = False
    if half:
        model = model.half()
        model.config._attn_implementation = "sdpa"
    ids = torch.randint(0, 64, (2, 64 if half else 16), generator=torch.Generator().manual_seed(5))
    program = import_program(model, (ids,), func_name="main")
    text, weights = program.module.operation.get_asm(), dict(program.weights)
    opts = resolve(CROSS)
    exe = get_target("nvgpu").compile(text, opts, weights=weights)
    assert exe.host is None, exe.host_reason
    ptx = [k.ptx for k in exe.kernels.values()]
    flash = [p for p in ptx if "bar.sync" in p and "ex2.approx" in p]
    assert len(flash) == 2  # one per layer
    if half:  # 9 Conv1D matmuls (QKV, proj, MLP in and out per layer, LM head) + 2 flash
        assert sum("wmma.mma" in p for p in ptx) == 11
        assert all("wmma.mma" in p for p in flash)
    else:  # 4x4 register tiles (>= 16 FMAs) for the 9 matmuls
        assert sum(p.count("fma.rn.f32") >= 16 for p in ptx) >= 9
        assert not any("wmma" in p for p in flash)
    if toolkit.ptxas_path() is not None:
        verify_ptx(exe)
    got = emulate_kernels(text, opts, weights=weights)["main"](ids.numpy())
    logits = np.asarray(got[0] if isinstance(got, tuple) else got).astype(np.float64)
    want = model(ids).logits.detach().double().numpy()
    tol = 2e-3 if half else 1e-5
    np.testing.assert_allclose(logits, want, rtol=tol, atol=tol)
