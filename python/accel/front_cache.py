"""The front compile cache: a model -> compiled code, skipping the import.

`FrontCache.reuse` is `accel.frontend.import_program`'s hook: right after `torch.export` it
fingerprints the exported program (`accel.frontend.fingerprint`), looks the fingerprint up
in the cache and, on a hit, has the target link the stored code with the model's weights,
skipping decompositions, the FX import, torch-mlir's pipelines and the MLIR-level key.
After a miss and a successful compile, `store` records the program. See docs/cache.md.
"""

from __future__ import annotations

from typing import Any

from accel import cache
from accel.diagnostics import AccelError
from accel.frontend.fingerprint import program_fingerprint
from accel.frontend.model_key import model_fingerprint
from accel.frontend.program import (
    ImportedProgram,
    Mutation,
    check_mutations,
    weight_arrays,
)
from accel.options import code_options
from accel.runtime.weights import as_array


class FrontCache:
    """The front compile cache of one compile: `reuse` is `import_program`'s hook; after a
    miss and a successful compile, `store` records the program under the key `reuse`
    computed."""

    def __init__(self, target: Any, func_name: str, options: dict[str, Any]):
        self.target = target
        self.func_name = func_name
        self.options = dict(options)
        self.code_options = {"target": target.name, **code_options(options)}
        self.key: str | None = None
        self.early_key: str | None = None
        self.model: Any = None

    def early(self, model: Any, inputs: tuple[Any, ...], dynamic_shapes: Any
              ) -> ImportedProgram | None:
        """A hit found before exporting, keyed on the model itself
        (`accel.frontend.model_key`): no torch.export, no torch-mlir; or None."""
        if dynamic_shapes is not None:
            return None
        self.model = model
        fingerprint = model_fingerprint(model, inputs, self.func_name)
        if fingerprint is None:
            return None
        self.early_key = cache.front_key("model:" + fingerprint, self.code_options)
        try:
            found = self._early_lookup(model, self.early_key)
        except Exception as err:  # noqa: BLE001 - never worse than no cache: the full path runs
            cache.log.warning("accel cache: early entry %s not used: %s", self.early_key, err)
            found = None
        cache.STATS["early_hit" if found is not None else "early_miss"] += 1
        return found

    def _early_lookup(self, model: Any, key: str) -> ImportedProgram | None:
        entry = cache.lookup_front(key)
        if entry is None:
            return None
        state = _module_state(model)
        weights = {}
        for name, target in entry["weights"].items():
            array = as_array(state[target]) if target in state else None
            if array is None:
                return None
            weights[name] = array
        mutations = [Mutation(str(kind), str(target)) for kind, target in entry["mutations"]]
        found, outputs = _outputs(entry)
        found_inputs, inputs = _inputs(entry)
        if not (found and found_inputs):
            return None
        try:
            check_mutations(model, mutations, weights)
            compiled = self.target.from_cache(entry["mlir_key"], self.options, weights)
        except (AccelError, NotImplementedError, KeyError, TypeError, ValueError):
            return None
        if compiled is None:
            return None
        return ImportedProgram(None, weights, mutations, compiled=compiled,
                               module_text=entry["mlir"], outputs=outputs, inputs=inputs)

    def reuse(self, module: Any, exported: Any) -> ImportedProgram | None:
        fingerprint = program_fingerprint(exported, self.func_name)
        if fingerprint is None:
            return None
        self.key = cache.front_key(fingerprint, self.code_options)
        try:
            found = self._lookup(module, exported, self.key)
        except Exception as err:  # noqa: BLE001 - never worse than no cache: the full path runs
            cache.log.warning("accel cache: front entry %s not used: %s", self.key, err)
            found = None
        cache.STATS["front_hit" if found is not None else "front_miss"] += 1
        if found is not None:
            cache.log.info("accel cache: front hit %s", self.key)
        return found

    def _lookup(self, module: Any, exported: Any, key: str) -> ImportedProgram | None:
        entry = cache.lookup_front(key)
        if entry is None:
            return None
        try:
            weights = weight_arrays(exported, entry["weights"])
            if weights is None:
                return None
            mutations = [Mutation(str(kind), str(target)) for kind, target in entry["mutations"]]
            found, outputs = _outputs(entry)
            if not found:
                return None
            check_mutations(module, mutations, weights)
            compiled = self.target.from_cache(entry["mlir_key"], self.options, weights)
        except (AccelError, NotImplementedError, KeyError, TypeError, ValueError):
            return None  # the full path runs (and reports any real error itself)
        if compiled is None:
            return None
        program = ImportedProgram(None, weights, mutations, compiled=compiled,
                                  module_text=entry["mlir"], weight_sources=entry["weights"],
                                  outputs=outputs)
        self._store_early(entry, program.weights)  # the next compile finds it before export
        return program

    def store(self, program: ImportedProgram, mlir_text: str) -> None:
        """Record `program` (imported, compiled with the MLIR-level cache on) under `key`."""
        if self.key is None or program.weight_sources is None:
            return
        outputs = program.outputs.to_json() if program.outputs is not None else None
        if program.outputs is not None and outputs is None:
            return  # a structure the entry cannot hold: a hit would return flat results
        inputs = program.inputs.to_json() if program.inputs is not None else None
        if program.inputs is not None and inputs is None:
            return  # likewise for the arguments
        mlir_key = self.target.cache_key(mlir_text, self.options)
        if mlir_key is None:
            return
        entry = {
            "mlir_key": mlir_key,
            "weights": program.weight_sources,
            "mutations": [[m.kind, m.target] for m in program.mutations],
            "mlir": mlir_text,
            "outputs": outputs,
            "inputs": inputs,
        }
        cache.store_front(self.key, entry)
        self._store_early(entry, program.weights)

    def _store_early(self, entry: dict[str, Any], weights: dict[str, Any]) -> None:
        """Also record `entry` under the model's own key, when its weights can be bound by
        the module's own names: each must be a parameter or buffer of the module, in the
        very memory the exported program read."""
        if self.early_key is None or self.model is None:
            return
        state = _module_state(self.model)
        for name, target in entry["weights"].items():
            tensor = state.get(target)
            array = as_array(tensor) if tensor is not None else None
            if array is None or array.ctypes.data != weights[name].ctypes.data:
                return
        cache.store_front(self.early_key, entry)


def _outputs(entry: dict[str, Any]) -> tuple[bool, Any]:
    """(usable, the output structure) of an entry; entries written before outputs were
    recorded, or with a damaged structure, are not used."""
    from accel.frontend.outputs import OutputStructure

    if "outputs" not in entry:
        return False, None
    if entry["outputs"] is None:
        return True, None
    structure = OutputStructure.from_json(entry["outputs"])
    return structure is not None, structure


def _inputs(entry: dict[str, Any]) -> tuple[bool, Any]:
    """(usable, the input structure) of an entry: entries written before inputs were
    recorded hold plain positional tensors."""
    from accel.frontend.inputs import InputStructure

    if entry.get("inputs") is None:
        return True, None
    structure = InputStructure.from_json(entry["inputs"])
    return structure is not None, structure


def _module_state(model: Any) -> dict[str, Any]:
    """The module's parameters and buffers by qualified name (the exported state's names)."""
    state = dict(model.named_parameters(remove_duplicate=False))
    state.update(model.named_buffers(remove_duplicate=False))
    return state
