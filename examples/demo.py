"""`make demo`: compile two PyTorch models for the host CPU, check them, and time them.

* an MLP, 784-512-512-10 with ReLU, on a batch of 32;
* a tiny GPT-2 language model (2 layers, 2 heads, width 64) built from a `transformers`
  config with random weights (no download), input_ids (2, 16) -> logits.

Each is compiled with `accel.compile`, run on fresh inputs, and compared with PyTorch eager:
the demo fails (exit 1) unless every output satisfies |accel - eager| <= ATOL + RTOL*|eager|.
It prints the compile time (and whether the on-disk compile cache supplied the code), the
max abs error, and the median latency of accel and eager. A cache hit links the stored
object code: no MLIR pipeline, no LLVM (the PyTorch import still runs; it is the key).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import accel
import torch
import transformers
from torch import nn

#: Same as `verify_numerics`: fp32 sums in another order than PyTorch's kernels.
RTOL, ATOL = 1e-4, 1e-5
WARMUP, REPEATS = 20, 200  # enough calls for a stable median on a shared 2-vCPU VM


class GPT2Logits(nn.Module):
    """input_ids -> logits; the all-ones attention_mask keeps an `aten.cumsum` out of the graph."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                          use_cache=False, return_dict=False)[0]


def mlp() -> tuple[nn.Module, Callable[[], torch.Tensor], dict[str, Any]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10)).eval()
    return model, lambda: torch.randn(32, 784), {"opt_level": 3}


def tiny_gpt2() -> tuple[nn.Module, Callable[[], torch.Tensor], dict[str, Any]]:
    torch.manual_seed(1)
    vocab = 512
    # attn_implementation="eager": torch.export fails inside torch's sdpa decomposition.
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=vocab,
                                     n_positions=32, bos_token_id=vocab - 1,
                                     eos_token_id=vocab - 1, attn_implementation="eager")
    model = GPT2Logits(transformers.GPT2LMHeadModel(config).eval()).eval()
    return model, lambda: torch.randint(0, vocab, (2, 16)), {"opt_level": 3}


def median_ms(fn: Callable[[], Any]) -> float:
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def run(name: str, model: nn.Module, make_input: Callable[[], torch.Tensor],
        options: dict[str, Any]) -> tuple[list[str], bool]:
    start = time.perf_counter()
    compiled = accel.compile(model, (make_input(),), options=options)
    compile_s = time.perf_counter() - start
    x = make_input()  # fresh inputs, not the example the model was exported with
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
        ok = got.shape == want.shape and torch.allclose(got, want, rtol=RTOL, atol=ATOL)
        err = float((got - want).abs().max())
        accel_ms = median_ms(lambda: compiled(x))
        eager_ms = median_ms(lambda: model(x))
    cache = "hit" if compiled.cache_hit else "miss"
    row = [name, f"O{options['opt_level']}", f"{compile_s:.2f} s", cache, f"{err:.2e}",
           f"{accel_ms:.3f} ms", f"{eager_ms:.3f} ms", "PASS" if ok else "FAIL"]
    return row, ok


def main() -> int:
    header = ["model", "opt", "compile", "cache", "max |err|", "accel", "eager", ""]
    rows, ok = [header], True
    for name, build in (("MLP 784-512-512-10", mlp), ("tiny GPT-2 (2x64)", tiny_gpt2)):
        row, passed = run(name, *build())
        rows.append(row)
        ok = ok and passed
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    print(f"accel demo: PyTorch -> host CPU; pass if |accel - eager| <= {ATOL:g} + "
          f"{RTOL:g}*|eager|; latency = median of {REPEATS} calls after {WARMUP} warm-up")
    print(f"(accel's large matmuls use {accel.get_num_threads()} thread(s); eager PyTorch "
          f"uses {torch.get_num_threads()})")
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
