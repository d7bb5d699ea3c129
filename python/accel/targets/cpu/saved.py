"""What a cpu artifact's code says about itself, and the check that the rest agrees.

An artifact's `module.ll` (and the `module.o` built from it) is code: `accel.load` runs it,
so it is as trusted as a shared library. Everything else in the folder is data that must fit
that code: the manifest's signatures decide how arguments are packed, and the weight files
are read in place at the sizes the code was compiled for. So `module.ll` starts with one
comment line recording both,

    ; accel-artifact {"signatures": [...], "weights": {"accel_w0": {"dtype": "<f4",
    ;                 "shape": [16, 8]}, ...}}

and `load` refuses a folder whose manifest or weights disagree with it (a damaged or edited
manifest would otherwise make the code read or write out of bounds, or compute with
reinterpreted bytes), before any code is linked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accel.diagnostics import AccelError
from accel.runtime.signature import Signature, signature_from_json, signature_to_json

HEADER = "; accel-artifact "


def with_header(llvm_ir: str, functions: Mapping[str, Signature],
                weights: Mapping[str, np.ndarray]) -> str:
    """`llvm_ir` with the header line recording its signatures and weights."""
    record = {"signatures": [signature_to_json(s) for s in functions.values()],
              "weights": {n: {"dtype": a.dtype.str, "shape": list(a.shape)}
                          for n, a in weights.items()}}
    return HEADER + json.dumps(record, sort_keys=True) + "\n" + llvm_ir


def checked(folder: Path, ll: bytes, manifest: Mapping[str, Any],
            weights: Mapping[str, np.ndarray]) -> tuple[str, dict[str, Signature],
                                                        dict[str, int]]:
    """(LLVM IR, signatures, weight byte sizes) of `module.ll`, after checking that the
    manifest's signatures and the weight arrays are the ones the code was built for."""
    try:
        text = ll.decode("utf-8")
        first, _, _ = text.partition("\n")
        if not first.startswith(HEADER):
            raise ValueError("module.ll does not record its signatures (an older accel wrote "
                             "it): compile it again")
        record = json.loads(first[len(HEADER):])
        sigs = {s["name"]: signature_from_json(s) for s in record["signatures"]}
        expected = {n: (str(w["dtype"]), [int(d) for d in w["shape"]])
                    for n, w in record["weights"].items()}
    except (UnicodeDecodeError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise AccelError(f"artifact '{folder}': module.ll: {err}") from None
    given = manifest.get("signatures")
    if not isinstance(given, list) or [_normal(s) for s in given] != [
            signature_to_json(s) for s in sigs.values()]:
        raise AccelError(f"artifact '{folder}': the signatures in manifest.json do not match "
                         "the code's (module.ll): damaged or edited; compile it again")
    for name, (dtype, shape) in expected.items():
        array = weights.get(name)
        if array is None:
            raise AccelError(f"artifact '{folder}': the code reads weight '{name}', which "
                             "the manifest does not list")
        if array.dtype.str != dtype or list(array.shape) != shape:
            raise AccelError(f"artifact '{folder}': weight '{name}' is {array.dtype.str}"
                             f"{list(array.shape)}, the code was compiled for {dtype}{shape}")
    extra = sorted(set(weights) - set(expected))
    if extra:
        raise AccelError(f"artifact '{folder}': the manifest lists weights the code does not "
                         f"read: {', '.join(extra)}")
    sizes = {n: int(np.dtype(d).itemsize * int(np.prod(s, dtype=np.int64)))
             for n, (d, s) in expected.items()}
    return text, sigs, sizes


def _normal(spec: Any) -> Any:
    """A manifest signature as `signature_to_json` writes it (or the value, if malformed)."""
    try:
        return signature_to_json(signature_from_json(spec))
    except (KeyError, TypeError, ValueError, AttributeError):
        return spec
