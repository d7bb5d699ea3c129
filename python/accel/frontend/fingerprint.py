"""Fingerprints of exported programs: what the front compile cache keys on.

`program_fingerprint(exported, func_name)` hashes everything in a `torch.export` program
(before decompositions) that the imported MLIR depends on, weight values included.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from accel.frontend.program import state_tensors
from accel.runtime.weights import numpy_view

#: Above this many bytes of parameters, buffers and constants the front cache is skipped:
#: hashing them would cost about what it saves (such models still hit the MLIR-level cache).
FRONT_MAX_STATE_BYTES = 256 << 20
_INPUT_KINDS = ("USER_INPUT", "PARAMETER", "BUFFER", "CONSTANT_TENSOR")


def _describe(value: Any) -> str:
    """A node's `meta["val"]` as text: shape, dtype, strides, device of fake tensors."""
    import torch

    if isinstance(value, torch.Tensor):
        return (f"T({value.dtype},{tuple(value.shape)},{tuple(value.stride())},"
                f"{value.device.type},{value.requires_grad})")
    if isinstance(value, list | tuple):
        return "(" + ",".join(_describe(v) for v in value) + ")"
    return f"{type(value).__name__}:{value}"


def program_fingerprint(exported: Any, func_name: str) -> str | None:
    """SHA-256 of everything in a `torch.export` program (before decompositions) that the
    imported MLIR depends on, or None when the program cannot be fingerprinted safely.

    Covered: the torch version; the Python code and every node (op, target, shape/dtype/
    strides of its value, source location) of the graph and of its subgraphs; the graph
    signature, range constraints (dynamic shapes) and call specs; and every parameter,
    buffer and lifted constant: name, dtype, shape, strides, which ones share memory, and a
    SHA-256 of its *values* (small tensors are inlined into the IR as constants, so values
    matter; hashing all of them is what makes a front hit safe).
    """
    import torch

    digest = hashlib.sha256()

    def put(text: str) -> None:
        digest.update(text.encode())
        digest.update(b"\0")

    try:
        put(f"torch {torch.__version__} {torch.version.git_version} {func_name}")
        for spec in exported.graph_signature.input_specs:
            if spec.kind.name not in _INPUT_KINDS:
                return None  # script objects, tokens: state the hash would not see
        for path, gm in exported.graph_module.named_modules():
            if not isinstance(gm, torch.fx.GraphModule):
                return None
            put(f"graph {path}")
            put(gm.code)
            for node in gm.graph.nodes:
                put(f"{node.op} {node.name} {node.target} {_describe(node.meta.get('val'))} "
                    f"{node.meta.get('stack_trace')}")
        put(str(exported.graph_signature))
        put(str(exported.range_constraints))
        put(str(exported.module_call_graph))
        total = 0
        seen: dict[tuple[int, Any, tuple[int, ...]], str] = {}
        for target, tensor in sorted(state_tensors(exported).items()):
            if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu" or \
                    tensor.layout != torch.strided or tensor.is_quantized:
                return None
            total += tensor.numel() * tensor.element_size()
            if total > FRONT_MAX_STATE_BYTES:
                return None
            alias = (tensor.data_ptr(), tensor.dtype, tuple(tensor.shape))
            put(f"state {target} {tensor.dtype} {tuple(tensor.shape)} {tensor.stride()} "
                f"same-as:{seen.setdefault(alias, target)}")
            values = numpy_view(tensor.detach().contiguous())
            digest.update(values.reshape(-1).view(np.uint8))
    except Exception:  # noqa: BLE001 - anything unusual: no front cache, the full path runs
        return None
    return digest.hexdigest()


