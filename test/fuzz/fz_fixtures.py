"""What the fuzz cases start from: the lit corpus (chunks with their RUN lines), a catalog of
pass names and options, and artifact folders built once per run.

`build(folder)` runs in a forked child before the workers start (it compiles, so the parent
that forks the workers never starts LLVM's or torch's threads); it is deterministic, so a
replayed case finds the same folders.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TEST = ROOT / "test"

#: A small float function every option case compiles (numerics: x + y * 2).
ADD_MLIR = """\
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %two = arith.constant 2.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                        affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %y, %two : f32
    %s = arith.addf %x, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""

#: The model of the torch cases: small, with weights, deterministic.
MODEL_PY = """\
import torch


def get_model(batch_size=2):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4)).eval()
    return model, (torch.randn(batch_size, 8),)
"""

#: Input of a pipeline case: a little of everything the passes look at.
PIPELINE_INPUT = """\
func.func @f(%a: memref<16xf32>, %b: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %x = affine.load %a[%i] : memref<16xf32>
    %y = arith.mulf %x, %x : f32
    affine.store %y, %b[%i] : memref<16xf32>
  }
  return
}
func.func @g(%t: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %r = linalg.transpose ins(%t : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>)
      permutation = [1, 0]
  return %r : tensor<8x4xf32>
}
"""


@dataclass(frozen=True)
class Seed:
    """One lit chunk with one of its file's RUN commands."""

    file: str  # relative to the repository
    text: str
    tool: str  # accel-opt | accel-run
    args: tuple[str, ...]


def _run_lines(text: str) -> list[str]:
    """The file's RUN commands, continuation lines joined."""
    commands, current = [], ""
    for line in text.splitlines():
        if "RUN:" not in line or not line.lstrip().startswith("//"):
            continue
        part = line.split("RUN:", 1)[1].strip()
        if part.endswith("\\"):
            current += part[:-1] + " "
            continue
        commands.append(current + part)
        current = ""
    return commands


def _command(run: str, file: Path) -> tuple[str, tuple[str, ...]] | None:
    """(tool, args) of a RUN command's first stage, `%s` left for the input."""
    first = run.split("|", 1)[0].replace("%S", str(file.parent))
    try:
        words = shlex.split(first)
    except ValueError:
        return None
    if words and words[0] == "not":
        words = words[1:]
    if not words or words[0] not in ("accel-opt", "accel-run"):
        return None
    args = tuple(w for w in words[1:] if w not in ("%s", "2>&1", "--split-input-file"))
    if any("%" in w for w in args):  # another substitution: not runnable here
        return None
    return words[0], args


def corpus() -> list[Seed]:
    """Every lit chunk with every accel-opt/accel-run RUN command of its file."""
    seeds = []
    for path in sorted(TEST.rglob("*.mlir")):
        if "Output" in path.parts or "Inputs" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        commands = [c for c in (_command(r, path) for r in _run_lines(text)) if c]
        chunks = [c for c in text.split("// -----") if c.strip()] if "-----" in text \
            else [text]
        for chunk in chunks:
            body = "\n".join(line for line in chunk.splitlines()
                             if not line.lstrip().startswith("// RUN"))
            for tool, args in commands:
                seeds.append(Seed(str(path.relative_to(ROOT)), body, tool, args))
    return seeds


def catalog() -> dict[str, Any]:
    """Pass names -> {option: type}, accel's and upstream's, for pipeline cases; and each
    upstream pass's anchor op (None: any)."""
    from accel.passes import registered_passes

    passes: dict[str, dict[str, str]] = {}
    anchors: dict[str, str | None] = {}
    for name, cls in registered_passes().items():
        passes[name] = {o.name.replace("_", "-"): str(getattr(o.type, "__name__", o.type))
                        for o in cls.options()}
        anchors[name] = None
    upstream = json.loads((ROOT / "python/accel/upstream_passes.json").read_text())
    for name, _, anchor, is_pipeline, options in upstream["passes"]:
        if name in passes or is_pipeline:
            continue
        passes[name] = {opt: str(kind or "value") for opt, _, kind in options}
        anchors[name] = anchor
    return {"passes": passes, "anchors": anchors}


def build(folder: Path) -> None:
    """Write the fixtures into `folder` (in a child process: it compiles)."""
    import numpy as np
    from accel.cli import run_main
    from accel.tools import accel_compile

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.py").write_text(MODEL_PY)
    (folder / "add.mlir").write_text(ADD_MLIR)
    (folder / "pipeline_input.mlir").write_text(PIPELINE_INPUT)
    (folder / "catalog.json").write_text(json.dumps(catalog()))
    for src, out in (("model.py", "model_artifact"), ("add.mlir", "add_artifact")):
        rc = run_main(accel_compile.main, [str(folder / src), "--output-folder",
                                           str(folder / out), "-q", "--inference"]
                      if src.endswith(".py") else
                      [str(folder / src), "--output-folder", str(folder / out), "-q"])
        if rc != 0:
            raise SystemExit(f"fuzz fixtures: accel-compile {src} failed")
    namespace: dict[str, Any] = {}
    exec(MODEL_PY, namespace)  # noqa: S102 - our own fixture text
    import torch

    model, (x,) = namespace["get_model"]()
    with torch.no_grad():
        np.save(folder / "model_in.npy", x.numpy())
        np.save(folder / "model_out.npy", model(x).numpy())
