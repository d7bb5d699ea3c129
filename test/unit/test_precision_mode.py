"""mm_conv_precision_mode: matmul/conv arithmetic at the mode's precision, on every target
that takes it (cpu, nvgpu through host emulation and PTX, rdu's emulation), against float64
references computed from the mode's rounded operands."""

from __future__ import annotations

import accel
import numpy as np
import pytest
import torch
from accel.diagnostics import AccelError
from accel.settings import merge as resolve
from accel.targets import get as get_target
from accel.targets.nvgpu import toolkit
from accel.targets.nvgpu.compile import verify_ptx

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="no ptxas")
needs_gpu = pytest.mark.skipif(toolkit.present_arch() is None, reason="no CUDA GPU")
CROSS = {"target": "nvgpu", "device": "sm_90", "cache": False}


class MatmulConv(torch.nn.Module):
    """A matmul (K = 64), a batched matmul and a strided convolution, all f32."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w = torch.nn.Parameter(torch.randn(64, 48, generator=g))
        self.conv = torch.nn.Conv2d(3, 16, 3, stride=2, bias=False)
        with torch.no_grad():
            self.conv.weight.copy_(torch.randn(16, 3, 3, 3, generator=g))

    def forward(self, x: torch.Tensor, y: torch.Tensor, img: torch.Tensor
                ) -> tuple[torch.Tensor, ...]:
        return x @ self.w, torch.bmm(y, y.transpose(1, 2)), self.conv(img)


def _inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(1)
    return (torch.randn(32, 64, generator=g), torch.randn(2, 16, 32, generator=g),
            torch.randn(1, 3, 9, 9, generator=g))


def round_tf32(x: torch.Tensor) -> torch.Tensor:
    """f32 -> TensorFloat-32 (10 mantissa bits), to nearest, ties away (cvt.rna.tf32.f32)."""
    b = x.float().numpy().view(np.uint32).astype(np.uint64)
    finite = (b & 0x7F800000) != 0x7F800000
    r = np.where(finite, (b + 0x1000) & 0xFFFFE000, b).astype(np.uint32)
    return torch.from_numpy(r.view(np.float32))


#: How each float mode rounds the operands (the sums are checked separately).
ROUND = {
    "fp32": lambda t: t.float(),
    "tf32": round_tf32,
    "mixed_fp16_fp32": lambda t: t.half(),
    "mixed_bf16_fp32": lambda t: t.bfloat16(),
    "fp16": lambda t: t.half(),
    "bf16": lambda t: t.bfloat16(),
}
#: Unit roundoff of each mode's sums.
SUM_EPS = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}


def reference(model: MatmulConv, inputs: tuple[torch.Tensor, ...], mode: str
              ) -> list[torch.Tensor]:
    """float64 results of the mode's rounded operands (exact sums)."""
    q = ROUND[mode]

    def r(t: torch.Tensor) -> torch.Tensor:
        return q(t.detach()).double()

    x, y, img = inputs
    return [r(x) @ r(model.w), r(y) @ r(y).transpose(1, 2),
            torch.nn.functional.conv2d(r(img), r(model.conv.weight), stride=2)]


def _bounds(model: MatmulConv, inputs: tuple[torch.Tensor, ...], mode: str
            ) -> list[torch.Tensor]:
    """Per element, sum |a||b| of each result (the scale of its rounding errors)."""
    x, y, img = (t.abs().double() for t in inputs)
    return [x @ model.w.detach().abs().double(), y @ y.transpose(1, 2),
            torch.nn.functional.conv2d(img, model.conv.weight.detach().abs().double(),
                                       stride=2)]


def check_mode(got: tuple, model: MatmulConv, inputs: tuple[torch.Tensor, ...],
               mode: str) -> None:
    """`got` has the mode's operand rounding (not f32's) and sums of its precision."""
    want = reference(model, inputs, mode)
    plain = reference(model, inputs, "fp32")
    for g, w, p, scale in zip(got, want, plain, _bounds(model, inputs, mode), strict=True):
        g = torch.as_tensor(np.asarray(g)).double()
        assert g.shape == w.shape
        err = (g - w).abs()
        if mode in SUM_EPS:  # low-precision sums: within K * eps of the exact sum of |ab|
            assert (err <= 64 * SUM_EPS[mode] * scale + 1e-6).all(), float(err.max())
            assert err.max() > 4 * 2.0 ** -24 * scale.max(), "sums were not rounded"
        else:  # f32 sums of exactly rounded operands
            assert (err <= 1e-5 * scale + 1e-6).all(), float(err.max())
        if mode != "fp32":  # and the rounding shows: f32 operands would be 10x+ further
            assert (p - w).abs().max() > 10 * err.max() or mode in SUM_EPS


@pytest.fixture(scope="module")
def model() -> MatmulConv:
    return MatmulConv().eval()


@pytest.mark.parametrize("mode", list(ROUND))
def test_cpu_float_modes(model, mode: str) -> None:
    inputs = _inputs()
    fn = accel.compile(model, inputs, options={"mm_conv_precision_mode": mode, "cache": False})
    got = fn(*inputs)
    assert all(g.dtype == torch.float32 for g in got)  # the model's dtypes outside
    check_mode(got, model, inputs, mode)


def test_cpu_o0_applies_the_mode_too(model) -> None:
    """The mode is semantics, not an optimisation: opt_level 0 rounds the same."""
    inputs = _inputs()
    fn = accel.compile(model, inputs, options={"mm_conv_precision_mode": "tf32",
                                               "preset": "o0", "cache": False})
    check_mode(fn(*inputs), model, inputs, "tf32")


class IntMatmul(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


@pytest.mark.parametrize("mode", ["int32", "mixed_int8_int32"])
def test_cpu_integer_modes_wrap_like_torch(mode: str) -> None:
    """int8 operands wrap as torch's .to(torch.int8); int32 sums wrap modulo 2**32."""
    g = torch.Generator().manual_seed(2)
    big = 300 if mode == "mixed_int8_int32" else 1 << 20
    a = torch.randint(-big, big, (16, 32), generator=g)
    b = torch.randint(-big, big, (32, 16), generator=g)
    fn = accel.compile(IntMatmul(), (a, b), options={"mm_conv_precision_mode": mode,
                                                     "cache": False})
    narrow = torch.int8 if mode == "mixed_int8_int32" else torch.int32
    exact = a.to(narrow).long() @ b.to(narrow).long()
    want = exact.to(torch.int32).long()  # the i32 sums' wrap-around
    got = fn(a, b)
    assert got.dtype == torch.int64
    assert torch.equal(got, want)
    assert not torch.equal(got, a @ b)  # the mode changed the result


@pytest.mark.parametrize(("mode", "kind"), [("int32", "integer"), ("mixed_int8_int32",
                                                                    "integer")])
def test_integer_mode_on_a_float_model_is_an_error(model, mode: str, kind: str) -> None:
    with pytest.raises(AccelError, match=rf"mm_conv_precision_mode={mode} is for {kind} "
                                         r"matmuls and convolutions; linalg\.\w+ computes "
                                         r"in f32"):
        accel.compile(model, _inputs(), options={"mm_conv_precision_mode": mode,
                                                 "cache": False})


def test_float_mode_on_an_integer_model_is_an_error() -> None:
    a = torch.ones(4, 4, dtype=torch.int64)
    with pytest.raises(AccelError, match=r"mm_conv_precision_mode=tf32 is for float matmuls"):
        accel.compile(IntMatmul(), (a, a), options={"mm_conv_precision_mode": "tf32",
                                                    "cache": False})


def test_rdu_emulation_takes_the_mode(model) -> None:
    inputs = _inputs()
    fn = accel.compile(model, inputs, options={"target": "rdu", "cache": False,
                                               "mm_conv_precision_mode": "mixed_bf16_fp32"})
    check_mode(fn(*inputs), model, inputs, "mixed_bf16_fp32")


# -- nvgpu ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def imported(model) -> tuple[str, dict[str, np.ndarray]]:
    from accel.frontend.torch_import import import_program

    program = import_program(model, _inputs(), func_name="main")
    return program.module.operation.get_asm(), dict(program.weights)


@pytest.mark.parametrize("mode", ["tf32", "mixed_fp16_fp32", "fp16", "mixed_bf16_fp32"])
def test_nvgpu_kernels_on_host_follow_the_mode(imported, model, mode: str) -> None:
    """The GPU kernel sequence (tensor cores off: WMMA has no host form) rounds as the
    mode says, as the tensor-core kernels do on a GPU."""
    from accel.targets.nvgpu.emulate import emulate_kernels

    text, weights = imported
    opts = resolve({**CROSS, "mm_conv_precision_mode": mode,
                                  "threads_per_block": 32})
    run = emulate_kernels(text, opts, weights=weights)["main"]
    check_mode(run(*(t.numpy() for t in _inputs())), model, _inputs(), mode)


#: The WMMA instruction each mode's 16-multiple matmuls must use.
WMMA = {
    "tf32": "wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32",
    "mixed_fp16_fp32": "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32",
    "fp16": "wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16",
}


@needs_ptxas
@pytest.mark.parametrize("mode", [*WMMA, "mixed_bf16_fp32", "fp32"])
def test_nvgpu_modes_pick_tensor_cores_ptxas_accepts(imported, mode: str) -> None:
    text, weights = imported
    exe = get_target("nvgpu").compile(text, resolve(
        {**CROSS, "mm_conv_precision_mode": mode}), weights=weights)
    assert exe.host is None, exe.host_reason
    ptx = "".join(k.ptx for k in exe.kernels.values())
    if mode in WMMA:
        assert WMMA[mode] in ptx
    else:  # bf16 has no WMMA type in this MLIR; fp32 stays on the FMA units
        assert "mma" not in ptx
    verify_ptx(exe)


def test_nvgpu_int8_wmma_kernel_on_host() -> None:
    """The s8 -> s32 WMMA kernel (blocked: shared slices, spread rows; tile loops on the
    host) wraps exactly like torch."""
    from accel.frontend.torch_import import import_program
    from accel.targets.nvgpu.emulate import emulate_kernels

    g = torch.Generator().manual_seed(3)
    a, b = torch.randint(-300, 300, (64, 96), generator=g), torch.randint(-300, 300, (96, 64),
                                                                          generator=g)
    program = import_program(IntMatmul(), (a, b), func_name="main")
    opts = resolve({**CROSS, "mm_conv_precision_mode": "mixed_int8_int32"})
    run = emulate_kernels(program.module.operation.get_asm(), opts)["main"]
    want = (a.to(torch.int8).long() @ b.to(torch.int8).long()).to(torch.int32).long()
    assert np.array_equal(run(a.numpy(), b.numpy()), want.numpy())


def test_wmma_emulation_refuses_what_it_cannot_mean() -> None:
    from accel.targets.nvgpu import emulate_wmma

    strided = ('%0 = gpu.subgroup_mma_load_matrix %arg0[%c0, %c0] {leadDimension = 32 : index}'
               ' : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">')
    with pytest.raises(AccelError, match=r"the tile must be rows of the memref's last"):
        emulate_wmma.translate(strided, 0)
    with pytest.raises(AccelError, match=r"no host form for %1 = gpu.subgroup_mma_elementwise"):
        emulate_wmma.translate('%1 = gpu.subgroup_mma_elementwise addf %0, %0 : (!gpu.'
                               'mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf16,'
                               ' "COp">', 1)
    with pytest.raises(AccelError, match=r"mixes warp-level WMMA ops with per-thread"):
        emulate_wmma.check_collective("k", [strided, "memref.store %x, %y[%c0] : memref<4xf32>"])


@needs_ptxas
def test_nvgpu_int8_tensor_cores(tmp_path) -> None:
    a = torch.randint(-300, 300, (64, 32))
    exe = accel.compile(IntMatmul(), (a, a.T.contiguous()), options={
        **CROSS, "mm_conv_precision_mode": "mixed_int8_int32"})
    ptx = "".join(k.ptx for k in exe.compiled.kernels.values())
    assert "wmma.mma.sync.aligned.row.row.m16n16k16.s32.s8.s8.s32" in ptx
    verify_ptx(exe.compiled)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("mode", ["tf32", "mixed_fp16_fp32", "fp16", "mixed_bf16_fp32"])
def test_nvgpu_modes_on_gpu(model, mode: str) -> None:
    inputs = _inputs()
    fn = accel.compile(model, inputs, options={"target": "nvgpu", "cache": False,
                                               "mm_conv_precision_mode": mode})
    check_mode(fn(*inputs), model, inputs, mode)
