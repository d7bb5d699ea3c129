"""torch-mlir's e2e suite through accel and torch-mlir's RefBackend (`make e2e`, docs/e2e.md).

    python test/e2e/run_e2e.py --suite $E2E_SUITE_DIR --config accel-mlir accel-torch refbackend
    python test/e2e/run_e2e.py --sample              # the vendored 100-test sample (make check)

Tests are split into `--shards` worker processes (`e2e_worker.py`), each calling the suite's
`compile_and_run_test` once per test (the suite's `run_tests` runs every test twice on a
2-core machine). A worker that dies is restarted on the rest of its shard and the test it
was running is recorded as `crash`; one that makes no progress for `--hang-seconds` is
killed and its test recorded as `hang`. Prints per config the count of tests that pass each
stage (eagerly, export, lower to linalg on tensors, run, match eager) and the failures
grouped by reason (`--report` writes that to a file too); `--json` writes every result;
`--expected FILE` (a JSON of pass lists per config) makes the exit status 1 when a test
listed there no longer passes.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from e2e_setup import SAMPLE_SUITE  # noqa: E402

STAGES = ("eager", "export", "linalg", "run", "match")
#: What each stage row counts: tests that got through it.
STAGE_TITLES = {"eager": "pass eagerly", "export": "export", "linalg":
                "lower to linalg-on-tensors", "run": "run", "match": "match eager"}
SAMPLE_LIST = HERE / "sample.txt"
SAMPLE_EXPECTED = HERE / "sample_expected.json"


# -- sharded running ------------------------------------------------------------------------
def _read_records(path: Path) -> list[dict[str, Any]]:
    records = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return records


class WorkerSetupError(RuntimeError):
    """A worker failed before running any test (its last stderr line)."""


def run_shard(suite: str, configs: list[str], names: list[str], work: Path, index: int,
              options: dict[str, Any], hang_seconds: float, log: Any) -> list[dict[str, Any]]:
    """Run `names` through `configs` in worker processes until every pair has a record."""
    tests_file = work / f"shard-{index}.txt"
    out = work / f"shard-{index}.jsonl"
    tests_file.write_text("\n".join(names) + "\n")
    cmd = [sys.executable, str(HERE / "e2e_worker.py"), "--suite", suite, "--config", *configs,
           "--tests", str(tests_file), "--out", str(out), "--options", json.dumps(options)]
    wanted = {(n, c) for n in names for c in configs}
    while True:
        records = _read_records(out)
        finished = {(r["test"], r["config"]) for r in records if "test" in r}
        if wanted <= finished:
            return [r for r in records if "test" in r]
        errors = work / f"shard-{index}.stderr"
        before = len(records)
        with errors.open("ab") as stderr:
            err_start = stderr.tell()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr)
            hung = _watch(proc, out, hang_seconds)
        if proc.returncode == 0 and not hung:
            continue
        records = _read_records(out)
        if proc.returncode == 1 and len(records) == before:
            # A Python error before the first test (a config the suite cannot build, an
            # import error): every restart would fail the same way.
            tail = errors.read_bytes()[err_start:].decode(errors="replace").strip()
            raise WorkerSetupError(tail.splitlines()[-1] if tail else "no message")
        finished = {(r["test"], r["config"]) for r in records if "test" in r}
        started = [(r["start"], r["config"]) for r in records if "start" in r]
        victim = next((p for p in reversed(started) if p not in finished), None)
        if victim is None:  # died before starting a test: blame the next one, never loop
            victim = next((n, c) for n in names for c in configs if (n, c) not in finished)
        status = "hang" if hung else "crash"
        reason = f"no progress for {hang_seconds:.0f} s: killed" if hung else \
            f"worker process died (exit status {proc.returncode})"
        print(f"  {victim[1]}: {victim[0]}: {status} ({reason}); restarting the shard",
              file=log, flush=True)
        with out.open("a") as f:
            f.write(json.dumps({"test": victim[0], "config": victim[1], "status": status,
                                "stage": "run", "reason": reason, "seconds": None}) + "\n")


def _watch(proc: subprocess.Popen, out: Path, hang_seconds: float) -> bool:
    """Wait for `proc`; kill it when `out` has not grown for `hang_seconds` (True then)."""
    last_size, last_change = -1, time.monotonic()
    while proc.poll() is None:
        time.sleep(0.5)
        size = out.stat().st_size if out.exists() else 0
        if size != last_size:
            last_size, last_change = size, time.monotonic()
        elif time.monotonic() - last_change > hang_seconds:
            proc.kill()
            proc.wait()
            return True
    return False


def run_all(suite: str, configs: list[str], names: list[str], shards: int, work: Path,
            options: dict[str, Any], hang_seconds: float, log: Any
            ) -> dict[str, list[dict[str, Any]]]:
    """All `names` through `configs` in `shards` parallel shards (round-robin split):
    {config: records in the order of `names`}."""
    parts = [names[i::shards] for i in range(shards)]
    results: list[list[dict[str, Any]]] = [[] for _ in parts]
    failed: list[WorkerSetupError] = []

    def one(i: int) -> None:
        try:
            results[i] = run_shard(suite, configs, parts[i], work, i, options, hang_seconds,
                                   log)
        except WorkerSetupError as err:
            failed.append(err)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(parts)) if parts[i]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    by_pair = {(r["test"], r["config"]): r for part in results for r in part}
    return {c: [by_pair[(n, c)] for n in names] for c in configs}


# -- reporting ------------------------------------------------------------------------------
def stage_counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """Tests that got through each stage (a crash or hang counts as failing `run`)."""
    failed_at = collections.Counter(r["stage"] for r in records if r["status"] != "pass")
    counts, left = {}, len(records)
    for stage in STAGES:
        left -= failed_at.get(stage, 0)
        counts[stage] = left
    return counts


_NUMBERS = re.compile(r"\b0x[0-9a-f]+\b|(?<![A-Za-z0-9_])\d+(\.\d+)?(?![A-Za-z0-9_])")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_TYPES = re.compile(r"\b(tensor|memref|vector|!torch\.vtensor)<[^>]*>")
#: The test's module class (accel's errors name the model) and source locations.
_MODULES = re.compile(r"\b[A-Z]\w*(?:Module|Model|Layer)\w*\b")
_PATHS = re.compile(r"(?: at)? /[^\s:]+\.py(?::\d+)?")


def group_key(record: dict[str, Any]) -> str:
    """A failure's reason with test-specific details (numbers, names) blurred."""
    reason = record["reason"] or ""
    if record["status"] in ("crash", "hang"):
        return record["status"]
    reason = re.sub(r"^.*?error: ", "", reason)
    reason = reason.replace("accel.diagnostics.AccelError: ", "AccelError: ")
    reason = _PATHS.sub("", reason)
    reason = _MODULES.sub("M", reason)
    reason = _QUOTED.sub("'...'", reason)
    reason = _TYPES.sub(r"\1<...>", reason)
    reason = _NUMBERS.sub("N", reason)
    return f"{record['stage']}: {reason[:110]}"


def print_report(config: str, records: list[dict[str, Any]], out: Any,
                 seconds: float) -> None:
    counts = stage_counts(records)
    own = sum(r["seconds"] or 0 for r in records)
    print(f"\n== {config}: {len(records)} tests ({own:.0f} s in workers; the whole run "
          f"{seconds:.0f} s)", file=out)
    for stage in STAGES:
        print(f"  {STAGE_TITLES[stage]:<28} {counts[stage]:>5}", file=out)
    crashes = sum(r["status"] in ("crash", "hang") for r in records)
    print(f"  {'crashed or hung':<28} {crashes:>5}", file=out)
    groups = collections.defaultdict(list)
    for r in records:
        if r["status"] != "pass":
            groups[group_key(r)].append(r["test"])
    if groups:
        print("  failures by reason:", file=out)
    for key, tests in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(tests[:4]) + (", ..." if len(tests) > 4 else "")
        print(f"  {len(tests):>5}  {key}\n         {shown}", file=out)


def regressions(expected: dict[str, list[str]], results: dict[str, list[dict[str, Any]]]
                ) -> list[str]:
    """`config: test` for every test `expected` lists as passing that did not pass."""
    lost = []
    for config, records in results.items():
        passed = {r["test"] for r in records if r["status"] == "pass"}
        lost += [f"{config}: {t}" for t in expected.get(config, []) if t not in passed]
    return lost


# -- main -----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default=os.environ.get("E2E_SUITE_DIR"),
                        help="a torch-mlir checkout or the folder holding torch_mlir_e2e_test "
                        "(default: $E2E_SUITE_DIR)")
    parser.add_argument("--sample", action="store_true",
                        help="the vendored 100-test sample (test/e2e/suite_sample, sample.txt)"
                        " checked against sample_expected.json")
    parser.add_argument("--config", nargs="+", default=["accel-mlir", "accel-torch",
                                                        "refbackend"])
    parser.add_argument("--tests", type=Path, help="a file of test names (default: all)")
    parser.add_argument("-k", dest="pattern", help="only tests whose name matches this regex")
    parser.add_argument("--shards", type=int, default=max(os.cpu_count() or 1, 1))
    parser.add_argument("--hang-seconds", type=float, default=300.0)
    parser.add_argument("--options", default="{}", help="accel options as JSON")
    parser.add_argument("--work", type=Path,
                        help="keep the shards' files here (default: a temporary folder); "
                        "run again with the same --work, tests and --shards to resume")
    parser.add_argument("--json", type=Path, help="write every result here")
    parser.add_argument("--report", type=Path, help="write the printed report here too")
    parser.add_argument("--expected", type=Path,
                        help="JSON {config: [tests that must pass]}: exit 1 on a regression")
    parser.add_argument("--write-expected", type=Path,
                        help="write this run's pass lists as such a JSON")
    args = parser.parse_args(argv)

    if args.sample:
        args.suite = str(SAMPLE_SUITE)
        args.tests = args.tests or SAMPLE_LIST
        args.expected = args.expected or SAMPLE_EXPECTED
    if not args.suite:
        print("run_e2e.py: no suite: pass --suite or set E2E_SUITE_DIR to a torch-mlir "
              "checkout (docs/e2e.md says how to get one), or use --sample", file=sys.stderr)
        return 2
    try:
        from e2e_setup import all_tests, setup

        setup(args.suite)
        names = sorted(all_tests())
    except FileNotFoundError as err:
        print(f"run_e2e.py: {err}", file=sys.stderr)
        return 2
    if args.tests:
        wanted = args.tests.read_text().split()
        names = [n for n in wanted if n]
    if args.pattern:
        names = [n for n in names if re.search(args.pattern, n)]
    options = json.loads(args.options)

    start = time.perf_counter()
    print(f"{len(names)} tests x {', '.join(args.config)} in {args.shards} shards ...",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="accel-e2e-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        try:
            results = run_all(args.suite, args.config, names, args.shards, work,
                              options, args.hang_seconds, sys.stdout)
        except WorkerSetupError as err:
            print(f"run_e2e.py: a worker failed before its first test: {err}",
                  file=sys.stderr)
            return 2
    seconds = time.perf_counter() - start
    report = io.StringIO()
    for config, records in results.items():
        print_report(config, records, report, seconds)
    print(report.getvalue(), end="")
    if args.report:
        args.report.write_text(report.getvalue().lstrip("\n"))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if args.write_expected:
        passing = {c: sorted(r["test"] for r in rs if r["status"] == "pass")
                   for c, rs in results.items()}
        args.write_expected.write_text(json.dumps(passing, indent=1) + "\n")
    status = 0
    if any(r["status"] in ("crash", "hang") for c, rs in results.items() for r in rs
           if c.startswith("accel")):
        print("\nrun_e2e.py: accel crashed or hung a runner process (see above)")
        status = 1
    if args.expected:
        lost = regressions(json.loads(args.expected.read_text()), results)
        if lost:
            print(f"\nrun_e2e.py: {len(lost)} expected passes now fail:\n  " + "\n  ".join(lost))
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
