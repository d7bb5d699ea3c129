"""The upstream pass catalogue (`accel.upstream_passes`) checked against the live bindings.

`gen.Prober` redirects fd 2 and pytest re-points fd 2 at each test phase, so probers are
opened inside test bodies, never in fixtures.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from accel import _gen_upstream_passes as gen
from accel.upstream_passes import (
    NO_SUMMARY,
    UpstreamPass,
    catalogue_is_current,
    get_upstream_pass,
    is_upstream_pass,
    upstream_passes,
)

# Summaries as written in upstream MLIR's Passes.td files (`let summary = ...`).
KNOWN_SUMMARIES = {
    "canonicalize": "Canonicalize operations",
    "cse": "Eliminate common sub-expressions",
    "inline": "Inline function calls",
    "sccp": "Sparse Conditional Constant Propagation",
    "symbol-dce": "Eliminate dead symbols",
    "symbol-privatize": "Mark symbols private",
    "loop-invariant-code-motion": "Hoist loop invariant instructions outside of the loop",
    "control-flow-sink": "Sink operations into conditional blocks",
    "strip-debuginfo": "Strip debug info from all operations",
    "print-op-stats": "Print statistics of operations",
    "print-ir": "Print IR on the debug stream",
    "mem2reg": "Promotes memory slots into values.",
    "sroa": "Scalar Replacement of Aggregates",
    "remove-dead-values": "Remove dead values",
    "topological-sort": "Sort regions without SSA dominance in topological order",
    "snapshot-op-locations": "Generate new locations from the current IR",
    "generate-runtime-verification": "Generate additional runtime op verification checks",
    "lower-affine": "Lower Affine operations to a combination of Arith and SCF operations",
    "convert-linalg-to-loops": "Lower the operations from the linalg dialect into loops",
    "convert-linalg-to-affine-loops":
        "Lower the operations from the linalg dialect into affine loops",
    "one-shot-bufferize": "One-Shot Bufferize",
    "affine-loop-fusion": "Fuse affine loop nests",
    "affine-loop-tile": "Tile affine loop nests",
    "affine-loop-unroll": "Unroll affine loops",
    "convert-to-llvm": "Convert to LLVM via dialect interfaces found in the input IR",
    "convert-func-to-llvm": "Convert from the Func dialect to the LLVM dialect",
    "convert-arith-to-llvm": "Convert Arith dialect to LLVM dialect",
    "convert-cf-to-llvm": "Convert ControlFlow operations to the LLVM dialect",
    "convert-scf-to-cf":
        "Convert SCF dialect to ControlFlow dialect, replacing structured control flow with a CFG",
    "finalize-memref-to-llvm": "Finalize MemRef dialect to LLVM dialect conversion",
    "reconcile-unrealized-casts": "Simplify and eliminate unrealized conversion casts",
    "expand-strided-metadata": "Expand memref operations into easier to analyze constructs",
    "linalg-generalize-named-ops": "Convert named ops into generic ops",
    "linalg-fuse-elementwise-ops": "Fuse elementwise operations on tensors",
    "gpu-kernel-outlining": "Outline gpu.launch bodies to kernel functions",
}

KNOWN_ANCHORS = {
    "canonicalize": None,
    "cse": None,
    "affine-loop-tile": "func.func",
    "affine-super-vectorize": "func.func",
    "convert-func-to-llvm": "builtin.module",
    "gpu-kernel-outlining": "builtin.module",
    "one-shot-bufferize": "builtin.module",
    "convert-gpu-to-nvvm": "gpu.module",
    "spirv-update-vce": "spirv.module",
}


def wrap(p: UpstreamPass, body: str) -> str:
    return gen.wrap(p.anchor, body)


# -- the catalogue itself ------------------------------------------------------------------
def test_catalogue_is_sorted_unique_and_complete() -> None:
    passes = upstream_passes()
    names = [p.name for p in passes]
    assert names == sorted(names) and len(set(names)) == len(names)
    assert len(passes) >= 300
    assert all(p.has_summary and p.summary.strip() for p in passes)
    for p in passes:
        assert [o.name for o in p.options] == sorted(o.name for o in p.options), p.name
    pipelines = {p.name for p in passes if p.pipeline}
    assert {"sparsifier", "buffer-deallocation-pipeline"} <= pipelines
    assert not any(n.startswith("torch-") for n in names)  # upstream only


def test_well_known_passes_have_their_upstream_summaries() -> None:
    for name, summary in KNOWN_SUMMARIES.items():
        info = get_upstream_pass(name)
        assert info is not None, name
        assert info.summary == summary, name
        assert not info.pipeline


def test_lookup_helpers() -> None:
    assert is_upstream_pass("convert-linalg-to-loops")
    assert is_upstream_pass("sparsifier")
    assert not is_upstream_pass("no-such-pass")
    assert get_upstream_pass("no-such-pass") is None
    assert NO_SUMMARY.startswith("(")


def test_spot_options() -> None:
    def opt(pass_name: str, option: str) -> tuple[str | None, str | None]:
        info = get_upstream_pass(pass_name)
        assert info is not None
        found = {o.name: (o.default, o.type) for o in info.options}
        return found[option]

    assert opt("canonicalize", "max-iterations") == ("10", "int64")  # a C++ `long`
    assert opt("canonicalize", "top-down") == ("true", "bool")
    assert opt("canonicalize", "region-simplify") == ("normal", "enum")
    assert opt("canonicalize", "disable-patterns") == ("", "list")
    assert opt("affine-loop-fusion", "compute-tolerance") == ("3.000000e-01", "float")
    assert opt("affine-loop-fusion", "mode") == ("greedy", "enum")
    assert opt("affine-loop-tile", "tile-size") == ("0", "uint")  # a C++ `unsigned`
    assert opt("affine-loop-tile", "cache-size") == ("512", "uint64")
    assert opt("one-shot-bufferize", "dialect-filter") == ("", "list")
    assert opt("one-shot-bufferize", "bufferize-function-boundaries") == ("false", "bool")
    assert opt("inline", "default-pipeline") == ("canonicalize", "string")
    assert opt("symbol-privatize", "exclude") == ("", "list")
    assert opt("sparsifier", "enable-runtime-library") == (None, "bool")


def test_known_anchors() -> None:
    for name, anchor in KNOWN_ANCHORS.items():
        info = get_upstream_pass(name)
        assert info is not None and info.anchor == anchor, name


def test_listing_is_fast_and_does_not_load_the_bindings() -> None:
    code = ("import sys, time; t = time.perf_counter()\n"
            "from accel.upstream_passes import upstream_passes\n"
            "n = len(upstream_passes()); dt = time.perf_counter() - t\n"
            "assert 'torch_mlir' not in sys.modules, 'bindings imported'\n"
            "print(n, dt)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    count, seconds = out.stdout.split()
    assert int(count) == len(upstream_passes())
    assert float(seconds) < 0.3
    t = time.perf_counter()
    upstream_passes()
    assert time.perf_counter() - t < 0.01


def test_catalogue_matches_installed_bindings_version() -> None:
    assert catalogue_is_current(), "bindings changed: run `python -m accel._gen_upstream_passes`"


# -- against the live bindings -------------------------------------------------------------
def test_every_entry_parses_at_its_anchor() -> None:
    with gen.Prober() as prober:
        for p in upstream_passes():
            printed, err = prober.parse(wrap(p, p.name))
            assert printed is not None, f"{p.name}: {err}"
            if p.pipeline:
                continue
            if p.anchor not in (None, "builtin.module"):  # restricted: refused one level up
                _, err = prober.parse(f"builtin.module({p.name})")
                assert f"restricted to '{p.anchor}'" in err, p.name
            elif p.anchor is None:  # op-agnostic: fine inside a function as well
                assert prober.parse(f"builtin.module(func.func({p.name}))")[0] is not None, p.name
            else:
                _, err = prober.parse(f"builtin.module(func.func({p.name}))")
                assert "restricted to 'builtin.module'" in err, p.name


def test_options_and_defaults_match_printed_pipelines() -> None:
    with gen.Prober() as prober:
        for p in upstream_passes():
            if p.pipeline:
                continue
            printed, _ = prober.parse(wrap(p, p.name))
            assert printed is not None
            slots = gen.option_slots(printed, p.name)
            shown = {k: v for k, v in slots if k}
            empty_lists = [o.name for o in p.options if o.type == "list" and o.default == ""]
            assert {o.name: o.default for o in p.options if o.name not in empty_lists} == shown, \
                p.name
            assert len(slots) - len(shown) == len(empty_lists), p.name


def test_every_option_is_accepted_and_unknown_ones_are_not() -> None:
    with gen.Prober() as prober:
        for p in upstream_passes():
            for o in p.options:
                _, err = prober.parse(wrap(p, f"{p.name}{{{o.name}=0}}"))
                assert "no such option" not in err, f"{p.name}: {o.name}"
        for name in ("canonicalize", "sparsifier", "affine-loop-tile"):
            p = get_upstream_pass(name)
            assert p is not None
            assert "no such option" in prober.parse(wrap(p, f"{name}{{zz-bogus=1}}"))[1]


def test_option_types_agree_with_the_option_parser() -> None:
    with gen.Prober() as prober:
        bad = {"bool": "boolean argument", "int": "argument", "uint": "argument",
               "int64": "long argument", "uint64": "long argument",
               "float": "floating point argument", "enum": "Cannot find option named"}
        for p in upstream_passes():
            for o in p.options:
                if o.type in bad:
                    _, err = prober.parse(wrap(p, f"{p.name}{{{o.name}=zz9q}}"))
                    assert f"-{o.name} option" in err and bad[o.type] in err, f"{p.name}: {o.name}"
                elif o.type == "string":
                    printed, _ = prober.parse(wrap(p, f"{p.name}{{{o.name}=zz9q}}"))
                    assert printed is None or f"{o.name}=zz9q" in printed, f"{p.name}: {o.name}"


def test_summaries_and_options_agree_with_the_opt_tool() -> None:
    listing = gen.opt_tool_listing()
    common = [p for p in upstream_passes() if p.name in listing]
    assert len(common) >= 8  # canonicalize, cse, inline, symbol-dce, ...
    for p in common:
        summary, options = listing[p.name]
        assert p.summary == summary, p.name
        assert {o.name for o in p.options} == options, p.name


def test_names_and_summaries_equal_the_live_registry() -> None:
    registry = gen.registry_via_child()
    if registry is None:
        pytest.skip("pass registry not readable in this build")
    assert {p.name: p.summary for p in upstream_passes() if not p.pipeline} \
        == registry["passes"]
    assert {p.name: p.summary for p in upstream_passes() if p.pipeline} \
        == registry["pipelines"]


# -- generator helpers (pure) --------------------------------------------------------------
def test_option_slots_and_classify() -> None:
    printed = "builtin.module(func.func(x-pass{a=1  c={p q} d={1,2}}))"
    assert gen.option_slots(printed, "x-pass") == [("a", "1"), ("", ""), ("c", "{p q}"),
                                                   ("d", "{1,2}")]
    assert gen.option_slots("builtin.module(x-pass)", "x-pass") == []
    err = ": for the --n option: 'zz9q' value invalid for uint argument!"
    assert gen.classify(err, "n") == "uint"
    assert gen.classify(": for the -O option: 'x' value invalid for long argument!", "O") \
        == "int64"
    assert gen.classify(": for the -O option: 'x' value invalid for integer argument!", "O") \
        == "int"
    assert gen.classify(": for the -n option: 'x' value invalid for ulong argument!", "n") \
        == "uint64"
    assert gen.classify("something else", "n") is None
    text = "Passes:\n  --cse   -   Eliminate\n    --opt=<long>  - d\n    =v  -   e\n  --x  -   y\n"
    assert gen.parse_opt_listing(text) == {"cse": ("Eliminate", {"opt"}), "x": ("y", set())}
