"""Host <-> device transfers and the emulated device's timeline (MLSDK section 4.5).

Transfer cost (constants in `arch`, ASSUMED where marked there): moving k tensors between
host and board is a host-side transpose into (or out of) the device layout on
CODEGEN_N_TRANSPOSE_THREADS threads, then copies on CODEGEN_N_DEV_COPY_STREAMS_THREADS
streams, each stream reaching `STREAM_FRACTION` of the link and all of them together the
link's bandwidth. More threads or streams only help when several tensors move together,
as the reference says.

`Timeline` is the board as the MLSDK API drives it (`context.py`): an H2D queue, the
compute queue and a D2H queue. `TensorProxy.load_from` enqueues an H2D when the host calls
it and returns at once (asynchronous); a compiled function's call enqueues its compute,
which starts when its inputs have arrived and the previous call has finished; `.cpu()` is
a synchronous D2H: the host waits for it. An H2D into a buffer that an enqueued call still
reads waits for that call (double buffering overlaps, one buffer does not). The host's own
time only advances while it waits, so the estimated step time is what the device and the
transfers allow: with prefetched inputs H2D hides under compute.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from accel.targets.mncore import arch
from accel.targets.mncore.option_json import int_env


def _threads(envs: Mapping[str, str]) -> tuple[int, int]:
    return (int_env(envs, "CODEGEN_N_TRANSPOSE_THREADS", arch.DEFAULT_TRANSPOSE_THREADS,
                    minimum=1),
            int_env(envs, "CODEGEN_N_DEV_COPY_STREAMS_THREADS", arch.DEFAULT_COPY_STREAMS,
                    minimum=1))


def transfer_seconds(sizes: Sequence[int], envs: Mapping[str, str]) -> float:
    """Seconds to move tensors of `sizes` bytes together between host and board."""
    sizes = [s for s in sizes if s > 0]
    if not sizes:
        return 0.0
    threads, streams = _threads(envs)
    total, largest, k = sum(sizes), max(sizes), len(sizes)
    rate = arch.HOST_TRANSPOSE_BYTES_PER_S
    transpose = max(largest / rate, total / (min(threads, k) * rate))
    stream_bw = arch.HOST_LINK_BANDWIDTH * arch.STREAM_FRACTION
    copy = max(largest / stream_bw, total / min(arch.HOST_LINK_BANDWIDTH,
                                                min(streams, k) * stream_bw))
    batches = math.ceil(k / streams)  # each stream starts its copies one after another
    return transpose + copy + batches * arch.HOST_TRANSFER_OVERHEAD_S


@dataclass
class Event:
    """One span of the timeline (microseconds): a Chrome trace `X` event."""

    name: str
    track: str  # "h2d" | "compute" | "d2h"
    start_us: float
    dur_us: float
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Timeline:
    """The emulated board's queues (see the module docstring); times in microseconds."""

    envs: Mapping[str, str] = field(default_factory=dict)
    host_us: float = 0.0
    h2d_free_us: float = 0.0
    compute_free_us: float = 0.0
    d2h_free_us: float = 0.0
    events: list[Event] = field(default_factory=list)
    #: End of each call's compute, in order (step times are their differences).
    call_ends: list[float] = field(default_factory=list)
    #: Cap on kept events (a long training loop keeps the last ones).
    max_events: int = 4096

    def _add(self, event: Event) -> None:
        self.events.append(event)
        if len(self.events) > self.max_events:
            del self.events[:len(self.events) - self.max_events]

    def h2d(self, name: str, sizes: Sequence[int], not_before_us: float = 0.0) -> float:
        """Enqueue an H2D of `sizes` now; returns when it completes."""
        start = max(self.host_us, self.h2d_free_us, not_before_us)
        dur = transfer_seconds(sizes, self.envs) * 1e6
        self.h2d_free_us = start + dur
        self._add(Event(name, "h2d", start, dur, {"bytes": sum(sizes)}))
        return start + dur

    def compute(self, name: str, ready_us: float, dur_us: float) -> float:
        """Enqueue a call whose inputs are ready at `ready_us`; returns its end."""
        start = max(self.host_us, self.compute_free_us, ready_us)
        self.compute_free_us = start + dur_us
        self._add(Event(name, "compute", start, dur_us))
        self.call_ends.append(start + dur_us)
        return start + dur_us

    def d2h(self, name: str, sizes: Sequence[int], ready_us: float) -> float:
        """A synchronous D2H after `ready_us`: the host waits until it is done."""
        start = max(self.host_us, self.d2h_free_us, ready_us)
        dur = transfer_seconds(sizes, self.envs) * 1e6
        self.d2h_free_us = start + dur
        self.host_us = start + dur
        self._add(Event(name, "d2h", start, dur, {"bytes": sum(sizes)}))
        return self.host_us

    def step_us(self, last: int = 4) -> float | None:
        """The estimated step time: the mean period between the last `last` calls' ends
        (None before two calls)."""
        ends = self.call_ends[-(last + 1):]
        if len(ends) < 2:
            return None
        return (ends[-1] - ends[0]) / (len(ends) - 1)

    def overlap_us(self) -> float:
        """Microseconds in which an H2D ran while a call computed (hidden transfers)."""
        computes = [(e.start_us, e.start_us + e.dur_us) for e in self.events
                    if e.track == "compute"]
        total = 0.0
        for e in self.events:
            if e.track != "h2d":
                continue
            a, b = e.start_us, e.start_us + e.dur_us
            total += sum(max(0.0, min(b, d) - max(a, c)) for c, d in computes)
        return total

    def trace_events(self, pid: int = 1) -> list[dict[str, Any]]:
        """The timeline as Chrome trace events (profile.json's runtime process)."""
        tids = {"h2d": 0, "compute": 1, "d2h": 2}
        found: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": pid,
             "args": {"name": "mncore runtime (emulated timeline)"}}]
        found += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                   "args": {"name": {"h2d": "H2D", "compute": "compute", "d2h": "D2H"}[t]}}
                  for t, tid in tids.items()]
        found += [{"name": e.name, "cat": e.track, "ph": "X", "pid": pid, "tid": tids[e.track],
                   "ts": round(e.start_us, 3), "dur": round(e.dur_us, 3), "args": e.args}
                  for e in self.events]
        return found
