"""benchmarks/run.py keeps what has run when a run is cut short: after each worker the JSON
record holds the finished workers (`"partial": true`); the full record replaces it at the
end. A device session's deadline (`timeout`) used to lose a whole run's results."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import run  # noqa: E402


class Deadline(Exception):
    pass


def test_partial_record_survives_a_cut(tmp_path, monkeypatch) -> None:
    out = tmp_path / "bench.json"
    calls: list[str] = []

    def fake_worker(framework, threads, args):
        calls.append(framework)
        if framework == "accel":
            raise Deadline  # the run is killed while this worker runs
        return {"results": {"mlp_b64": {"value": 123.0, "unit": "us"}}}

    monkeypatch.setattr(run, "_run_worker", fake_worker)
    monkeypatch.setattr(sys, "argv", ["run.py", "--quick", "--frameworks", "torch", "accel",
                                      "--threads", "1", "--json", str(out)])
    with pytest.raises(Deadline):
        run.main()
    record = json.loads(out.read_text())
    assert calls == ["torch", "accel"]
    assert record["partial"] is True
    assert record["workers"]["torch@1"]["results"]["mlp_b64"]["value"] == 123.0
    assert "accel@1" not in record["workers"]
    assert not list(tmp_path.glob("*.tmp"))
