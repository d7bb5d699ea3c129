"""Train-step folders: what accel-compile writes for training and `accel.load` reads back.

    folder/
      train.json        format, the optimizer's class and parameter groups (hyper-parameters
                        by parameter name), the trained parameters, the train settings, and
                        each phase graph's inputs and outputs (accel.training.graphs names)
      state.pt          the parameters, buffers and `optimizer.state_dict()` to start from
                        (torch.save; read back with torch.load(weights_only=True): tensors
                        and plain containers only, no pickled code)
      forward/ backward/ optimizer/    one artifact folder per phase graph (accel.artifact)

`load_step(folder)` rebuilds the optimizer (same class, groups and state) over fresh
parameter tensors and returns a `TrainStep` that trains them: `step.state_dict()` gives the
trained parameters and optimizer state back (`model.load_state_dict(sd["model"])`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from accel.diagnostics import AccelError
from accel.training import optimizers
from accel.training.graphs import PhaseGraph, TrainGraphs
from accel.training.step import TrainStep

TRAIN_JSON = "train.json"
STATE = "state.pt"
#: Bump when the layout changes: older folders then get a clear error.
FORMAT = 1


def is_train_folder(folder: Any) -> bool:
    """Whether `folder` is a training build; False for anything else, including a value
    that is no path or a path the system refuses (accel.artifact.load then says why)."""
    if not isinstance(folder, str | os.PathLike):
        return False
    try:
        return (Path(folder) / TRAIN_JSON).is_file()
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def _json_value(value: Any) -> Any:
    """A hyper-parameter as JSON: tensors as numbers, tuples as lists."""
    import torch

    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, tuple | list):
        return [_json_value(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise AccelError(f"optimizer setting {value!r} cannot be saved in {TRAIN_JSON}")


def save_step(step: TrainStep, folder: str | os.PathLike[str], name: str | None = None
              ) -> Path:
    """Write `step` (its compiled phases and its current state) as a train-step folder;
    the target may add files describing the whole step, named after `name` (default: the
    folder's name), e.g. the RDU's `<name>.pef` and `sections.json`."""
    import torch

    from accel import targets
    from accel.cache import atomic_write

    out = Path(folder)
    files_name = name or out.resolve().name or "model"
    opt = step.optimizer
    state = step.model_state()
    name_of: dict[int, str] = {}
    for name in step.spec.names:  # a tied weight goes by the name its graphs use
        name_of.setdefault(id(state[name]), name)
    for name, tensor in state.items():
        name_of.setdefault(id(tensor), name)
    groups = []
    for group in opt.param_groups:
        names = [name_of.get(id(p)) for p in group["params"]]
        if None in names:
            raise AccelError("the optimizer holds a tensor that is not a parameter of the "
                             "model: the train step cannot be saved")
        groups.append({"params": names,
                       **{k: _json_value(v) for k, v in group.items() if k != "params"}})
    meta = {
        "format": FORMAT,
        "optimizer": type(opt).__name__,
        "groups": groups,
        "parameters": [n for n in step._params],
        "trainable": [n for n, p in step._params.items() if p.requires_grad],
        "buffers": list(step._buffers),
        "trained": list(step.spec.names),
        "settings": dict(step.settings),
        "phases": [{"name": g.name, "inputs": list(g.inputs), "outputs": list(g.outputs)}
                   for g in step.graphs.graphs],
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        for phase, compiled in step.compiled.items():
            compiled.save(out / phase)
        target = targets.get(step.compiled["forward"].options.get("target", "cpu"))
        target.save_train(step, out, files_name)
        torch.save({"model": {k: v.detach() for k, v in state.items()},
                    "optimizer": opt.state_dict()}, out / STATE)
        atomic_write(out / TRAIN_JSON, (json.dumps(meta, indent=2) + "\n").encode())
    except OSError as err:
        raise AccelError(f"could not write artifact folder '{out}': {err}") from None
    return out


def load_step(folder: str | os.PathLike[str]) -> TrainStep:
    """The `TrainStep` of a train-step folder, over the parameters and optimizer state saved
    in it; `AccelError` for a missing, damaged or foreign folder."""
    import torch

    from accel import targets
    from accel.artifact import load as load_artifact
    from accel.compiled_module import CompiledModule

    root = Path(folder)
    try:
        meta = json.loads((root / TRAIN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise AccelError(f"could not read train-step folder '{root}': {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise AccelError(f"train-step folder '{root}' has format "
                         f"{meta.get('format') if isinstance(meta, dict) else None!r}; this "
                         f"accel reads format {FORMAT}: compile it again")
    try:
        saved = torch.load(root / STATE, weights_only=True)
        classes = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}
        cls = classes[meta["optimizer"]]
        trainable = set(meta["trainable"])
        params = {n: torch.nn.Parameter(saved["model"][n], requires_grad=n in trainable)
                  for n in meta["parameters"]}
        buffers = {n: saved["model"][n] for n in meta["buffers"]}
        groups = [{**{k: tuple(v) if k == "betas" else v for k, v in g.items()
                      if k != "params"},
                   "params": [params[n] for n in g["params"]]} for g in meta["groups"]]
        opt = cls(groups)
        opt.load_state_dict(saved["optimizer"])
        phases = [PhaseGraph(p["name"], None, tuple(p["inputs"]), tuple(p["outputs"]))
                  for p in meta["phases"]]
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as err:
        raise AccelError(f"train-step folder '{root}' is damaged: {type(err).__name__}: "
                         f"{err}") from None
    compiled = {}
    for phase in phases:
        found = load_artifact(root / phase.name, targets.get)
        module = CompiledModule(None, found.executable, None, found.entry, found.options)
        module.set_module_text(found.model_mlir)
        compiled[phase.name] = module
    spec = optimizers.describe(opt, [(n, params[n]) for n in meta["trained"]])
    return TrainStep(params=list(params.items()), buffers=list(buffers.items()),
                     optimizer=opt, graphs=TrainGraphs(phases), compiled=compiled, spec=spec,
                     settings=meta["settings"], recompile=None)
