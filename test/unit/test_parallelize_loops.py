"""`accel-parallelize-loops`: large parallel loop nests run on threads and give the same
results as the serial code and eager PyTorch, for 1, 2 and 3 threads; small nests and
loops with a loop-carried dependence stay serial."""

from __future__ import annotations

import re
from collections.abc import Callable

import accel
import numpy as np
import pytest
import torch
from accel import phases
from accel.host import pipelines as cpu
from samples import wrapped  # noqa: E402

PASS = "accel-parallelize-loops"


def _compile(model: torch.nn.Module, *args: torch.Tensor,
             **options: object) -> tuple[accel.CompiledModule, str]:
    """(compiled model, IR after bufferization)."""
    with phases.recording(keep_ir=True) as rec:
        fn = accel.compile(model, args, options={"cache": False, **options})
    return fn, str(next(p.ir for p in rec.phases if p.name == "bufferize"))


def _bufferized(source: str) -> tuple[accel.CompiledMLIR, str]:
    with phases.recording(keep_ir=True) as rec:
        compiled = accel.compile_mlir(source, {"cache": False})
    return compiled, str(next(p.ir for p in rec.phases if p.name == "bufferize"))


class Softmax(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1)


class LayerNorm(torch.nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.ln = torch.nn.LayerNorm(n)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


class AddRelu(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y)


class Gelu(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x)


class Transpose(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous() * 2


class RowSum(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1) + x.amax(-1)


def _rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


#: name -> (model, inputs): each large enough (>= 2^20 body ops) to run in parallel with
#: `min-work=2^20`.
CASES: dict[str, tuple[Callable[[], torch.nn.Module], Callable[[], tuple[torch.Tensor, ...]]]] = {
    "add_relu": (AddRelu, lambda: (_rand(1 << 20), _rand(1 << 20, seed=1))),
    "gelu": (Gelu, lambda: (_rand(512, 1024),)),
    "softmax": (Softmax, lambda: (_rand(2, 301, 257),)),  # odd rows: uneven chunks
    "softmax_wide_rows": (Softmax, lambda: (_rand(64, 5000),)),  # heap row buffers
    "layernorm": (lambda: LayerNorm(512), lambda: (_rand(4, 129, 512),)),
    "transpose": (Transpose, lambda: (_rand(1000, 700),)),
    "row_reduction": (RowSum, lambda: (_rand(999, 1024),)),
}


#: The nests above are sized for this (the default, 2^22, would need 4x the data).
MID_WORK = f"{PASS}{{min-work={1 << 20}}}"


@pytest.mark.parametrize("name", list(CASES))
def test_large_nests_match_eager(monkeypatch, threads, name: str) -> None:
    monkeypatch.setattr(cpu, "PARALLEL_LOOPS", MID_WORK)
    make, inputs = CASES[name]
    model, args = make().eval(), inputs()
    fn, ir = _compile(model, *args)
    assert "accel_parallel_for" in ir, "the nest was not parallelized"
    assert ir.count("func.func private @accel_parallel_for") == 1
    with torch.no_grad():
        expected = model(*args)
    for count in (1, 2, 3):
        threads(count)
        torch.testing.assert_close(fn(*args), expected, rtol=1e-5, atol=1e-5)


def test_small_nests_stay_serial() -> None:
    _, ir = _compile(Softmax(), _rand(8, 16))
    assert "accel_parallel_for" not in ir
    fn, ir = _compile(AddRelu(), _rand(1000), _rand(1000, seed=1))
    assert "accel_parallel_for" not in ir
    fn, ir = _compile(AddRelu(), _rand(1 << 13), _rand(1 << 13, seed=1))
    assert "accel_parallel_for" not in ir  # 6 * 2^13 body ops: below the default 2^16
    fn, _ = _compile(AddRelu(), _rand(1 << 15), _rand(1 << 15, seed=1))
    assert "accel_parallel_for" in fn.compiled.llvm_ir  # the LLVM IR calls the runtime


def test_items_follow_the_work(threads) -> None:
    """A loop runs as work / CHUNK_WORK items (the runtime starts at most one thread per
    item): AddRelu over 2^15 elements (6 body ops each: two loads, add, compare, select,
    store) is 6 items of 2^15 ops, each a run of elements, not 2^15 items; every element
    is computed once at 1, 2 and 3 threads (6 items over 3 threads, 2^15 over 6)."""
    from accel.passes.parallelize_loops import CHUNK_WORK, chunk_count

    assert chunk_count(1 << 17, 1 << 17, CHUNK_WORK) == 4
    assert chunk_count(3, 1 << 30, CHUNK_WORK) == 3  # never more items than iterations
    assert chunk_count(100, 1 << 15, CHUNK_WORK) == 2  # at least two
    assert chunk_count(100, 1 << 30, 0) == 100  # chunk-work=0: one per iteration
    a, b = _rand(1 << 15), _rand(1 << 15, seed=1)
    fn, _ = _compile(AddRelu(), a, b)
    assert re.search(r"call void @accel_parallel_for\(ptr @main_par0_entry, ptr %\d+, i64 6\)",
                     fn.compiled.llvm_ir)
    for count in (1, 2, 3):
        threads(count)
        torch.testing.assert_close(fn(a, b), AddRelu()(a, b), rtol=0, atol=0)


def test_switched_off(monkeypatch) -> None:
    monkeypatch.setattr(cpu, "PARALLEL_LOOPS", f"{PASS}{{enabled=false}}")
    _, ir = _compile(Softmax(), _rand(1024, 1024))
    assert "accel_parallel_for" not in ir
    monkeypatch.setattr(cpu, "PARALLEL_LOOPS", f"{PASS}{{min-work=1}}")
    _, ir = _compile(Softmax(), _rand(8, 16))
    assert "accel_parallel_for" in ir
    _, ir = _compile(Softmax(), _rand(1024, 1024), disable_affine_fusion=True)
    assert "accel_parallel_for" not in ir  # no affine loops without fusion


PREFIX_SUM = """
func.func @scan(%x: memref<600x512xf32>, %y: memref<600x512xf32>) {
  affine.for %i = 1 to 600 {
    affine.for %j = 0 to 512 {
      %p = affine.load %x[%i - 1, %j] : memref<600x512xf32>
      %c = affine.load %y[%i, %j] : memref<600x512xf32>
      %s = arith.addf %p, %c : f32
      affine.store %s, %x[%i, %j] : memref<600x512xf32>
    }
  }
  return
}
"""

SCALE_ROWS = """
func.func @scale(%x: memref<600x512xf32>, %s: memref<600xf32>, %o: memref<600x512xf32>) {
  affine.for %i = 0 to 600 {
    %f = affine.load %s[%i] : memref<600xf32>
    affine.for %j = 0 to 512 {
      %v = affine.load %x[%i, %j] : memref<600x512xf32>
      %m = arith.mulf %v, %f : f32
      %e = math.tanh %m : f32
      affine.store %e, %o[%i, %j] : memref<600x512xf32>
    }
  }
  return
}
"""


@pytest.mark.parametrize("count", [1, 2, 3])
def test_memref_functions(monkeypatch, threads, count: int) -> None:
    monkeypatch.setattr(cpu, "PARALLEL_LOOPS", MID_WORK)
    threads(count)
    scan, ir = _bufferized(PREFIX_SUM)
    assert "accel_parallel_for" not in ir  # loop-carried: serial
    x, y = np.random.default_rng(0).random((2, 600, 512), dtype=np.float32)
    expected = x.copy()
    for i in range(1, 600):
        expected[i] = expected[i - 1] + y[i]
    scan.invoke("scan", x, y)
    np.testing.assert_allclose(x, expected, rtol=1e-5)

    scale, ir = _bufferized(SCALE_ROWS)
    assert "accel_parallel_for" in ir
    rng = np.random.default_rng(1)
    x, s = rng.random((600, 512), dtype=np.float32), rng.random(600, dtype=np.float32)
    out = np.zeros_like(x)
    scale.invoke("scale", x, s, out)
    np.testing.assert_allclose(out, np.tanh(x * s[:, None]), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_gpt2_with_every_nest_parallel(monkeypatch, threads) -> None:
    """A tiny GPT-2 (the model zoo's) with the threshold at 1, so that every parallel nest
    (layernorms, softmaxes, GELUs, residual adds, ...) runs on threads."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(3)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=64, vocab_size=128, n_positions=32,
        bos_token_id=127, eos_token_id=127, attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(config).eval()

    logits = wrapped(model, lambda m, ids: m(input_ids=ids, attention_mask=torch.ones_like(ids),
                                             use_cache=False, return_dict=False)[0])

    monkeypatch.setattr(cpu, "PARALLEL_LOOPS", f"{PASS}{{min-work=1}}")
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
    fn, ir = _compile(logits, ids, opt_level=1)
    assert ir.count("call @accel_parallel_for") >= 5
    with torch.no_grad():
        expected = model(input_ids=ids, use_cache=False).logits
    for count in (1, 2, 3):
        threads(count)
        torch.testing.assert_close(fn(ids), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_aot_library(tmp_path) -> None:
    """An AOT library links the runtime for the outlined nests (serially with user_memory)."""
    x = _rand(512, 1024)
    expected = torch.softmax(x, -1)
    for user_memory in (False, True):
        fn = accel.compile(Softmax(), (x,), options={
            "cache": False, "aot": True, "output_folder": str(tmp_path),
            "user_memory": user_memory, "aot_name": f"softmax{int(user_memory)}"})
        assert "accel_parallel_for" in fn.compiled.llvm_ir
        out = fn.aot_library.call(x.numpy())
        np.testing.assert_allclose(out, expected.numpy(), rtol=1e-5, atol=1e-6)


def test_negative_chunk_work_is_an_error(ctx) -> None:
    from accel.diagnostics import AccelError
    from accel.ir import Module
    from accel.pipeline import run_pipeline

    module = Module.parse("func.func @f() {\n  return\n}\n")
    with pytest.raises(AccelError, match="chunk-work must not be negative"):
        run_pipeline(module, f"builtin.module({PASS}{{chunk-work=-1}})")


def test_private_buffers_keep_program_order(ctx) -> None:
    """A loop's private scratch buffers are planned (and allocated in the body) in program
    order: they were iterated from a set of values, which hash by address, so the same
    model could compile to differently ordered code in another run."""
    from accel.ir import Module
    from accel.passes.parallelize_loops import plan

    count = 8
    allocs = "\n".join(f"  %p{i} = memref.alloca() : memref<4xf32>" for i in range(count))
    fills = "\n".join(f"    affine.for %j = 0 to 4 {{\n"
                      f"      %v = affine.load %x[%i, %j] : memref<4096x4xf32>\n"
                      f"      affine.store %v, %p{i}[%j] : memref<4xf32>\n    }}"
                      for i in range(count))
    loads = "\n".join(f"      %r{i} = affine.load %p{i}[%j] : memref<4xf32>"
                      for i in range(count))
    module = Module.parse(f"""
func.func @f(%x: memref<4096x4xf32>, %y: memref<4096x4xf32>) {{
{allocs}
  affine.for %i = 0 to 4096 {{
{fills}
    affine.for %j = 0 to 4 {{
{loads}
      affine.store %r{count - 1}, %y[%i, %j] : memref<4096x4xf32>
    }}
  }}
  return
}}
""")
    loop = next(op.operation for op in module.body.operations[0].regions[0].blocks[0].operations
                if op.operation.name == "affine.for")
    planned = plan(loop, min_work=1)
    assert not isinstance(planned, str), planned
    body = module.body.operations[0].regions[0].blocks[0].operations
    allocas = [op.operation for op in body if op.operation.name == "memref.alloca"]
    assert len(planned.privates) == count
    assert all(p == a for p, a in zip(planned.privates, allocas, strict=True))


def _conv_bn_pool() -> torch.nn.Module:
    """benchmarks/training.py's CNN+BN: its backward's pool-gradient nests share one stack
    scratch buffer after fusion."""
    torch.manual_seed(1)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(), torch.nn.AvgPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(16 * 7 * 7, 10)).train()


def test_shared_scratch_nests_run_in_parallel(monkeypatch, threads) -> None:
    """A train step whose backward shares a scratch buffer between nests: the buffer is
    split (at least once) so the nests run on threads, and two SGD steps match eager's
    at 1, 2 and 3 threads: loss rtol 1e-4; weights rtol 1e-3 / atol 1e-4 (the conv's
    weight gradient sums 6272 products per element in another order than eager: 4e-5
    apart with the split or without it)."""
    import copy

    from accel.passes import parallelize_loops

    splits: list[bool] = []
    real = parallelize_loops.split_shared_scratch

    def counting(*args: object) -> bool:
        splits.append(real(*args))  # type: ignore[arg-type]
        return splits[-1]

    monkeypatch.setattr(parallelize_loops, "split_shared_scratch", counting)
    torch.manual_seed(0)
    x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))

    def loss_fn(m: torch.nn.Module, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(m(a), b)

    for count in (1, 2, 3):
        threads(count)
        model = _conv_bn_pool()
        eager = copy.deepcopy(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        eager_opt = torch.optim.SGD(eager.parameters(), lr=0.05)
        step = accel.compile_train_step(model, loss_fn, opt, (x, y),
                                        options={"cache": False, "num_threads": 2})
        for _ in range(2):
            eager_opt.zero_grad()
            want = loss_fn(eager, x, y)
            want.backward()
            eager_opt.step()
            np.testing.assert_allclose(float(step(x, y)), float(want), rtol=1e-4)
        for p, q in zip(model.parameters(), eager.parameters(), strict=True):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-3,
                                       atol=1e-4)
    assert any(splits), "no shared scratch buffer was split"


def test_batchnorm_sums_are_carried_in_registers(threads) -> None:
    """The CNN+BN step's BatchNorm backward sums per channel over (image, row, column).
    Outlined for threads, the sum went through memory every iteration (LLVM cannot tell a
    function argument from the others) and took 39% of the step at 2 threads:
    `accel-promote-accumulators` makes it the loops' iter_args before the outlining, so
    some parallel body of the backward carries a sum in iter_args. Two steps at 2 threads
    match eager's (tolerances as in the test above)."""
    import copy

    torch.manual_seed(0)
    x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))

    def loss_fn(m: torch.nn.Module, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(m(a), b)

    threads(2)
    model = _conv_bn_pool()
    eager = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    eager_opt = torch.optim.SGD(eager.parameters(), lr=0.05)
    with phases.recording(keep_ir=True) as rec:
        step = accel.compile_train_step(model, loss_fn, opt, (x, y),
                                        options={"cache": False, "num_threads": 2})
    backward = next(str(p.ir) for p in rec.phases if p.name == "backward-bufferize")
    bodies = re.findall(r"func\.func private @\w+_par\d+_body\(.*?\n  \}\n", backward, re.S)
    assert bodies, "no parallel body in the backward"
    assert any("iter_args" in body for body in bodies), "no sum carried in a parallel body"
    for _ in range(2):
        eager_opt.zero_grad()
        want = loss_fn(eager, x, y)
        want.backward()
        eager_opt.step()
        np.testing.assert_allclose(float(step(x, y).detach()), float(want), rtol=1e-4)
    for p, q in zip(model.parameters(), eager.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-3,
                                   atol=1e-4)
