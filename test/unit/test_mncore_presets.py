"""mncore's presets O3/O4 called on a block with a q/k/v split and softmax (whose softmax
has a max-and-argmax `linalg.generic` with two results), the layer graph's dependencies,
and the precedence of an explicit option over the presets' option files (issue 27)."""

from __future__ import annotations

import accel
import combinations as C
import numpy as np
import pytest
from accel.settings import help_table
from accel.settings import merge as resolve

MODEL, INPUTS = C.MODELS["block"]()
MODEL.eval()
WANT = MODEL(*INPUTS).detach().numpy()


@pytest.mark.parametrize("preset", ["O3", "O4"])
def test_o3_o4_programs_run_and_match_eager(preset: str) -> None:
    fn = accel.compile(MODEL, INPUTS, options={"target": "mncore", "preset": preset,
                                               "cache": False})
    assert "layers.json" in fn.compiled.files  # run layer by layer in the schedule's order
    np.testing.assert_allclose(fn(*INPUTS).detach().numpy(), WANT, rtol=1e-4, atol=1e-5)
    # the schedule's order runs each producer before its consumers
    program = fn.compiled[fn.func_name]._program
    made = {call.out: i for i, call in enumerate(program.layers)}
    for i, call in enumerate(program.layers):
        assert all(made.get(name, -1) < i for name in call.args), call.fn


def test_every_layer_reads_only_what_the_graph_says() -> None:
    """Each layer function's arguments are its graph inputs (or graph inputs/weights): a
    tensor it read through a skipped op would be a dependency the scheduler never saw."""
    from accel.frontend.torch_import import import_program
    from accel.host.signatures import parsed
    from accel.targets.mncore import graph, layered

    text = import_program(MODEL, INPUTS, func_name="main").module.operation.get_asm()
    with parsed(text, "block", None) as (module, _):
        func = next(op for op in module.body.operations if op.operation.name == "func.func")
        g = graph.from_function(func.operation)
        multi = [layer for layer in g.layers if "#" in layer.output]
        assert multi, "the softmax's max generic has two results: one is a layer"
        _, program = layered.split(func.operation, g, [layer.name for layer in g.layers])
    for layer, call in zip(g.layers, program.layers, strict=True):
        hidden = set(call.args) - set(layer.inputs)
        assert all(g.values[n].kind in ("input", "weight") for n in hidden), layer.name


def test_an_explicit_scheduler_wins_over_the_presets_file() -> None:
    assert resolve({"target": "mncore", "preset": "O3"})["scheduler"] == "auto_recompute_sa"
    # the table's default given explicitly: still given (no longer judged by value)
    assert resolve({"target": "mncore", "preset": "O3",
                    "scheduler": "reuse_consecutive"})["scheduler"] == "reuse_consecutive"
    assert resolve({"target": "mncore", "option_json": "O0",
                    "scheduler": "auto_recompute_sa"})["scheduler"] == "auto_recompute_sa"
    fn = accel.compile(MODEL, INPUTS, options={"target": "mncore", "preset": "O3",
                                               "scheduler": "reuse_consecutive",
                                               "cache": False})
    head = fn.compiled.files["l3ir.txt"].splitlines()[0]
    assert "scheduler=reuse_consecutive" in head and "simulation_mode=best" in head


def test_help_names_the_default_the_presets_use() -> None:
    table = help_table("mncore")
    assert "scheduler (--scheduler; default auto_recompute_sa (preset O1);" in table
    assert "layout_planner (--layout-planner; default lpz;" in table  # the table's own
    from accel.tools.accel_compile import build_parser

    text = " ".join(build_parser().format_help().split())
    assert "(default auto_recompute_sa (preset O1);" in text
