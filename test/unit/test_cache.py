"""The on-disk compile cache (`accel.cache`) and artifact folders (`save` / `accel.load`).

Every test points `ACCEL_CACHE_DIR` at a temporary folder itself (no conftest needed), so
the user's real cache is never touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel import artifact, cache
from accel.api import load as accel_load
from accel.diagnostics import AccelError
from accel.host.compile import compile_mlir
from accel.runtime.signature import signature_from_json, signature_to_json
from accel.targets import cpu as cpu_target
from samples import ADD  # noqa: E402 - shared with test_accel_compile

X = np.arange(4, dtype=np.float32)
Y = np.full(4, 0.5, dtype=np.float32)


@pytest.fixture(autouse=True)
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache folder for each test; `STATS` counted from zero."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(folder))
    cache.STATS.clear()
    return folder


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.entry"))


def test_cache_dir_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert cache.cache_dir() == tmp_path / "cache"
    monkeypatch.delenv("ACCEL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "accel"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "accel"


def test_hit_in_process(tmp_cache: Path) -> None:
    first = compile_mlir(ADD)
    assert not first.cache_hit and len(entries(tmp_cache)) == 1
    second = compile_mlir(ADD)
    assert second.cache_hit
    assert cache.STATS["hit"] == 1 and cache.STATS["store"] == 1
    assert second.llvm_ir == first.llvm_ir and second.mlir_llvm == first.mlir_llvm
    np.testing.assert_array_equal(second.invoke("add", X, Y), X + Y)


def test_key_depends_on_input_and_options(tmp_cache: Path) -> None:
    compile_mlir(ADD)
    assert compile_mlir(ADD, {"opt_level": 1}).cache_hit is False
    assert compile_mlir(ADD.replace("linalg.add", "linalg.sub")).cache_hit is False
    assert len(entries(tmp_cache)) == 3
    # the file name only labels diagnostics: same code, same entry
    assert compile_mlir(ADD, {"filename": "other.mlir"}).cache_hit


def test_cache_option_off(tmp_cache: Path) -> None:
    compile_mlir(ADD, {"cache": False})
    assert not tmp_cache.exists() or not entries(tmp_cache)
    with pytest.raises(ValueError, match="'cache' must be a bool"):
        compile_mlir(ADD, {"cache": "yes"})


@pytest.mark.parametrize("damage", ["truncate", "garble", "empty"])
def test_corrupt_entry_is_rebuilt(tmp_cache: Path, damage: str) -> None:
    compile_mlir(ADD)
    (path,) = entries(tmp_cache)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garble":
        path.write_bytes(data[:-10] + bytes(b ^ 0xFF for b in data[-10:]))
    else:
        path.write_bytes(b"")
    again = compile_mlir(ADD)
    assert not again.cache_hit and cache.STATS["corrupt"] == 1
    np.testing.assert_array_equal(again.invoke("add", X, Y), X + Y)
    assert cache.decode_entry(path.read_bytes()).metadata["llvm_ir"] == again.llvm_ir
    assert compile_mlir(ADD).cache_hit


def test_entry_checksum_roundtrip() -> None:
    blob = cache.encode_entry(b"\x7fELF\n\x00", {"llvm_ir": "x", "signatures": []})
    assert cache.decode_entry(blob) == cache.Entry(b"\x7fELF\n\x00",
                                                   {"llvm_ir": "x", "signatures": []})
    with pytest.raises(ValueError, match="checksum"):
        cache.decode_entry(blob[:-1] + bytes([blob[-1] ^ 1]))
    header, _, body = blob.partition(b"\n")
    for bad in (header.rsplit(b" ", 1)[0], header + b"0", header.rsplit(b" ", 1)[0] + b" x"):
        with pytest.raises(ValueError, match="header"):
            cache.decode_entry(bad + b"\n" + body)


def test_the_cache_stores_bytes_and_metadata_and_knows_no_target(tmp_cache: Path) -> None:
    """Issue 27: an entry is opaque bytes + JSON metadata; the reader names the fields it
    needs, and an entry without them is a miss (dropped), whoever wrote it."""
    cache.store("k" * 64, b"\x00\x01bytes", {"anything": [1, 2]})
    entry = cache.lookup("k" * 64)
    assert entry is not None and entry.data == b"\x00\x01bytes"
    assert entry.metadata == {"anything": [1, 2]}
    assert cache.lookup("k" * 64, {"llvm_ir": str}) is None
    assert cache.lookup("k" * 64) is None  # the entry that missed a field was dropped


def test_no_temporary_files_left(tmp_cache: Path) -> None:
    compile_mlir(ADD)
    assert [p.name for p in tmp_cache.iterdir()] == [entries(tmp_cache)[0].name]


def test_hit_across_processes(tmp_cache: Path, tmp_path: Path) -> None:
    src = tmp_path / "add.mlir"
    src.write_text(ADD)
    script = ("import sys; from accel.host.compile import compile_mlir; "
              "m = compile_mlir(open(sys.argv[1]).read()); print('cache_hit', m.cache_hit)")
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_cache)}
    runs = [subprocess.run([sys.executable, "-c", script, str(src)], capture_output=True,
                           text=True, env=env, timeout=120) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert [r.stdout.strip() for r in runs] == ["cache_hit False", "cache_hit True"]
    assert compile_mlir(ADD).cache_hit  # and this process reuses it too


def test_signature_json_roundtrip() -> None:
    sigs = compile_mlir(ADD, {"cache": False}).functions
    for sig in sigs.values():
        data = json.loads(json.dumps(signature_to_json(sig)))
        assert signature_from_json(data) == sig


def test_save_load_mlir_artifact(tmp_path: Path) -> None:
    compiled = compile_mlir(ADD)
    out = artifact.save_executable(tmp_path / "art", compiled, target=cpu_target.TARGET,
                                   entry="add", options={"opt_level": 3}, model_mlir=ADD)
    manifest = json.loads((out / artifact.MANIFEST).read_text())
    assert manifest["entry"] == "add" and manifest["format"] == artifact.FORMAT_VERSION
    assert manifest["inputs"][0] == {"type": "memref<4xf32>", "dtype": "f32", "shape": [4]}
    assert (out / artifact.MODEL_MLIR).read_text() == ADD
    loaded = accel_load(out)
    np.testing.assert_array_equal(loaded(X, Y), X + Y)
    with pytest.raises(AccelError, match="no public function @nope"):
        artifact.save_executable(tmp_path / "bad", compiled, target=cpu_target.TARGET,
                                 entry="nope", options={})


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(AccelError, match="not an accel artifact folder"):
        accel_load(tmp_path / "missing")
    out = artifact.save_executable(tmp_path / "art", compile_mlir(ADD), target=cpu_target.TARGET,
                                   entry="add", options={})
    ll = out / cpu_target.MODULE_LL
    ll.write_text(ll.read_text() + "\n; edited\n")
    with pytest.raises(AccelError, match="does not match its checksum"):
        accel_load(out)
    manifest = out / artifact.MANIFEST
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "format": 99}))
    with pytest.raises(AccelError, match="format 99"):
        accel_load(out)


def test_torch_save_load_roundtrip(tmp_path: Path, tmp_cache: Path) -> None:
    torch = pytest.importorskip("torch")
    import accel

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 3)).eval()
    x = torch.randn(5, 16)
    fn = accel.compile(model, (x,))
    assert not fn.cache_hit
    assert accel.compile(model, (x,)).cache_hit
    fn.save(tmp_path / "mlp")
    assert {p.name for p in (tmp_path / "mlp").iterdir()} == \
        {artifact.MANIFEST, cpu_target.MODULE_LL, cpu_target.MODULE_O, artifact.MODEL_MLIR,
         "weights"}
    # Weights are files of their own, not IR text: 2 weights + 2 biases.
    assert len(list((tmp_path / "mlp" / "weights").glob("*.npy"))) == 4
    assert "dense_resource" not in (tmp_path / "mlp" / artifact.MODEL_MLIR).read_text()
    loaded = accel.load(tmp_path / "mlp")
    with torch.no_grad():
        want = model(x)
    got = loaded(x)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(loaded(x.numpy()), want.numpy(), rtol=1e-4, atol=1e-5)


def test_same_architecture_new_weights_reuses_code(tmp_cache: Path) -> None:
    """The cache key covers the code, not weight values: a retrained model is a cache hit
    and computes with its own weights."""
    torch = pytest.importorskip("torch")
    import accel

    def make(seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh()).eval()

    x = torch.randn(4, 16)
    first, second = make(1), make(2)
    assert not accel.compile(first, (x,)).cache_hit
    fn = accel.compile(second, (x,))
    assert fn.cache_hit
    with torch.no_grad():
        torch.testing.assert_close(fn(x), second(x), rtol=1e-4, atol=1e-5)
        assert not torch.allclose(fn(x), first(x))


def test_artifact_with_a_missing_weight_file_is_an_error(tmp_path: Path, tmp_cache: Path) -> None:
    torch = pytest.importorskip("torch")
    import accel

    model = torch.nn.Linear(16, 8).eval()
    accel.compile(model, (torch.randn(2, 16),)).save(tmp_path / "lin")
    victim = sorted((tmp_path / "lin" / "weights").glob("*.npy"))[0]
    victim.unlink()
    with pytest.raises(AccelError, match=r"weight file .* is unreadable"):
        accel.load(tmp_path / "lin")


def test_artifact_object_reused_only_on_the_host_that_built_it(tmp_path: Path,
                                                               tmp_cache: Path) -> None:
    """module.o is linked as it is where it was built; elsewhere module.ll is compiled."""
    torch = pytest.importorskip("torch")
    import accel

    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
    x = torch.randn(3, 16)
    accel.compile(model, (x,)).save(tmp_path / "a")
    manifest = json.loads((tmp_path / "a" / artifact.MANIFEST).read_text())
    files = manifest["target_files"]
    assert cpu_target._reusable_object(tmp_path / "a", manifest, files) == \
        (tmp_path / "a" / cpu_target.MODULE_O).read_bytes()
    manifest["versions"] = {**manifest["versions"], "cpu": "some-other-cpu"}
    (tmp_path / "a" / artifact.MANIFEST).write_text(json.dumps(manifest))
    assert cpu_target._reusable_object(tmp_path / "a", manifest, files) is None
    with torch.no_grad():  # and the IR path still gives the right numbers
        torch.testing.assert_close(accel.load(tmp_path / "a")(x), model(x), rtol=1e-4,
                                   atol=1e-5)


def test_cache_hit_links_the_cached_object(tmp_cache: Path) -> None:
    """A hit runs neither the MLIR pipeline nor LLVM: the stored object is linked."""
    source = """func.func @twice(%a: f64) -> f64 {
      %r = arith.addf %a, %a : f64
      return %r : f64
    }"""
    first = compile_mlir(source)
    again = compile_mlir(source)
    assert again.cache_hit and again.object_code == first.object_code
    assert first.object_code.startswith(b"\x7fELF")
    assert again.invoke("twice", 1.5) == 3.0



# -- the front cache: exported program -> compiled code (no decompositions, no import) -------
def _helper(x: Any) -> Any:
    return x * 2.0


def _front_hits() -> int:
    """Front-cache hits of either key: the model's own (before export) or the exported
    program's."""
    return cache.STATS["early_hit"] + cache.STATS["front_hit"]


def _front_models() -> Any:
    """Model classes for the front-cache tests (torch imported lazily, as above)."""
    torch = pytest.importorskip("torch")

    class UsesHelper(torch.nn.Module):
        scale = 1.0

        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, x: Any) -> Any:
            return _helper(self.lin(x)) * self.scale

    class Constants(torch.nn.Module):
        """A 1-element parameter and a 1-element buffer (inlined into the IR as constants)
        and a plain tensor attribute (a lifted constant)."""

        def __init__(self, a: float, b: float, c: list[float]) -> None:
            super().__init__()
            self.a = torch.nn.Parameter(torch.tensor([a]))
            self.register_buffer("b", torch.tensor(b))
            self.c = torch.tensor(c)

        def forward(self, x: Any) -> Any:
            return x * self.a + self.b + self.c

    class Counter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.zeros(4))

        def forward(self, x: Any) -> Any:
            self.count.add_(1.0)
            return x + self.count

    return torch, UsesHelper, Constants, Counter


def _compile_and_check(model: Any, x: Any) -> Any:
    """accel.compile, checked against eager on `x`."""
    import accel
    import torch

    fn = accel.compile(model, (x,))
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-5)
    return fn


def test_front_hit_skips_decompositions_and_import(tmp_cache: Path) -> None:
    torch, UsesHelper, _, _ = _front_models()
    from accel import phases

    torch.manual_seed(0)
    model, x = UsesHelper().eval(), torch.randn(3, 8)
    first = _compile_and_check(model, x)
    # one entry keyed on the exported program, one on the model itself
    assert not first.cache_hit and cache.STATS["front_store"] == 2
    assert len(list(tmp_cache.glob("*.front"))) == 2
    with phases.recording(keep_ir=False) as rec:
        again = _compile_and_check(model, x)
    assert again.cache_hit and rec.cache_hit and cache.STATS["early_hit"] == 1
    # neither torch.export nor torch-mlir ran: only linking the cached object
    assert {p.name for p in rec.phases} == {"codegen"}
    assert "func.func @main" in str(again.module)  # parsed on demand from the entry
    # a recording that keeps IR gets every phase: the front cache is not used
    with phases.recording(keep_ir=True) as rec:
        accel_fn = _compile_and_check(model, x)
    assert accel_fn.cache_hit and "linalg" in {p.name for p in rec.phases}
    assert _front_hits() == 1


def test_front_key_follows_the_code_forward_runs(tmp_cache: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Same class, same weights: a changed helper function or class attribute that forward
    uses, or a swapped submodule, must not reuse the stale entry."""
    torch, UsesHelper, _, _ = _front_models()

    torch.manual_seed(0)
    model, x = UsesHelper().eval(), torch.randn(3, 8)
    _compile_and_check(model, x)
    monkeypatch.setattr(sys.modules[__name__], "_helper", lambda v: v * 3.0)
    assert not _compile_and_check(model, x).cache_hit
    monkeypatch.setattr(UsesHelper, "scale", 0.5)
    assert not _compile_and_check(model, x).cache_hit
    model.lin = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh())
    assert not _compile_and_check(model, x).cache_hit
    assert _front_hits() == 0
    assert _compile_and_check(model, x).cache_hit and _front_hits() == 1


def test_front_key_follows_inlined_constants(tmp_cache: Path) -> None:
    """1-element parameters/buffers and lifted constants become IR constants: other values
    must give other code (compared with eager), the same values a front hit."""
    torch, _, Constants, _ = _front_models()

    x = torch.randn(2, 3)
    _compile_and_check(Constants(2.0, 1.0, [1.0, 2.0, 3.0]), x)
    _compile_and_check(Constants(5.0, 1.0, [1.0, 2.0, 3.0]), x)
    _compile_and_check(Constants(5.0, -4.0, [1.0, 2.0, 3.0]), x)
    _compile_and_check(Constants(5.0, -4.0, [7.0, 2.0, 3.0]), x)
    assert _front_hits() == 0
    assert _compile_and_check(Constants(5.0, -4.0, [7.0, 2.0, 3.0]), x).cache_hit
    assert _front_hits() == 1


def test_front_key_follows_shapes_dtypes_and_options(tmp_cache: Path) -> None:
    torch, UsesHelper, _, _ = _front_models()
    import accel

    torch.manual_seed(0)
    model = UsesHelper().eval()
    _compile_and_check(model, torch.randn(3, 8))
    _compile_and_check(model, torch.randn(5, 8))
    _compile_and_check(model.double(), torch.randn(5, 8, dtype=torch.float64))
    assert _front_hits() == 0
    accel.compile(model, (torch.randn(5, 8, dtype=torch.float64),), options={"opt_level": 1})
    assert _front_hits() == 0
    _compile_and_check(model, torch.randn(5, 8, dtype=torch.float64))
    assert _front_hits() == 1


def test_front_new_weights_fall_back_to_the_mlir_key(tmp_cache: Path) -> None:
    """Weight values are in the front key: a retrained model misses it, then hits the
    MLIR-level entry and computes with its own weights."""
    torch, UsesHelper, _, _ = _front_models()

    torch.manual_seed(0)
    model, x = UsesHelper().eval(), torch.randn(3, 8)
    _compile_and_check(model, x)
    with torch.no_grad():
        model.lin.weight.mul_(-1.5)
    fn = _compile_and_check(model, x)
    assert fn.cache_hit and _front_hits() == 0


def test_front_hit_binds_the_models_own_memory(tmp_cache: Path) -> None:
    """A front hit reads the parameters in place and writes in-place updates back."""
    torch, _, _, Counter = _front_models()
    import accel

    model, x = Counter().eval(), torch.zeros(4)
    accel.compile(model, (x,))
    fn = accel.compile(model, (x,))
    assert fn.cache_hit and _front_hits() == 1
    torch.testing.assert_close(fn(x), torch.ones(4))
    torch.testing.assert_close(fn(x), torch.full((4,), 2.0))
    torch.testing.assert_close(model.count, torch.full((4,), 2.0))
    _, UsesHelper, _, _ = _front_models()
    torch.manual_seed(0)
    model, x = UsesHelper().eval(), torch.randn(3, 8)
    accel.compile(model, (x,))
    fn = accel.compile(model, (x,))
    assert _front_hits() == 2
    with torch.no_grad():
        model.lin.weight.mul_(2.0)  # the code reads the parameter itself, as after a miss
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-5)


def test_front_entry_without_its_code_entry_recompiles(tmp_cache: Path) -> None:
    torch, UsesHelper, _, _ = _front_models()

    torch.manual_seed(0)
    model, x = UsesHelper().eval(), torch.randn(3, 8)
    _compile_and_check(model, x)
    for path in entries(tmp_cache):
        path.unlink()
    assert not _compile_and_check(model, x).cache_hit
    for front in tmp_cache.glob("*.front"):  # the model's and the program's entries
        front.write_bytes(front.read_bytes()[:-5])  # truncated: dropped and rebuilt
    assert _compile_and_check(model, x).cache_hit
    assert cache.STATS["corrupt"] == 2 and _front_hits() == 0
    assert _compile_and_check(model, x).cache_hit and _front_hits() == 1


def test_front_key_follows_tensors_a_function_captures(tmp_cache: Path) -> None:
    torch = pytest.importorskip("torch")

    x = torch.randn(3, 4)
    for scale in ([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, -4.0], [5.0]):
        w = torch.tensor(scale)
        _compile_and_check(lambda t, w=w: t * w + 1.0, x)
    assert _front_hits() == 0
    assert _compile_and_check(lambda t, w=w: t * w + 1.0, x).cache_hit
    assert _front_hits() == 1


# -- the model's own key: a hit before torch.export (the warm start) ------------------------
def test_early_hit_runs_no_export(tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch, UsesHelper, _, _ = _front_models()

    torch.manual_seed(0)
    model, x = UsesHelper().eval(), torch.randn(3, 8)
    _compile_and_check(model, x)

    def no_export(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("torch.export ran on an early hit")

    monkeypatch.setattr(torch.export, "export", no_export)
    assert _compile_and_check(model, x).cache_hit and cache.STATS["early_hit"] == 1


def test_early_key_follows_attributes_and_submodule_settings(tmp_cache: Path) -> None:
    """Hyper-parameters live in attributes, not in the weights: each change is a miss."""
    torch = pytest.importorskip("torch")

    class Scaled(torch.nn.Module):
        def __init__(self, scale: float) -> None:
            super().__init__()
            self.scale = scale
            self.norm = torch.nn.LayerNorm(8)

        def forward(self, x: Any) -> Any:
            return self.norm(x) * self.scale

    x = torch.randn(3, 8)
    model = Scaled(2.0).eval()
    _compile_and_check(model, x)
    model.scale = 3.0
    assert not _compile_and_check(model, x).cache_hit
    model.norm.eps = 1e-2
    _compile_and_check(model, x)
    model.train()  # training mode is module state too (here the exported program is not)
    _compile_and_check(model, x)
    assert cache.STATS["early_hit"] == 0
    assert _compile_and_check(model, x).cache_hit and cache.STATS["early_hit"] == 1


def test_early_key_follows_a_redefined_forward(tmp_cache: Path) -> None:
    """Two classes of one name whose forward differs (a notebook cell run again)."""
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 4)
    for factor in ("2.0", "3.0", "2.0"):
        namespace: dict[str, Any] = {"torch": torch}
        exec(f"class Model(torch.nn.Module):\n"  # noqa: S102 - the test's own source
             f"    def forward(self, x):\n        return x * {factor}\n", namespace)
        fn = _compile_and_check(namespace["Model"]().eval(), x)
    assert fn.cache_hit and cache.STATS["early_hit"] == 1


def test_early_hit_in_a_new_process(tmp_cache: Path, tmp_path: Path) -> None:
    """The warm start: a second process finds the code without exporting or loading
    torch-mlir."""
    script = tmp_path / "warm.py"
    script.write_text(
        "import sys, torch\n"
        "torch.manual_seed(0)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()\n"
        "x = torch.randn(4, 16)\n"
        "import accel\n"
        "from accel import cache\n"
        "fn = accel.compile(m, (x,))\n"
        "assert torch.allclose(fn(x), m(x), rtol=1e-4, atol=1e-5)\n"
        "print(cache.STATS['early_hit'], 'torch_mlir' in sys.modules)\n")
    env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp_cache)}
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr[-2000:] for r in runs]
    assert [r.stdout.split() for r in runs] == [["0", "True"], ["1", "False"]]
