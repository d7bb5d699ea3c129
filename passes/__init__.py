"""accel.passes: the Python pass API and accel's own passes (one file per pass).

Importing this package registers every built-in pass; plugin files register theirs with
`@register_pass` when `accel-opt --load-pass-plugin=FILE` (or `load_pass_plugin`) imports them.
"""

from __future__ import annotations

# Built-in passes: importing each module registers it.
from accel.passes import (  # noqa: E402,F401,I001
    affine_fusion,
    assert_to_error_return,
    check_allocations,
    emit_c_interface,
    fold_matmul_upcasts,
    guard_division,
    loop_interchange,
    matmul_microkernel,
    matmul_precision,
    mncore_plan_layouts,
    mncore_strip_layouts,
    nvgpu_conv_to_matmul,
    nvgpu_copy_to_linalg,
    nvgpu_flash_attention,
    nvgpu_map_loops,
    nvgpu_register_tile_matmul,
    nvgpu_tensor_core_matmul,
    nvgpu_wrap_serial,
    outline_contractions,
    outline_nonaffine_linalg,
    parallelize_loops,
    precise_math_to_libm,
    prepare_one_shot,
    reduce_reduce_fusion,
    split_argmax,
    split_functions,
    tile_transposes,
    unsafe_math_canonicalize,
)
from accel.passes.base import (
    FunctionPass,
    ModulePass,
    OptionError,
    Pass,
    PassFailure,
    lookup_pass,
    register_pass,
    registered_passes,
)
from accel.passes.plugins import load_pass_plugin
from accel.passes.rdu import sectioning as _rdu_sectioning  # noqa: E402,F401,I001

__all__ = [
    "FunctionPass",
    "ModulePass",
    "OptionError",
    "Pass",
    "PassFailure",
    "load_pass_plugin",
    "lookup_pass",
    "register_pass",
    "registered_passes",
]
