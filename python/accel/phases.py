"""Per-phase timings and IR snapshots of a compilation, for tools and logs.

    with phases.recording(keep_ir=True, want_object=True) as rec:
        accel.compile(model, inputs)
    for p in rec.phases:
        print(p.name, p.seconds, len(p.ir or ""))

The compiler marks its phases with `phase(name)` and hands IR to `snapshot(name, ir)`; both
do nothing unless a `recording()` is active in the current context (contextvars: threads
and nested compilations do not mix), so plain compiles pay nothing for them.

Phases, in order: `export` (torch.export + FX import), `torch-backend`, `linalg` (torch-mlir's
pipelines), `bufferize`, `llvm-dialect`, `llvm-ir` (translation), `codegen` (LLVM
optimisation and machine code). A compile served from the cache has only the front-end
phases and sets `cache_hit`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Phase:
    """One finished phase: its name, wall time, and the IR after it (if kept)."""

    name: str
    seconds: float
    ir: str | None = None
    #: ".mlir" or ".ll": the file suffix for `ir`.
    ir_suffix: str = ".mlir"


@dataclass
class Recorder:
    """What one `recording()` collected."""

    keep_ir: bool = True
    want_object: bool = False
    on_phase_start: Callable[[str], None] | None = None
    phases: list[Phase] = field(default_factory=list)
    #: The host object file (ELF) of the compiled code, when `want_object` was set.
    object_code: bytes | None = None
    cache_hit: bool = False
    #: Prepended to every phase name (`prefixed`).
    prefix: str = ""

    def _find(self, name: str) -> Phase | None:
        return next((p for p in reversed(self.phases) if p.name == name), None)


_CURRENT: ContextVar[Recorder | None] = ContextVar("accel_phase_recorder", default=None)


def current() -> Recorder | None:
    """The active recorder, or None."""
    return _CURRENT.get()


@contextlib.contextmanager
def recording(*, keep_ir: bool = True, want_object: bool = False,
              on_phase_start: Callable[[str], None] | None = None) -> Iterator[Recorder]:
    """Record the phases of every compilation inside the block."""
    rec = Recorder(keep_ir, want_object, on_phase_start)
    token = _CURRENT.set(rec)
    try:
        yield rec
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase `name` (no-op without a recording)."""
    rec = _CURRENT.get()
    if rec is None:
        yield
        return
    name = rec.prefix + name
    if rec.on_phase_start is not None:
        rec.on_phase_start(name)
    start = time.perf_counter()
    try:
        yield
    finally:
        rec.phases.append(Phase(name, time.perf_counter() - start))


def snapshot(name: str, ir: Callable[[], str] | Any, suffix: str = ".mlir") -> None:
    """Attach IR to the last phase called `name`: a module, text, or a thunk giving text.

    Modules print with large weights elided: a snapshot is for reading, not for reloading.
    """
    rec = _CURRENT.get()
    if rec is None or not rec.keep_ir:
        return
    name = rec.prefix + name
    target = rec._find(name)
    if target is None:
        target = Phase(name, 0.0)
        rec.phases.append(target)
    if callable(ir):
        ir = ir()
    if not isinstance(ir, str):
        ir = ir.operation.get_asm(large_resource_limit=64, large_elements_limit=64)
    target.ir = ir
    target.ir_suffix = suffix



@contextlib.contextmanager
def prefixed(prefix: str) -> Iterator[None]:
    """Name the phases recorded inside the block `<prefix>-<name>`: a train step compiles
    its forward, backward and optimizer graphs through the same phases, and compile.log, the
    progress line and the IR dumps keep them apart (`forward-export`, `backward-linalg`)."""
    rec = _CURRENT.get()
    if rec is None:
        yield
        return
    outer = rec.prefix
    rec.prefix = f"{outer}{prefix}-"
    try:
        yield
    finally:
        rec.prefix = outer
