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


class MaxPool3dModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mp3d = torch.nn.MaxPool3d(
            kernel_size=[4, 4, 4], stride=[2, 2, 2], padding=[1, 1, 1], dilation=1
        )

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1, -1, -1], torch.float32, True),
        ]
    )
    def forward(self, x):
        return self.mp3d(x)


@register_test_case(module_factory=lambda: MaxPool3dModule())
def MaxPool3dModule_basic(module, tu: TestUtils):
    module.forward(torch.arange(8 * 8 * 8).view(1, 1, 8, 8, 8).float())


class MaxPool2dWithIndicesAllOnesModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1, -1], torch.float32, True),
        ]
    )
    def forward(self, x):
        return torch.ops.aten.max_pool2d_with_indices(
            x, kernel_size=[2, 2], stride=[1, 1], padding=[0, 0], dilation=[1, 1]
        )


@register_test_case(module_factory=lambda: MaxPool2dWithIndicesAllOnesModule())
def MaxPool2dWithIndicesAllOnesModule_basic(module, tu: TestUtils):
    module.forward(torch.ones(1, 1, 8, 8))


class AvgPool3dCountIncludePadFalseWithoutPadding(torch.nn.Module):

    def __init__(self):
        super().__init__()
        self.ap3d = torch.nn.AvgPool3d(
            kernel_size=[3, 3, 3],
            stride=[1, 1, 1],
            padding=[0, 0, 0],
            ceil_mode=False,
            count_include_pad=False,
            divisor_override=None,
        )

    @export
    @annotate_args(
        [
            None,
            ([3, 3, 12, 12, 12], torch.float32, True),
        ]
    )
    def forward(self, x):
        return self.ap3d(x)


@register_test_case(
    module_factory=lambda: AvgPool3dCountIncludePadFalseWithoutPadding()
)
def AvgPool3dCountIncludePadFalseWithoutPadding_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 3, 12, 12, 12, low=-1))


class AdaptiveAvgPool1dGeneralDynamicNoBatches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.aap1d = torch.nn.AdaptiveAvgPool1d(output_size=7)

    @export
    @annotate_args([None, ([-1, -1], torch.float32, True)])
    def forward(self, x):
        return self.aap1d(x)


@register_test_case(module_factory=lambda: AdaptiveAvgPool1dGeneralDynamicNoBatches())
def AdaptiveAvgPool1dGeneralDynamicNoBatches_basic(module, tu: TestUtils):
    module.forward(tu.rand(512, 10))


class AdaptiveMaxPool1dDimOneStatic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.amp1d = torch.nn.AdaptiveMaxPool1d(output_size=(1), return_indices=False)

    @export
    @annotate_args([None, ([1, 512, 7], torch.float32, True)])
    def forward(self, x):
        return self.amp1d(x)


@register_test_case(module_factory=lambda: AdaptiveMaxPool1dDimOneStatic())
def AdaptiveMaxPool1dDimOneStatic_basic(module, tu: TestUtils):
    module.forward(tu.rand(1, 512, 7))


class AvgPool2dCeilPaddingStridedIncludePadding(torch.nn.Module):
    # Note that in this case the kernel window center will go into the padding.
    # When this happens the padding elements are counted in the divisor, but
    # the out of bound elements from the ceiling are not counted
    # (i.e., clamped from the divisor count).

    def __init__(self):
        super().__init__()
        self.ap2d = torch.nn.AvgPool2d(
            kernel_size=[3, 3],
            stride=[2, 2],
            padding=[1, 1],
            ceil_mode=True,
            count_include_pad=True,
            divisor_override=None,
        )

    @export
    @annotate_args(
        [
            None,
            ([1, 1, 4, 4], torch.float32, True),
        ]
    )
    def forward(self, x):
        return self.ap2d(x)


@register_test_case(module_factory=lambda: AvgPool2dCeilPaddingStridedIncludePadding())
def AvgPool2dCeilPaddingStridedIncludePadding_basic(module, tu: TestUtils):
    module.forward(tu.rand(1, 1, 4, 4, low=-1))
