"""The nvgpu target without a GPU: a model zoo compiled to PTX that ptxas accepts, launch
manifests, artifacts, options and clean errors. `-m gpu` tests need a GPU and skip without.
"""

from __future__ import annotations

import json

import accel
import accel.settings
import numpy as np
import pytest
import torch
from accel.diagnostics import AccelError
from accel.options import OptionError
from accel.targets import get as get_target
from accel.targets.nvgpu import toolkit
from accel.targets.nvgpu.compile import verify_ptx
from accel.targets.nvgpu.executable import GpuExecutable
from samples import mlp_class  # noqa: E402

CROSS = {"target": "nvgpu", "device": "sm_90", "cache": False}
needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None,
                                 reason="ptxas absent: pip install nvidia-cuda-nvcc")
needs_gpu = pytest.mark.skipif(toolkit.present_arch() is None,
                               reason="no NVIDIA GPU or driver on this machine")


MLP = mlp_class(16, 32, 8)


class CNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2).flatten(1)


class ConvHalf(torch.nn.Module):
    """An f16 conv of tensor-core sizes (F = 32, OH*OW = 64, C*KH*KW = 144) + ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 32, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class Block(torch.nn.Module):
    """A GPT-2-style block: LayerNorm, causal attention, GELU MLP, residuals."""

    def __init__(self, d: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


class Attention(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


class Fn(torch.nn.Module):
    def __init__(self, fn) -> None:  # noqa: ANN001 - any tensor function
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


def _zoo() -> dict[str, tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    torch.manual_seed(0)
    h = torch.float16
    return {
        "mlp": (MLP(), (torch.randn(4, 16),)),
        "cnn": (CNN(), (torch.randn(2, 3, 8, 8),)),
        "gpt2-block": (Block(), (torch.randn(2, 8, 32),)),
        "attention": (Attention(), tuple(torch.randn(1, 2, 16, 8) for _ in range(3))),
        "layernorm": (torch.nn.LayerNorm(24), (torch.randn(6, 24),)),
        "softmax": (Fn(lambda x: torch.softmax(x, -1)), (torch.randn(5, 40),)),
        "reductions": (Fn(lambda x: (x.sum(), x.mean(0), x.amax(1), x.argmax(1))),
                       (torch.randn(7, 9),)),
        "mlp-fp16": (MLP().to(h), (torch.randn(4, 16, dtype=h),)),
        "attention-fp16": (Attention(), tuple(torch.randn(1, 2, 16, 8, dtype=h)
                                              for _ in range(3))),
        "gelu-bf16": (Fn(torch.nn.functional.gelu), (torch.randn(64, dtype=torch.bfloat16),)),
        "matmul-fp16": (Fn(torch.matmul), (torch.randn(32, 64, dtype=h),
                                           torch.randn(64, 48, dtype=h))),
        # The first chunk is the input itself, viewed: a result that is a buffer's prefix.
        "chunk": (Fn(lambda x: x.chunk(2)), (torch.randn(4, 8),)),
        "matmul-fp32": (Fn(torch.matmul), (torch.randn(12, 20), torch.randn(20, 8))),
        "bmm-fp16": (Fn(torch.bmm), (torch.randn(2, 16, 32, dtype=h),
                                     torch.randn(2, 32, 16, dtype=h))),
        "conv-fp16": (ConvHalf().to(h), (torch.randn(2, 16, 8, 8, dtype=h),)),
    }


ZOO = _zoo()


@pytest.fixture(scope="module")
def imported() -> dict[str, tuple[str, dict[str, np.ndarray]]]:
    """Each zoo model as linalg text and weights (exported once, compiled many ways)."""
    from accel.frontend.torch_import import import_program

    found = {}
    for name, (model, inputs) in ZOO.items():
        program = import_program(model.eval(), inputs, func_name="main")
        found[name] = (program.module.operation.get_asm(), dict(program.weights))
    return found


@pytest.fixture(scope="module")
def compiled(imported) -> dict[str, GpuExecutable]:
    target, opts = get_target("nvgpu"), accel.settings.merge(CROSS)
    return {name: target.compile(text, opts, weights=weights)
            for name, (text, weights) in imported.items()}


@needs_ptxas
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_compiles_to_ptx_ptxas_accepts(compiled, name: str) -> None:
    exe = compiled[name]
    assert exe.host is None, exe.host_reason  # every op became a GPU kernel
    assert exe.kernels and exe.arch == "sm_90"
    for kernel in exe.kernels.values():
        assert ".target sm_90" in kernel.ptx and "call.uni" not in kernel.ptx.split(
            ".entry")[0], "no unresolved extern functions"
    verify_ptx(exe)


@needs_ptxas
def test_sm80_and_sm90a(imported) -> None:
    text, weights = imported["softmax"]
    for arch in ("sm_80", "sm_90a"):
        exe = get_target("nvgpu").compile(text, accel.settings.merge({**CROSS,
                                                                       "device": arch}))
        assert exe.arch == arch and f".target {arch}" in next(iter(exe.kernels.values())).ptx
        verify_ptx(exe)


#: Models whose kernels run on the host in the tests (one per kernel shape; the GPT-2
#: block's 46 kernels take ~10 s, so it runs through the cheaper loop-level emulation).
#: matmul-fp16, bmm-fp16 and conv-fp16 (im2col) run their WMMA kernels (tile loops,
#: lane 0 of each warp).
EMULATED = ("mlp", "cnn", "reductions", "attention-fp16", "gelu-bf16", "matmul-fp32",
            "bmm-fp16", "matmul-fp16", "conv-fp16", "layernorm", "chunk")


def _check_against_eager(name: str, got: object) -> None:
    model, inputs = ZOO[name]
    want = model(*inputs)
    half = inputs[0].dtype in (torch.float16, torch.bfloat16)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        g = np.asarray(g)
        if g.dtype == np.uint16 and w.dtype == torch.bfloat16:  # bf16 bits
            g = (g.astype(np.uint32) << 16).view(np.float32)
        np.testing.assert_allclose(g.astype(np.float64), w.detach().double().numpy(),
                                   rtol=1e-2 if half else 1e-5, atol=1e-3 if half else 1e-5)


def _host_inputs(name: str) -> list[np.ndarray]:
    return [x.view(torch.int16).numpy().view(np.uint16) if x.dtype == torch.bfloat16
            else x.numpy() for x in ZOO[name][1]]


@pytest.mark.parametrize("name", EMULATED)
def test_zoo_kernels_and_launches_match_eager_on_host(imported, name: str) -> None:
    """The outlined kernels themselves, launched as the manifest says (argument order,
    grid, block, views, copies), run block by block on the CPU and match eager."""
    from accel.targets.nvgpu.emulate import emulate_kernels

    text, weights = imported[name]
    opts = accel.settings.merge({**CROSS, "threads_per_block": 32})
    run = emulate_kernels(text, opts, weights=weights)["main"]
    _check_against_eager(name, run(*_host_inputs(name)))


def test_gpt2_block_loop_structure_matches_eager_on_host(imported) -> None:
    """The GPT-2 block's loops (flattened blocks x threads, serial runs, copies, register
    tiles) on the CPU match eager: what accel does to loops is right without a GPU."""
    from accel.targets.nvgpu.compile import emulate_on_host

    text, weights = imported["gpt2-block"]
    opts = accel.settings.merge({**CROSS, "threads_per_block": 64})
    exe = emulate_on_host(text, opts, weights=weights)
    _check_against_eager("gpt2-block", exe["main"](*_host_inputs("gpt2-block")))


def test_math_links_libdevice(compiled) -> None:
    """exp (softmax) and erf (GELU) come from libdevice, inlined: no __nv_ call remains."""
    for name in ("softmax", "gpt2-block", "gelu-bf16"):
        for kernel in compiled[name].kernels.values():
            assert "__nv_" not in kernel.ptx


@needs_ptxas
def test_fp16_matmuls_use_tensor_cores(compiled, imported) -> None:
    """f16 matmuls and convolutions (im2col) with 16-multiple sizes: WMMA m16n16k16 with
    f32 accumulation; with disable_tensor_core no mma instruction at all."""
    for name in ("matmul-fp16", "bmm-fp16", "conv-fp16"):
        ptx = "".join(k.ptx for k in compiled[name].kernels.values())
        assert "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32" in ptx
    text, _ = imported["matmul-fp16"]
    exe = get_target("nvgpu").compile(text, accel.settings.merge(
        {**CROSS, "disable_tensor_core": True}))
    ptx = "".join(k.ptx for k in exe.kernels.values())
    assert "mma" not in ptx and "wmma" not in ptx
    verify_ptx(exe)


def test_fp32_matmul_register_tiles(compiled) -> None:
    """An f32 12x20 @ 20x8 matmul: 3 x 2 threads of 4x4 tiles (6 threads, one block)."""
    steps = compiled["matmul-fp32"].programs["main"].steps
    tiled = [s for s in steps if s.op == "launch" and len(s.args) == 3]
    assert tiled and tiled[0].grid == [1, 1, 1]
    ptx = compiled["matmul-fp32"].kernels[tiled[0].kernel].ptx
    assert ptx.count("fma.rn.f32") >= 16  # the 4x4 tile, contracted into FMAs


def test_compile_cache(imported, tmp_path, monkeypatch) -> None:
    """A second compile of the same text and options comes from the cache, equal."""
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path))
    text, weights = imported["mlp"]
    opts = accel.settings.merge({**CROSS, "cache": True})
    from accel import cache

    first = get_target("nvgpu").compile(text, opts, weights=weights)
    hits = cache.STATS["hit"]
    again = get_target("nvgpu").compile(text, opts, weights=weights)
    assert cache.STATS["hit"] == hits + 1
    assert again.kernels == first.kernels and again.programs == first.programs
    assert list(tmp_path.glob("*.entry"))
    other = get_target("nvgpu").compile(text, {**opts, "device": "sm_80"}, weights=weights)
    assert other.arch == "sm_80"  # the arch is part of the key


def test_launch_manifest(compiled, tmp_path) -> None:
    folder = tmp_path / "mlp"
    model, inputs = ZOO["mlp"]
    accel.compile(model.eval(), inputs, options=CROSS).save(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    files = manifest["target_files"]
    assert manifest["target"] == "nvgpu" and files["arch"] == "sm_90"
    program = files["programs"][0]
    launches = [s for s in program["steps"] if s["op"] == "launch"]
    assert launches and all(s["block"] == [256, 1, 1] and s["grid"][0] >= 1 for s in launches)
    for step in launches:
        kernel = files["kernels"][step["kernel"]]
        assert (folder / kernel["file"]).is_file()
        assert all(isinstance(a, int) and 0 <= a < len(program["buffers"])
                   for a in step["args"])
    kinds = {b["kind"] for b in program["buffers"]}
    assert {"arg", "weight", "temp"} <= kinds
    loaded = accel.load(folder)
    assert set(loaded.compiled.kernels) == set(compiled["mlp"].kernels)


def test_damaged_artifact_is_a_clean_error(compiled, tmp_path) -> None:
    from accel.artifact import save_executable

    folder = tmp_path / "a"
    save_executable(folder, compiled["softmax"], target=get_target("nvgpu"), entry="main",
                    options=CROSS)
    victim = next(folder.glob("*.ptx"))
    victim.write_text(victim.read_text() + "// changed\n")
    with pytest.raises(AccelError, match="checksum|sha256|damaged|changed"):
        accel.load(folder)


def test_threads_per_block_option() -> None:
    model, inputs = ZOO["softmax"]
    exe = accel.compile(model, inputs, options={**CROSS, "threads_per_block": 128}).compiled
    steps = next(iter(exe.programs.values())).steps
    assert all(s.block == [128, 1, 1] for s in steps if s.op == "launch")
    with pytest.raises(OptionError, match="threads_per_block.*multiple of 32"):
        accel.compile(model, inputs, options={**CROSS, "threads_per_block": 100})


def test_bad_options_are_clean_errors() -> None:
    model, inputs = ZOO["softmax"]
    with pytest.raises(OptionError, match="device.*sm_80, sm_90, sm_90a"):
        accel.compile(model, inputs, options={**CROSS, "device": "sm_70"})
    with pytest.raises(OptionError, match="applies to target cpu"):
        accel.compile(model, inputs, options={**CROSS, "disable_affine_fusion": True})
    with pytest.raises(OptionError, match="applies to target nvgpu"):
        accel.compile(model, inputs, options={"cache": False, "verify_ptx": True})


def test_arguments_are_checked_before_any_gpu_work(compiled) -> None:
    """Inputs are validated as the cpu target does (no silent casts), before the runtime."""
    fn = compiled["softmax"]["main"]
    good = np.zeros((5, 40), np.float32)
    assert fn.host_inputs((good,))[0].dtype == np.float32
    with pytest.raises(ValueError, match="argument 0.*float64|dtype"):
        fn.host_inputs((good.astype(np.float64),))
    with pytest.raises(ValueError, match="argument 0"):
        fn.host_inputs((np.zeros((4, 40), np.float32),))
    with pytest.raises(ValueError, match="takes 1 arguments, got 2"):
        fn.host_inputs((good, good))
    bits = compiled["gelu-bf16"]["main"].host_inputs((np.ones(64, np.float32),))[0]
    assert bits.dtype == np.uint16 and bits[0] == 0x3F80  # 1.0 as bf16


def test_malformed_input_and_manifest_are_clean_errors(compiled, tmp_path) -> None:
    from accel.artifact import save_executable

    with pytest.raises(AccelError, match="expected"):
        get_target("nvgpu").compile("func.func @f(", accel.settings.merge(CROSS))
    folder = tmp_path / "a"
    save_executable(folder, compiled["softmax"], target=get_target("nvgpu"), entry="main",
                    options=CROSS)
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["target_files"]["programs"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(AccelError, match="malformed manifest.*programs"):
        accel.load(folder)


@pytest.mark.skipif(toolkit.present_arch() is not None, reason="a GPU is present")
def test_no_gpu_is_a_clean_error_unless_cross_compiling(compiled) -> None:
    model, inputs = ZOO["softmax"]
    with pytest.raises(AccelError, match="no NVIDIA driver|no usable GPU.*device=sm_80"):
        accel.compile(model, inputs, options={"target": "nvgpu", "cache": False})
    with pytest.raises(AccelError, match="no NVIDIA driver|no usable GPU"):
        compiled["softmax"]["main"](*(x.numpy() for x in inputs))


def test_strict_target_names_the_op() -> None:
    """A dynamic shape has no GPU form here: strict_target refuses it naming the op; without
    it the module runs on the host, with a note."""
    from accel.targets import get

    text = """
    func.func @f(%a: tensor<?xf32>) -> tensor<?xf32> {
      %c0 = arith.constant 0 : index
      %n = tensor.dim %a, %c0 : tensor<?xf32>
      %e = tensor.empty(%n) : tensor<?xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
          iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) {
        ^bb0(%x: f32, %o: f32):
          %y = arith.addf %x, %x : f32
          linalg.yield %y : f32 } -> tensor<?xf32>
      return %r : tensor<?xf32>
    }"""
    target = get("nvgpu")
    opts = accel.settings.merge({**CROSS, "strict_target": True})
    with pytest.raises(AccelError, match=r"strict_target.*func.func.*dynamic shape"):
        target.compile(text, opts)
    exe = target.compile(text, {**opts, "strict_target": False})
    assert exe.host is not None and "dynamic" in exe.host_reason
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(exe["f"](x), 2 * x)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_numerics_on_gpu(name: str) -> None:
    model, inputs = ZOO[name]
    fn = accel.compile(model.eval(), inputs, options={"target": "nvgpu", "cache": False})
    want = model(*inputs)
    got = fn(*inputs)
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    half = inputs[0].dtype in (torch.float16, torch.bfloat16)
    for w, g in zip(wants, gots, strict=True):
        tol = 2e-2 if half else 1e-4
        torch.testing.assert_close(torch.as_tensor(g).to(w.dtype), w, rtol=tol, atol=tol)


@pytest.mark.gpu
@needs_gpu
def test_torch_cuda_tensors_in_place() -> None:
    model, inputs = ZOO["softmax"]
    fn = accel.compile(model, inputs, options={"target": "nvgpu", "cache": False})
    x = inputs[0].cuda()
    out = fn.compiled["main"].run_torch(x)
    assert out.is_cuda
    torch.testing.assert_close(out, torch.softmax(x, -1))


SANITIZED = r"""
import sys, torch, accel
sys.path.insert(0, {here!r})
from test_nvgpu import ZOO
for name in ("matmul-fp16", "matmul-fp32", "attention-fp16", "gpt2-block"):
    model, inputs = ZOO[name]
    accel.compile(model.eval(), inputs, options={{"target": "nvgpu", "cache": False}})(*inputs)
"""


@pytest.mark.gpu
@needs_gpu
def test_compute_sanitizer_memcheck_clean(tmp_path) -> None:
    """compute-sanitizer memcheck finds no error in the matmul and attention kernels."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer is None:
        pytest.skip("compute-sanitizer (CUDA toolkit) not on PATH")
    script = tmp_path / "run.py"
    script.write_text(SANITIZED.format(here=str(Path(__file__).parent)))
    # API errors are not reported: cuda-bindings probes the driver for entry points with
    # cuGetProcAddress, and each absent one is an API "error" (34 on an H200, driver 580);
    # accel checks every driver call's status itself. Memory errors are what this checks.
    proc = subprocess.run([sanitizer, "--tool", "memcheck", "--report-api-errors", "no",
                           "--error-exitcode", "1", sys.executable, str(script)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ERROR SUMMARY: 0 errors" in proc.stdout
