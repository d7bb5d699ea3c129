"""Zoo models against onnxruntime in one process, taking turns: accel, accel with
`freeze_weights`, onnxruntime (and eager), round after round; `--variants accel_nchwc`
adds accel with frozen weights and `conv_layout="nchwc"` (the blocked layout).

Why: `zoo.py` runs each framework in its own worker process, one after another. On a shared
2-core VM the machine's speed drifts between those processes. In session 20 the same
ResNet-50 run measured 1.28x onnxruntime at 1 thread and 0.74x at 2 threads, and an
in-process check minutes later gave 0.96x and 0.94x. Here every variant runs once per
round, in the same process, so drift hits them all alike, and the medians over the rounds
compare.

onnxruntime's intra-op threads spin after a run (`session.intra_op.allow_spinning`), and at
2 threads that slowed whichever accel call came next, from 83 to as much as 136 ms. They
run with spinning off here.

    .venv/bin/python benchmarks/interleaved.py --models resnet18 resnet50 --threads 1 2

Writes a table and benchmarks/results/interleaved.json (host: CPU model, ISA flags, cores;
every median and min in ms; ratios accel / onnxruntime speed, > 1: accel faster).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from benchmarks.run import host_info, write_json  # noqa: E402

RESULTS = os.path.join(HERE, "results", "interleaved.json")
VARIANTS = ("eager", "accel", "accel_frozen", "onnxruntime")
#: Every variant `--variants` accepts: accel_nchwc is accel_frozen with the blocked layout.
ALL_VARIANTS = (*VARIANTS, "accel_nchwc")


def _onnxruntime(model: Any, inputs: tuple[Any, ...], threads: int, folder: str
                 ) -> Callable[[], Any]:
    import onnxruntime as ort
    import torch

    path = os.path.join(folder, "model.onnx")
    if not os.path.exists(path):
        with contextlib.redirect_stdout(sys.stderr):
            torch.onnx.export(model, inputs, path, dynamo=True, external_data=True)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs, strict=True)}
    return lambda: session.run(None, feeds)


def _first(out: Any) -> Any:
    """The first tensor of a model's output (a tensor, a tuple, an HF ModelOutput)."""
    import torch

    if isinstance(out, torch.Tensor):
        return out
    values = out.values() if hasattr(out, "values") else out
    return next(v for v in values if isinstance(v, torch.Tensor))


def compare(model: Any, inputs: tuple[Any, ...], threads: int, rounds: int,
            variants: tuple[str, ...] = VARIANTS, folder: str | None = None
            ) -> dict[str, Any]:
    """Median and min ms of each variant over `rounds` rounds (one call each per round,
    after three warm-up calls), accel's max relative error against eager, and the ratios
    accel / onnxruntime speed."""
    import accel
    import torch

    torch.set_num_threads(threads)
    with torch.no_grad():
        want = _first(model(*inputs))
    calls: dict[str, Callable[[], Any]] = {}
    row: dict[str, Any] = {"threads": threads, "rounds": rounds}
    for v in variants:
        if v == "eager":
            calls[v] = lambda: model(*inputs)
        elif v.startswith("accel"):
            start = time.perf_counter()
            fn = accel.compile(model, inputs, options={
                "num_threads": threads, "cache": False,
                "freeze_weights": v in ("accel_frozen", "accel_nchwc"),
                "conv_layout": "nchwc" if v == "accel_nchwc" else "nchw"})
            row[f"{v}_compile_s"] = round(time.perf_counter() - start, 2)
            got = _first(fn(*inputs))
            row[f"{v}_max_err"] = float((got - want).abs().max() / want.abs().max())
            calls[v] = lambda fn=fn: fn(*inputs)
        else:
            with contextlib.ExitStack() as stack:
                where = folder or stack.enter_context(tempfile.TemporaryDirectory())
                calls[v] = _onnxruntime(model, inputs, threads, where)
    times: dict[str, list[float]] = {v: [] for v in calls}
    with torch.no_grad():
        for call in calls.values():
            for _ in range(3):
                call()
        for _ in range(rounds):
            for v, call in calls.items():
                start = time.perf_counter()
                call()
                times[v].append(time.perf_counter() - start)
    for v, t in times.items():
        row[f"{v}_ms"] = round(statistics.median(t) * 1e3, 3)
        row[f"{v}_min_ms"] = round(min(t) * 1e3, 3)
    if "onnxruntime" in calls:
        for v in ("accel", "accel_frozen", "accel_nchwc"):
            if v in calls:
                row[f"{v}/ort"] = round(row["onnxruntime_ms"] / row[f"{v}_ms"], 3)
    return row


def main() -> None:
    from benchmarks.zoo_models import ZOO

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(ZOO),
                        default=["resnet18", "resnet50"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count() or 1])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--variants", nargs="+", choices=ALL_VARIANTS, default=list(VARIANTS),
                        help="what takes turns (default: %(default)s)")
    parser.add_argument("--json", default=RESULTS, help=f"output file (default {RESULTS})")
    args = parser.parse_args()
    host = host_info()
    rows = []
    for name in args.models:
        built = ZOO[name]("full")
        inputs = built.inputs(0)
        with tempfile.TemporaryDirectory() as folder:
            for t in args.threads:
                row = {"model": name, **compare(built.model, inputs, t, args.rounds,
                                                tuple(args.variants), folder=folder)}
                rows.append(row)
                print(f"{name:10s} {t:2d}T  " + "  ".join(
                    f"{v} {row[f'{v}_ms']:.1f}" for v in ALL_VARIANTS if f"{v}_ms" in row) +
                    "".join(f"  {v}/ort {row[f'{v}/ort']}" for v in ALL_VARIANTS
                            if f"{v}/ort" in row), flush=True)
    print(f"{host['cpu']} ({host['isa']}), {host['cores']} cores; median ms over "
          f"{args.rounds} rounds; x/ort = onnxruntime time / x time (> 1: x faster)")
    write_json(args.json, {"host": host, "rows": rows})


if __name__ == "__main__":
    main()
