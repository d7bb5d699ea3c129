"""`accel.mlsdk`: Preferred Networks' MLSDK device and context API on the emulated MN-Core
(`accel.targets.mncore.context`, docs/mncore.md "The MLSDK API").

    import accel
    context = accel.mlsdk.Context(accel.mlsdk.MNDevice("auto"))
"""

from accel.targets.mncore.context import (
    CacheOptions,
    CompiledFunction,
    MNDevice,
    TensorProxy,
    storage,
)
from accel.targets.mncore.context_trace import Context

__all__ = ["CacheOptions", "CompiledFunction", "Context", "MNDevice", "TensorProxy", "storage"]
