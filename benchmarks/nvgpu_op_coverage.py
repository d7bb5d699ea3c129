"""How many of the op-coverage suite's ops run on the GPU path (not part of `make check`).

    .venv/bin/python benchmarks/nvgpu_op_coverage.py        # ~3 minutes on 2 cores

Each passing op of test/unit/test_op_coverage.py is compiled for nvgpu (device=sm_90, no
GPU needed); the script counts the ops that fall back to the host, checks every kernel
with ptxas and runs the outlined kernels with their launches on the CPU
(`accel.targets.nvgpu.emulate`), comparing with eager at the suite's tolerances.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "unit"))


def main() -> int:
    import accel
    import accel.options
    import accel.settings
    import numpy as np
    import test_op_coverage as suite
    import torch
    from accel.frontend.torch_import import import_program
    from accel.targets import get
    from accel.targets.nvgpu.compile import verify_ptx
    from accel.targets.nvgpu.emulate import emulate_kernels

    logging.disable(logging.WARNING)  # the host-fallback notes; counted below instead
    opts = accel.settings.merge({"target": "nvgpu", "device": "sm_90", "cache": False,
                                  "threads_per_block": 32})
    ok: list[str] = []
    host: list[tuple[str, str]] = []
    wrong: list[tuple[str, str]] = []
    for op in suite.PASSING:
        try:
            program = import_program(suite.Group([op]).eval(), op.inputs, func_name="main")
            text = program.module.operation.get_asm()
            exe = get("nvgpu").compile(text, opts, weights=program.weights)
            if exe.host is not None:
                host.append((op.name, exe.host_reason))
                continue
            verify_ptx(exe)
            run = emulate_kernels(text, opts, weights=program.weights)["main"]
            got = run(*[x.numpy() for x in op.inputs])
            got = list(got) if isinstance(got, tuple) else [got]
            with torch.no_grad():
                want = suite._flat(op.fn(*op.inputs))
            errors = [e for w, g in zip(want, got, strict=True)
                      if (e := suite._mismatch(op, w, torch.from_numpy(np.asarray(g))))]
            (wrong.append((op.name, errors[0])) if errors else ok.append(op.name))
        except Exception as err:  # noqa: BLE001 - every op is reported, none aborts
            wrong.append((op.name, f"{type(err).__name__}: {err}"))
    print(f"{len(suite.PASSING)} ops: {len(ok)} on the GPU path and equal to eager, "
          f"{len(host)} on the host, {len(wrong)} wrong or failing")
    for name, why in host:
        print(f"  host: {name}: {why}")
    for name, why in wrong:
        print(f"  WRONG: {name}: {why}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
