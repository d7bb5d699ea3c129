"""accel's fuzz harness: generated and mutated inputs, each classified ok / clean / defect.

    .venv/bin/python test/fuzz/fuzz.py --count 10000 --seed 1          # make fuzz
    .venv/bin/python test/fuzz/fuzz.py --family ir,pipeline --count 500
    .venv/bin/python test/fuzz/fuzz.py --replay fuzz-out/defects/123.json

Inputs run in long-lived worker processes forked from this one (imports done once): a
worker handles many inputs and is replaced when it dies; a signal or a hang is attributed
to the input it was running. Cases are a pure function of (seed, index), so a run and any
defect replay exactly. Prints a family x outcome table, writes `--out/report.json` and one
replayable JSON per defect under `--out/defects/`. docs/fuzzing.md describes the families,
the outcomes and the KNOWN list of the pytest slice (test/unit/test_fuzz_slice.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fz_pool  # noqa: E402 - after the path: the harness's own modules
from fz_cases import FAMILIES, Generator  # noqa: E402
from fz_fixtures import build, corpus  # noqa: E402

OUTCOMES = ("ok", "clean", "defect")


def prepare(work: Path) -> tuple[Path, dict[str, Any]]:
    """Build the fixtures in a forked child (it compiles; this process must not start
    LLVM's or torch's threads before forking workers); returns (folder, catalog)."""
    fixtures = work / "fixtures"
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.environ["ACCEL_NUM_THREADS"] = "1"
            quiet = os.open(os.devnull, os.O_WRONLY)  # accel-compile's "wrote ..." lines
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            build(fixtures)
        except BaseException as err:  # noqa: BLE001 - reported through the exit status
            print(f"fuzz: building fixtures failed: {err!r}", file=sys.stderr)
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise SystemExit("fuzz: could not build the fixtures")
    return fixtures, json.loads((fixtures / "catalog.json").read_text())


def run(*, seed: int, count: int, families: tuple[str, ...], workers: int, timeout: float,
        time_limit: float | None, out: Path | None, quick: bool = False,
        start: int = 0, verbose: bool = False) -> dict[str, Any]:
    """Run `count` cases; the report (table, defects, timing)."""
    work = Path(tempfile.mkdtemp(prefix="accel-fuzz-"))
    began = time.monotonic()
    try:
        os.environ["ACCEL_CACHE_DIR"] = str(work / "cache")
        os.environ["ACCEL_NUM_THREADS"] = "1"
        fixtures, catalog = prepare(work)
        gen = Generator(seed, families, corpus(), catalog, quick=quick)
        cases = (gen.case(i) for i in range(start, start + count))
        results = fz_pool.run_all(cases, fixtures, work, workers=workers, timeout=timeout,
                                  deadline=None if time_limit is None else began + time_limit,
                                  verbose=verbose, progress=1000 if count >= 2000 else 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(results, seed=seed, seconds=time.monotonic() - began, out=out)


def report(results: list[tuple[dict[str, Any], dict[str, Any]]], *, seed: int,
           seconds: float, out: Path | None) -> dict[str, Any]:
    table: dict[str, Counter[str]] = {}
    kinds: dict[str, Counter[str]] = {}
    defects = []
    seconds_by_kind: Counter[str] = Counter()
    for case, result in results:
        table.setdefault(case["family"], Counter())[result["outcome"]] += 1
        kinds.setdefault(case["kind"], Counter())[result["outcome"]] += 1
        seconds_by_kind[case["kind"]] += result.get("seconds", 0.0)
        if result["outcome"] == "defect":
            entry = {"id": case["id"], "family": case["family"], "kind": case["kind"],
                     "reason": result["reason"], "message": result.get("message", "")[:400]}
            if out is not None:
                path = out / "defects" / f"{case['id']}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"case": case, "result": result}, indent=1))
                entry["replay"] = str(path)
            defects.append(entry)
    summary = {"seed": seed, "inputs": len(results), "seconds": round(seconds, 1),
               "table": {f: dict(c) for f, c in sorted(table.items())},
               "kinds": {k: dict(c) for k, c in sorted(kinds.items())},
               "mean_seconds": {k: round(seconds_by_kind[k] / sum(c.values()), 3)
                                for k, c in sorted(kinds.items())},
               "defects": defects}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps(summary, indent=1))
    return summary


def format_table(summary: dict[str, Any]) -> str:
    rows = [("family", *OUTCOMES, "total")]
    totals: Counter[str] = Counter()
    for family, counts in summary["table"].items():
        rows.append((family, *(str(counts.get(o, 0)) for o in OUTCOMES),
                     str(sum(counts.values()))))
        totals.update(counts)
    rows.append(("all", *(str(totals.get(o, 0)) for o in OUTCOMES),
                 str(sum(totals.values()))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))) for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    rate = summary["inputs"] / max(summary["seconds"], 1e-9)
    lines.append(f"{summary['inputs']} inputs in {summary['seconds']} s ({rate:.1f}/s), "
                 f"seed {summary['seed']}")
    return "\n".join(lines)


def replay(paths: list[Path], timeout: float) -> int:
    """Run saved cases again (in workers, as in the run) and print what happens; 1 if any
    is still a defect."""
    cases = []
    for path in paths:
        saved = json.loads(path.read_text())
        cases.append(saved.get("case", saved))
    work = Path(tempfile.mkdtemp(prefix="accel-fuzz-"))
    try:
        os.environ["ACCEL_CACHE_DIR"] = str(work / "cache")
        if all(c.get("kind") == "selftest" for c in cases):  # the harness's own test
            fixtures = work / "fixtures"
            fixtures.mkdir()
        else:
            fixtures, _ = prepare(work)
        results = fz_pool.run_all(iter(cases), fixtures, work, workers=1, timeout=timeout,
                                  deadline=None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for case, result in results:
        print(json.dumps({k: v for k, v in case.items() if k != "text"}, indent=1)[:3000])
        if "text" in case:
            print("--- input ---\n" + case["text"][:3000])
        print(f"--- outcome: {result['outcome']}: {result.get('reason', '')}")
        for key in ("message", "detail"):
            if result.get(key):
                print(f"--- {key} ---\n{result[key]}")
    return 1 if any(r["outcome"] == "defect" for _, r in results) else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuzz.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=1000, help="inputs to run (default 1000)")
    p.add_argument("--start", type=int, default=0, help="index of the first case")
    p.add_argument("--family", default=",".join(FAMILIES),
                   help=f"comma-separated families (default all: {','.join(FAMILIES)})")
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds one input may take before it counts as a hang")
    p.add_argument("--time-limit", type=float, default=None,
                   help="stop starting new inputs after this many seconds")
    p.add_argument("--out", type=Path, default=Path("fuzz-out"),
                   help="folder for report.json and defects/<id>.json (default fuzz-out)")
    p.add_argument("--quick", action="store_true",
                   help="fewer torch compiles (the pytest slice)")
    p.add_argument("--replay", type=Path, nargs="+", metavar="FILE",
                   help="run saved defects (defects/<id>.json) again and show them")
    p.add_argument("-v", "--verbose", action="store_true", help="print every defect as found")
    a = p.parse_args(argv)
    if a.replay:
        return replay(a.replay, a.timeout)
    families = tuple(f for f in a.family.split(",") if f)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        p.error(f"unknown family {', '.join(unknown)}; choose from {', '.join(FAMILIES)}")
    summary = run(seed=a.seed, count=a.count, families=families, workers=a.workers,
                  timeout=a.timeout, time_limit=a.time_limit, out=a.out, quick=a.quick,
                  start=a.start, verbose=a.verbose)
    print(format_table(summary))
    for d in summary["defects"][:40]:
        print(f"defect #{d['id']} {d['family']}/{d['kind']}: {d['reason']}: "
              f"{d['message'][:160]!r}")
    if len(summary["defects"]) > 40:
        print(f"... {len(summary['defects']) - 40} more in {a.out / 'report.json'}")
    return 1 if summary["defects"] else 0


if __name__ == "__main__":
    sys.exit(main())
