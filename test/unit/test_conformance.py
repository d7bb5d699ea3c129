"""accel-opt on upstream MLIR test files (test/Conformance): no RUN line that the bare
bindings pass may fail with accel-opt, and the lines accel-opt is known to pass keep passing.

A sample (~15 s): the three largest `--verify-diagnostics` files (SLOW) run in
`make conformance` only, with everything else."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "Conformance"))

SLOW = {"Dialect/Arith/invalid.mlir", "Dialect/Tensor/invalid.mlir", "Dialect/SCF/invalid.mlir"}

#: RUN lines accel-opt passes (a new failure is a regression even if the bare bindings fail).
PASSING = {
    ("IR/diagnostic-nosplit.mlir", 1), ("IR/pretty-locations.mlir", 1),
    ("IR/print-skip-regions.mlir", 1), ("IR/print-use-nameloc-as-prefix.mlir", 1),
    ("Pass/ir-printing-file-tree.mlir", 2), ("Pass/ir-printing-file-tree.mlir", 6),
    ("Pass/pass-timing.mlir", 1), ("Pass/pass-timing.mlir", 3), ("Pass/pass-timing.mlir", 8),
    ("Transforms/inlining-dump-default-pipeline.mlir", 1),
    ("Transforms/location-snapshot.mlir", 3), ("Transforms/sccp-callgraph.mlir", 3),
    ("mlir-opt/expected-error-without-verify-diagnostics.mlir", 1),
    ("mlir-opt/expected-unknown-loc-unmatched.mlir", 1),
    ("mlir-opt/local-reproducer-with-threading.mlir", 1), ("mlir-opt/split-markers.mlir", 1),
    ("mlir-opt/commandline.mlir", 2),
}
#: RUN lines where accel-opt prints exactly what torch-mlir-opt prints (stdout, stderr, exit
#: code), whether or not the line passes: diagnostics, verifier output, dumps, split markers.
IDENTICAL = {
    ("IR/invalid-func-op.mlir", 1), ("IR/print-op-on-diagnostic.mlir", 1),
    ("Pass/ir-printing.mlir", 5), ("Pass/run-reproducer.mlir", 1),
    ("Pass/run-reproducer.mlir", 2), ("Transforms/inlining-recursive.mlir", 1),
    ("mlir-opt/expected-unknown-loc-unmatched.mlir", 1), ("mlir-opt/split-markers.mlir", 1),
    ("mlir-opt/local-reproducer-with-threading.mlir", 1),
}


def test_upstream_run_lines_do_no_worse_than_the_bare_bindings() -> None:
    import run_conformance

    files = [f for f in sorted(run_conformance.UPSTREAM.rglob("*.mlir"))
             if str(f.relative_to(run_conformance.UPSTREAM)) not in SLOW]
    rows = [r for f in files for r in run_conformance.run_file(f)]
    assert len(files) >= 30 and len(rows) >= 60
    assert not [r for r in rows if r["regression"]], [r["accel_log"] for r in rows
                                                      if r["regression"]]
    passed = {(r["file"], r["run"]) for r in rows if r["accel"]}
    assert PASSING <= passed, PASSING - passed
    same = {(r["file"], r["run"]) for r in rows if r["same_as_bundled"]}
    assert IDENTICAL <= same, IDENTICAL - same
