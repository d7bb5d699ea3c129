"""accel-smi: device listing and the emulated devices' reset/clear (gpfn3-smi style)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def smi(*args: str, cache: Path) -> subprocess.CompletedProcess:
    """accel-smi in this process (main(), as the console script calls it): fast."""
    import contextlib
    import io

    from accel.tools.accel_smi import main

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("ACCEL_CACHE_DIR")
    os.environ["ACCEL_CACHE_DIR"] = str(cache)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:
                code = int(exit_.code or 0)
    finally:
        if old is None:
            del os.environ["ACCEL_CACHE_DIR"]
        else:
            os.environ["ACCEL_CACHE_DIR"] = old
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_console_script(tmp_path) -> None:
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([str(BIN / "accel-smi"), "list"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("0: cpu "), out.stderr


def test_list_numbers_devices(tmp_path) -> None:
    out = smi("list", cache=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("0: cpu ")
    assert all(line.startswith(f"{i}: ") for i, line in enumerate(lines))
    assert any(" mncore mnc2emu0 (emulated; resets 0, memory uninitialised)" in line
               for line in lines)
    if "nvidia" not in out.stdout:  # no driver here: said once, cleanly, on stderr
        assert "no NVIDIA driver" in out.stderr or "no GPUs listed" in out.stderr


def test_reset_and_clear_emulated_device(tmp_path) -> None:
    index = next(line.split(":")[0] for line in smi("list", cache=tmp_path).stdout.splitlines()
                 if "mnc2emu0" in line)
    assert smi("reset", index, cache=tmp_path).stdout == "reset mnc2emu0\n"
    assert smi("reset", "mnc2emu0", cache=tmp_path).returncode == 0
    assert smi("clear", "--pattern", "0x5555555555555555", index,
               cache=tmp_path).stdout == "cleared mnc2emu0: pattern 0x5555555555555555\n"
    state = json.loads((tmp_path / "devices" / "mnc2emu0.json").read_text())
    assert state == {"resets": 2, "memory": "pattern 0x5555555555555555"}
    assert "memory random seed 1234)" in (smi("clear", "--seed", "1234", index, cache=tmp_path)
                                          and smi("list", cache=tmp_path)).stdout
    assert smi("clear", "--zero", index, cache=tmp_path).stdout.endswith(": zero\n")


@pytest.mark.parametrize(("args", "message"), [
    (("reset", "99"), "accel-smi: error: unknown device '99' (devices: 0: "),
    (("clear", "nope"), "accel-smi: error: unknown device 'nope'"),
    (("reset", "0"), "is not emulated: accel-smi cannot reset it"),
    (("clear", "--pattern", "xyz", "mnc2emu0"), "--pattern 'xyz' is not a hex number"),
    (("clear", "--pattern", "0x1ffffffffffffffff", "mnc2emu0"), "does not fit a uint64"),
    (("clear", "--zero", "--seed", "1", "mnc2emu0"), "not allowed with argument"),
])
def test_errors_are_one_line(tmp_path, args, message) -> None:
    out = smi(*args, cache=tmp_path)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
