"""`accel.compile`: PyTorch models on the CPU against eager PyTorch (fp32).

Tolerances: rtol=1e-4, atol=1e-5 (float32; reductions of at most a few hundred terms).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402
from accel.api import VERIFY_ATOL, VERIFY_RTOL  # noqa: E402
from accel.diagnostics import AccelError  # noqa: E402
from samples import mlp_class  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


MLP = mlp_class(64, 32, 10)


class CNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


class TwoOutputs(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x @ y, (x + 1.0).sum(dim=1)


def _seeded(model: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return model


@pytest.fixture(scope="module")
def mlp() -> tuple[torch.nn.Module, accel.CompiledModule]:
    torch.manual_seed(0)
    model = _seeded(MLP()).eval()
    return model, accel.compile(model, (torch.randn(4, 64),))


@pytest.fixture(scope="module")
def cnn() -> tuple[torch.nn.Module, accel.CompiledModule]:
    torch.manual_seed(1)
    model = _seeded(CNN())
    with torch.no_grad():  # non-trivial running statistics for the eval-mode batchnorm
        model.bn.running_mean.copy_(torch.randn(4) * 0.1)
        model.bn.running_var.copy_(torch.rand(4) + 0.5)
    model.eval()
    return model, accel.compile(model, (torch.randn(2, 1, 8, 8),))


def test_mlp_matches_eager_torch_in_torch_out(mlp) -> None:
    model, fn = mlp
    x = torch.randn(4, 64)
    got = fn(x)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    with torch.no_grad():
        torch.testing.assert_close(got, model(x), rtol=RTOL, atol=ATOL)


def test_mlp_numpy_in_numpy_out(mlp) -> None:
    model, fn = mlp
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    got = fn(x)
    assert isinstance(got, np.ndarray) and got.shape == (4, 10)
    with torch.no_grad():
        np.testing.assert_allclose(got, model(torch.from_numpy(x)).numpy(), rtol=RTOL, atol=ATOL)


def test_weights_are_buffers_not_ir(mlp) -> None:
    """Weights never become IR text: external globals bound to the parameters' memory."""
    model, fn = mlp
    body = str(fn.module)
    assert "dense_resource" not in body and "dense<[" not in body  # no weight bytes
    assert "linalg.matmul" in body and "memref.global @accel_w" in body
    assert "= torch." not in body  # no torch dialect ops left
    # Zero-copy: each bound array is a parameter's own memory.
    params = {p.data_ptr() for p in model.parameters()}
    bound = {a.ctypes.data for a in fn.compiled.weights.values()}
    assert bound and bound <= params


def test_import_torch_keeps_weights_inside_the_module() -> None:
    """The public importer returns a self-contained module (weights as dense_resource)."""
    model = torch.nn.Linear(8, 4).eval()
    module = accel.import_torch(model, (torch.randn(2, 8),))
    assert "dense_resource<" in module.operation.get_asm(large_resource_limit=16)
    compiled = accel.compile_mlir(module, {"cache": False})
    x = torch.randn(2, 8)
    with torch.no_grad():
        np.testing.assert_allclose(compiled.invoke("main", x.numpy()), model(x).numpy(),
                                   rtol=RTOL, atol=ATOL)


def test_cnn_matches_eager(cnn) -> None:
    model, fn = cnn
    x = torch.randn(2, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)


def test_multiple_outputs_and_callable() -> None:
    fn = accel.compile(TwoOutputs(), (torch.randn(3, 5), torch.randn(5, 2)))
    x, y = torch.randn(3, 5), torch.randn(5, 2)
    a, b = fn(x, y)
    torch.testing.assert_close(a, x @ y, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(b, (x + 1.0).sum(dim=1), rtol=RTOL, atol=ATOL)
    got = fn(x.numpy(), y.numpy())
    assert isinstance(got, tuple) and all(isinstance(g, np.ndarray) for g in got)

    plain = accel.compile(lambda t: torch.tanh(t) * 2.0, (torch.randn(6),))
    t = torch.randn(6)
    torch.testing.assert_close(plain(t), torch.tanh(t) * 2.0, rtol=RTOL, atol=ATOL)


def test_verify_numerics_passes_and_catches_a_wrong_result(mlp) -> None:
    model, _ = mlp
    fn = accel.compile(model, (torch.randn(4, 64),), options={"verify_numerics": True})
    x = torch.randn(4, 64)
    fn(x)  # matches eager: no error

    def garbage(*args):
        return np.full((4, 10), 7.0, dtype=np.float32)

    fn._fn = garbage
    with pytest.raises(AccelError, match=r"verify_numerics: output 0 differs .*"
                       rf"rtol={VERIFY_RTOL}, atol={VERIFY_ATOL}"):
        fn(x)


def test_unknown_option() -> None:
    with pytest.raises(ValueError, match=r"^unknown option 'opt_lvl' \(did you mean "
                                         r"'opt_level'\?\)$"):
        accel.compile(MLP(), (torch.randn(1, 64),), options={"opt_lvl": 2})


@pytest.mark.parametrize(("key", "value", "message"), [
    ("opt_level", "3", r"option 'opt_level' must be an int from 0 to 3, got str '3'"),
    ("opt_level", True, r"option 'opt_level' must be an int from 0 to 3, got bool"),
    ("opt_level", 7, r"option 'opt_level' must be an int from 0 to 3, got 7"),
    ("verify_numerics", 1, r"option 'verify_numerics' must be a bool, got int"),
    ("target", "gpu", r"option 'target' must be one of cpu, mncore, nvgpu, rdu, got 'gpu'"),
    ("device", "sm_90", r"option 'device' must be one of host, generic, x86-64"),
    ("preset", "o2", r"target cpu has no preset 'o2' \(choose from o0, o1, o3\)"),
    ("num_threads", 0, r"option 'num_threads' must be None or an int >= 1"),
])
def test_bad_option_values(key, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        accel.compile(MLP(), (torch.randn(1, 64),), options={key: value})


@pytest.mark.parametrize(("key", "value", "target"), [
    ("float_dtype", "half", "cpu"), ("mm_conv_precision_mode", "tf32", "mncore"),
])
def test_options_not_supported_yet(key, value, target) -> None:
    with pytest.raises(NotImplementedError, match=rf"option '{key}' is not supported yet"):
        accel.compile(MLP(), (torch.randn(1, 64),), options={key: value, "target": target})


@pytest.mark.parametrize("target", ["future"])
def test_planned_targets_are_a_clean_error(target) -> None:
    """A registered target whose back end has not landed (`PlannedTarget`)."""
    from accel import targets

    targets.register(target, "planned_target")
    try:
        with pytest.raises(NotImplementedError,
                           match=rf"target '{target}' is not implemented yet"):
            accel.compile(MLP(), (torch.randn(1, 64),), options={"target": target})
    finally:
        targets.unregister(target)


def test_target_options_belong_to_their_target() -> None:
    with pytest.raises(ValueError, match="option 'disable_affine_fusion' applies to target "
                                         "cpu, not rdu"):
        accel.compile(MLP(), (torch.randn(1, 64),),
                      options={"target": "rdu", "disable_affine_fusion": True})


def test_options_table_defaults_are_accepted(mlp) -> None:
    model, _ = mlp
    from accel.options import for_target

    # Every option of the cpu target at its default (other targets' options are errors).
    opts = {spec.name: spec.default for spec in for_target("cpu")}
    opts.update(opt_level=1, disable_fast_math=True, strict_target=True, num_threads=1)
    fn = accel.compile(model, (torch.randn(4, 64),), options=opts)
    assert fn.options["opt_level"] == 1


def test_export_failure_is_a_clear_error() -> None:
    def data_dependent(x: torch.Tensor) -> torch.Tensor:
        return x * 2 if x.sum() > 0 else x

    with pytest.raises(AccelError, match=r"^torch.export of data_dependent failed: "):
        accel.compile(data_dependent, (torch.randn(8),))


def test_complex_intermediates_compile() -> None:
    """rfft makes complex values inside the graph; |.| brings them back to real."""
    def spectrum(x: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(x).abs()

    x = torch.randn(8)
    torch.testing.assert_close(accel.compile(spectrum, (x,))(x), spectrum(x), rtol=RTOL,
                               atol=ATOL)


def test_dynamic_batch_dimension() -> None:
    """A dimension marked with torch.export.Dim stays dynamic: any batch size runs."""
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
    batch = torch.export.Dim("batch")
    fn = accel.compile(model, (torch.randn(4, 16),), dynamic_shapes=({0: batch},))
    assert "tensor<?x16xf32>" in str(fn.module)
    for n in (1, 3, 33):
        x = torch.randn(n, 16)
        with torch.no_grad():
            torch.testing.assert_close(fn(x), model(x), rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match=r"dimension 1 is 15, expected 16"):
        fn(torch.randn(3, 15))


def test_dynamic_dims_that_must_agree_raise_at_run_time() -> None:
    """Two inputs sharing one Dim: a mismatch is torch-mlir's assert, raised, not a crash."""
    n = torch.export.Dim("n")
    fn = accel.compile(lambda x, y: x + y, (torch.randn(4, 3), torch.randn(4, 3)),
                       dynamic_shapes=({0: n}, {0: n}))
    torch.testing.assert_close(fn(torch.ones(5, 3), torch.ones(5, 3)), torch.full((5, 3), 2.0))
    with pytest.raises(accel.RuntimeAssertionError, match="mismatched size for broadcast"):
        fn(torch.ones(5, 3), torch.ones(6, 3))


def test_wrong_dtype_or_shape_is_a_value_error(mlp) -> None:
    _, fn = mlp
    with pytest.raises(ValueError, match="got dtype float64"):
        fn(torch.randn(4, 64, dtype=torch.float64))
    with pytest.raises(ValueError, match="got rank 1"):
        fn(torch.randn(64))


class _Bessel(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.bessel_j0(x * 2)  # no torch-mlir lowering


def test_unsupported_op_names_the_op_and_the_model_line() -> None:
    with pytest.raises(AccelError) as info:
        accel.compile(_Bessel(), (torch.randn(4),))
    message = str(info.value)
    line = _Bessel.forward.__code__.co_firstlineno + 1
    assert f"unsupported op aten.special_bessel_j0 at {__file__}:{line}" in message
    assert "%" not in message and "!torch" not in message  # no MLIR dump
    first = info.value.diagnostics[0]
    assert (first.file, first.line) == (__file__, line)


class _Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total.add_(x)
        return self.total * 2


def test_buffer_updated_in_place_as_in_eager() -> None:
    """torch.export returns the new buffer value as an extra output: accel writes it back
    and returns only the model's outputs, call after call."""
    compiled_model, eager_model = _Counter(), _Counter()
    fn = accel.compile(compiled_model, (torch.ones(4),), options={"verify_numerics": True})
    assert fn.mutations and torch.equal(compiled_model.total, torch.zeros(4))
    for step in range(3):
        x = torch.full((4,), float(step + 1))
        got, want = fn(x), eager_model(x)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        torch.testing.assert_close(compiled_model.total, eager_model.total, rtol=0, atol=0)
    with pytest.raises(NotImplementedError, match="updates its buffers or inputs in place"):
        fn.save("unused")


def test_input_updated_in_place_as_in_eager() -> None:
    def double_then_add(x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x + 1

    fn = accel.compile(double_then_add, (torch.ones(3),))
    x, y = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    torch.testing.assert_close(fn(x), double_then_add(y))
    torch.testing.assert_close(x, y)


def test_unsupported_in_place_update_is_a_clear_error() -> None:
    """BatchNorm in training mode bumps a 0-d counter that torch-mlir folds away: the error
    names the buffer and the ways that work (eval mode, the training entry points)."""
    with pytest.raises(NotImplementedError,
                       match="updates the one-element buffer 'num_batches_tracked'") as err:
        accel.compile(torch.nn.BatchNorm1d(4).train(), (torch.randn(8, 4),))
    assert ".eval()" in str(err.value) and "accel.compile_train_step" in str(err.value)
    assert "\n" not in str(err.value)


def test_num_threads_option_sets_the_process_thread_count() -> None:
    from accel.host import parallel

    before = parallel.num_threads()
    try:
        model = torch.nn.Linear(8, 4).eval()
        fn = accel.compile(model, (torch.randn(2, 8),), options={"num_threads": 3})
        with torch.no_grad():
            torch.testing.assert_close(fn(torch.ones(2, 8)), model(torch.ones(2, 8)),
                                       rtol=RTOL, atol=ATOL)
        assert accel.get_num_threads() == 3
    finally:
        accel.set_num_threads(before)
