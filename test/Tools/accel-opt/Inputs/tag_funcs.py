"""Out-of-tree pass plugin in the exact shape the pass API documents."""

from dataclasses import dataclass

from accel.ir import ir
from accel.passes import FunctionPass, ModulePass, register_pass


@register_pass
@dataclass(frozen=True)
class TagFuncs(ModulePass):
    """Adds a unit attribute `tag` to every func.func."""

    name = "tag-funcs"
    attr: str = "tag"

    def apply(self, module) -> None:
        for op in module.regions[0].blocks[0].operations:
            if op.operation.name == "func.func":
                op.operation.attributes[self.attr] = ir.UnitAttr.get()


@register_pass
@dataclass(frozen=True)
class CountOps(FunctionPass):
    """Records the number of ops in each function body as `num_ops`."""

    name = "count-ops"
    scale: int = 1
    verbose: bool = False

    def apply(self, func) -> None:
        n = sum(1 for _ in func.regions[0].blocks[0].operations)
        func.attributes["num_ops"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                        n * self.scale)


@register_pass
@dataclass(frozen=True)
class RejectAddf(FunctionPass):
    """Fails on the first arith.addf, pointing at it."""

    name = "reject-addf"

    def apply(self, func) -> None:
        for op in func.regions[0].blocks[0].operations:
            if op.operation.name == "arith.addf":
                self.fail(op, "arith.addf is not allowed here")


@register_pass
@dataclass(frozen=True)
class Crash(ModulePass):
    """Raises a Python exception (a plugin bug) to check it is reported, not a traceback."""

    name = "crash-in-python"

    def apply(self, module) -> None:
        raise RuntimeError("plugin bug")
