"""Benchmark suite: accel vs numpy, torch eager, torch.compile (inductor), onnxruntime and
IREE, one command.

    .venv/bin/python benchmarks/run.py             # full run (~6 min on 2 cores)
    .venv/bin/python benchmarks/run.py --quick     # smaller sizes, shorter timing (< 2 min)
    .venv/bin/python benchmarks/run.py --frameworks accel torch --threads 1

Each (framework, thread count) runs in its own subprocess (this file with `--worker`), with
OMP/MKL/OpenBLAS/ACCEL thread counts set in its environment before any library is imported
(and `torch.set_num_threads`). Thread counts: 1 and all cores. A worker runs every workload
for its framework and prints JSON; a workload that fails, or that the framework cannot run,
records the error (or "n/a") and the run goes on. Timing: one warm-up call (more for fast
calls), then the median of repeated calls. The parent prints one table and writes
`benchmarks/results/latest.json` (raw numbers, host, numerics, ratios accel/peer, done-when
criteria). Ratios are speed ratios: > 1 means accel is faster. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results", "latest.json")
FRAMEWORKS = ["numpy", "torch", "inductor", "onnxruntime", "accel", "iree"]
#: Set in the workers' environment by --freeze-weights (accel's `freeze_weights` option).
FREEZE_ENV = "ACCEL_BENCH_FREEZE_WEIGHTS"
LABELS = {"numpy": "numpy", "torch": "eager", "inductor": "inductor", "onnxruntime": "ort",
          "accel": "accel", "iree": "iree"}
PEERS = ["numpy", "torch", "inductor", "onnxruntime", "iree"]  # ratio columns accel/peer
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "ACCEL_NUM_THREADS")
MLP_SIZES = (784, 512, 512, 10)
CONV = (64, 56)  # channels in = out, spatial size; batch 1, 3x3, stride 1, padding 1
ATTN = (8, 1024, 64)  # heads, sequence, head dim; batch 1
GPT2_BATCH, GPT2_SEQ, GPT2_VOCAB = 2, 16, 128


class NotApplicable(Exception):
    """The framework does not run this workload (recorded as "n/a", not as an error)."""


def all_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# --- workloads: torch models and inputs (built in the worker, seeded) --------------------


@dataclass
class Workload:
    name: str
    label: str
    unit: str  # "GFLOP/s" (higher is better) or a time unit: "us", "ms", "s"
    build: Callable[[], tuple[Any, tuple[Any, ...]]]  # -> (torch callable, example inputs)
    flops: float = 0.0  # per call, for GFLOP/s
    compile_rows: str = ""  # also measure cold/warm compile time under this row prefix


TIME_SCALE = {"us": 1e6, "ms": 1e3, "s": 1.0}


def _matmul(n: int) -> Callable[[], tuple[Any, tuple[Any, ...]]]:
    def build() -> tuple[Any, tuple[Any, ...]]:
        import torch

        g = torch.Generator().manual_seed(n)
        return (lambda a, b: a @ b), (torch.randn(n, n, generator=g),
                                      torch.randn(n, n, generator=g))
    return build


def _conv() -> tuple[Any, tuple[Any, ...]]:
    import torch

    torch.manual_seed(1)
    c, hw = CONV
    model = torch.nn.Conv2d(c, c, 3, padding=1, bias=False).eval()
    return model, (torch.randn(1, c, hw, hw),)


def _resnet18() -> tuple[Any, tuple[Any, ...]]:
    """benchmarks/zoo_models.py's ResNet-18 (torchvision's, BatchNorm calibrated), eval."""
    try:
        from benchmarks.zoo_models import resnet18
    except ImportError:  # run as a script: benchmarks/ itself is on sys.path
        from zoo_models import resnet18  # type: ignore[no-redef]
    built = resnet18("full")
    return built.model, built.inputs(0)


def _mlp_model() -> Any:
    import torch

    torch.manual_seed(2)
    a, b, c, d = MLP_SIZES
    return torch.nn.Sequential(torch.nn.Linear(a, b), torch.nn.ReLU(), torch.nn.Linear(b, c),
                               torch.nn.ReLU(), torch.nn.Linear(c, d)).eval()


def _mlp(batch: int) -> Callable[[], tuple[Any, tuple[Any, ...]]]:
    def build() -> tuple[Any, tuple[Any, ...]]:
        import torch

        model = _mlp_model()
        return model, (torch.randn(batch, MLP_SIZES[0], generator=torch.Generator()
                                   .manual_seed(batch)),)
    return build


def _attention() -> tuple[Any, tuple[Any, ...]]:
    import torch

    try:
        from benchmarks.attention import naive
    except ImportError:  # run as a script: benchmarks/ itself is on sys.path
        from attention import naive  # type: ignore[no-redef]
    heads, seq, dim = ATTN
    g = torch.Generator().manual_seed(3)
    return naive, tuple(torch.randn(1, heads, seq, dim, generator=g) for _ in range(3))


def _gpt2() -> tuple[Any, tuple[Any, ...]]:
    """The tiny GPT-2 of test/unit/test_model_zoo.py (random weights): ids -> logits."""
    import torch
    import transformers

    torch.manual_seed(3)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=64, vocab_size=GPT2_VOCAB, n_positions=32,
        bos_token_id=GPT2_VOCAB - 1, eos_token_id=GPT2_VOCAB - 1, attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(config).eval()

    class GPT2Logits(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                              use_cache=False, return_dict=False)[0]

    ids = torch.randint(0, GPT2_VOCAB, (GPT2_BATCH, GPT2_SEQ),
                        generator=torch.Generator().manual_seed(1))
    return GPT2Logits(model).eval(), (ids,)


def workloads(quick: bool) -> list[Workload]:
    sizes = (256, 1024) if quick else (256, 512, 1024, 2048)
    c, hw = CONV
    heads, seq, dim = ATTN
    wls = [Workload(f"matmul_{n}", f"matmul {n}^2 fp32", "GFLOP/s", _matmul(n), 2.0 * n ** 3)
           for n in sizes]
    wls += [
        Workload("conv2d_3x3", f"conv2d 3x3 {c}->{c} {hw}x{hw}", "GFLOP/s", _conv,
                 2.0 * c * c * 9 * hw * hw),
        Workload("mlp_b1", "MLP 784-512-512-10 b=1", "us", _mlp(1)),
        Workload("mlp_b64", "MLP 784-512-512-10 b=64", "us", _mlp(64), compile_rows="mlp"),
        Workload("attention", f"attention {heads}h x {seq} x {dim}", "ms", _attention),
        Workload("resnet18", "ResNet-18 1x3x224x224", "ms", _resnet18),
        Workload("gpt2_tiny", f"tiny GPT-2 fwd {GPT2_BATCH}x{GPT2_SEQ}", "ms", _gpt2,
                 compile_rows="gpt2"),
    ]
    return wls


def compile_row_names() -> list[tuple[str, str]]:
    return [("compile_mlp_cold", "compile MLP b=64 cold"),
            ("compile_mlp_warm", "compile MLP b=64 warm"),
            ("compile_gpt2_cold", "compile tiny GPT-2 cold"),
            ("compile_gpt2_warm", "compile tiny GPT-2 warm")]


# --- frameworks: model -> callable with no arguments (in the worker) ---------------------


def _numpy_impl(wl: Workload, model: Any, inputs: tuple[Any, ...]) -> Callable[[], Any]:
    import numpy as np

    if wl.name.startswith("matmul_"):
        a, b = (x.numpy() for x in inputs)
        return lambda: a @ b
    if wl.name.startswith("mlp_"):
        x = inputs[0].numpy()
        layers = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy())
                  for m in model if hasattr(m, "weight")]
        (w1, b1), (w2, b2), (w3, b3) = layers

        def mlp() -> Any:
            h = np.maximum(x @ w1 + b1, 0)
            h = np.maximum(h @ w2 + b2, 0)
            return h @ w3 + b3
        return mlp
    raise NotApplicable("numpy runs matmul and MLP only")


def _iree_mlir(wl: Workload, model: Any, inputs: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """Hand-written linalg-on-tensors MLIR (IREE's input) and its numpy arguments."""

    def t(*shape: int) -> str:
        return "tensor<" + "x".join(map(str, shape)) + "xf32>"

    head = "  %zero = arith.constant 0.0 : f32\n"
    if wl.name.startswith("matmul_"):
        n = inputs[0].shape[0]
        body = (head + f"  %e = tensor.empty() : {t(n, n)}\n"
                f"  %z = linalg.fill ins(%zero : f32) outs(%e : {t(n, n)}) -> {t(n, n)}\n"
                f"  %r = linalg.matmul ins(%a, %b : {t(n, n)}, {t(n, n)}) outs(%z : {t(n, n)})"
                f" -> {t(n, n)}\n  return %r : {t(n, n)}\n")
        sig = f"%a: {t(n, n)}, %b: {t(n, n)}) -> {t(n, n)}"
        return f"func.func @main({sig} {{\n{body}}}\n", [x.numpy() for x in inputs]
    if wl.name.startswith("mlp_"):
        batch = inputs[0].shape[0]
        sizes = MLP_SIZES
        args = [inputs[0].numpy()]
        sig = [f"%x: {t(batch, sizes[0])}"]
        body, prev = head, "%x"
        for i, m in enumerate(mi for mi in model if hasattr(mi, "weight")):
            k, n = sizes[i], sizes[i + 1]
            args += [m.weight.detach().numpy().T.copy(), m.bias.detach().numpy()]
            sig += [f"%w{i}: {t(k, n)}", f"%b{i}: {t(n)}"]
            relu = (f"    %q{i} = arith.maximumf %s{i}, %zero : f32\n    linalg.yield %q{i} : f32\n"
                    if i < 2 else f"    linalg.yield %s{i} : f32\n")
            body += (
                f"  %e{i} = tensor.empty() : {t(batch, n)}\n"
                f"  %z{i} = linalg.fill ins(%zero : f32) outs(%e{i} : {t(batch, n)}) -> "
                f"{t(batch, n)}\n"
                f"  %m{i} = linalg.matmul ins({prev}, %w{i} : {t(batch, k)}, {t(k, n)}) "
                f"outs(%z{i} : {t(batch, n)}) -> {t(batch, n)}\n"
                f"  %h{i} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, "
                f"affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], "
                f"iterator_types = [\"parallel\", \"parallel\"]}} ins(%m{i}, %b{i} : "
                f"{t(batch, n)}, {t(n)}) outs(%e{i} : {t(batch, n)}) {{\n"
                f"  ^bb0(%u{i}: f32, %v{i}: f32, %o{i}: f32):\n"
                f"    %s{i} = arith.addf %u{i}, %v{i} : f32\n{relu}"
                f"  }} -> {t(batch, n)}\n")
            prev = f"%h{i}"
        body += f"  return %h2 : {t(batch, sizes[-1])}\n"
        sig_s = ", ".join(sig) + f") -> {t(batch, sizes[-1])}"
        return f"func.func @main({sig_s} {{\n{body}}}\n", args
    if wl.name == "conv2d_3x3":
        c, hw = CONV
        x, w = inputs[0].numpy(), model.weight.detach().numpy()
        body = (head + f"  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {{\n"
                "  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):\n"
                f"    tensor.yield %zero : f32\n  }} : {t(1, c, hw, hw)} to "
                f"{t(1, c, hw + 2, hw + 2)}\n"
                f"  %e = tensor.empty() : {t(1, c, hw, hw)}\n"
                f"  %z = linalg.fill ins(%zero : f32) outs(%e : {t(1, c, hw, hw)}) -> "
                f"{t(1, c, hw, hw)}\n"
                "  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, "
                "strides = dense<1> : tensor<2xi64>} "
                f"ins(%p, %w : {t(1, c, hw + 2, hw + 2)}, {t(c, c, 3, 3)}) "
                f"outs(%z : {t(1, c, hw, hw)}) -> {t(1, c, hw, hw)}\n"
                f"  return %r : {t(1, c, hw, hw)}\n")
        sig = f"%x: {t(1, c, hw, hw)}, %w: {t(c, c, 3, 3)}) -> {t(1, c, hw, hw)}"
        return f"func.func @main({sig} {{\n{body}}}\n", [x, w]
    raise NotApplicable("IREE runs matmul, conv2d and MLP here (hand-written linalg; the "
                        "others need a PyTorch importer such as iree-turbine)")


class Framework:
    """Turns (workload, model, inputs) into a no-argument callable; compile time separate."""

    def __init__(self, name: str, threads: int) -> None:
        self.name, self.threads = name, threads
        if name == "iree":
            import iree.compiler  # noqa: F401 - fail early: "not installed"
            import iree.runtime  # noqa: F401
        if name == "onnxruntime":  # pip install -e .[bench]
            import onnx  # noqa: F401 - fail early: "not installed"
            import onnxruntime  # noqa: F401

    def prepare(self, wl: Workload, model: Any, inputs: tuple[Any, ...]
                ) -> tuple[Callable[[], Any], float | None]:
        """(call, compile seconds or None). Inductor compiles lazily: None, see `measure`."""
        import torch

        if self.name == "numpy":
            return _numpy_impl(wl, model, inputs), None
        if self.name == "torch":
            return (lambda: model(*inputs)), None
        if self.name == "inductor":
            # Forget earlier workloads' graphs: no automatic-dynamic recompile of the MLP.
            torch._dynamo.reset()
            compiled = torch.compile(model)
            return (lambda: compiled(*inputs)), None
        if self.name == "accel":
            import accel

            start = time.perf_counter()
            fn = accel.compile(model, inputs, options=self.accel_options(cache=False))
            return (lambda: fn(*inputs)), time.perf_counter() - start
        if self.name == "iree":
            return self._iree(wl, model, inputs)
        if self.name == "onnxruntime":
            return self._onnxruntime(wl, model, inputs)
        raise ValueError(self.name)

    def accel_options(self, cache: bool) -> dict[str, Any]:
        # Threads of accel's parallel loops, set before each call (process-wide).
        return {"cache": cache, "num_threads": self.threads,
                "freeze_weights": os.environ.get(FREEZE_ENV) == "1"}

    def _onnxruntime(self, wl: Workload, model: Any, inputs: tuple[Any, ...]
                     ) -> tuple[Callable[[], Any], float]:
        """torch.onnx.export (dynamo) into a temporary file, an InferenceSession with all
        graph optimisations and `threads` intra-op threads; compile time = export + session.
        A plain function (matmul, attention) is wrapped in a module for the export."""
        import onnxruntime as ort
        import torch

        if not isinstance(model, torch.nn.Module):
            fn = model

            class Wrap(torch.nn.Module):
                def forward(self, *args: Any) -> Any:
                    return fn(*args)
            model = Wrap()
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="ort-bench-") as folder:
            path = os.path.join(folder, f"{wl.name}.onnx")
            with contextlib.redirect_stdout(sys.stderr):
                torch.onnx.export(model, inputs, path, dynamo=True, external_data=False)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        seconds = time.perf_counter() - start
        feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs, strict=True)}
        names = [session.get_outputs()[0].name]
        return (lambda: torch.from_numpy(session.run(names, feeds)[0])), seconds

    def _iree(self, wl: Workload, model: Any, inputs: tuple[Any, ...]
              ) -> tuple[Callable[[], Any], float]:
        import iree.compiler as ireec
        import iree.runtime as ireert

        text, args = _iree_mlir(wl, model, inputs)
        start = time.perf_counter()
        vmfb = ireec.compile_str(text, target_backends=["llvm-cpu"], input_type="none",
                                 extra_args=["--iree-llvmcpu-target-cpu=host"])
        seconds = time.perf_counter() - start
        if self.threads == 1:
            driver = "local-sync"
        else:
            driver = "local-task"
            for flag in ("--task_topology_group_count", "--task_topology_max_group_count"):
                with contextlib.suppress(Exception):
                    ireert.flags.parse_flags(f"{flag}={self.threads}")
                    break
        module = ireert.load_vm_flatbuffer(vmfb, driver=driver)
        device = ireert.get_device(driver)
        dev_args = [ireert.asdevicearray(device, a) for a in args]
        return (lambda: module.main(*dev_args)), seconds

    def warm_compile(self, wl: Workload, model: Any, inputs: tuple[Any, ...]
                     ) -> tuple[float, dict[str, Any]]:
        """Seconds for a compile that finds its cache filled (accel, inductor)."""
        import torch

        if self.name == "accel":
            import accel

            old = os.environ.get("ACCEL_CACHE_DIR")
            times, hits = [], []
            with tempfile.TemporaryDirectory(prefix="accel-bench-cache-") as folder:
                os.environ["ACCEL_CACHE_DIR"] = folder
                try:
                    accel.compile(model, inputs, options=self.accel_options(cache=True))
                    for _ in range(3):
                        start = time.perf_counter()
                        fn = accel.compile(model, inputs, options=self.accel_options(cache=True))
                        times.append(time.perf_counter() - start)
                        hits.append(fn.cache_hit)
                finally:
                    if old is None:
                        os.environ.pop("ACCEL_CACHE_DIR", None)
                    else:
                        os.environ["ACCEL_CACHE_DIR"] = old
            return statistics.median(times), {"samples_s": times, "cache_hit": all(hits)}
        if self.name == "inductor":
            # Same process, same TORCHINDUCTOR_CACHE_DIR: dynamo traces again, inductor's
            # FX graph cache supplies the code. Compile time = first call - steady call.
            torch._dynamo.reset()
            compiled = torch.compile(model)
            with torch.no_grad():
                start = time.perf_counter()
                compiled(*inputs)
                first = time.perf_counter() - start
                start = time.perf_counter()
                compiled(*inputs)
                steady = time.perf_counter() - start
            return max(first - steady, 0.0), {"first_call_s": first}
        raise NotApplicable(f"{self.name} has no compile step")


def measure(call: Callable[[], Any], budget_s: float, min_reps: int, max_reps: int
            ) -> dict[str, Any]:
    """First (warm-up) call, more warm-up for fast calls, then timed calls; median."""
    start = time.perf_counter()
    out = call()
    first = time.perf_counter() - start
    warm_until = time.perf_counter() + min(0.1 * budget_s, 0.5)
    extra = 0
    while time.perf_counter() < warm_until and extra < 50 and first < 0.05:
        call()
        extra += 1
    reps = max(min_reps, min(max_reps, int(budget_s / max(first, 1e-7))))
    if first > budget_s:  # seconds per call (accel's matmul 2048): three timed calls
        reps = 3
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return {"out": out, "first_s": first, "median_s": statistics.median(times),
            "min_s": min(times), "reps": reps, "warmup_calls": 1 + extra}


def _max_abs_err(out: Any, ref: Any) -> float:
    import numpy as np
    import torch

    if hasattr(out, "to_host"):  # IREE DeviceArray
        out = out.to_host()
    got = out.detach().numpy() if isinstance(out, torch.Tensor) else np.asarray(out)
    return float(np.abs(got - ref.detach().numpy()).max())


def run_workload(fw: Framework, wl: Workload, quick: bool) -> dict[str, dict[str, Any]]:
    import torch

    model, inputs = wl.build()
    rows: dict[str, dict[str, Any]] = {}
    with torch.no_grad():
        ref = model(*inputs)
        call, compile_s = fw.prepare(wl, model, inputs)
        budget, min_reps, max_reps = (0.3, 3, 200) if quick else (2.0, 5, 1000)
        m = measure(call, budget, min_reps, max_reps)
        if fw.name == "inductor":  # torch.compile compiles in the first call
            compile_s = max(m["first_s"] - m["median_s"], 0.0)
    row: dict[str, Any] = {"unit": wl.unit, "median_s": m["median_s"], "min_s": m["min_s"],
                           "first_call_s": m["first_s"], "reps": m["reps"],
                           "warmup_calls": m["warmup_calls"],
                           "max_abs_err_vs_torch": _max_abs_err(m["out"], ref)}
    if wl.unit == "GFLOP/s":
        row["value"] = wl.flops / m["median_s"] / 1e9
    else:
        row["value"] = m["median_s"] * TIME_SCALE[wl.unit]
    if compile_s is not None:
        row["compile_s"] = compile_s
    rows[wl.name] = row
    if wl.compile_rows and compile_s is not None:
        cold = [compile_s]
        if fw.name == "accel":  # two more cache-off compiles (inductor: one cold cache only)
            for _ in range(2):
                cold.append(fw.prepare(wl, model, inputs)[1] or 0.0)
        rows[f"compile_{wl.compile_rows}_cold"] = {"unit": "s", "value": statistics.median(cold),
                                                    "samples_s": cold}
        try:
            seconds, info = fw.warm_compile(wl, model, inputs)
            rows[f"compile_{wl.compile_rows}_warm"] = {"unit": "s", "value": seconds, **info}
        except NotApplicable as e:
            rows[f"compile_{wl.compile_rows}_warm"] = {"na": str(e)}
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on
            rows[f"compile_{wl.compile_rows}_warm"] = {"error": _err(e)}
    return rows


def _err(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) < 600 else text[:600] + " ..."


def worker(framework: str, threads: int, quick: bool, only: list[str] | None) -> dict[str, Any]:
    import torch

    torch.set_num_threads(threads)
    info: dict[str, Any] = {"framework": framework, "threads": threads,
                            "torch_threads": torch.get_num_threads(), "results": {}}
    try:
        fw = Framework(framework, threads)
    except ImportError as e:
        info["skipped"] = f"not installed: {_err(e)}"
        return info
    for wl in workloads(quick):
        if only and wl.name not in only:
            continue
        print(f"  [{framework} x{threads}] {wl.name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            info["results"].update(run_workload(fw, wl, quick))
        except NotApplicable as e:
            info["results"][wl.name] = {"na": str(e)}
        except NotImplementedError as e:
            info["results"][wl.name] = {"na": f"not supported: {e}"}
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on
            info["results"][wl.name] = {"error": _err(e)}
        info["results"].setdefault(wl.name, {})["wall_s"] = time.perf_counter() - start
    return info


# --- parent: spawn workers, table, JSON --------------------------------------------------


def _run_worker(framework: str, threads: int, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    env.update({k: str(threads) for k in THREAD_ENV})
    env[FREEZE_ENV] = "1" if args.freeze_weights else "0"
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", framework, str(threads)]
    if args.quick:
        cmd.append("--quick")
    if args.workloads:
        cmd += ["--workloads", *args.workloads]
    with contextlib.ExitStack() as stack:
        if framework == "inductor":  # cold inductor cache for this worker
            env["TORCHINDUCTOR_CACHE_DIR"] = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="inductor-bench-"))
        out = stack.enter_context(tempfile.TemporaryFile(mode="w+"))
        tail: list[str] = []
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if line.startswith("  ["):
                    print(line.rstrip(), file=sys.stderr, flush=True)
                tail = (tail + [line.rstrip()])[-8:]
            proc.wait(timeout=args.worker_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.seek(0)
        lines = out.read().strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"framework": framework, "threads": threads,
                "error": f"worker exited {proc.returncode}: " + " | ".join(tail), "results": {}}
    return json.loads(lines[-1])


def _cpu_name() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _isa() -> str:
    """The widest x86 vector ISA of the host (what accel's kernels compile for)."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                for isa in ("avx512f", "avx2", "avx", "sse4_2"):
                    if isa in flags:
                        return isa
    return platform.machine()


def host_info() -> dict[str, Any]:
    versions = {}
    for dist in ("accel", "numpy", "torch", "transformers", "onnxruntime", "onnx",
                 "iree-base-compiler", "iree-base-runtime"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    commit = None
    with contextlib.suppress(Exception):
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                                capture_output=True, text=True, timeout=10).stdout.strip()
    mem = None
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        mem = round(int(f.readline().split()[1]) / 2 ** 20, 1)
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "cpu": _cpu_name(), "isa": _isa(), "cores": all_threads(), "cpu_count": os.cpu_count(),
            "mem_gib": mem, "machine": platform.machine(), "os": platform.platform(),
            "python": platform.python_version(), "versions": versions, "git_commit": commit,
            "loadavg_start": list(os.getloadavg())}


def _speed(row: dict[str, Any] | None) -> float | None:
    """Higher-is-better speed of a result row (GFLOP/s, or 1/time)."""
    if not row or "value" not in row or not row["value"] or row["value"] <= 0:
        return None
    return row["value"] if row["unit"] == "GFLOP/s" else 1.0 / row["value"]


def ratios(results: dict[tuple[str, int], dict[str, Any]], threads: list[int],
           rows: list[str]) -> dict[str, Any]:
    """accel speed / peer speed per row, peer and thread count (> 1: accel faster). At all
    threads, where accel has no number there (a failed run), accel's 1-thread number is used
    and `accel_threads` says so."""
    out: dict[str, Any] = {}
    for row in rows:
        per_row: dict[str, Any] = {}
        for peer in PEERS:
            for t in threads:
                acc_t = t
                acc = _speed(results.get(("accel", t), {}).get(row))
                if acc is None and t != 1:
                    acc_t, acc = 1, _speed(results.get(("accel", 1), {}).get(row))
                other = _speed(results.get((peer, t), {}).get(row))
                if acc is not None and other is not None:
                    per_row[f"{peer}@{t}"] = {"ratio": acc / other, "accel_threads": acc_t}
        acc1 = _speed(results.get(("accel", 1), {}).get(row))
        for t in threads[1:]:
            acct = _speed(results.get(("accel", t), {}).get(row))
            if acc1 and acct:
                per_row[f"accel_scaling@{t}"] = {"ratio": acct / acc1}
        if per_row:
            out[row] = per_row
    return out


def criteria(results: dict[tuple[str, int], dict[str, Any]], ratio: dict[str, Any],
             nmax: int) -> dict[str, Any]:
    """The issue's done-when checks (None where a number is missing)."""
    def r(row: str, key: str) -> float | None:
        return ratio.get(row, {}).get(key, {}).get("ratio")

    def check(value: float | None, target: float) -> dict[str, Any]:
        return {"value": value, "target": target,
                "pass": None if value is None else value >= target}

    out = {}
    for t in sorted({1, nmax}):
        out[f"matmul_1024 accel/numpy >= 0.8 @{t}"] = check(r("matmul_1024", f"numpy@{t}"), 0.8)
        out[f"matmul_1024 accel/torch > 1 @{t}"] = check(r("matmul_1024", f"torch@{t}"), 1.0)
        out[f"mlp_b64 accel/torch >= 1 @{t}"] = check(r("mlp_b64", f"torch@{t}"), 1.0)
    if nmax > 1:
        out[f"matmul_1024 accel scaling {nmax}T/1T >= 1.7"] = check(
            r("matmul_1024", f"accel_scaling@{nmax}"), 1.7)
    return out


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    if "error" in row:
        return "error"
    if "na" in row:
        return "n/s" if row["na"].startswith("not supported") else "n/a"
    v = row["value"]
    return f"{v:.3g}" if v < 1000 else f"{v:.0f}"


def table(results: dict[tuple[str, int], dict[str, Any]], frameworks: list[str],
          threads: list[int], rows: list[tuple[str, str, str]], ratio: dict[str, Any]) -> str:
    cols = [(fw, t) for fw in frameworks for t in threads]
    peers = [p for p in PEERS if p in frameworks]
    rcols = [(p, t) for p in peers for t in threads]
    scale = [t for t in threads[1:]] if "accel" in frameworks else []
    lw = max(len(label) for _, label, _ in rows) + 2
    head = f"{'workload':<{lw}}{'unit':>8} " + "".join(
        f"{LABELS[fw] + ' ' + str(t) + 'T':>12}" for fw, t in cols) + "  |" + "".join(
        f"{'a/' + LABELS[p][:3] + ' ' + str(t) + 'T':>11}" for p, t in rcols) + "".join(
        f"{'a ' + str(t) + 'T/1T':>10}" for t in scale)
    lines = [head, "-" * len(head)]
    for name, label, unit in rows:
        cells = "".join(f"{_cell(results.get(c, {}).get(name)):>12}" for c in cols)
        rcells = ""
        for p, t in rcols:
            e = ratio.get(name, {}).get(f"{p}@{t}")
            star = "*" if e and e["accel_threads"] != t else ""
            text = f"{e['ratio']:.2f}{star}" if e else ""
            rcells += f"{text:>11}"
        for t in scale:
            e = ratio.get(name, {}).get(f"accel_scaling@{t}")
            text = f"{e['ratio']:.2f}" if e else ""
            rcells += f"{text:>10}"
        lines.append(f"{label:<{lw}}{unit:>8} {cells}  |{rcells}")
    return "\n".join(lines)


def write_json(path: str, doc: dict[str, Any], *, quiet: bool = False) -> None:
    """Write a benchmark's JSON record (non-JSON values: a NaN as null, others as text)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1, default=lambda o: None if isinstance(o, float)
                  and math.isnan(o) else str(o))
    os.replace(path + ".tmp", path)  # a reader never sees half a file
    if not quiet:
        print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="matmul 256 and 1024 only, shorter timing (< 2 min)")
    parser.add_argument("--frameworks", nargs="+", default=FRAMEWORKS, choices=FRAMEWORKS)
    parser.add_argument("--threads", nargs="+", type=int,
                        help="thread counts (default: 1 and all cores)")
    parser.add_argument("--workloads", nargs="+", help="only these workload names")
    parser.add_argument("--json", default=RESULTS, help=f"output file (default {RESULTS})")
    parser.add_argument("--freeze-weights", action="store_true",
                        help="compile accel with freeze_weights (parameters packed once, "
                             "as onnxruntime does; inductor runs without freezing)")
    parser.add_argument("--worker-timeout", type=float, default=1800,
                        help="seconds before a worker is killed")
    parser.add_argument("--worker", nargs=2, metavar=("FRAMEWORK", "THREADS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = worker(args.worker[0], int(args.worker[1]), args.quick, args.workloads)
        print(json.dumps(result))
        return

    nmax = all_threads()
    threads = args.threads or sorted({1, nmax})
    host = host_info()
    host["accel_options"] = {"freeze_weights": args.freeze_weights}
    start = time.perf_counter()
    workers: dict[str, Any] = {}
    results: dict[tuple[str, int], dict[str, Any]] = {}
    for fw in args.frameworks:
        for t in threads:
            w = _run_worker(fw, t, args)
            workers[f"{fw}@{t}"] = w
            if w.get("skipped") or w.get("error"):
                print(f"  [{fw} x{t}] {w.get('skipped') or w.get('error')}", file=sys.stderr)
            results[(fw, t)] = w.get("results", {})
            # What has run so far, in case the run is cut short (a device session's
            # deadline): the full record below replaces it.
            write_json(args.json, {"host": host, "partial": True, "threads": threads,
                                   "workers": workers}, quiet=True)
    shown = [fw for fw in args.frameworks
             if any(results.get((fw, t)) for t in threads)]
    rows = [(wl.name, wl.label, wl.unit) for wl in workloads(args.quick)
            if not args.workloads or wl.name in args.workloads]
    rows += [(n, label, "s") for n, label in compile_row_names()
             if any(n in r for r in results.values())]
    ratio = ratios(results, threads, [r[0] for r in rows])
    crit = criteria(results, ratio, nmax) if nmax in threads or 1 in threads else {}
    host["loadavg_end"] = list(os.getloadavg())
    host["wall_s"] = round(time.perf_counter() - start, 1)

    print(f"\naccel benchmarks ({'quick' if args.quick else 'full'}), {host['date']}, "
          f"{host['cpu']} ({host['isa']}), {host['cores']} cores; median after warm-up"
          f"{'; accel with freeze_weights' if args.freeze_weights else ''}")
    print(table(results, shown, threads, rows, ratio))
    print("a/X = accel speed / X speed (> 1: accel faster); * = accel's 1-thread number (no "
          "all-threads result); n/s = not supported, n/a = not run by this framework")
    for key, w in workers.items():
        if w.get("skipped") or w.get("error"):
            print(f"  {key}: {w.get('skipped') or w.get('error')}")
        for name, row in w.get("results", {}).items():
            if "error" in row:
                print(f"  {key} {name}: {row['error']}")
    errs = {f"{fw}@{t}": {n: r["max_abs_err_vs_torch"] for n, r in res.items()
                          if "max_abs_err_vs_torch" in r}
            for (fw, t), res in results.items() if fw != "torch"}
    acc_err = errs.get("accel@1", {})
    if acc_err:
        print("accel max |accel - torch| (1T): "
              + ", ".join(f"{n} {e:.1e}" for n, e in acc_err.items()))
    for name, c in crit.items():
        mark = "n/a" if c["pass"] is None else ("PASS" if c["pass"] else "FAIL")
        value = "-" if c["value"] is None else f"{c['value']:.2f}"
        print(f"  done-when: {name}: {value} {mark}")
    print(f"wall time {host['wall_s']:.0f} s")

    doc = {"host": host, "mode": "quick" if args.quick else "full", "threads": threads,
           "units": {n: u for n, _, u in rows}, "labels": {n: lbl for n, lbl, _ in rows},
           "workers": workers, "ratios": ratio, "ratio_definition":
           "accel speed / peer speed (GFLOP/s ratio, or peer time / accel time); > 1: accel "
           "faster", "max_abs_err_vs_torch": errs, "criteria": crit}
    write_json(args.json, doc)


if __name__ == "__main__":
    main()
