"""The part cache (issue 25: "changing one layer recompiles one function"): a big module is
cut into content-defined parts whose text depends on their own functions only
(`accel.host.codegen.partition`), and each part's object code is cached by that text
(`accel.cache.part_key`), so a model with one layer changed compiles that layer's parts and
the entry again, and links every other part from the cache.
"""

from __future__ import annotations

import copy
from pathlib import Path

import accel
import numpy as np
import pytest
import torch
from accel import cache
from accel.host import codegen
from accel.llvm import archive
from accel.llvm import engine as llvmx
from accel.llvm.elf import object_problem

N_FUNCTIONS = 24


def _function(k: int, extra: int = 0, cold: bool = False) -> str:
    """@fK: a chain of adds with a branch carrying its own branch weights (metadata), a
    noinline attribute group (cold too: a new group, which renumbers LLVM's groups), and
    a read of the string constant for the even ones."""
    body = [f"define i64 @f{k}(i64 %x) #{1 if cold else 0} {{",
            "entry:",
            f"  %c = icmp sgt i64 %x, {k}",
            f"  br i1 %c, label %big, label %small, !prof !{k + 10}",
            "big:"]
    value = "%x"
    for i in range(6 + extra + k % 5):
        body.append(f"  %v{i} = add i64 {value}, {k * 7 + i}")
        value = f"%v{i}"
    if k % 2 == 0:
        body += ["  %ch = load i8, ptr @msg", "  %z = zext i8 %ch to i64",
                 f"  %r = add i64 {value}, %z"]
        value = "%r"
    body += [f"  ret i64 {value}", "small:", "  ret i64 0", "}", ""]
    return "\n".join(body)


def _module(changed: int | None = None, cold: int | None = None) -> str:
    """LLVM's print of N_FUNCTIONS functions, a `main` calling them all and a JIT-style
    trampoline; `changed`: that function gets two more adds; `cold`: that one a new
    attribute group."""
    lines = ['@msg = private constant [6 x i8] c"#1 !0\\00"', ""]
    for k in range(N_FUNCTIONS):
        lines.append(_function(k, 2 if k == changed else 0, k == cold))
    calls = [f"  %r{k} = call i64 @f{k}(i64 %r{k - 1})" if k else "  %r0 = call i64 @f0(i64 %x)"
             for k in range(N_FUNCTIONS)]
    lines += ["define i64 @main(i64 %x) {", *calls, f"  ret i64 %r{N_FUNCTIONS - 1}", "}", "",
              "define i64 @__accel_call_0(i64 %x) {", "  %r = call i64 @main(i64 %x)",
              "  ret i64 %r", "}", "",
              "attributes #0 = { noinline }", "attributes #1 = { noinline cold }"]
    lines += [f"!{k + 10} = !{{!\"branch_weights\", i32 {k + 1}, i32 {100 - k}}}"
              for k in range(N_FUNCTIONS)]
    return str(llvmx.parse("\n".join(lines), "test module"))


def _defines(part: str) -> set[str]:
    return {f.name for f in llvmx.parse(part, "part").functions if not f.is_declaration}


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of ~60 lines, so the test module (~450 lines) is cut into several."""
    monkeypatch.setattr(codegen, "LINES_PER_PART", 60)


def _run(objects: list[bytes], x: int) -> int:
    """Link `objects` in a JIT and call `@__accel_call_0(x)`."""
    import ctypes

    empty = llvmx.parse("", "empty module")
    tm = llvmx.target_machine(1)
    engine = llvmx.mcjit(empty, tm)
    for obj in objects:
        llvmx.add_object(engine, obj)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(
        engine.get_function_address("__accel_call_0"))
    return int(fn(x))


def _reference(changed: int | None = None) -> int:
    """What the test module computes for x = 100 (the same arithmetic in Python)."""
    x = 100
    for k in range(N_FUNCTIONS):
        if not x > k:
            x = 0
            continue
        v = x
        for i in range(6 + (2 if k == changed else 0) + k % 5):
            v += k * 7 + i
        x = v + (ord("#") if k % 2 == 0 else 0)
    return x


def test_parts_parse_alone_and_run(small_parts: None) -> None:
    """Every function is defined in exactly one part; each part parses alone; the entry
    and its trampoline form a part of their own; linked together they compute."""
    parts = codegen.partition(_module())
    assert len(parts) >= 4
    defined = [_defines(p) for p in parts]
    every = {f"f{k}" for k in range(N_FUNCTIONS)} | {"main", "__accel_call_0"}
    assert set().union(*defined) == every
    assert sum(len(d) for d in defined) == len(every)
    assert {"main", "__accel_call_0"} in defined
    cpu, features = llvmx.host_cpu()
    objects = codegen.emit_objects(parts, 1, cpu, features, jobs=1)
    assert _run(objects, 100) == _reference()


@pytest.mark.parametrize("change", ["body", "attributes"])
def test_a_changed_function_changes_its_own_part_only(small_parts: None, change: str) -> None:
    """f0 changed (two more adds; or a new attribute group, which makes LLVM renumber every
    group after it): the parts holding neither f0 nor the entry keep their exact text.
    Before the parts were content-defined and numbered afresh, every part changed."""
    before = codegen.partition(_module())
    after = codegen.partition(_module(changed=0) if change == "body" else _module(cold=0))
    volatile = {"f0", "main", "f1"}  # f0's part may end elsewhere: its neighbour too
    kept = [p for p in before if not _defines(p) & volatile]
    assert len(kept) >= len(before) - 3 >= 2
    for part in kept:
        assert part in after
    if change == "attributes":  # LLVM did renumber: f1..f23's group is #1 there, not #0
        assert "attributes #0 = { cold noinline }" in _module(cold=0)
        assert "attributes #1 = { noinline }" in _module(cold=0)


def test_string_literals_keep_their_numbers(small_parts: None) -> None:
    """`#1` and `!0` inside a string constant are text, not references to renumber."""
    parts = codegen.partition(_module())
    readers = [p for p in parts if "@msg = private constant" in p]
    assert readers
    for part in readers:
        assert 'c"#1 !0\\00"' in part


def test_part_objects_come_from_the_cache(small_parts: None, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """emit_objects(cached=True): the first call compiles and stores every part; with f5
    changed, only the parts whose text changed compile; the linked code computes the new
    function; a damaged part entry is dropped and compiled again."""
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path))
    cpu, features = llvmx.host_cpu()
    parts = codegen.partition(_module())
    start = dict(cache.STATS)
    first = codegen.emit_objects(parts, 1, cpu, features, jobs=1, cached=True)
    grew = {k: cache.STATS[k] - start.get(k, 0) for k in ("part_hit", "part_miss", "part_store")}
    assert grew == {"part_hit": 0, "part_miss": len(parts), "part_store": len(parts)}
    again = codegen.emit_objects(parts, 1, cpu, features, jobs=1, cached=True)
    assert again == first  # the same bytes, none compiled
    changed = codegen.partition(_module(changed=5))
    new = sum(p not in parts for p in changed)
    assert 1 <= new <= 3 < len(changed)
    start = dict(cache.STATS)
    objects = codegen.emit_objects(changed, 1, cpu, features, jobs=1, cached=True)
    assert cache.STATS["part_miss"] - start.get("part_miss", 0) == new
    assert cache.STATS["part_hit"] - start.get("part_hit", 0) == len(changed) - new
    assert _run(objects, 100) == _reference(changed=5) != _reference()
    # A damaged entry: dropped (checksum), compiled again, the same object.
    entry = sorted(tmp_path.glob("*.part"))[0]
    entry.write_bytes(entry.read_bytes()[:-7] + b"garbage")
    start = dict(cache.STATS)
    assert codegen.emit_objects(parts, 1, cpu, features, jobs=1, cached=True) == first
    assert cache.STATS["corrupt"] - start.get("corrupt", 0) == 1
    assert object_problem(archive.bundle(first)) is None


class _Blocks(torch.nn.Module):
    """Eight pre-norm residual MLP blocks of one width: enough ops for
    `accel-split-functions` to cut `main` into parts, and the dedupe makes one set of
    parts for the blocks that are alike, one more for a block that differs."""

    def __init__(self, odd: int | None = None) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(
            torch.nn.LayerNorm(32), torch.nn.Linear(32, 64),
            torch.nn.GELU() if k == odd else torch.nn.ReLU(), torch.nn.Linear(64, 32),
            torch.nn.LayerNorm(32), torch.nn.Softmax(-1)) for k in range(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x)
        return x


def _square_mean(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x).square().mean()


def _stats_during(fn: object) -> tuple[object, dict[str, int]]:
    start = dict(cache.STATS)
    out = fn()  # type: ignore[operator]
    return out, {k: cache.STATS[k] - start.get(k, 0) for k in ("part_hit", "part_miss")}


@pytest.mark.parametrize("entry", ["accel.compile", "torch.compile", "compile_train_step"])
def test_one_block_changed_compiles_its_parts_only(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path, entry: str) -> None:
    """The model compiled, then the same model with one block's activation changed: part
    hits and fewer compiled parts, and the changed model computes what eager does (rtol
    1e-5; the train step: two SGD steps' losses and weights, rtol 1e-4)."""
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(codegen, "LINES_PER_PART", 150)
    torch.manual_seed(0)
    x = torch.randn(8, 32)
    first = _Blocks()
    second = _Blocks(odd=2)
    second.load_state_dict(first.state_dict())

    def build(model: torch.nn.Module) -> object:
        if entry == "accel.compile":
            return accel.compile(model.eval(), (x,), options={"opt_level": 1})
        if entry == "torch.compile":
            torch._dynamo.reset()
            fn = torch.compile(model.eval(), backend="accel", options={"opt_level": 1})
            with torch.no_grad():
                fn(x)  # compiles here
            return fn
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        return accel.compile_train_step(model.train(), _square_mean, opt, (x,),
                                        options={"opt_level": 1}), opt

    _, cold = _stats_during(lambda: build(first))
    # (a train step's graphs can share a part already: the same text compiles once)
    assert cold["part_miss"] >= 3
    eager = copy.deepcopy(second)
    compiled, warm = _stats_during(lambda: build(second))
    assert warm["part_hit"] > cold["part_hit"]
    assert warm["part_miss"] < cold["part_miss"]
    if entry == "compile_train_step":
        step, _ = compiled  # type: ignore[misc]
        eager_opt = torch.optim.SGD(eager.parameters(), lr=0.1)
        for _ in range(2):
            eager_opt.zero_grad()
            want = eager(x).square().mean()
            want.backward()
            eager_opt.step()
            got = step(x)
            np.testing.assert_allclose(float(got), float(want), rtol=1e-4)
        for p, q in zip(second.parameters(), eager.parameters(), strict=True):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4,
                                       atol=1e-6)
        return
    with torch.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), eager.eval()(x).numpy(),  # type: ignore[operator]
                                   rtol=1e-5, atol=1e-6)
