"""Option names people already use (PolyBlocks', SambaFlow's, MLSDK's: the `aliases` column
of the options table), a one-line did-you-mean for unknown names, and the package's public
face: `dir(accel)`, `help(accel)`, py.typed. Each alias is checked through the entry points
that take options: accel.compile, @accel.jit, torch.compile(backend="accel"),
compile_train_step (accel-compile's flags: test_accel_compile.py)."""

from __future__ import annotations

import pydoc
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import accel  # noqa: E402
from accel.options import ALIASES, OPTIONS, OptionError, canonical  # noqa: E402
from accel.settings import merge as resolve  # noqa: E402
from conftest import ROOT  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 3)).eval()


def test_polyblocks_names_are_aliases() -> None:
    """PolyBlocks' compile_options names (docs: shared/reference/polyblocks-compile-options)
    each name a table option."""
    for alias, name in [("polyblocks_disable_affine_fusion", "disable_affine_fusion"),
                        ("polyblocks_disable_reduce_reduce_fusion",
                         "disable_reduce_reduce_fusion"),
                        ("mlir_disable_fast_math", "disable_fast_math"),
                        ("polyblocks_disable_unsafe_math_canonicalizations",
                         "disable_unsafe_math_canonicalizations"),
                        ("polyblocks_gpu_no_tensor_core", "disable_tensor_core"),
                        ("torch_polyblocks_select_graphs", "select_graphs"),
                        ("torch_polyblocks_filter_graphs", "filter_graphs"),
                        ("polyblocks_gen_library", "aot")]:
        assert canonical(alias) == name
    for name, option in OPTIONS.items():  # an alias never shadows a name
        assert not set(option.aliases) & set(OPTIONS), name
    assert resolve({"mlir_disable_fast_math": True})["disable_fast_math"] is True


def test_aliases_through_accel_compile_and_jit() -> None:
    model, x = _mlp(), torch.randn(4, 6)
    want = model(x).detach()
    fn = accel.compile(model, (x,), options={"polyblocks_disable_affine_fusion": True,
                                             "mlir_disable_fast_math": True, "opt_level": 1})
    assert fn.options["disable_affine_fusion"] and fn.options["disable_fast_math"]
    assert "polyblocks_disable_affine_fusion" not in fn.options
    torch.testing.assert_close(fn(x), want, rtol=RTOL, atol=ATOL)
    fast = accel.jit(model, compile_options={"polyblocks_disable_reduce_reduce_fusion": True,
                                             "opt_level": 1})
    torch.testing.assert_close(fast(x), want, rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match=r"^unknown option 'polyblocks_disable_fusion' "
                                         r"\(did you mean "):
        accel.jit(model, compile_options={"polyblocks_disable_fusion": True})


def test_torch_polyblocks_select_graphs_through_torch_compile() -> None:
    """torch_polyblocks_select_graphs=[] compiles none of dynamo's graphs (all eager)."""
    import accel.dynamo

    torch._dynamo.reset()
    model, x = _mlp(), torch.randn(4, 6)
    before = dict(accel.dynamo.stats)
    fast = torch.compile(model, backend="accel",
                         options={"torch_polyblocks_select_graphs": [], "opt_level": 1})
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=RTOL, atol=ATOL)
    assert accel.dynamo.stats["compiled"] == before["compiled"]
    assert accel.dynamo.stats["eager"] == before["eager"] + 1
    torch._dynamo.reset()


def test_alias_through_compile_train_step() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = (torch.randn(3, 4), torch.randn(3, 2))

    def loss_fn(m: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(m(x), y)

    step = accel.compile_train_step(model, loss_fn, opt, batch, options={
        "polyblocks_disable_affine_fusion": True, "opt_level": 1})
    loss = step(*batch)
    assert float(loss) > 0
    with pytest.raises(ValueError, match=r"^unknown option 'grad_acumulation_steps' \(did "
                                         r"you mean 'grad_accumulation_steps'\?\)$"):
        accel.compile_train_step(model, loss_fn, opt, batch,
                                 options={"grad_acumulation_steps": 2})


def test_an_option_given_twice_is_refused() -> None:
    with pytest.raises(OptionError, match=r"^option 'disable_fast_math' is given twice \(as "
                                          r"'disable_fast_math' and 'mlir_disable_fast_math'\)"):
        resolve({"disable_fast_math": False, "mlir_disable_fast_math": True})


@pytest.mark.parametrize(("key", "message"), [
    ("opt_levl", "unknown option 'opt_levl' (did you mean 'opt_level'?)"),
    ("opt-level", "unknown option 'opt-level' (did you mean 'opt_level'?)"),
    ("sram_budjet", "unknown option 'sram_budjet' (did you mean 'sram_budget'?)"),
    ("zzz", "unknown option 'zzz' (the options: docs/python-api.md, accel-compile --help)"),
    (7, "unknown option 7 (the options: docs/python-api.md, accel-compile --help)"),
])
def test_unknown_names_are_one_short_line(key: object, message: str) -> None:
    with pytest.raises(OptionError) as info:
        accel.compile(_mlp(), (torch.randn(1, 6),), options={key: 1})
    assert str(info.value) == message


def test_aliases_are_documented() -> None:
    """docs/python-api.md's alias table lists every alias of the table, and no other."""
    text = (ROOT / "docs" / "python-api.md").read_text()
    section = text.split("### Aliases", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|", section, re.MULTILINE))
    want = {a: o.name for o in OPTIONS.values() for a in o.aliases}
    assert rows == want
    assert set(ALIASES) == {a for a in want if not a.startswith("-")}


def test_dir_and_help_show_the_api() -> None:
    names = dir(accel)
    for name in ("compile", "jit", "load", "compile_train_step", "compile_mlir",
                 "CompiledModule", "set_num_threads", "rdu", "mlsdk"):
        assert name in names, name
    text = pydoc.render_doc(accel, renderer=pydoc.plaintext)
    for name in ("compile(", "jit(", "load(", "compile_train_step("):
        assert name in text, name


def test_package_ships_py_typed() -> None:
    assert (Path(accel.__file__).parent / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text()


def test_accel_run_flags_come_from_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """accel-run's option flags are the table's: -O (opt_level's alias), --preset, aliases
    such as --polyblocks-disable-affine-fusion; values validated by the table."""
    from accel.cli import run_main
    from accel.tools.accel_run import build_parser, run_tool
    from samples import ADD

    monkeypatch.setattr("sys.argv", ["accel-run"])
    src = tmp_path / "add.mlir"
    src.write_text(ADD)
    args = [str(src), "--entry", "add", "--input", "4xf32=1,2,3,4", "--input", "4xf32=1"]
    for extra in (["-O1"], ["--preset", "o0"], ["--polyblocks-disable-affine-fusion"],
                  ["--opt-level", "2", "--mlir-disable-fast-math"]):
        capsys.readouterr()
        assert run_main(run_tool, [*args, *extra]) == 0, capsys.readouterr().err
        assert capsys.readouterr().out == "4xf32=[2.0, 3.0, 4.0, 5.0]\n"
    assert run_main(run_tool, [*args, "-O", "7"]) == 1
    assert capsys.readouterr().err.strip() == \
        "accel-run: error: option 'opt_level' must be an int from 0 to 3, got 7"
    flags = {s for a in build_parser(helping=False)._actions for s in a.option_strings}
    for o in OPTIONS.values():
        if o.scope == "cpu":
            assert set(o.flags) <= flags, o.name
