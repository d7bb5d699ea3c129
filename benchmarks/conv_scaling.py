"""Where ResNet-18's (or ResNet-50's) time goes at 1 thread and at all cores: each distinct
conv layer (conv + BatchNorm + ReLU, batch 1, as in the model) and the whole model, for
accel, eager and onnxruntime, in one process.

    .venv/bin/python benchmarks/conv_scaling.py --threads 16 1 --json out.json
    .venv/bin/python benchmarks/conv_scaling.py --model resnet50 --freeze-weights --threads 1

Why: on a 16-core Xeon ResNet-18 inference got 2.9x from 16 cores against onnxruntime's
8.5x (docs/benchmarks.md); this splits that gap by layer, weighted by how often the layer
occurs in the model, to show which kernels scale and which do not. Each layer and thread
count times the frameworks one after another, each in a block after a warm-up (interleaved
calls would make the thread pools of the three spin against each other); prints the median
per framework and its scaling (1-thread / N-thread time), and writes JSON with the CPU
model, ISA and thread counts.
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

from benchmarks.run import all_threads, host_info  # noqa: E402

#: (name, in channels, out channels, kernel, stride, input side, occurrences in ResNet-18)
LAYERS = [
    ("conv1_7x7s2", 3, 64, 7, 2, 224, 1),
    ("l1_3x3_64", 64, 64, 3, 1, 56, 4),
    ("l2_3x3s2_128", 64, 128, 3, 2, 56, 1),
    ("l2_3x3_128", 128, 128, 3, 1, 28, 3),
    ("l2_1x1s2_128", 64, 128, 1, 2, 56, 1),
    ("l3_3x3s2_256", 128, 256, 3, 2, 28, 1),
    ("l3_3x3_256", 256, 256, 3, 1, 14, 3),
    ("l3_1x1s2_256", 128, 256, 1, 2, 28, 1),
    ("l4_3x3s2_512", 256, 512, 3, 2, 14, 1),
    ("l4_3x3_512", 512, 512, 3, 1, 7, 3),
    ("l4_1x1s2_512", 256, 512, 1, 2, 14, 1),
]

#: ResNet-50's distinct conv layers (torchvision v1.5: the stride on the 3x3), same columns.
#: Most of its time is in the 1x1 convs, which run as GEMMs.
LAYERS50 = [
    ("conv1_7x7s2", 3, 64, 7, 2, 224, 1),
    ("l1_1x1_64_64", 64, 64, 1, 1, 56, 1),
    ("l1_1x1_256_64", 256, 64, 1, 1, 56, 2),
    ("l1_3x3_64", 64, 64, 3, 1, 56, 3),
    ("l1_1x1_64_256", 64, 256, 1, 1, 56, 4),
    ("l2_1x1_256_128", 256, 128, 1, 1, 56, 1),
    ("l2_3x3s2_128", 128, 128, 3, 2, 56, 1),
    ("l2_1x1_128_512", 128, 512, 1, 1, 28, 4),
    ("l2_1x1s2_256_512", 256, 512, 1, 2, 56, 1),
    ("l2_1x1_512_128", 512, 128, 1, 1, 28, 3),
    ("l2_3x3_128", 128, 128, 3, 1, 28, 3),
    ("l3_1x1_512_256", 512, 256, 1, 1, 28, 1),
    ("l3_3x3s2_256", 256, 256, 3, 2, 28, 1),
    ("l3_1x1_256_1024", 256, 1024, 1, 1, 14, 6),
    ("l3_1x1s2_512_1024", 512, 1024, 1, 2, 28, 1),
    ("l3_1x1_1024_256", 1024, 256, 1, 1, 14, 5),
    ("l3_3x3_256", 256, 256, 3, 1, 14, 5),
    ("l4_1x1_1024_512", 1024, 512, 1, 1, 14, 1),
    ("l4_3x3s2_512", 512, 512, 3, 2, 14, 1),
    ("l4_1x1_512_2048", 512, 2048, 1, 1, 7, 3),
    ("l4_1x1s2_1024_2048", 1024, 2048, 1, 2, 14, 1),
    ("l4_1x1_2048_512", 2048, 512, 1, 1, 7, 2),
    ("l4_3x3_512", 512, 512, 3, 1, 7, 2),
]
MODELS = {"resnet18": LAYERS, "resnet50": LAYERS50}


def layer(cin: int, cout: int, k: int, stride: int, side: int,
          plain: bool = False) -> tuple[Any, tuple[Any, ...]]:
    import torch

    torch.manual_seed(0)
    if plain:  # the conv alone
        return torch.nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2,
                               bias=False).eval(), (torch.randn(1, cin, side, side),)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False),
        torch.nn.BatchNorm2d(cout), torch.nn.ReLU()).eval()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        model[1].running_mean.uniform_(-0.5, 0.5)
        model[1].running_var.uniform_(0.5, 2.0)
    return model, (torch.randn(1, cin, side, side),)


def ort_session(model: Any, inputs: tuple[Any, ...], threads: int) -> Any:
    import onnxruntime as ort
    import torch

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "m.onnx")
        with contextlib.redirect_stdout(sys.stderr):
            torch.onnx.export(model, inputs, path, dynamo=False)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs, strict=True)}
    return lambda: session.run(None, feeds)


def eltwise() -> tuple[Any, tuple[Any, ...]]:
    """A memory-bound elementwise chain (relu(2x + 1) over 64 x 112 x 112): how the
    fork-join itself scales."""
    import torch

    class Chain(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.relu(x * 2.0 + 1.0)

    return Chain(), (torch.randn(64, 112, 112),)


def measure(model: Any, inputs: tuple[Any, ...], threads: list[int], seconds: float,
            frameworks: list[str], freeze: bool = False) -> dict[str, Any]:
    import accel
    import torch

    with torch.no_grad():
        want = model(*inputs)
        fn = accel.compile(model, inputs, options={"cache": False, "freeze_weights": freeze})
        err = float((fn(*inputs) - want).abs().max())
        out: dict[str, Any] = {"max_abs_err": err, "ms": {}}
        for t in threads:
            torch.set_num_threads(t)
            accel.set_num_threads(t)
            calls = {"accel": lambda: fn(*inputs), "eager": lambda: model(*inputs)}
            calls = {k: v for k, v in calls.items() if k in frameworks}
            if "ort" in frameworks:
                try:
                    calls["ort"] = ort_session(model, inputs, t)
                except Exception as e:  # noqa: BLE001 - a missing or failing peer is a gap
                    print(f"onnxruntime skipped: {type(e).__name__}: {e}"[:200],
                          file=sys.stderr)
            times: dict[str, list[float]] = {k: [] for k in calls}
            for k, call in calls.items():  # in blocks: spinning pools would share cores
                time.sleep(0.05)  # the last framework's idle workers go to sleep
                for _ in range(3):
                    call()
                end = time.perf_counter() + seconds
                while time.perf_counter() < end or len(times[k]) < 5:
                    start = time.perf_counter()
                    call()
                    times[k].append(time.perf_counter() - start)
            out["ms"][str(t)] = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[all_threads(), 1])
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="timing per layer, framework set and thread count")
    parser.add_argument("--layers", nargs="*", default=None,
                        help="layer names, the model's name and `eltwise` (default: all layers, "
                        "then the whole model)")
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet18",
                        help="whose distinct conv layers to time (and the whole model)")
    parser.add_argument("--plain", action="store_true", help="convs without BatchNorm/ReLU")
    parser.add_argument("--freeze-weights", action="store_true",
                        help="compile accel with freeze_weights (weights packed once, as "
                        "onnxruntime does)")
    parser.add_argument("--frameworks", nargs="+", default=["accel", "eager", "ort"],
                        choices=["accel", "eager", "ort"])
    parser.add_argument("--json", default=os.path.join(HERE, "results", "conv_scaling.json"))
    args = parser.parse_args()
    table = MODELS[args.model]
    known = [row[0] for row in table] + [args.model, "eltwise"]
    unknown = [name for name in args.layers or [] if name not in known]
    if unknown:
        parser.error(f"unknown layer {unknown[0]!r} (known: {', '.join(known)})")
    from benchmarks import zoo_models

    doc: dict[str, Any] = {"host": host_info(), "threads": args.threads, "model": args.model,
                           "results": {},
                           "freeze_weights": args.freeze_weights}
    chosen = [row for row in table if args.layers is None or row[0] in args.layers]
    jobs: list[tuple[str, int, Any]] = [
        (name, count, lambda r=(cin, cout, k, s, side): layer(*r, plain=args.plain))
        for name, cin, cout, k, s, side, count in chosen]
    if args.layers is None or args.model in args.layers:
        jobs.append((args.model, 1, lambda: (lambda b: (b.model, b.inputs(0)))(
            zoo_models.ZOO[args.model]("full"))))
    if args.layers and "eltwise" in args.layers:
        jobs.append(("eltwise", 1, eltwise))
    fw = args.frameworks
    heads = [f"{f}@{t}" for t in args.threads for f in fw] + [f"{f}-scale" for f in fw]
    print(f"{'layer':14} x  " + "  ".join(f"{h:>11}" for h in heads), flush=True)
    for name, count, make in jobs:
        model, inputs = make()
        r = measure(model, inputs, args.threads, args.seconds, args.frameworks,
                    args.freeze_weights)
        r["count"] = count
        doc["results"][name] = r
        ms = r["ms"]
        cells = "  ".join(f"{ms[str(t)].get(f, float('nan')):11.3f}" for t in args.threads
                          for f in fw)
        hi, lo = str(max(args.threads)), str(min(args.threads))
        scale = {f: ms[lo].get(f, float("nan")) / ms[hi].get(f, float("nan")) for f in fw}
        print(f"{name:14} {count}  {cells}   " + " ".join(f"{scale[f]:11.2f}" for f in fw),
              flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.json} ({doc['host']['cpu']}, {doc['host']['isa']}, "
          f"threads {args.threads})")


if __name__ == "__main__":
    main()
