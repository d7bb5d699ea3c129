"""Node simulation results kept across compiles (MLSDK's `CacheOptions`).

MLSDK simulates each node's mapping patterns ("Node Simulation", reference 4.2.1 and
4.2.2.5) and recommends "reusing the results of Node Simulation by setting
mlsdk.CacheOptions". Here a node simulation is the cost model's evaluation of a GEMM's
patterns (`schedule.CostModel._simulate_gemm`); with a cache folder (the
`node_simulation_cache` option, or `mlsdk.CacheOptions(path)`) each result is stored under
a key of everything it depends on (op type, shapes, element type, simulation mode,
patterns allowed, merge and force flags) in `<folder>/node_simulations.json`, and a later
compile reuses it instead of simulating again. summary.json's `node_simulation` says how
many were simulated and how many reused.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from accel.diagnostics import AccelError

FILE = "node_simulations.json"
#: Version of the stored results: a change of the cost model must not reuse old ones.
VERSION = 2


class NodeSimCache:
    """Node simulation results, in memory and (with `folder`) on disk."""

    def __init__(self, folder: str | None = None):
        self.folder = Path(folder) if folder else None
        self.entries: dict[str, list[Any]] = {}
        self.simulated = 0
        self.reused = 0
        if self.folder is not None and (self.folder / FILE).is_file():
            try:
                data = json.loads((self.folder / FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}  # unreadable: simulate again (and rewrite it)
            if isinstance(data, dict) and data.get("version") == VERSION and \
                    isinstance(data.get("entries"), dict):
                self.entries = dict(data["entries"])

    @staticmethod
    def key(layer: Any, graph: Any, dtype: str, mode: str, patterns: list[str],
            parallel_merge: bool, force_channel_split: bool) -> str:
        facts = [layer.op_type, [list(graph.values[n].shape) for n in layer.inputs],
                 list(graph.values[layer.output].shape), layer.flops, dtype, mode, patterns,
                 parallel_merge, force_channel_split]
        return hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:32]

    def get(self, key: str) -> tuple[float, str] | None:
        found = self.entries.get(key)
        if found is None:
            return None
        self.reused += 1
        return float(found[0]), str(found[1])

    def put(self, key: str, seconds: float, pattern: str) -> None:
        self.simulated += 1
        self.entries[key] = [seconds, pattern]

    def save(self) -> None:
        if self.folder is None or not self.simulated:
            return
        from accel.cache import atomic_write

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(self.folder / FILE, json.dumps(
                {"version": VERSION, "entries": self.entries}, sort_keys=True).encode())
        except OSError as err:
            raise AccelError(f"option 'node_simulation_cache': cannot write {self.folder}: "
                             f"{err.strerror}") from None

    def report(self) -> dict[str, Any]:
        return {"simulated": self.simulated, "reused": self.reused,
                "cache": str(self.folder) if self.folder else None}
