"""`accel.compile(model, example_inputs, options=...) -> CompiledModule`, and `accel.load`.

    fn = accel.compile(model.eval(), (torch.randn(8, 784),), options={"verify_numerics": True})
    y = fn(x)            # torch in, torch out (numpy in, numpy out)

The spine: options (`accel.options`) -> the frontend (`accel.frontend`: torch.export ->
linalg on tensors, weights kept out of the IR) -> `accel.targets.get(target).compile` -> an
executable, wrapped in a `CompiledModule`. The front compile cache (`accel.front_cache`)
short-cuts the frontend and the target on a hit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from accel.compiled_module import CompiledModule
from accel.options import OPTIONS, VERIFY_ATOL, VERIFY_RTOL

if TYPE_CHECKING:
    from accel.settings import Settings

__all__ = ["OPTIONS", "VERIFY_ATOL", "VERIFY_RTOL", "CompiledModule", "compile", "load",
           "load_codegen_dir", "resolve_options"]


def resolve_options(options: Mapping[str, Any] | None) -> Settings:
    """Defaults < the target's preset < `options`, validated, once (`accel.settings.resolve`;
    `Settings` are returned as they are).

    Raises `OptionError` (a `ValueError` and an `AccelError`) for an unknown key, a wrong
    type or an invalid value, and `NotImplementedError` for a value whose feature is not
    built yet.
    """
    from accel.settings import resolve

    return resolve(options)


def compile(model: Any, example_inputs: tuple[Any, ...], *,  # noqa: A001 - the API's name
            options: Mapping[str, Any] | None = None, dynamic_shapes: Any = None,
            example_kwargs: dict[str, Any] | None = None) -> CompiledModule:
    """Compile a `torch.nn.Module` (or a callable on tensors) for the inputs' shapes/dtypes.

    `example_inputs` is a tuple of tensors (numpy arrays are converted); `example_kwargs`
    keyword arguments of the same call. Inputs may be nested (tuples, lists, dicts, HF
    caches such as `DynamicCache`); non-tensor values (`use_cache=True`) are fixed at
    compile time. The compiled module is called like the model. Options:
    `accel.options.OPTIONS`. `dynamic_shapes` is `torch.export`'s: dimensions marked with
    `torch.export.Dim` stay dynamic in the compiled code, the others are fixed.
    Weights are not copied: the compiled code reads the model's parameters in place.
    Raises `ValueError`/`NotImplementedError` for bad options and `AccelError` when export,
    lowering or compilation fails.
    """
    if not isinstance(example_inputs, tuple | list):
        raise TypeError(f"example_inputs must be a tuple of inputs, got "
                        f"{type(example_inputs).__name__}")
    if dynamic_shapes is not None and not isinstance(dynamic_shapes, dict | tuple | list):
        raise TypeError(f"dynamic_shapes must be None, a dict or a tuple (torch.export's), "
                        f"got {type(dynamic_shapes).__name__}")
    if example_kwargs is not None and not isinstance(example_kwargs, dict):
        raise TypeError(f"example_kwargs must be a dict of keyword arguments, got "
                        f"{type(example_kwargs).__name__}")
    opts = resolve_options(options)
    _refuse_train_options(opts)
    if dynamic_shapes is not None:
        from accel.frontend import hf_cache

        dynamic_shapes = hf_cache.expand_dynamic_shapes(tuple(example_inputs),
                                                        example_kwargs or {}, dynamic_shapes)
    return _guarded_compile(model, tuple(example_inputs), opts, dynamic_shapes,
                            kwargs=example_kwargs or {})


def compile_phase_graph(graph: Any, example_inputs: tuple[Any, ...],
                        options: Mapping[str, Any] | None, phase: str,
                        outputs: tuple[str, ...]) -> CompiledModule:
    """`compile` for one phase graph of compiled training (accel.training.compile): the
    target also sees the phase's name and output names as the internal settings
    `graph_phase` and `graph_outputs` (`accel.options.INTERNAL_SETTINGS`; the RDU labels
    its sections with them)."""
    opts = phase_settings(options, phase, outputs)
    # Flat results: the training and torch.compile glue index them by position.
    return _guarded_compile(graph, tuple(example_inputs), opts, None, structured=False)


def phase_settings(options: Mapping[str, Any] | None, phase: str,
                   outputs: tuple[str, ...]) -> Settings:
    """The settings `compile_phase_graph` compiles a phase graph with."""
    opts = resolve_options(options)
    _refuse_train_options(opts)
    return opts.replace(graph_phase=phase, graph_outputs=list(outputs))


def _guarded_compile(model: Any, example_inputs: tuple[Any, ...], opts: Settings,
                     dynamic_shapes: Any, *, structured: bool = True,
                     kwargs: dict[str, Any] | None = None) -> CompiledModule:
    from accel import interrupts
    from accel.diagnostics import AccelError, out_of_memory, too_deep
    from accel.frontend.program import model_name

    try:
        with interrupts.guarded():  # Ctrl-C: stops at a safe place, nothing is cached
            return _compile(model, example_inputs, opts, dynamic_shapes, structured,
                            kwargs or {})
    except KeyboardInterrupt:
        raise interrupts.interrupted(f"compiling {model_name(model)}") from None
    except RecursionError:  # hashing, importing or lowering a deeply nested model
        raise AccelError(too_deep(model_name(model))) from None
    except MemoryError as err:  # still a MemoryError, saying what ran out
        raise MemoryError(f"compiling {model_name(model)} {out_of_memory(err)}") from None


def _compile(model: Any, example_inputs: tuple[Any, ...], opts: Settings,
             dynamic_shapes: Any, structured: bool = True,
             kwargs: dict[str, Any] | None = None) -> CompiledModule:
    import torch

    from accel import phases, targets
    from accel.front_cache import FrontCache
    from accel.frontend.program import model_name

    target = targets.get(opts["target"])
    inputs = tuple(torch.from_numpy(x) if isinstance(x, np.ndarray) else x
                   for x in example_inputs)
    func_name = "main"
    rec = phases.current()
    # The front cache skips the import, so not while a recording wants the IR of each phase.
    front = FrontCache(target, func_name, opts) if opts["cache"] and \
        (rec is None or not rec.keep_ir) else None
    # Keyword arguments take the export path (their structure comes from torch.export).
    program = front.early(model, inputs, dynamic_shapes) if front is not None and \
        not kwargs else None
    if program is None:
        from accel.frontend.torch_import import import_program

        program = import_program(model, inputs, func_name=func_name,
                                 dynamic_shapes=dynamic_shapes,
                                 reuse=front.reuse if front is not None else None,
                                 provenance=target.torch_provenance, example_kwargs=kwargs)
    outputs = program.outputs if structured else None
    if program.compiled is not None:  # a front-cache hit
        result = CompiledModule(model, program.compiled, None, func_name, opts,
                                tuple(program.mutations), outputs, program.inputs)
        result.set_module_text(program.module_text)
        result.front_key = front.key or front.early_key if front is not None else None
    else:
        text = program.module.operation.get_asm(enable_debug_info=True)
        # out_onnx is written below from the torch model, not by the target from MLIR.
        compiled = target.compile(text, opts.replace(
            filename=f"<{model_name(model)}>",
            **({"out_onnx": None} if "out_onnx" in opts else {})), weights=program.weights)
        if front is not None:
            front.store(program, text)
        result = CompiledModule(model, compiled, program.module, func_name, opts,
                                tuple(program.mutations), outputs, program.inputs)
        result.front_key = front.key if front is not None else None
    if opts.get("out_onnx"):  # after a front-cache hit too: the file is asked for each time
        from accel.frontend.onnx_export import export_onnx

        export_onnx(model, inputs, opts["out_onnx"], dynamic_shapes,
                    external_data=bool(getattr(result.compiled, "external_data", False)))
    if opts["aot"]:
        if program.mutations:
            raise NotImplementedError(f"aot: {model_name(model)} updates buffers or inputs in "
                                      "place, which a library with read-only weights cannot do")
        result.aot_library = target.build_aot(result.compiled, func_name, opts)
    return result


def _refuse_train_options(opts: Mapping[str, Any]) -> None:
    """`accel.compile` compiles inference: a training option set there is a mistake."""
    from accel.options import OptionError

    for name, option in OPTIONS.items():
        if option.scope == "train" and opts.get(name, option.default) != option.default:
            raise OptionError(f"option '{name}' applies to compiled training "
                              "(accel.compile_train_step), not to accel.compile")


def load(folder: Any) -> Any:
    """Reload an artifact folder (`CompiledModule.save`, accel-compile) without compiling:
    a `CompiledModule`, or for a training build of accel-compile a `TrainStep`
    (`accel.training.artifact`)."""
    from accel import targets
    from accel.artifact import load as load_folder
    from accel.training.artifact import is_train_folder, load_step

    if is_train_folder(folder):
        return load_step(folder)

    found = load_folder(folder, targets.get)
    outputs = inputs = None
    if found.output_structure is not None:
        from accel.frontend.outputs import OutputStructure

        outputs = OutputStructure.from_json(found.output_structure)
    if found.input_structure is not None:
        from accel.diagnostics import AccelError
        from accel.frontend.inputs import InputStructure

        inputs = InputStructure.from_json(found.input_structure)
        if inputs is None:
            raise AccelError(f"artifact '{folder}': its input structure cannot be read "
                             "(damaged, or it names a class accel does not load)")
    module = CompiledModule(None, found.executable, None, found.entry, found.options,
                            outputs=outputs, inputs=inputs)
    module.set_module_text(found.model_mlir)
    return module


def load_codegen_dir(folder: Any) -> CompiledModule:
    """The compiled function of a `codegen_dir` (MLSDK's `Context.load_codegen_dir`),
    without tracing the model again: a codegen_dir is also an artifact folder."""
    return load(folder)
