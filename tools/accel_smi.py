"""`accel-smi`: list the devices accel can compile for and manage emulated devices' memory.

Modelled on MN-Core's `gpfn3-smi` (MLSDK section 4.1):

    accel-smi list                          # 0: cpu ..., NVIDIA GPUs, emulated devices
    accel-smi reset 2                       # by index or by name
    accel-smi clear 2 --seed 1234           # random bytes from a seed (default: seed 0)
    accel-smi clear mnc2emu0 --zero
    accel-smi clear 2 --pattern 0x5555555555555555

NVIDIA GPUs are listed through the CUDA driver (libcuda) when it is installed; without it
`list` says so on stderr. Emulated devices (targets' `devices()` other than host) have no
real memory: `reset` and `clear` record the device's state (resets, fill) in
$ACCEL_CACHE_DIR/devices/<name>.json (else ~/.cache/accel/devices/), which `list` shows.
Unknown devices and bad values are one-line errors (exit status 2).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import sys
from pathlib import Path
from typing import NoReturn

PROG = "accel-smi"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def nvidia_gpus() -> tuple[list[str], str | None]:
    """(GPU names from the CUDA driver, or a reason there are none)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return [], "no NVIDIA driver (libcuda.so.1 not found): no GPUs listed"
    if cuda.cuInit(0) != 0:
        return [], "the NVIDIA driver is installed but cuInit failed: no GPUs listed"
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return [], "cuDeviceGetCount failed: no GPUs listed"
    names = []
    for i in range(count.value):
        device = ctypes.c_int(0)
        buf = ctypes.create_string_buffer(256)
        if cuda.cuDeviceGet(ctypes.byref(device), i) == 0 and \
                cuda.cuDeviceGetName(buf, 256, device) == 0:
            names.append(buf.value.decode(errors="replace"))
    return names, None


def emulated() -> list[tuple[str, str]]:
    """(target, device name) of every emulated device the registered targets offer."""
    from accel import targets

    found = []
    for name in targets.names():
        if name in ("cpu", "nvgpu"):
            continue
        found.extend((name, d) for d in targets.get(name).devices() if d != "host")
    return found


def devices() -> tuple[list[tuple[str, str, str | None]], str | None]:
    """[(kind, name, state file or None)] in index order, and a note about GPUs."""
    rows: list[tuple[str, str, str | None]] = [("cpu", _cpu_name(), None)]
    gpus, note = nvidia_gpus()
    rows += [("nvidia", g, None) for g in gpus]
    rows += [(target, name, str(_state_file(name))) for target, name in emulated()]
    return rows, note


def _state_file(name: str) -> Path:
    root = os.environ.get("ACCEL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "accel")
    return Path(root) / "devices" / f"{name}.json"


def _state(name: str) -> dict[str, object]:
    try:
        data = json.loads(_state_file(name).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _fail(message: str) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(2)


def _find(spec: str) -> tuple[str, str, str | None]:
    rows, _ = devices()
    if spec.isdigit():
        if int(spec) < len(rows):
            return rows[int(spec)]
    else:
        for row in rows:
            if row[1] == spec:
                return row
    names = ", ".join(f"{i}: {r[1]}" for i, r in enumerate(rows))
    _fail(f"unknown device {spec!r} (devices: {names})")


def _emulated(spec: str, action: str) -> tuple[str, Path]:
    kind, name, state = _find(spec)
    if state is None:
        _fail(f"device {spec!r} ({kind}: {name}) is not emulated: accel-smi cannot {action} it")
    return name, Path(state)


def _write(path: Path, data: dict[str, object]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1) + "\n")
    except OSError as err:
        _fail(f"cannot write device state {path}: {err.strerror}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="one numbered line per device")
    reset = sub.add_parser("reset", help="reset an emulated device")
    reset.add_argument("device", help="device index or name")
    clear = sub.add_parser("clear", help="fill an emulated device's memory")
    clear.add_argument("device", help="device index or name")
    fill = clear.add_mutually_exclusive_group()
    fill.add_argument("--seed", type=int, help="seed of the random bytes (default 0)")
    fill.add_argument("--zero", action="store_true", help="fill with zeros")
    fill.add_argument("--pattern", help="fill with this uint64 (hex, e.g. 0x5555555555555555)")
    args = parser.parse_args(argv)
    if args.command == "list":
        rows, note = devices()
        for i, (kind, name, state) in enumerate(rows):
            extra = ""
            if state is not None:
                st = _state(name)
                extra = f" (emulated; resets {st.get('resets', 0)}, memory " \
                        f"{st.get('memory', 'uninitialised')})"
            print(f"{i}: {kind} {name}{extra}")
        if note:
            print(f"{PROG}: {note}", file=sys.stderr)
        return 0
    if args.command == "reset":
        name, path = _emulated(args.device, "reset")
        state = _state(name)
        state["resets"] = int(state.get("resets", 0)) + 1  # type: ignore[call-overload]
        _write(path, state)
        print(f"reset {name}")
        return 0
    name, path = _emulated(args.device, "clear")
    if args.pattern is not None:
        try:
            value = int(args.pattern, 16)
        except ValueError:
            _fail(f"--pattern {args.pattern!r} is not a hex number (e.g. 0x5555555555555555)")
        if not 0 <= value < 1 << 64:
            _fail(f"--pattern {args.pattern!r} does not fit a uint64")
        memory = f"pattern 0x{value:016x}"
    elif args.zero:
        memory = "zero"
    else:
        memory = f"random seed {args.seed or 0}"
    state = _state(name)
    state["memory"] = memory
    _write(path, state)
    print(f"cleared {name}: {memory}")
    return 0


def run() -> None:
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
