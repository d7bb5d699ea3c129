"""Cost of `accel-guard-division` (integer division by zero raises, INT_MIN / -1 wraps).

    .venv/bin/python benchmarks/division_guard.py            # 1M elements, 1 thread
    .venv/bin/python benchmarks/division_guard.py --n 4194304 --threads 2

Workloads (int32 and int64, random dividends, divisors in [1, 100) with random signs):
`torch.div(a, b, rounding_mode="trunc")`, `torch.remainder(a, b)`, `a // b`, and
`a // 7` (a constant divisor: no guard at all). Each is imported once and compiled twice
from the same MLIR, with the CPU pipeline as it is and with `accel-guard-division`
removed; the two are timed interleaved, in alternating order (the best of `--reps` rounds
of `--calls` calls: on a shared machine the best round is the least disturbed; each call
also allocates its result, whose page faults are part of every time), and eager PyTorch
is shown for scale. Prints a table.
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def _time(fn: Any, args: tuple[Any, ...], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20, help="elements per tensor")
    parser.add_argument("--threads", type=int, default=1, help="accel threads")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()

    import accel
    import torch
    from accel.host import pipelines

    torch.set_num_threads(args.threads)
    accel.set_num_threads(args.threads)
    guarded = list(pipelines.LOWER_TO_LLVM)
    unguarded = [p for p in guarded if p != "accel-guard-division"]
    ops = {"trunc div": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
           "remainder": torch.remainder, "floor div //": lambda a, b: a // b,
           "a // 7 (constant)": lambda a, b: a // 7}
    g = torch.Generator().manual_seed(0)
    print(f"n = {args.n}, {args.threads} thread(s); best ms per call")
    print(f"{'op':<20} {'dtype':<6} {'guarded':>9} {'no guard':>9} {'cost':>7} {'eager':>8}")
    for dtype in (torch.int32, torch.int64):
        a = torch.randint(-10**6, 10**6, (args.n,), generator=g, dtype=dtype)
        b = torch.randint(1, 100, (args.n,), generator=g, dtype=dtype)
        b = torch.where(torch.rand(args.n, generator=g) < 0.5, -b, b)
        for name, op in ops.items():
            module = accel.import_torch(op, (a, b))
            compiled = {}
            for label, lower in (("guarded", guarded), ("plain", unguarded)):
                pipelines.LOWER_TO_LLVM[:] = lower
                try:
                    compiled[label] = accel.compile_mlir(module, {"cache": False})["main"]
                finally:
                    pipelines.LOWER_TO_LLVM[:] = guarded
            x, y = a.numpy(), b.numpy()
            assert (compiled["guarded"](x, y) == compiled["plain"](x, y)).all()
            times: dict[str, list[float]] = {"guarded": [], "plain": [], "eager": []}
            for rep in range(args.reps):
                for label in ("guarded", "plain")[::1 if rep % 2 else -1]:
                    times[label].append(_time(compiled[label], (x, y), args.calls))
                times["eager"].append(_time(op, (a, b), args.calls))
            med = {k: min(v) * 1e3 for k, v in times.items()}
            cost = med["guarded"] / med["plain"] - 1
            print(f"{name:<20} {str(dtype)[6:]:<6} {med['guarded']:9.3f} {med['plain']:9.3f} "
                  f"{cost:+7.1%} {med['eager']:8.3f}")


if __name__ == "__main__":
    main()
