"""The `mncore` dialect from Python: layout attribute, builders, verifiers, stripping."""

from __future__ import annotations

import pytest
from accel.dialects import mncore
from accel.ir import InsertionPoint, Location, MLIRError, Module, dialects, ir
from accel.passes.mncore_strip_layouts import StripLayouts, strip_layouts

GATHER = "((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])"


def _annotated(ctx: ir.Context, first: str, second: str, shape: list[int]) -> Module:
    """@f annotates its argument with `first` and relayouts it to `second` (f16 data)."""
    with ctx, Location.unknown():
        t = ir.RankedTensorType.get(shape, ir.F16Type.get())
        module = Module.create()
        with InsertionPoint(module.body):
            func = dialects.func.FuncOp("f", ir.FunctionType.get([t], [t]))
            with InsertionPoint(func.add_entry_block()):
                placed = mncore.annotate(func.arguments[0], first, "lm")
                moved = mncore.relayout(placed, first, mncore.Layout.parse(second), "dram")
                dialects.func.ReturnOp([moved])
    return module


def test_layout_attribute_round_trips_verbatim(ctx: ir.Context) -> None:
    with ctx:
        attr = mncore.layout(GATHER)
        assert str(attr) == f'#mncore.layout<"{GATHER}">'
        parsed = ir.Attribute.parse(str(attr))
        assert isinstance(parsed, mncore.LayoutAttr)
        assert mncore.layout_text(parsed) == GATHER
        assert mncore.layout_text(ir.StringAttr.get(GATHER)) is None


def test_builders_verify_and_print(ctx: ir.Context) -> None:
    module = _annotated(ctx, GATHER, "((25_Time:1, 3:1536, 8_L2B:1, 16_MAB:1, 4:1, 4:4), "
                                     "(96:16, 4_W:1, 4_PE:1); B@[L1B])", [151936, 1536])
    with ctx:
        assert module.operation.verify()
        text = str(module)
    assert f'layout = #mncore.layout<"{GATHER}">, memory = "lm"' in text
    assert f'src = #mncore.layout<"{GATHER}">' in text


def test_producer_layout_and_accessors(ctx: ir.Context) -> None:
    module = _annotated(ctx, "((4_PE:1))", "((2_PE:1, 2:1))", [4])
    with ctx:
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
    annotate, relayout = ops[0], ops[1]
    assert isinstance(annotate, mncore.AnnotateOp) and isinstance(relayout, mncore.RelayoutOp)
    assert mncore.producer_layout(relayout.operands[0]) == mncore.Layout.parse("((4_PE:1))")
    assert mncore.producer_layout(annotate.operands[0]) is None  # a block argument
    assert relayout.memory.value == "dram"


def test_layout_that_does_not_fit_fails_verification(ctx: ir.Context) -> None:
    module = _annotated(ctx, "((4_PE:1))", "((2_PE:1))", [4])
    with ctx, pytest.raises(MLIRError) as info:
        module.operation.verify()
    assert "'mncore.relayout' op dst layout does not fit tensor<4xf16>: dimension 0 has size 4 " \
        "but its group covers only 2 positions" in str(info.value)


def test_bad_layout_names_the_column(ctx: ir.Context) -> None:
    module = _annotated(ctx, "((4_PE:1)", "((4_PE:1))", [4])
    with ctx, pytest.raises(MLIRError) as info:
        module.operation.verify()
    assert "'mncore.annotate' op malformed layout \"((4_PE:1)\": column 10: expected ','" in \
        str(info.value)


def test_strip_layouts(ctx: ir.Context) -> None:
    module = _annotated(ctx, "((4_PE:1))", "((2_PE:1, 2:1))", [4])
    with ctx:
        assert strip_layouts(module.operation) == 2
        assert "mncore." not in str(module)
        assert module.operation.verify()


def test_strip_layouts_pass(ctx: ir.Context) -> None:
    module = _annotated(ctx, "((4_PE:1))", "((2_PE:1, 2:1))", [4])
    with ctx:
        StripLayouts()(module)
        assert "mncore." not in str(module)


def test_module_verifier_checks_layouts_in_other_attributes(ctx: ir.Context) -> None:
    with ctx:
        module = Module.parse('func.func private @g(tensor<4xf32> '
                              '{mncore.layout = #mncore.layout<"((4_PE:1) x">})')
        [(_, message)] = mncore.verify(module.operation)
    assert message.startswith("'func.func' op malformed layout \"((4_PE:1) x\" in attribute "
                              "'arg_attrs': column 11")


def test_a_verifier_bug_is_a_located_error_not_a_crash(ctx: ir.Context,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise ZeroDivisionError("oops")

    module = _annotated(ctx, "((4_PE:1))", "((2_PE:1, 2:1))", [4])
    monkeypatch.setattr(mncore, "_layout", broken)
    with ctx, pytest.raises(MLIRError) as info:
        module.operation.verify()
    assert "'mncore.annotate' op verifier failed internally: ZeroDivisionError: oops" in \
        str(info.value)
