"""accel with and without `accel-conv-kernels`, eager and onnxruntime, timed interleaved.

    .venv/bin/python benchmarks/conv_kernels.py conv resnet18 dwblock mobilenet_v2 --reps 10

One process, 1 thread (torch, onnxruntime and accel's runtime): both accel variants are
compiled in it (the pass dropped from the CPU pipeline for "before"), then each round
calls every framework once in turn, so load changes on a shared machine hit all of them
alike; prints median and min per framework and the speed ratios (> 1: "after" faster),
and writes JSON (`benchmarks/results/conv_kernels.json`) with the CPU model and ISA.
Workloads: `conv` (3x3 64->64 at 56x56, benchmarks/run.py's), `resnet18` and
`mobilenet_v2` at 1x3x224x224 (benchmarks/zoo_models.py), `dwblock` (a depthwise 3x3 over
144 x 56 x 56 + BatchNorm + ReLU6, MobileNetV2's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ACCEL_NUM_THREADS"):
    os.environ[_var] = "1"

from benchmarks.run import host_info  # noqa: E402


def build(name: str) -> tuple[Any, tuple[Any, ...]]:
    import torch

    from benchmarks import zoo_models

    torch.manual_seed(1)
    if name == "conv":
        return torch.nn.Conv2d(64, 64, 3, padding=1, bias=False).eval(), \
            (torch.randn(1, 64, 56, 56),)
    if name == "dwblock":
        model = torch.nn.Sequential(
            torch.nn.Conv2d(144, 144, 3, padding=1, groups=144, bias=False),
            torch.nn.BatchNorm2d(144), torch.nn.ReLU6()).eval()
        return model, (torch.randn(1, 144, 56, 56),)
    built = zoo_models.ZOO[name]("full")
    return built.model, built.inputs(0)


def onnxruntime_call(model: Any, inputs: tuple[Any, ...]) -> Any:
    import onnxruntime as ort
    import torch

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "m.onnx")
        with contextlib.redirect_stdout(sys.stderr):
            torch.onnx.export(model, inputs, path, dynamo=True, external_data=False)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs, strict=True)}
    return lambda: session.run(None, feeds)


def run(name: str, reps: int) -> dict[str, Any]:
    import accel
    import accel.host.pipelines as pipelines
    import torch

    torch.set_num_threads(1)
    model, inputs = build(name)
    calls: dict[str, Any] = {"eager": lambda: model(*inputs),
                             "ort": onnxruntime_call(model, inputs)}
    errors = {}
    original = pipelines.CONV_KERNELS
    with torch.no_grad():
        want = model(*inputs)
        for variant, conv_pass in (("before", "accel-conv-kernels-off"), ("after", original)):
            pipelines.CONV_KERNELS = conv_pass  # an unregistered name: the pass is skipped
            try:
                fn = accel.compile(model, inputs, options={"cache": False, "num_threads": 1})
            finally:
                pipelines.CONV_KERNELS = original
            errors[variant] = float((fn(*inputs) - want).abs().max())
            calls[variant] = (lambda fn=fn: fn(*inputs))
        for call in calls.values():
            call()
        times: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(reps):
            for k, call in calls.items():
                start = time.perf_counter()
                call()
                times[k].append(time.perf_counter() - start)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    low = {k: min(v) * 1e3 for k, v in times.items()}
    ratios = {f"after/{k}": {"median": med[k] / med["after"], "min": low[k] / low["after"]}
              for k in ("before", "eager", "ort")}
    return {"median_ms": med, "min_ms": low, "ratios": ratios, "max_abs_err": errors,
            "reps": reps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=["conv", "resnet18"],
                        choices=["conv", "resnet18", "dwblock", "mobilenet_v2"])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--json", default=os.path.join(HERE, "results", "conv_kernels.json"))
    args = parser.parse_args()
    doc: dict[str, Any] = {"host": host_info(), "threads": 1, "results": {}}
    for name in args.workloads:
        r = run(name, args.reps)
        doc["results"][name] = r
        print(f"{name}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in r["median_ms"].items())
              + " (median); " + ", ".join(f"{k} {v['median']:.2f} (min {v['min']:.2f})"
                                        for k, v in r["ratios"].items()), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.json} ({doc['host']['cpu']}, {doc['host']['isa']}, 1 thread)")


if __name__ == "__main__":
    main()
