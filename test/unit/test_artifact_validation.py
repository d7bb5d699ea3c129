"""A damaged or edited artifact folder gives an error, not a crash or a wrong answer
(issue 14): the manifest and the weights must agree with what the code records; the code
itself (module.ll, module.o) is as trusted as a shared library, its structure checked."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import accel
import numpy as np
import pytest
from accel.diagnostics import AccelError

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4)).eval()
    x = torch.randn(2, 8)
    folder = tmp_path_factory.mktemp("artifact") / "mlp"
    accel.compile(model, (x,), options={"cache": False}).save(folder)
    with torch.no_grad():
        return folder, x.numpy(), model(x).numpy()


@pytest.fixture
def folder(saved: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(saved[0], copy)
    return copy


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _write(folder: Path, manifest: dict) -> None:
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_intact_folder_loads_and_computes(saved: tuple[Path, np.ndarray, np.ndarray]
                                             ) -> None:
    folder, x, want = saved
    np.testing.assert_allclose(accel.load(folder)(x), want, rtol=1e-5, atol=1e-6)


def test_edited_signatures_are_refused(folder: Path) -> None:
    """Packing arguments by a signature that is not the code's would read out of bounds."""
    manifest = _manifest(folder)
    manifest["signatures"][0]["args"][0]["shape"] = [2, 1]
    manifest["signatures"][0]["args"][0]["type"] = "memref<2x1xf32>"
    _write(folder, manifest)
    with pytest.raises(AccelError, match="signatures in manifest.json do not match the code"):
        accel.load(folder)


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.float16])
def test_weights_of_another_dtype_with_a_consistent_manifest_are_refused(
        folder: Path, dtype: type) -> None:
    """int32 has float32's size: the code would compute with reinterpreted bytes."""
    manifest = _manifest(folder)
    name, entry = sorted(manifest["weights"].items())[0]
    path = folder / entry["file"]
    np.save(path, np.load(path).astype(dtype))
    entry.update(sha256=_sha(path), dtype=np.dtype(dtype).str)
    _write(folder, manifest)
    with pytest.raises(AccelError, match=f"weight '{name}' is .*, the code was compiled for "
                                         "<f4"):
        accel.load(folder)


def test_weights_of_another_shape_with_a_consistent_manifest_are_refused(folder: Path
                                                                         ) -> None:
    manifest = _manifest(folder)
    name, entry = sorted(manifest["weights"].items())[0]
    path = folder / entry["file"]
    half = np.load(path).reshape(-1)[:4].copy()
    np.save(path, half)
    entry.update(sha256=_sha(path), shape=[4])
    _write(folder, manifest)
    with pytest.raises(AccelError, match=f"weight '{name}' is <f4\\[4\\]"):
        accel.load(folder)


def test_a_weight_the_code_does_not_read_is_refused(folder: Path) -> None:
    manifest = _manifest(folder)
    name, entry = sorted(manifest["weights"].items())[0]
    manifest["weights"]["extra"] = dict(entry)
    _write(folder, manifest)
    with pytest.raises(AccelError, match="lists weights the code does not read: extra"):
        accel.load(folder)


@pytest.mark.parametrize(("key", "value"), [("num_threads", -3), ("num_iters", "x"),
                                            ("verify_numerics", 2)])
def test_invalid_options_in_the_manifest_are_refused(folder: Path, key: str,
                                                     value: object) -> None:
    manifest = _manifest(folder)
    manifest["options"][key] = value
    _write(folder, manifest)
    with pytest.raises(AccelError, match=f"malformed manifest.json .*option '{key}'"):
        accel.load(folder)


def test_a_damaged_model_mlir_does_not_stop_loading(
        folder: Path, saved: tuple[Path, np.ndarray, np.ndarray]) -> None:
    (folder / "model.mlir").write_bytes(b"\xff\xfe not utf-8")
    loaded = accel.load(folder)
    np.testing.assert_allclose(loaded(saved[1]), saved[2], rtol=1e-5, atol=1e-6)


def test_a_structurally_damaged_object_is_compiled_again_from_module_ll(
        folder: Path, saved: tuple[Path, np.ndarray, np.ndarray]) -> None:
    """module.o's checksum fixed up over a broken section table: LLVM's loader would crash
    on it; the ELF check sends load to module.ll instead."""
    obj = folder / "module.o"
    data = bytearray(obj.read_bytes())
    data[0x28:0x30] = (len(data) - 8).to_bytes(8, "little")  # e_shoff past the end
    obj.write_bytes(bytes(data))
    manifest = _manifest(folder)
    manifest["target_files"]["module.o"] = _sha(obj)
    _write(folder, manifest)
    np.testing.assert_allclose(accel.load(folder)(saved[1]), saved[2], rtol=1e-5, atol=1e-6)


def test_a_weight_file_behind_a_symlink_loop_is_an_error(folder: Path) -> None:
    manifest = _manifest(folder)
    _, entry = sorted(manifest["weights"].items())[0]
    path = folder / entry["file"]
    path.unlink()
    path.symlink_to(path.name)
    with pytest.raises(AccelError, match="weight file .* is unreadable"):
        accel.load(folder)


def test_an_older_folder_asks_for_a_new_compile(folder: Path) -> None:
    manifest = _manifest(folder)
    manifest["format"] = 2
    _write(folder, manifest)
    with pytest.raises(AccelError, match="format 2; this accel reads format 3: compile it "
                                         "again"):
        accel.load(folder)
