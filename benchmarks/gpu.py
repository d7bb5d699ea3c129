"""accel's nvgpu target against torch eager, torch.mm (cuBLAS) and torch.compile on a GPU.

    python benchmarks/gpu.py [--json results/gpu.json] [--workloads matmul_fp32 ...]

Every framework runs in this process on the same CUDA tensors, timed with CUDA events
(warm-up, then the median of `--iters` runs); the table gives each time and accel's ratio
of speed to each peer (> 1: accel faster). TF32 is off (fp32 means fp32) except in the
tf32 workload, where accel runs mm_conv_precision_mode=tf32 and torch allow_tf32. accel runs
through `run_torch` (CUDA tensors in place, no copies). A workload that fails records its
error and the run goes on. Needs an NVIDIA GPU, torch with CUDA and cuda-bindings. Figures
from an H200: docs/nvgpu.md and results/gpu_h200.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _time(fn: Callable[[], Any], iters: int) -> float:
    """Median milliseconds of `fn` over `iters` runs, CUDA events around each."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _workloads() -> dict[str, tuple[Callable[..., Any], Callable[[], tuple[Any, ...]]]]:
    """name -> (function or module, inputs factory on the GPU)."""
    import torch

    f16, dev = torch.float16, "cuda"

    def chain(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 1.5 + 0.5) * torch.sigmoid(x)

    def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    def gpt2() -> Any:
        from transformers import GPT2Config, GPT2Model

        return GPT2Model(GPT2Config()).to(dev, f16).eval()

    def conv(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, w, padding=1)

    return {
        "matmul_fp32_4096": (torch.mm, lambda: tuple(torch.randn(4096, 4096, device=dev)
                                                     for _ in range(2))),
        # mm_conv_precision_mode=tf32 against torch with allow_tf32 (both round to tf32).
        "matmul_tf32_4096": (torch.mm, lambda: tuple(torch.randn(4096, 4096, device=dev)
                                                     for _ in range(2))),
        # A ResNet-style 3x3 conv, 64 -> 64 channels on 56x56, batch 32 (im2col + WMMA).
        "conv3x3_fp16_32x64x56x56": (conv, lambda: (
            torch.randn(32, 64, 56, 56, device=dev, dtype=f16),
            torch.randn(64, 64, 3, 3, device=dev, dtype=f16))),
        "matmul_fp16_4096": (torch.mm, lambda: tuple(torch.randn(4096, 4096, device=dev,
                                                                 dtype=f16)
                                                     for _ in range(2))),
        "elementwise_64M": (chain, lambda: (torch.randn(64 << 20, device=dev),)),
        "attention_fp16_8x16x2048x64": (sdpa, lambda: tuple(
            torch.randn(8, 16, 2048, 64, device=dev, dtype=f16) for _ in range(3))),
        "gpt2_small_fp16_8x512": (gpt2, lambda: (torch.randint(0, 50257, (8, 512),
                                                               device=dev),)),
    }


class _Module:
    """A plain function as an nn.Module (accel.compile exports modules)."""

    def __new__(cls, fn: Callable[..., Any]) -> Any:
        import torch

        class Wrap(torch.nn.Module):
            def forward(self, *xs: Any) -> Any:
                return fn(*xs)

        return Wrap()


def _measure(name: str, make: Callable[..., Any], inputs_of: Callable[[], tuple[Any, ...]],
             iters: int) -> dict[str, Any]:
    """One workload's times (ms) under eager, torch.compile and accel, and the ratios."""
    import accel
    import torch

    row: dict[str, Any] = {}
    tf32 = "tf32" in name
    torch.backends.cuda.matmul.allow_tf32 = tf32  # the peers round to tf32 only there
    options = {"target": "nvgpu", "cache": False,
               "mm_conv_precision_mode": "tf32" if tf32 else "default"}
    fn = make() if name.startswith("gpt2") else make
    model = fn if isinstance(fn, torch.nn.Module) else _Module(fn)
    inputs = inputs_of()
    with torch.no_grad():
        row["eager_ms"] = _time(lambda: model(*inputs), iters)
        compiled = torch.compile(model)
        row["torch_compile_ms"] = _time(lambda: compiled(*inputs), iters)
        cpu_inputs = tuple(x.cpu() for x in inputs)
        fast = accel.compile(model.cpu(), cpu_inputs, options=options)
        model.to("cuda")
        function = fast.compiled["main"]
        row["accel_ms"] = _time(lambda: function.run_torch(*inputs), iters)
    for peer in ("eager_ms", "torch_compile_ms"):
        row[f"vs_{peer[:-3]}"] = row[peer] / row["accel_ms"]
    return row


def run(names: list[str], iters: int,
        done: Callable[[dict[str, dict[str, Any]]], None] | None = None,
        ) -> dict[str, dict[str, Any]]:
    """Every selected workload in turn; `done(results)` after each, so a run stopped by a
    time limit still leaves the rows it finished."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results: dict[str, dict[str, Any]] = {}
    for name, (make, inputs_of) in _workloads().items():
        if names and name not in names:
            continue
        try:
            results[name] = _measure(name, make, inputs_of, iters)
        except Exception as err:  # noqa: BLE001 - a failed workload is recorded, not fatal
            results[name] = {"error": f"{type(err).__name__}: {err}"}
        print(table({name: results[name]}).splitlines()[-1], flush=True)
        if done is not None:
            done(results)
    return results


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| workload | eager ms | torch.compile ms | accel ms | vs eager | vs compile |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | error: {r['error'][:80]} | | | | |")
            continue
        lines.append(f"| {name} | {r['eager_ms']:.3f} | {r['torch_compile_ms']:.3f} | "
                     f"{r['accel_ms']:.3f} | {r['vs_eager']:.2f}x | "
                     f"{r['vs_torch_compile']:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here as JSON")
    parser.add_argument("--workloads", nargs="*", default=[])
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("benchmarks/gpu.py: no CUDA GPU visible to torch", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).parent))
    from run import host_info  # the CPU side of the machine, as every benchmark records

    host = host_info()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)

    def write(results: dict[str, dict[str, Any]]) -> None:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"device": torch.cuda.get_device_name(), "host": host,
                           "torch": torch.__version__, "results": results}, f, indent=2)

    results = run(args.workloads, args.iters, write)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
