# Part of the LLVM Project, under the Apache License v2.0 with LLVM Exceptions.
# See https://llvm.org/LICENSE.txt for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Also available under a BSD-style license. See LICENSE.
# Modified for accel's e2e sample (test/e2e/make_sample.py): only what the sampled
# tests need is kept.

import torch
from torch_mlir_e2e_test.annotations import annotate_args, export
from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case


class AtenAsStridedAfterExpandModule(torch.nn.Module):
    @export
    @annotate_args([None, ([1, 4], torch.float32, True)])
    def forward(self, x):
        view = torch.ops.aten.expand(x, [2, 4])
        return torch.ops.aten.as_strided(
            view, size=(2, 3), stride=(0, 1), storage_offset=0
        )


@register_test_case(module_factory=lambda: AtenAsStridedAfterExpandModule())
def AtenAsStridedAfterExpandModule_basic(module, tu: TestUtils):
    module.forward(torch.arange(4, dtype=torch.float32).reshape(1, 4))


class AtenAsStridedAfterUnsafeViewModule(torch.nn.Module):
    @export
    @annotate_args([None, ([3, 2, 4], torch.float32, True)])
    def forward(self, x):
        view = torch.ops.aten.slice(x, 0, 1, 3, 1)
        view = torch.ops.aten._unsafe_view(view, [4, 4])
        return torch.ops.aten.as_strided(
            view, size=(2, 2), stride=(8, 1), storage_offset=0
        )


@register_test_case(module_factory=lambda: AtenAsStridedAfterUnsafeViewModule())
def AtenAsStridedAfterUnsafeViewModule_basic(module, tu: TestUtils):
    module.forward(torch.arange(24, dtype=torch.float32).reshape(3, 2, 4))
