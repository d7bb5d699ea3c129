# Part of the LLVM Project, under the Apache License v2.0 with LLVM Exceptions.
# See https://llvm.org/LICENSE.txt for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Also available under a BSD-style license. See LICENSE.
# Modified for accel's e2e sample (test/e2e/make_sample.py): only what the sampled
# tests need is kept.

import torch
from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case
from torch_mlir_e2e_test.annotations import annotate_args, export


class ZerosLikeIntModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.int64, True),
        ]
    )
    def forward(self, a):
        return torch.zeros_like(a, dtype=torch.int32)


@register_test_case(module_factory=lambda: ZerosLikeIntModule())
def ZerosLikeModule_int(module, tu: TestUtils):
    module.forward(tu.randint(3, 5, high=10))


class OnesLikeFalsePinMemoryModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1], torch.float32, True),
        ]
    )
    def forward(self, a):
        return torch.ones_like(a, dtype=torch.float64, pin_memory=False)


@register_test_case(module_factory=lambda: OnesLikeFalsePinMemoryModule())
def OnesLikeModule_falsePinMemory(module, tu: TestUtils):
    module.forward(tu.rand(2, 3, 4))


class NewOnesModuleDefaultDtype(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.float32, True),
        ]
    )
    def forward(self, a):
        return torch.ops.aten.new_ones(a, [3, 4])


@register_test_case(module_factory=lambda: NewOnesModuleDefaultDtype())
def NewOnesModuleDefaultDtype_basic(module, tu: TestUtils):
    module.forward(tu.rand(2, 3))


class FullLikeModuleFloat3DStatic(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([3, 4, 5], torch.float64, True),
        ]
    )
    def forward(self, a):
        return torch.ops.aten.full_like(a, 15.3, dtype=torch.float32)


@register_test_case(module_factory=lambda: FullLikeModuleFloat3DStatic())
def FullLikeModuleFloat3DStatic_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 4, 5).to(torch.float64))


class MaskedFillScalarFloatValueModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.int64, True),
            ([-1, -1], torch.bool, True),
        ]
    )
    def forward(self, x, mask):
        return torch.ops.aten.masked_fill(x, mask, value=-0.01)


@register_test_case(module_factory=lambda: MaskedFillScalarFloatValueModule())
def MaskedFillScalarFloatValueModule_basic(module, tu: TestUtils):
    module.forward(
        tu.randint(2, 3, low=-10, high=10),
        tu.randint(2, 3, high=2).to(dtype=torch.bool),
    )


class EmptyStridedSizeIntStrideModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([2, 3, -1], torch.float32, True),
        ]
    )
    def forward(self, a):
        x = torch.ops.aten.empty_strided(a.size(), stride=[12, a.size(2), 1])
        y = x.copy_(a)
        return y


@register_test_case(module_factory=lambda: EmptyStridedSizeIntStrideModule())
def EmptyStridedSizeIntStrideModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(2, 3, 4))
