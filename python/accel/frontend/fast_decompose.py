"""`ExportedProgram.run_decompositions` without its fixed cost per call.

torch's `run_decompositions` spends most of a small model's export in bookkeeping that does
not depend on the model (0.15-0.45 s per call on a 2-core EPYC, against ~0.1 s of tracing):
1. it lists every preservable CompositeImplicitAutograd (CIA) operator in the process,
   materialising every CIA op of every `torch.ops` namespace again (~500 ops);
2. it patches ~20 Python kernels into each of those ops for the length of the retrace
   (`_override_composite_implicit_decomp`), and restores them afterwards: ~10,000
   registrations, each clearing the op's dispatch cache.

`fast_decompositions(exported)` removes both for one call, inside accel's export lock:
1. the list is cached until the dispatcher's CIA registrations or the op namespaces change
   (a custom op registered later is seen);
2. only the CIA ops in the program's graphs are patched (decomposed by the table's entry or
   kept, as torch would), and accel's own entries (none is a CIA op today). A CIA op that
   is not in the graph can only be reached from inside another op's decomposition, where
   its own CIA kernel (eager's decomposition of it) runs instead of torch-mlir's Python
   copy of the same decomposition.
On 267 programs (every op of test_op_coverage, the zoo models in eval and train mode,
dropout) the decomposed graphs are identical to torch's, and `run_decompositions` takes
0.39 s instead of 0.90 s on average (a loaded 2-core EPYC; test_fast_decompose.py). Where
torch's internals are not as expected (another torch version), or with
`ACCEL_FAST_DECOMPOSE=0` (for looking for a difference; with the cache off), torch's own
path runs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

_CIA_CACHE: dict[tuple[Any, ...], frozenset[Any]] = {}


def _cia_key() -> tuple[Any, ...]:
    """What the list of preservable CIA ops depends on: the C++ CIA registrations and the
    op namespaces Python knows (both cheap to read)."""
    import torch

    registrations = torch._C._dispatch_get_registrations_for_dispatch_key(
        "CompositeImplicitAutograd")
    return (len(registrations), hash(tuple(registrations)), tuple(sorted(torch.ops._dir)))


def _graph_ops(exported: Any) -> frozenset[Any]:
    """Every operator called in the program's graphs, nested ones (cond, map) included."""
    ops = set()
    for module in exported.graph_module.modules():
        graph = getattr(module, "graph", None)
        if graph is None:
            continue
        for node in graph.nodes:
            if node.op == "call_function":
                ops.add(node.target)
    return frozenset(ops)


@contextlib.contextmanager
def fast_decompositions(exported: Any) -> Iterator[None]:
    """Within the block, `exported.run_decompositions(table)` skips the fixed cost above.

    Not thread-safe by itself (it swaps two functions of `torch.export.exported_program`):
    callers hold accel's export lock, as every `torch.export` in accel does.
    """
    from torch.export import exported_program as ep

    collect = getattr(ep, "_collect_all_valid_cia_ops", None)
    override = getattr(ep, "_override_composite_implicit_decomp", None)
    if collect is None or override is None or os.environ.get("ACCEL_FAST_DECOMPOSE") == "0":
        yield  # another torch, or ACCEL_FAST_DECOMPOSE=0: torch's own path
        return
    in_graph = _graph_ops(exported)

    def cached_collect() -> frozenset[Any]:
        key = _cia_key()
        found = _CIA_CACHE.get(key)
        if found is None:
            _CIA_CACHE.clear()
            found = _CIA_CACHE[key] = frozenset(collect())
        return found

    def narrow_override(cia_ops_to_callable: dict[Any, Callable[..., Any]]) -> Any:
        kept = {op: fn for op, fn in cia_ops_to_callable.items()
                if op in in_graph or getattr(fn, "__module__", "").startswith("accel.")}
        return override(kept)

    ep._collect_all_valid_cia_ops = cached_collect
    ep._override_composite_implicit_decomp = narrow_override
    try:
        yield
    finally:
        ep._collect_all_valid_cia_ops = collect
        ep._override_composite_implicit_decomp = override
