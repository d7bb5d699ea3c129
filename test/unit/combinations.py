"""The combination matrix (issue 27, docs/matrix.md): target x preset x entry point x AOT x
model. Each cell compiles through its entry point, RUNS, and matches eager PyTorch, or is
refused with one `AccelError` line that docs/matrix.md lists (`REFUSALS`).

Entry points: `api` (accel.compile), `cli` (accel-compile, in this process: `main(argv)`),
`dynamo` (torch.compile(backend="accel")), `train` (accel.compile_train_step: one step's
loss and updated parameters against an eager step). nvgpu cross-compiles for sm_90 and,
without a GPU, runs the compiled module's kernels through the host emulation
(`accel.targets.nvgpu.emulate.emulate_kernels`, the same options).
"""

from __future__ import annotations

import copy
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

#: Models (MLP, a small CNN with BatchNorm, a block with a q/k/v split and softmax): each a
#: factory of (model, example inputs), seeded.
MODEL_SOURCE = textwrap.dedent('''
    import torch


    class Block(torch.nn.Module):
        """Attention-like: one projection split into q, k, v; softmax of the scores."""

        def __init__(self, d: int = 16) -> None:
            super().__init__()
            self.d = d
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.proj = torch.nn.Linear(d, d)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.qkv(x).split(self.d, dim=-1)
            a = torch.softmax(q @ k.transpose(-1, -2) / self.d ** 0.5, dim=-1)
            return self.proj(a @ v)


    def mlp():
        torch.manual_seed(0)
        return (torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 8)), (torch.randn(4, 16),))


    def cnn():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1),
                                    torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                    torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))
        model.eval()
        model[1].running_mean.uniform_(-0.5, 0.5)  # non-trivial statistics
        model[1].running_var.uniform_(0.5, 1.5)
        return model, (torch.randn(2, 3, 6, 6),)


    def block():
        torch.manual_seed(0)
        return Block(), (torch.randn(2, 8, 16),)


    def get_model():
        return MODELS[MODEL]()


    MODELS = {"mlp": mlp, "cnn": cnn, "block": block}
    MODEL = "mlp"
''')

_NAMESPACE: dict[str, Any] = {}
exec(compile(MODEL_SOURCE, "<combinations models>", "exec"), _NAMESPACE)  # noqa: S102
MODELS: dict[str, Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]] = \
    _NAMESPACE["MODELS"]
TARGETS = ("cpu", "nvgpu", "rdu", "mncore")
ENTRIES = ("api", "cli", "dynamo", "train")
#: Options every cell of a target adds: nvgpu cross-compiles (no GPU needed to compile).
TARGET_OPTIONS: dict[str, dict[str, Any]] = {"nvgpu": {"device": "sm_90"}}
#: Tolerances against eager (float32 everywhere; the matrix runs float_dtype's default).
RTOL, ATOL = 1e-4, 1e-5

#: The refusals docs/matrix.md lists: (short name, regex of the one AccelError line). A cell
#: that fails with anything else, or with more than one line, fails the test.
REFUSALS: dict[str, str] = {
    "no-aot": r"^target '(rdu|mncore)' has no AOT libraries yet \(option 'aot'; targets with "
              r"them: ",
    "aot-dynamo": r"^option 'aot' is not supported by torch\.compile\(backend=\"accel\"\)",
    "aot-train": r"^option 'aot' builds a C library of an inference function; a train step "
                 r"is not a C library yet|^--aot builds a C library of an inference function",
    "no-gpu": r"no NVIDIA driver|no usable GPU",
}


def expected(target: str, preset: str, entry: str, aot: bool, model: str) -> str:
    """What a cell must give: "ok", or the refusal docs/matrix.md documents for it."""
    if aot and target in ("rdu", "mncore"):  # the target's refusal comes first
        return "no-aot"
    if aot and entry == "dynamo":
        return "aot-dynamo"
    if aot and entry == "train":
        return "aot-train"
    if target == "nvgpu" and entry in ("dynamo", "train") and not _gpu_present():
        return "no-gpu"  # nothing to emulate through: the step and graphs run on the GPU
    return "ok"


def presets(target: str) -> list[str]:
    from accel import targets

    return list(targets.get(target).presets())


def cells(targets: tuple[str, ...] = TARGETS, models: tuple[str, ...] = tuple(MODELS),
          entries: tuple[str, ...] = ENTRIES) -> list[tuple[str, str, str, bool, str]]:
    """Every (target, preset, entry, aot, model) of the matrix."""
    return [(t, p, e, aot, m) for t in targets for p in presets(t) for e in entries
            for aot in (False, True) for m in models]


def refusal(err: BaseException) -> str | None:
    """The REFUSALS name `err`'s one line matches, or None."""
    text = str(err)
    if "\n" in text.strip():
        return None
    for name, pattern in REFUSALS.items():
        if re.search(pattern, text):
            return name
    return None


def _numpy(value: Any) -> list[np.ndarray]:
    values = value if isinstance(value, tuple | list) else (value,)
    return [v.detach().numpy() if isinstance(v, torch.Tensor) else np.asarray(v)
            for v in values]


def _close(got: Any, want: Any) -> float:
    g, w = _numpy(got), _numpy(want)
    assert len(g) == len(w)
    for a, b in zip(g, w, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    return max(float(np.abs(a - b).max()) for a, b in zip(g, w, strict=True))


def _gpu_present() -> bool:
    from accel.targets.nvgpu import toolkit

    return toolkit.present_arch() is not None


def _call(fn: Any, target: str, inputs: tuple[torch.Tensor, ...]) -> Any:
    """A compiled module's results: on nvgpu without a GPU, its kernels emulated on the
    host (the compiled module's own MLIR and options)."""
    if target == "nvgpu" and not _gpu_present():
        from accel.targets.nvgpu.emulate import emulate_kernels

        run = emulate_kernels(fn.module_text(), dict(fn.options),
                              weights=fn.compiled.weights)[fn.func_name]
        return run(*(x.numpy() for x in inputs))
    return fn(*inputs)


def _aot_check(library: Any, target: str, inputs: tuple[torch.Tensor, ...],
               want: Any) -> None:
    """The AOT library of a cell, called through ctypes where this machine can run it."""
    assert library is not None and all(Path(p).exists() for p in library.files.values())
    if target == "nvgpu":
        return  # built (PTX + host C); test_nvgpu_aot.py calls it through ctypes on a GPU
    _close(library.call(*(x.numpy() for x in inputs)), want)


def options_of(target: str, preset: str, aot: bool, tmp: Path) -> dict[str, Any]:
    opts: dict[str, Any] = {"target": target, "preset": preset, "cache": False,
                            **TARGET_OPTIONS.get(target, {})}
    if aot:
        opts.update(aot=True, output_folder=str(tmp / "aot"))
    return opts


def run_cell(target: str, preset: str, entry: str, aot: bool, model_name: str,
             tmp: Path) -> str:
    """Run one cell: "ok" (ran and matched eager), or the REFUSALS name it was refused with
    (an unlisted error propagates)."""
    from accel.diagnostics import AccelError

    try:
        RUNNERS[entry](target, preset, aot, model_name, tmp)
    except Exception as raised:
        # torch.compile raises a backend's error inside dynamo's BackendCompilerFailed.
        err = getattr(raised, "inner_exception", raised)
        if not isinstance(err, AccelError):
            raise
        name = refusal(err)
        if name is None:
            raise
        return name
    return "ok"


def _api(target: str, preset: str, aot: bool, model_name: str, tmp: Path) -> None:
    import accel

    model, inputs = MODELS[model_name]()
    model.eval()
    want = model(*inputs)
    fn = accel.compile(model, inputs, options=options_of(target, preset, aot, tmp))
    _close(_call(fn, target, inputs), want)
    if aot:
        _aot_check(fn.aot_library, target, inputs, want)


def _cli(target: str, preset: str, aot: bool, model_name: str, tmp: Path) -> None:
    import accel
    from accel.tools.accel_compile import main

    model, inputs = MODELS[model_name]()
    want = model.eval()(*inputs)
    source = tmp / f"{model_name}.py"
    source.write_text(MODEL_SOURCE + f"\nMODEL = {model_name!r}\n")
    out = tmp / "cli-out"
    argv = [str(source), "--inference", "--target", target, "--preset", preset,
            "--output-folder", str(out), "-q", "--option", "cache=false"]
    argv += [a for k, v in TARGET_OPTIONS.get(target, {}).items()
             for a in ("--option", f"{k}={v}")]
    if aot:
        argv += ["--aot", "--aot-name", "cell"]
    assert main(argv) == 0
    fn = accel.load(out)
    _close(_call(fn, target, inputs), want)
    if aot:
        from accel.targets.cpu.aot.library import AotLibrary

        so = out / "libcell.so"
        lib = AotLibrary("cell", out, fn.compiled.functions[fn.func_name], True, False,
                         "host", files={"so": so})
        _aot_check(lib, target, inputs, want)


def _dynamo(target: str, preset: str, aot: bool, model_name: str, tmp: Path) -> None:
    model, inputs = MODELS[model_name]()
    model.eval()
    want = model(*inputs)
    torch._dynamo.reset()
    fast = torch.compile(model, backend="accel",
                         options=options_of(target, preset, aot, tmp))
    with torch.no_grad():
        _close(fast(*inputs), want)


def _train(target: str, preset: str, aot: bool, model_name: str, tmp: Path) -> None:
    import accel

    model, inputs = MODELS[model_name]()
    model.train()
    twin = copy.deepcopy(model)

    def loss_fn(m: torch.nn.Module, *batch: torch.Tensor) -> torch.Tensor:
        return m(*batch).square().mean()

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = accel.compile_train_step(model, loss_fn, opt, inputs,
                                    options=options_of(target, preset, aot, tmp))
    twin_opt = torch.optim.SGD(twin.parameters(), lr=0.1)
    want = loss_fn(twin, *inputs)
    want.backward()
    twin_opt.step()
    _close(step(*inputs), want.detach())
    for (name, got), (_, ref) in zip(model.state_dict().items(), twin.state_dict().items(),
                                     strict=True):
        assert got.dtype == ref.dtype, name
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=name)


RUNNERS: dict[str, Callable[[str, str, bool, str, Path], None]] = {
    "api": _api, "cli": _cli, "dynamo": _dynamo, "train": _train}
