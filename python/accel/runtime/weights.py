"""Weights at run time: torch tensors as numpy views, and checking what compiled code binds.

Compiled code reads each external weight (an external `memref.global`, see
`accel.frontend.weights`) in place from an array of exactly its size: `check_bindings` says
which is missing or wrong before any address is bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from accel.diagnostics import AccelError


def numpy_view(tensor: Any) -> np.ndarray:
    """A CPU tensor's memory as a numpy array, no copy; bf16 (which numpy lacks) as its uint16
    bit patterns, the form the accel runtime takes."""
    import torch

    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.uint16).numpy()
    return tensor.numpy()


def as_array(tensor: Any) -> np.ndarray | None:
    """The tensor's memory as a C-contiguous numpy array (bf16 as its uint16 bits)."""

    try:
        t = tensor.detach()
        if t.device.type != "cpu" or t.is_complex() or t.is_quantized:
            return None
        return numpy_view(t.contiguous())
    except (RuntimeError, TypeError):  # fake or otherwise storage-less tensors
        return None


def check_bindings(specs: Mapping[str, int], weights: Mapping[str, np.ndarray],
                   what: str) -> None:
    """Every external weight the code needs (name -> byte size) has a matching array."""
    for name, nbytes in specs.items():
        array = weights.get(name)
        if array is None:
            raise AccelError(f"{what} needs weight '{name}' ({nbytes} bytes), which was not "
                             "given")
        if array.nbytes != nbytes or not array.flags.c_contiguous:
            raise AccelError(f"{what}: weight '{name}' must be a C-contiguous array of "
                             f"{nbytes} bytes, got {array.nbytes} bytes")


def checked_weights(weights: Any, what: str = "weights") -> dict[str, np.ndarray]:
    """The `weights` argument of an API call (name -> numpy array) as a dict; `TypeError`
    naming the argument for anything else, before any work."""
    if weights is None:
        return {}
    if not isinstance(weights, Mapping):
        raise TypeError(f"{what} must be a dict of name -> numpy array, got "
                        f"{type(weights).__name__}")
    for name, array in weights.items():
        if not isinstance(name, str):
            raise TypeError(f"{what}: names must be str, got {type(name).__name__}")
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{what}[{name!r}] must be a numpy array, got "
                            f"{type(array).__name__}")
    return dict(weights)
