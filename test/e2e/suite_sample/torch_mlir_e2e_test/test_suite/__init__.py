# Part of the LLVM Project, under the Apache License v2.0 with LLVM Exceptions.
# See https://llvm.org/LICENSE.txt for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Also available under a BSD-style license. See LICENSE.
# Modified for accel's e2e sample (test/e2e/make_sample.py): only what the sampled
# tests need is kept.


def register_all_tests():
    """Registers the sampled tests."""
    # Side-effecting import statements.
    from . import arange  # noqa: F401
    from . import as_strided  # noqa: F401
    from . import basic  # noqa: F401
    from . import constant_alloc  # noqa: F401
    from . import conv  # noqa: F401
    from . import diag  # noqa: F401
    from . import elementwise  # noqa: F401
    from . import elementwise_comparison  # noqa: F401
    from . import index_select  # noqa: F401
    from . import matmul  # noqa: F401
    from . import mlp  # noqa: F401
    from . import nll_loss  # noqa: F401
    from . import norm_like  # noqa: F401
    from . import padding  # noqa: F401
    from . import pooling  # noqa: F401
    from . import reduction  # noqa: F401
    from . import reshape_like  # noqa: F401
    from . import rng  # noqa: F401
    from . import scalar  # noqa: F401
    from . import scalar_comparison  # noqa: F401
    from . import scatter  # noqa: F401
    from . import slice_like  # noqa: F401
    from . import squeeze  # noqa: F401
    from . import stats  # noqa: F401
    from . import threshold  # noqa: F401
    from . import type_conversion  # noqa: F401
