"""One shard of an e2e run: `compile_and_run_test` per test and config, one JSON line each.

    python e2e_worker.py --suite DIR --config accel-mlir refbackend --tests shard.txt \
        --out shard.jsonl

Before each (test, config) it appends `{"start": TEST, "config": CONFIG}`, after it the
result, and flushes both, so when the process dies (a crash in compiled code, a watchdog
kill) `run_e2e.py` knows which one it was, records it, and starts a new worker on the rest
of the shard. Pairs that already have a result in `--out` are skipped (that is the restart).

A result: `{"test", "config", "status": "pass" | "fail", "stage", "reason", "seconds"}`;
`stage` is where it failed: `eager` (the golden trace), `export`, `linalg`, `run`, `match`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e_setup import all_tests, setup  # noqa: E402

#: The line that starts an exception's message in a traceback: `pkg.mod.SomeError: ...`.
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*\w*"
                        r"(?:Error|Exception|Unsupported|Interrupt|Failure|Crashed|Exit)(?::.*)?$")


def last_error(text: str) -> str:
    """The final exception of a formatted traceback as one line of at most 300 chars (for
    torch-mlir's compiler errors, with the first `error:` diagnostic after it)."""
    lines = text.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if _EXCEPTION.match(line)]
    if not starts:
        return (lines[-1] if lines else "")[:300]
    first = lines[starts[-1]]
    if "TorchMlirCompilerError" in first:
        diag = next((line.strip() for line in lines[starts[-1] + 1:] if "error:" in line), "")
        first = f"{first} {diag[diag.find('error:'):]}"
    return first[:300]


def classify(result: Any, stage: str) -> tuple[str, str | None, str]:
    """(status, failing stage, reason) of one `TestResult`."""
    from torch_mlir_e2e_test.reporting import ErrorContext, SingleTestReport

    if result.compilation_error is not None:  # the configs' compile() cannot fail: eager did
        return "fail", "eager", last_error(result.compilation_error)
    if result.runtime_error is not None:
        return "fail", stage, last_error(result.runtime_error)
    report = SingleTestReport(result, ErrorContext.empty())
    if report.failed:
        text = " ".join(line.strip() for line in report.error_str().splitlines()
                        if line.startswith("ERROR:"))
        return "fail", "match", (text or report.error_str().strip())[:300]
    return "pass", None, ""


def done_pairs(out: Path) -> set[tuple[str, str]]:
    """(test, config) pairs with a result (or a crash recorded by the parent) in `out`."""
    done: set[tuple[str, str]] = set()
    if out.exists():
        for line in out.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a crash
                continue
            if "test" in record:
                done.add((record["test"], record["config"]))
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--config", required=True, nargs="+")
    parser.add_argument("--tests", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--options", default="{}", help="accel options as JSON")
    args = parser.parse_args(argv)

    setup(args.suite)
    import warnings

    from e2e_configs import FxFront, make_config
    from torch_mlir_e2e_test.framework import compile_and_run_test

    warnings.simplefilter("ignore")  # torch.export's deprecation chatter, per test
    tests = all_tests()
    front = FxFront()
    options = json.loads(args.options)
    configs = {name: make_config(name, options, front) for name in args.config}
    names = [n for n in args.tests.read_text().split() if n]
    done = done_pairs(args.out)
    with args.out.open("a") as out:
        for name in names:
            front.begin(name)
            for config_name, config in configs.items():
                if (name, config_name) in done:
                    continue
                out.write(json.dumps({"start": name, "config": config_name}) + "\n")
                out.flush()
                start = time.perf_counter()
                record = {"test": name, "config": config_name}
                test = tests.get(name)
                if test is None:
                    record.update(status="fail", stage="eager",
                                  reason="no such test in the suite")
                else:
                    result = compile_and_run_test(test, config)
                    status, stage, reason = classify(result, config.stage)
                    record.update(status=status, stage=stage, reason=reason)
                    error = result.compilation_error or result.runtime_error
                    if error:  # the traceback's end, for reading the failure later
                        record["detail"] = error[-2000:]
                record["seconds"] = round(time.perf_counter() - start, 3)
                out.write(json.dumps(record) + "\n")
                out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
