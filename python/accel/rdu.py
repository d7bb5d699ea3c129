"""`accel.rdu`: model annotations for the RDU target (`accel.targets.rdu`, docs/rdu.md).

    @accel.rdu.hypersection
    class Block(torch.nn.Module): ...
"""

from accel.targets.rdu.annotate import hypersection

__all__ = ["hypersection"]
