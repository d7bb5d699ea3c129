"""accel-affine-fusion in the CPU pipeline: fewer buffers, same numbers, no crashes.

Numerics are compared with torch eager (rtol 1e-4, atol 1e-5) with fusion on (the default
at opt_level >= 1) and off (`disable_affine_fusion`).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402
from accel import phases  # noqa: E402
from accel.isolation import IsolatedFailure, run_pipeline_isolated  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
#: llvm-project's regression input for issue 212046: after tiling, sibling fusion of loops
#: whose iter_args results are used segfaults.
CRASH_SHAPE = """
func.func @preserve_live_sibling_results() -> i64 {
  %a = memref.alloc() : memref<4xi64>
  %b = memref.alloc() : memref<4xi64>
  %c = memref.alloc() : memref<4xi64>
  %c0 = arith.constant 0 : i64
  %c3 = arith.constant 3 : i64
  %c7 = arith.constant 7 : i64
  affine.for %i = 0 to 4 {
    affine.store %c3, %a[%i] : memref<4xi64>
  }
  affine.for %i = 0 to 4 {
    affine.store %c0, %b[%i] : memref<4xi64>
    affine.store %c0, %c[%i] : memref<4xi64>
  }
  affine.for %i = 0 to 4 {
    %v = affine.load %a[%i] : memref<4xi64>
    %p = arith.muli %v, %c3 : i64
    affine.store %p, %b[%i] : memref<4xi64>
  }
  affine.for %i = 0 to 4 {
    %v = affine.load %b[%i] : memref<4xi64>
    %q = arith.addi %v, %c7 : i64
    affine.store %q, %c[%i] : memref<4xi64>
  }
  %sum0 = affine.for %i = 0 to 4 iter_args(%sum = %c0) -> i64 {
    %v = affine.load %b[%i] : memref<4xi64>
    %next = arith.addi %sum, %v : i64
    affine.yield %next : i64
  }
  %sum1 = affine.for %i = 0 to 4 iter_args(%sum = %c0) -> i64 {
    %v = affine.load %c[%i] : memref<4xi64>
    %next = arith.addi %sum, %v : i64
    affine.yield %next : i64
  }
  %sum = arith.addi %sum0, %sum1 : i64
  return %sum : i64
}
"""


def _bufferized_ir(model: torch.nn.Module, x: torch.Tensor, **options: object) -> str:
    with phases.recording() as rec:
        fn = accel.compile(model, (x,), options={"cache": False, **options})
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)
    return next(p.ir for p in rec.phases if p.name == "bufferize")


def test_mlp_layer_bias_and_relu_leave_no_intermediate_buffer() -> None:
    """Linear + ReLU: one heap buffer (the result); the product is a stack scalar."""
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU()).eval()
    x = torch.randn(8, 64)
    fused = _bufferized_ir(layer, x)
    unfused = _bufferized_ir(layer, x, disable_affine_fusion=True)
    assert fused.count("memref.alloc(") == 1, fused
    assert fused.count("affine.for") == 3  # one nest: rows, columns, reduction
    assert unfused.count("memref.alloc(") > 1


MODELS = {
    "mlp_log_softmax": (lambda: torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 10),
        torch.nn.LogSoftmax(-1)), (4, 32)),
    "conv_bn_relu_pool": (lambda: torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2)), (2, 3, 8, 8)),
    "layernorm": (lambda: torch.nn.LayerNorm(16), (4, 16)),
}


@pytest.mark.parametrize("name", MODELS)
def test_fused_models_match_eager(name: str) -> None:
    make, shape = MODELS[name]
    torch.manual_seed(1)
    _bufferized_ir(make().eval(), torch.randn(*shape))


class _LossOfActivations(torch.nn.Module):
    """A classifier head's loss: elementwise ops, then cross-entropy (a gather by label)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(torch.relu(x * 2.0 + 1.0) - 0.5, y)


def test_a_gather_no_longer_blocks_fusion_of_its_function() -> None:
    """Cross-entropy's gather (a load at the label's index) used to leave the whole function
    unfused; it now becomes a call and the elementwise chain fuses: fewer buffers than with
    fusion off, and the loss still matches eager."""
    torch.manual_seed(0)
    x, y = torch.randn(16, 10), torch.randint(0, 10, (16,))
    irs = []
    for options in ({}, {"disable_affine_fusion": True}):
        with phases.recording() as rec:
            fn = accel.compile(_LossOfActivations(), (x, y),
                               options={"cache": False, **options})
        torch.testing.assert_close(fn(x, y), _LossOfActivations()(x, y), rtol=RTOL, atol=ATOL)
        irs.append(next(p.ir for p in rec.phases if p.name == "bufferize"))
    fused, unfused = irs
    assert "_nest0" in fused  # the gather's nest, outlined
    assert fused.count("memref.alloc(") < unfused.count("memref.alloc(")


def test_crashing_fusion_cannot_kill_the_process() -> None:
    """The tiled sibling-fusion shape segfaults MLIR; in the forked child it is an error."""
    text = CRASH_SHAPE
    pipeline = ("builtin.module(func.func(affine-loop-tile{tile-size=8},"
                "affine-loop-fusion{mode=sibling}))")
    with pytest.raises(IsolatedFailure, match=r"crashed \(SIG"):
        run_pipeline_isolated(text, pipeline)
    # ...and the same child machinery returns IR when nothing goes wrong.
    assert "affine.for" in run_pipeline_isolated(text, "builtin.module(canonicalize)")


def test_a_crash_in_the_isolated_child_prints_nothing() -> None:
    """The child's crash is reported by the parent: no "Fatal Python error" dump from the
    faulthandler that pytest (or `python -X faulthandler`) enables (issue 14). pytest's own
    handler writes to the terminal past any capture, so this runs in a fresh interpreter."""
    import subprocess
    import sys

    script = ("import sys\n"
              "from accel.isolation import IsolatedFailure, run_pipeline_isolated\n"
              "try:\n"
              "    run_pipeline_isolated(sys.stdin.read(), sys.argv[1])\n"
              "except IsolatedFailure as err:\n"
              "    print(err)\n")
    pipeline = ("builtin.module(func.func(affine-loop-tile{tile-size=8},"
                "affine-loop-fusion{mode=sibling}))")
    proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", script, pipeline],
                          input=CRASH_SHAPE, capture_output=True, text=True, timeout=300,
                          check=False)
    assert "crashed (SIG" in proc.stdout, proc.stdout + proc.stderr
    assert "Fatal Python error" not in proc.stderr
    assert proc.stderr == ""


def test_no_child_process_where_no_block_has_two_nests(monkeypatch) -> None:
    """Fusion's isolated child (a fork) runs only where some block holds two loop nests side
    by side: a lone elementwise op has nothing to fuse; two ops in one function do."""
    import accel.passes.affine_fusion as fusion

    runs = []
    real = fusion.run_isolated

    def counting(module, funcs, pipeline):
        runs.append(pipeline)
        return real(module, funcs, pipeline)

    monkeypatch.setattr(fusion, "run_isolated", counting)
    x = torch.randn(64)
    lone = accel.compile(lambda a: a * 2, (x,), options={"cache": False})
    torch.testing.assert_close(lone(x), x * 2)
    assert runs == []
    chain = accel.compile(lambda a: torch.softmax(a, 0) * 2, (x,), options={"cache": False})
    torch.testing.assert_close(chain(x), torch.softmax(x, 0) * 2, rtol=RTOL, atol=ATOL)
    assert runs and runs[0].startswith("affine-loop-fusion")


def test_t5_decoder_part_fuses_to_the_same_results() -> None:
    """A T5 decoder step's part (greedy generation's first call, 2 layers of d_model 32;
    the function as `accel-split-functions` cut it, before fusion) computes the same
    outputs fused and unfused. MLIR's fusion had put the attention's output (an
    accumulation over the keys) into the output projection's loops, where it was summed
    again for every output column (guard 3's `repetitions`). Inputs:
    test/unit/inputs/t5_decoder_part_prefusion.mlir."""
    import pathlib

    import numpy as np
    from accel.context import make_context
    from accel.pipeline import run_pipeline
    from accel.safe_parse import parse_module

    text = (pathlib.Path(__file__).parent / "inputs" / "t5_decoder_part_prefusion.mlir")\
        .read_text()
    with make_context():
        module = parse_module(text)
        run_pipeline(module, "builtin.module(accel-affine-fusion)")
        fused = str(module)
    outputs = []
    for source in (text, fused):
        compiled = accel.compile_mlir(source, {"cache": False, "disable_affine_fusion": True,
                                               "split_functions": False, "opt_level": 1})
        rng = np.random.default_rng(0)
        args = []
        for a in compiled.functions["main_part5"].args:
            dtype = a.dtype.numpy
            args.append(rng.random(a.shape) < 0.8 if dtype == np.bool_ else
                        rng.standard_normal(a.shape).astype(dtype)
                        if np.issubdtype(dtype, np.floating) else np.zeros(a.shape, dtype))
        compiled["main_part5"](*args)
        outputs.append(args)
    for before, after in zip(*outputs, strict=True):
        np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-5)
