"""Hypersection annotations for -o3 (`accel.rdu.hypersection`).

SambaFlow compiles the whole graph at -o3; `--enable-hypersection` plus annotations in
the model mark the subgraphs that repeat, which are then cut out, compiled once and
instantiated. Three spellings, all recorded by the frontend in each op's provenance
(`accel.frontend.provenance`):

    @accel.rdu.hypersection                 # every instance of a module class
    class Block(torch.nn.Module): ...

    accel.rdu.hypersection(model.layers[0])  # one module instance (returns it)

    def forward(self, x):                    # a region of forward code
        with accel.rdu.hypersection("block"):
            x = self.mlp(x)

Annotations do nothing unless the model is compiled for the rdu target at -o3 with
`enable_hypersection=True` (at -o0/-o1 repeated layers are found without them).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

from accel.frontend.provenance import ANNOTATIONS, CUSTOM_KEY

HYPERSECTION = "hypersection"
_ENTRIES = itertools.count()


def _mark(obj: Any) -> Any:
    current = tuple(getattr(obj, ANNOTATIONS, ()))
    if HYPERSECTION not in current:
        setattr(obj, ANNOTATIONS, (*current, HYPERSECTION))
    return obj


@contextlib.contextmanager
def _region(name: str) -> Iterator[None]:
    from torch.fx.traceback import annotate, preserve_node_meta

    # preserve_node_meta: export records `custom` node metadata only while it is on. A fresh
    # id per entry: each `with` block traced is one instance.
    with preserve_node_meta(), annotate({CUSTOM_KEY: f"{HYPERSECTION}:{name}#{next(_ENTRIES)}"}):
        yield


def hypersection(target: Any = None) -> Any:
    """Mark a module class or instance as a hypersection, or (with a name or nothing)
    return a context manager marking the forward code it encloses."""
    import torch

    if isinstance(target, type) and issubclass(target, torch.nn.Module):
        return _mark(target)
    if isinstance(target, torch.nn.Module):
        return _mark(target)
    if target is None or isinstance(target, str):
        return _region(target or "region")
    raise TypeError(f"accel.rdu.hypersection takes a torch.nn.Module class or instance, or a "
                    f"region name, got {type(target).__name__}")
