"""The `rdu` dialect from Python: builders, accessors, verifiers."""

from __future__ import annotations

import pytest
from accel.context import make_context
from accel.dialects import rdu, verify_module
from accel.ir import InsertionPoint, Location, MLIRError, Module, dialects, ir


def _tensor(n: int = 4) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([n], ir.F32Type.get())


def _module_with_sections(ctx: ir.Context) -> Module:
    """@f runs two sections: a stage-buffered body, then an instance of hypersection @layer."""
    with ctx, Location.unknown():
        t = _tensor()
        module = Module.create()
        rdu.set_target(module, "sn10", [1.0, 0.8, 0.8])
        with InsertionPoint(module.body):
            hyper = rdu.hypersection("layer", [t], [t])
            with InsertionPoint(hyper.entry):
                rdu.yield_([hyper.entry.arguments[0]])
            func = dialects.func.FuncOp("f", ir.FunctionType.get([t], [t]))
            with InsertionPoint(func.add_entry_block()):
                first = rdu.section(list(func.arguments), [t], name="s0", index=0, pcus=12,
                                    pmus=8)
                with InsertionPoint(first.entry):
                    rdu.yield_([rdu.stage_buffer(first.entry.arguments[0], depth=2)])
                second = rdu.section(list(first.results), [t], name="s1", index=1,
                                     phase="backward", pcus=512, pmus=4, hypersection="layer")
                dialects.func.ReturnOp(list(second.results))
    return module


def test_load_is_idempotent_and_per_context() -> None:
    contexts = [make_context() for _ in range(3)]
    for ctx in contexts:
        rdu.load(ctx)  # already loaded by make_context: a no-op
        assert ctx.is_dialect_loaded("rdu")
        with ctx:
            Module.parse('module attributes {rdu.arch = #rdu.arch<"sn40l">} {}')


def test_built_sections_verify_and_print(ctx: ir.Context) -> None:
    module = _module_with_sections(ctx)
    with ctx:
        assert module.operation.verify()
        assert verify_module(module.operation) == []
        text = str(module)
    assert "operandSegmentSizes" not in text and "resultSegmentSizes" not in text
    assert '"rdu.stage_buffer"(%arg1) {depth = 2 : i64}' in text
    assert "hypersection = @layer" in text
    assert 'rdu.arch = #rdu.arch<"sn10">' in text


def test_accessors_work_on_parsed_ir(ctx: ir.Context) -> None:
    with ctx:
        module = Module.parse(str(_module_with_sections(ctx)))
        func = module.body.operations[1]
        first, second = list(func.regions[0].blocks[0].operations)[:2]
    assert isinstance(first, rdu.SectionOp)
    assert len(first.inputs) == 1 and len(first.outputs) == 1
    assert first.phase.value == "forward" and first.index.value == 0
    assert second.inputs[0] == first.outputs[0]
    yield_op = first.entry.operations[1]
    assert isinstance(yield_op, rdu.YieldOp) and len(yield_op.values) == 1


def test_module_verifier_reports_resources_and_indices(ctx: ir.Context) -> None:
    module = _module_with_sections(ctx)
    with ctx:
        func = module.body.operations[1]
        second = list(func.regions[0].blocks[0].operations)[1]
        second.attributes["pcus"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 513)
        second.attributes["index"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
        messages = [message for _, message in rdu.verify(module.operation)]
    assert messages == [
        "'rdu.section' op index 0 is already used by section \"s0\" in the same block",
        "'rdu.section' op needs 513 PCUs but sn10 offers 512 (640 x 0.8 backward scaling)",
    ]


def test_op_verifier_errors_are_located(ctx: ir.Context) -> None:
    module = _module_with_sections(ctx)
    with ctx:
        func = module.body.operations[1]
        first = list(func.regions[0].blocks[0].operations)[0]
        first.attributes["phase"] = ir.StringAttr.get("inference")
        with pytest.raises(MLIRError) as info:
            module.operation.verify()
    assert "'rdu.section' op phase must be one of forward, backward, allreduce, grad_norm, " \
           "optimizer; got 'inference'" in str(info.value)


def test_unresolved_hypersection(ctx: ir.Context) -> None:
    with ctx:
        module = Module.parse("""
          func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
            %0 = "rdu.section"(%a) ({}) {sym_name = "s", index = 0 : i64, phase = "forward",
              pcus = 1 : i64, pmus = 1 : i64, hypersection = @nope}
              : (tensor<4xf32>) -> tensor<4xf32>
            return %0 : tensor<4xf32>
          }""")
        [(location, message)] = rdu.verify(module.operation)
    assert message.startswith("'rdu.section' op hypersection @nope does not name")
    assert ":3:18" in str(location)
