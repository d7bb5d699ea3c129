"""Model zoo benchmark: accel vs eager, inductor and onnxruntime on models as users bring them.

    .venv/bin/python benchmarks/zoo.py              # published sizes (GPT-2 small, BERT-base,
                                                    # ResNet at 224x224, ...): ~1 h on 2 cores
    .venv/bin/python benchmarks/zoo.py --quick      # smaller models, shorter timing
    .venv/bin/python benchmarks/zoo.py --models gpt2 resnet18 --threads 1

The models are benchmarks/zoo_models.py's (random weights, default HF configs: sdpa
attention, use_cache=True, dropout as configured; eval mode). Per model: does accel compile
it (y/n), max |accel - eager|, accel's compile time and inductor's cold compile time, and
the median time of one inference for eager, inductor (`torch.compile`), onnxruntime
(`torch.onnx.export`, all graph optimisations) and accel (`accel.compile`, default
opt_level), at 1 thread and at all cores.

Each (framework, thread count) runs in its own subprocess (this file with `--worker`), with
OMP/MKL/OpenBLAS/ACCEL thread counts set in its environment before torch is imported (and
`torch.set_num_threads`, onnxruntime's intra-op threads). A worker prints one JSON line per
model; a model that fails records its error and the worker goes on; a worker that dies is
started again on the models it had left. The 1-thread workers compile from scratch (accel
into a fresh ACCEL_CACHE_DIR, inductor into a fresh TORCHINDUCTOR_CACHE_DIR, the ONNX
exports into a temporary folder); the all-cores workers reuse what they wrote. The parent
prints one table and writes `benchmarks/results/zoo.json` (raw numbers, host with CPU
model, ISA flags and thread counts, ratios). Ratios are speed ratios: > 1 means accel is
faster. See docs/model-zoo.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from benchmarks.run import (  # noqa: E402
    THREAD_ENV,
    all_threads,
    host_info,
    measure,
    write_json,
)

RESULTS = os.path.join(HERE, "results", "zoo.json")
FRAMEWORKS = ["torch", "inductor", "onnxruntime", "accel"]
#: Set in the workers' environment by --freeze-weights (accel's `freeze_weights` option).
FREEZE_ENV = "ACCEL_BENCH_FREEZE_WEIGHTS"
LABELS = {"torch": "eager", "inductor": "inductor", "onnxruntime": "ort", "accel": "accel"}
PEERS = ["torch", "inductor", "onnxruntime"]
#: x86 ISA flags of /proc/cpuinfo worth recording (what the kernels can use).
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16")


# --- worker --------------------------------------------------------------------------------


def _flat(value: Any) -> list[Any]:
    """The tensors of a model output in pytree order (ModelOutputs and caches included)."""
    import torch
    import torch.utils._pytree as pytree

    return [v for v in pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _first(built: Any, out: Any) -> Any:
    selected = built.select(out)
    return selected[0] if isinstance(selected, tuple) else selected


class Runner:
    """Turns a built zoo model into a no-argument call for one framework (in a worker)."""

    def __init__(self, framework: str, threads: int, export_dir: str) -> None:
        self.framework, self.threads, self.export_dir = framework, threads, export_dir

    def prepare(self, name: str, built: Any, inputs: tuple[Any, ...]) -> tuple[Any, dict]:
        """(call returning the output to compare, info: compile seconds and notes)."""
        import torch

        if self.framework == "torch":
            return (lambda: _first(built, built.model(*inputs))), {}
        if self.framework == "inductor":
            torch._dynamo.reset()
            compiled = torch.compile(built.model)
            return (lambda: _first(built, compiled(*inputs))), {}
        if self.framework == "accel":
            import accel

            start = time.perf_counter()
            fn = accel.compile(built.model, inputs, options={
                "num_threads": self.threads,
                "freeze_weights": os.environ.get(FREEZE_ENV) == "1"})
            info = {"compile_s": time.perf_counter() - start, "cache_hit": fn.cache_hit}
            return (lambda: _first(built, fn(*inputs))), info
        if self.framework == "onnxruntime":
            return self._onnxruntime(name, built, inputs)
        raise ValueError(self.framework)

    def _onnxruntime(self, name: str, built: Any, inputs: tuple[Any, ...]
                     ) -> tuple[Any, dict]:
        import onnxruntime as ort
        import torch

        path = os.path.join(self.export_dir, f"{name}.onnx")
        info: dict[str, Any] = {}
        config = getattr(built.model, "config", None)
        if os.path.exists(path + ".no-cache"):
            config.use_cache = False
        if not os.path.exists(path):  # the 1-thread worker exports; the others reuse it
            start = time.perf_counter()
            with contextlib.redirect_stdout(sys.stderr):
                try:
                    torch.onnx.export(built.model, inputs, path, dynamo=True,
                                      external_data=True)
                except Exception as e:  # noqa: BLE001 - a cache in the output: without it
                    if not getattr(config, "use_cache", False):
                        raise
                    config.use_cache = False
                    torch.onnx.export(built.model, inputs, path, dynamo=True,
                                      external_data=True)
                    with open(path + ".no-cache", "w") as f:
                        f.write(_err(e))
            info["export_s"] = time.perf_counter() - start
        if os.path.exists(path + ".no-cache"):
            info["note"] = "exported with use_cache=False (the default failed)"
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        start = time.perf_counter()
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        info["session_s"] = time.perf_counter() - start
        feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs, strict=True)}
        want = _first(built, built.model(*inputs))
        outputs = session.get_outputs()
        # The compared output: the first ONNX output of the eager output's shape.
        index = next((i for i, o in enumerate(outputs) if list(o.shape) == list(want.shape)),
                     0)
        names = [outputs[index].name]
        return (lambda: torch.from_numpy(session.run(names, feeds)[0])), info


def _err(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    return text if len(text) < 500 else text[:500] + " ..."


def run_model(runner: Runner, name: str, size: str, quick: bool) -> dict[str, Any]:
    import torch

    from benchmarks.zoo_models import ZOO

    built = ZOO[name](size)
    inputs = built.inputs(0)
    row: dict[str, Any] = {"label": built.label}
    with torch.no_grad():
        ref = _first(built, built.model(*inputs))
        try:
            call, info = runner.prepare(name, built, inputs)
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on
            row["error"] = _err(e)
            return row
        row.update(info)
        budget, min_reps, max_reps = (0.3, 3, 50) if quick else (2.0, 5, 200)
        m = measure(call, budget, min_reps, max_reps)
    if runner.framework == "inductor":  # compiles in its first call
        row["compile_s"] = max(m["first_s"] - m["median_s"], 0.0)
    out = m.pop("out")
    row.update(m)
    row["ms"] = m["median_s"] * 1e3
    if tuple(out.shape) == tuple(ref.shape):
        diff = (out.double() - ref.double()).abs()
        row["max_abs_err"] = float(diff.max())
        row["max_rel_err"] = float(diff.max() / max(float(ref.abs().max()), 1e-30))
    else:
        row["error"] = f"output shape {tuple(out.shape)} != eager's {tuple(ref.shape)}"
    return row


def worker(framework: str, threads: int, models: list[str], size: str, quick: bool,
           export_dir: str) -> None:
    import torch

    torch.set_num_threads(threads)
    if framework == "onnxruntime":
        try:
            import onnxruntime  # noqa: F401
        except ImportError as e:
            for name in models:
                print(json.dumps({"model": name, "row": {"na": f"not installed: {e}"}}),
                      flush=True)
            return
    runner = Runner(framework, threads, export_dir)
    for name in models:
        print(f"  [{framework} x{threads}] {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            row = run_model(runner, name, size, quick)
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on
            row = {"error": _err(e)}
        row["wall_s"] = time.perf_counter() - start
        print(json.dumps({"model": name, "row": row}), flush=True)


# --- parent --------------------------------------------------------------------------------


def _run_worker(framework: str, threads: int, models: list[str], args: argparse.Namespace,
                dirs: dict[str, str]) -> dict[str, Any]:
    """Rows by model; a worker that dies is restarted on the models it had left."""
    env = dict(os.environ)
    env.update({k: str(threads) for k in THREAD_ENV})
    env["ACCEL_CACHE_DIR"] = dirs["accel"]
    env[FREEZE_ENV] = "1" if args.freeze_weights else "0"
    env["TORCHINDUCTOR_CACHE_DIR"] = dirs["inductor"]
    rows: dict[str, Any] = {}
    left = list(models)
    while left:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", framework, str(threads),
               "--size", args.size, "--export-dir", dirs["onnx"], "--models", *left]
        if args.quick:
            cmd.append("--quick")
        tail: list[str] = []
        with tempfile.TemporaryFile(mode="w+") as err:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err,
                                    text=True)
            assert proc.stdout is not None
            watchdog = threading.Timer(args.worker_timeout, proc.kill)
            watchdog.start()
            try:
                for line in proc.stdout:
                    if line.startswith("{"):
                        doc = json.loads(line)
                        rows[doc["model"]] = doc["row"]
                        left.remove(doc["model"])
                proc.wait()
            finally:
                watchdog.cancel()
            err.seek(0)
            tail = [ln.rstrip() for ln in err.read().splitlines() if ln.strip()][-4:]
        if left and proc.returncode != 0:  # died in left[0]: record it, go on with the rest
            rows[left.pop(0)] = {"error": f"worker exited {proc.returncode}: "
                                 + " | ".join(tail)[-600:]}
        elif left:
            break
    return rows


def isa_flags() -> list[str]:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return [flag for flag in ISA_FLAGS if flag in have]
    return []


def _speed(row: dict[str, Any] | None) -> float | None:
    if not row or "error" in row or not row.get("ms"):
        return None
    return 1.0 / row["ms"]


def ratios(results: dict[tuple[str, int], dict[str, Any]], threads: list[int],
           models: list[str]) -> dict[str, Any]:
    """accel speed / peer speed per model, peer and thread count (> 1: accel faster)."""
    out: dict[str, Any] = {}
    for name in models:
        per: dict[str, float] = {}
        for t in threads:
            acc = _speed(results.get(("accel", t), {}).get(name))
            for peer in PEERS:
                other = _speed(results.get((peer, t), {}).get(name))
                if acc and other:
                    per[f"{peer}@{t}"] = acc / other
        acc_c = results.get(("accel", threads[0]), {}).get(name, {}).get("compile_s")
        ind_c = results.get(("inductor", threads[0]), {}).get(name, {}).get("compile_s")
        if acc_c and ind_c:
            per["compile_vs_inductor"] = ind_c / acc_c
        out[name] = per
    return out


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}" if value < 1000 else f"{value:.0f}"


def table(results: dict[tuple[str, int], dict[str, Any]], threads: list[int],
          models: list[str], ratio: dict[str, Any], frameworks: list[str]) -> str:
    t0 = threads[0]
    head = ["model", "ok", "max err", "acc comp s", "ind comp s"]
    for t in threads:
        head += [f"{LABELS[fw]} {t}T ms" for fw in frameworks]
        head += [f"a/{LABELS[p][:3]} {t}T" for p in PEERS if p in frameworks]
    rows = [head]
    for name in models:
        acc = results.get(("accel", t0), {}).get(name, {})
        ok = "-" if not acc else ("n" if "error" in acc else "y")
        cells = [acc.get("label", name) if acc else name, ok,
                 _fmt(acc.get("max_rel_err"), 2) if "max_rel_err" in acc else "-",
                 _fmt(acc.get("compile_s")),
                 _fmt(results.get(("inductor", t0), {}).get(name, {}).get("compile_s"))]
        for t in threads:
            for fw in frameworks:
                row = results.get((fw, t), {}).get(name, {})
                cells.append("err" if "error" in row else ("n/a" if "na" in row
                                                           else _fmt(row.get("ms"))))
            for p in PEERS:
                if p in frameworks:
                    r = ratio.get(name, {}).get(f"{p}@{t}")
                    cells.append(f"{r:.2f}" if r else "-")
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                       enumerate(zip(r, widths, strict=True))) for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def main() -> None:
    from benchmarks.zoo_models import ZOO

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller models, shorter timing")
    parser.add_argument("--models", nargs="+", choices=list(ZOO), default=list(ZOO))
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=FRAMEWORKS)
    parser.add_argument("--threads", nargs="+", type=int,
                        help="thread counts (default: 1 and all cores)")
    parser.add_argument("--json", default=RESULTS, help=f"output file (default {RESULTS})")
    parser.add_argument("--freeze-weights", action="store_true",
                        help="compile accel with freeze_weights (parameters packed once, "
                             "as onnxruntime does; inductor runs without freezing)")
    parser.add_argument("--worker-timeout", type=float, default=5400,
                        help="seconds before a worker is killed")
    parser.add_argument("--size", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--export-dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker", nargs=2, metavar=("FRAMEWORK", "THREADS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.size = args.size or ("quick" if args.quick else "full")
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.models, args.size, args.quick,
               args.export_dir)
        return

    threads = args.threads or sorted({1, all_threads()})
    host = host_info()
    versions = host["versions"]
    for dist in ("onnxruntime", "onnx", "onnxscript"):
        with contextlib.suppress(Exception):
            import importlib.metadata

            versions[dist] = importlib.metadata.version(dist)
    host["isa"] = isa_flags()
    host["threads"] = threads
    host["accel_options"] = {"freeze_weights": args.freeze_weights}
    start = time.perf_counter()
    results: dict[tuple[str, int], dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        dirs = {k: stack.enter_context(tempfile.TemporaryDirectory(prefix=f"zoo-{k}-"))
                for k in ("accel", "inductor", "onnx")}
        for fw in args.frameworks:
            for t in threads:
                results[(fw, t)] = _run_worker(fw, t, args.models, args, dirs)
    host["loadavg_end"] = list(os.getloadavg())
    host["wall_s"] = round(time.perf_counter() - start, 1)
    ratio = ratios(results, threads, args.models)

    print(f"\naccel model zoo ({args.size}), {host['date']}, {host['cpu']} "
          f"({', '.join(host['isa'])}), {host['cores']} cores; median ms per inference"
          f"{'; accel with freeze_weights' if args.freeze_weights else ''}")
    print(table(results, threads, args.models, ratio, args.frameworks))
    print("ok: accel compiled the model; max err: max |accel - eager| / max |eager|; comp s: "
          "compile seconds (inductor: first call - steady call, cold cache); a/X = accel "
          "speed / X speed (> 1: accel faster)")
    for (fw, t), rows in results.items():
        for name, row in rows.items():
            if "error" in row:
                print(f"  {fw}@{t} {name}: {row['error']}")
    print(f"wall time {host['wall_s']:.0f} s")
    doc = {"host": host, "size": args.size, "threads": threads,
           "results": {f"{fw}@{t}": rows for (fw, t), rows in results.items()},
           "ratios": ratio, "ratio_definition": "accel speed / peer speed (peer time / accel "
           "time); > 1: accel faster; compile_vs_inductor: inductor compile s / accel compile s"}
    write_json(args.json, doc)


if __name__ == "__main__":
    main()
