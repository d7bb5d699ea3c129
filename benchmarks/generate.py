"""Text generation speed: tokens/s for prefill and decode, accel vs eager and inductor.

    .venv/bin/python benchmarks/generate.py                  # GPT-2 (4 layers), batch 1 and 8
    .venv/bin/python benchmarks/generate.py --quick          # tiny model, short run
    .venv/bin/python benchmarks/generate.py --model llama --threads 1 --json out.json

An HF causal LM with its default config options (sdpa attention, `use_cache=True`, a
`DynamicCache`), random weights (seeded: every framework runs the same model), greedy
`generate()` of `--new` tokens after a `--prompt`-token prompt. Frameworks:
- `eager`: `model.generate(...)`;
- `inductor`: `model.forward = torch.compile(model.forward)` (cold cache: a fresh
  `TORCHINDUCTOR_CACHE_DIR` per worker), then `generate`;
- `accel`: the same with `backend="accel"` (prefill, first decode step and one decode graph
  with a symbolic cache length);
- `accel-api`: a greedy loop over two `accel.compile`d programs: the prefill and a decode
  step whose cache length is dynamic (`dynamic_shapes={"cache": {2: seq}}`).
Timing (each framework warmed by one full run, which compiles): the median of repeated
runs with 1 new token (prefill + the first token) and with `--new` tokens. Prefill tokens/s =
batch x prompt / t(1); decode tokens/s = batch x (new - 1) / (t(new) - t(1)). Every run's
tokens are checked against eager's (`matches_eager`). Each (framework, thread count) runs
in its own subprocess with the thread counts set before torch is imported. Prints a table
(accel/peer speed ratios: > 1 means accel is faster) and writes JSON
(`benchmarks/results/generate.json`) with the CPU model, its ISA and the thread counts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import THREAD_ENV, all_threads, host_info  # noqa: E402 - the suite's host record

RESULTS = os.path.join(HERE, "results", "generate.json")
FRAMEWORKS = ("eager", "inductor", "accel", "accel-api")


def isa() -> list[str]:
    """The vector ISA flags of this CPU (what the figures depend on)."""
    wanted = ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16",
              "avx512_vnni", "amx_tile")
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return []
    return [w for w in wanted if w in flags]


def build(name: str, quick: bool) -> Any:
    """The model, default config options except sizes (seeded random weights)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    if name == "gpt2":
        sizes = dict(n_layer=2, n_head=2, n_embd=64) if quick else \
            dict(n_layer=4, n_head=8, n_embd=512)
        config = GPT2Config(vocab_size=1000, n_positions=256, initializer_range=0.1,
                            bos_token_id=0, eos_token_id=999, pad_token_id=999, **sizes)
        return GPT2LMHeadModel(config).eval()
    sizes = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2) if quick else \
        dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=2)
    config = LlamaConfig(vocab_size=1000, max_position_embeddings=256, initializer_range=0.1,
                         bos_token_id=0, eos_token_id=999, pad_token_id=999, **sizes)
    return LlamaForCausalLM(config).eval()


def _api_generator(model: Any) -> Any:
    """A greedy loop over accel.compile'd prefill and decode programs (compiled on first
    use per batch size)."""
    import accel
    import torch

    programs: dict[int, Any] = {}

    def generate(prompt: Any, new: int) -> Any:
        batch = prompt.shape[0]
        if batch not in programs:
            prefill = accel.compile(model, (prompt,))
            out = prefill(prompt)
            token = out.logits[:, -1:].argmax(-1)
            seq = torch.export.Dim.DYNAMIC
            decode = accel.compile(model, (token,),
                                   example_kwargs={"cache": out.cache, "use_cache": True},
                                   dynamic_shapes={"input_ids": None, "cache": {2: seq},
                                                   "use_cache": None})
            programs[batch] = (prefill, decode)
        prefill, decode = programs[batch]
        out = prefill(prompt)
        cache, token = out.cache, out.logits[:, -1:].argmax(-1)
        tokens = [prompt, token]
        for _ in range(new - 1):
            token = decode(token, cache=cache, use_cache=True).logits[:, -1:].argmax(-1)
            tokens.append(token)
        return torch.cat(tokens, dim=1)

    return generate


def worker(framework: str, threads: int, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    torch.set_num_threads(threads)
    model = build(args.model, args.quick)
    reference = build(args.model, args.quick)
    if framework == "inductor":
        model.forward = torch.compile(model.forward)
    elif framework == "accel":
        import accel.dynamo  # noqa: F401 - registers the backend

        model.forward = torch.compile(model.forward, backend="accel")
    api = _api_generator(model) if framework == "accel-api" else None

    def generate(prompt: Any, new: int) -> Any:
        if api is not None:
            return api(prompt, new)
        return model.generate(prompt, max_new_tokens=new, min_new_tokens=new,
                              do_sample=False)

    rows = {}
    for batch in args.batches:
        gen = torch.Generator().manual_seed(batch)
        prompt = torch.randint(1, 999, (batch, args.prompt), generator=gen)
        with torch.no_grad():
            want = reference.generate(prompt, max_new_tokens=args.new,
                                      min_new_tokens=args.new, do_sample=False)
            start = time.perf_counter()
            got = generate(prompt, args.new)  # compiles (prefill and decode graphs)
            first = time.perf_counter() - start
            times = {1: [], args.new: []}
            deadline = time.perf_counter() + args.seconds
            while time.perf_counter() < deadline or len(times[1]) < 3:
                for new in times:
                    start = time.perf_counter()
                    generate(prompt, new)
                    times[new].append(time.perf_counter() - start)
        t1, tn = statistics.median(times[1]), statistics.median(times[args.new])
        rows[str(batch)] = {
            "first_run_s": round(first, 3), "t_prefill_s": t1, "t_generate_s": tn,
            "prefill_tok_s": batch * args.prompt / t1,
            "decode_tok_s": batch * (args.new - 1) / max(tn - t1, 1e-9),
            "matches_eager": bool(torch.equal(got, want)), "reps": len(times[1])}
    extra = {}
    if framework == "accel":
        import accel.dynamo

        extra = {"graphs": len(accel.dynamo.graphs), "eager_graphs": accel.dynamo.stats["eager"]}
    return {"framework": framework, "threads": threads, "batches": rows, **extra}


def spawn(framework: str, threads: int, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    env.update({k: str(threads) for k in THREAD_ENV})
    with tempfile.TemporaryDirectory() as cache:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache
        command = [sys.executable, __file__, "--worker", framework, "--threads", str(threads),
                   "--model", args.model, "--prompt", str(args.prompt), "--new", str(args.new),
                   "--seconds", str(args.seconds), "--batches", *map(str, args.batches)]
        if args.quick:
            command.append("--quick")
        proc = subprocess.run(command, env=env, capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"framework": framework, "threads": threads,
                "error": f"worker exited {proc.returncode}: " + " | ".join(tail)}
    return json.loads(lines[-1])


def table(runs: list[dict[str, Any]], args: argparse.Namespace) -> str:
    by = {(r["framework"], r["threads"]): r for r in runs}
    lines = [f"{'threads':>7} {'batch':>5} {'framework':>10} {'prefill tok/s':>14} "
             f"{'decode tok/s':>13} {'first run s':>12} {'= eager':>8} "
             f"{'accel/eager':>12} {'accel/inductor':>15}"]
    for threads in args.threads:
        for batch in map(str, args.batches):
            for fw in args.frameworks:
                run = by.get((fw, threads), {})
                row = run.get("batches", {}).get(batch)
                if row is None:
                    lines.append(f"{threads:>7} {batch:>5} {fw:>10}  error: "
                                 f"{run.get('error', 'missing')[:80]}")
                    continue
                ratios = ""
                if fw.startswith("accel"):
                    for peer in ("eager", "inductor"):
                        other = by.get((peer, threads), {}).get("batches", {}).get(batch)
                        ratios += " {:>7}/{:<6}".format(
                            *(f"{row[k] / other[k]:.2f}" if other else "-"
                              for k in ("prefill_tok_s", "decode_tok_s")))
                lines.append(f"{threads:>7} {batch:>5} {fw:>10} {row['prefill_tok_s']:>14.1f} "
                             f"{row['decode_tok_s']:>13.1f} {row['first_run_s']:>12.1f} "
                             f"{'yes' if row['matches_eager'] else 'NO':>8}{ratios}")
    lines.append("ratios: prefill/decode tokens-per-second of accel over the peer (> 1: "
                 "accel faster)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("gpt2", "llama"), default="gpt2")
    parser.add_argument("--quick", action="store_true", help="tiny model, short timing")
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    parser.add_argument("--threads", nargs="+", type=int, default=None)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--prompt", type=int, default=32, help="prompt tokens")
    parser.add_argument("--new", type=int, default=32, help="generated tokens")
    parser.add_argument("--seconds", type=float, default=None, help="timing budget per case")
    parser.add_argument("--json", default=RESULTS)
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seconds is None:
        args.seconds = 2.0 if args.quick else 8.0
    if args.worker:
        print(json.dumps(worker(args.worker, args.threads[0], args)))
        return
    args.threads = args.threads or sorted({1, all_threads()})
    runs = [spawn(fw, t, args) for t in args.threads for fw in args.frameworks]
    report = {"host": {**host_info(), "isa": isa()}, "model": args.model, "quick": args.quick,
              "prompt": args.prompt, "new": args.new, "runs": runs}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    host = report["host"]
    print(f"{args.model}{' (quick)' if args.quick else ''}: {host['cpu']}, "
          f"{host['cores']} cores, ISA {' '.join(host['isa'])}")
    print(table(runs, args))
    print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
