"""A compiled MN-Core program: the host emulation plus what the compiler decided."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

PROGRAM = "mncore_host.mlir"
#: The compiler's reports an artifact keeps (codegen_dir also has option.json, written
#: by the compile: accel-compile writes its own option.json into its folders).
PLANNED_FILES = ("l3ir.txt", "summary.json")
#: The layer program (layered.py): which host function runs each layer, in schedule order.
LAYERS = "layers.json"


@dataclasses.dataclass
class MncoreExecutable:
    """A compiled MN-Core program: the host emulation plus what the compiler decided."""

    host: Any  # accel.host.jit.CompiledMLIR
    functions: dict[str, Any]
    weights: Mapping[str, np.ndarray]
    float_dtype: str | None
    program: str
    files: dict[str, str]  # l3ir.txt, summary.json, option.json, ... (name -> text)
    estimated_us: float
    #: The CODEGEN_* environment the program was compiled with.
    envs: dict[str, str] = dataclasses.field(default_factory=dict)
    #: One call's host transfers (compiler._transfers: H2D/D2H microseconds and bytes).
    transfers: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The layer graph's input and output tensor names.
    graph_io: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def external_data(self) -> bool:
        """MNCORE_USE_EXTERNAL_DATA_FORMAT: out_onnx keeps large tensors in a separate file."""
        return str(self.envs.get("MNCORE_USE_EXTERNAL_DATA_FORMAT", "0")).strip() \
            not in ("0", "")

    def __getitem__(self, name: str) -> Any:
        layers = self.files.get("layers.json")
        if layers is not None:
            import json

            from accel.targets.mncore.layered import LayeredCall, Program

            data = json.loads(layers)
            if data.get("entry") == name:
                return LayeredCall(self.host, Program.from_json(data), self.weights,
                                   self.float_dtype == "double")
        if name not in self.functions:
            raise ValueError(f"no public function @{name}; available: "
                             f"{', '.join('@' + n for n in self.functions)}")
        fn = self.host[name]
        if self.float_dtype == "double":
            from accel.targets.mncore.precision import DoubleCall

            return DoubleCall(fn)
        return fn


