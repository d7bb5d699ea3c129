"""The built-in passes: importing this module registers each (one file per pass).

`accel.passes.base` imports it by name on the registry's first use; a new pass adds its
module here.
"""

from __future__ import annotations

from accel.passes import (  # noqa: F401 - imported to register
    affine_fusion,
    aligned_pointer_provenance,
    assert_to_error_return,
    blocked_layout,
    check_allocations,
    conv_kernels,
    dedupe_functions,
    emit_c_interface,
    fold_flips,
    fold_matmul_upcasts,
    fold_matvec_transposes,
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
    pool_taps,
    precise_math_to_libm,
    prepare_one_shot,
    promote_accumulators,
    reduce_reduce_fusion,
    split_argmax,
    split_functions,
    tile_transposes,
    unsafe_math_canonicalize,
)
from accel.passes.rdu import sectioning  # noqa: F401
