#  Part of the LLVM Project, under the Apache License v2.0 with LLVM Exceptions.
#  See https://llvm.org/LICENSE.txt for license information.
#  SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Modified for accel's e2e sample (test/e2e/make_sample.py): only what the sampled
# tests need is kept.

import torch
from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case
from torch_mlir_e2e_test.annotations import annotate_args, export


class ViewDynamicExpandCollapseWithAtenIntModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1, -1], torch.float32, True),
        ]
    )
    def forward(self, a):
        return a.view(2, 1, a.size(1), 64)


@register_test_case(module_factory=lambda: ViewDynamicExpandCollapseWithAtenIntModule())
def ViewDynamicExpandCollapseWithAtenIntModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(2, 4, 8, 8))


class ViewOffsetBackwardTestStaticModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([2, 3, 4, 5, 6], torch.float32, True),
        ]
    )
    def forward(self, a):
        return a.view(2, 3, 2, 2, 6, 5)


@register_test_case(module_factory=lambda: ViewOffsetBackwardTestStaticModule())
def ViewOffsetBackwardTestStaticModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(2, 3, 4, 5, 6))


class EinsumStaticModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([3, 2, 4], torch.float32, True),
            ([5, 4, 6], torch.float32, True),
            ([3, 7, 6], torch.float32, True),
        ]
    )
    def forward(self, tensor1, tensor2, tensor3):
        return torch.ops.aten.einsum("bqe,ked,btd->bqtk", [tensor1, tensor2, tensor3])


@register_test_case(module_factory=lambda: EinsumStaticModule())
def EinsumStaticModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 2, 4), tu.rand(5, 4, 6), tu.rand(3, 7, 6))


class Unfold_Module_Rank_Zero_Size_Zero(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([], torch.float32, True),
        ]
    )
    def forward(self, x):
        return x.unfold(0, 0, 1)


@register_test_case(module_factory=lambda: Unfold_Module_Rank_Zero_Size_Zero())
def Unfold_Module_Rank_Zero_Size_Zero_basic(module, tu: TestUtils):
    module.forward(tu.rand())


class Aten_TrilinearModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([3, 3, 3], torch.float32, True),
            ([3, 3, 3], torch.float32, True),
            ([3, 3, 3], torch.float32, True),
        ]
    )
    def forward(self, i1, i2, i3):
        return torch.ops.aten._trilinear(
            i1, i2, i3, expand1=[], expand2=[], expand3=[], sumdim=[], unroll_dim=0
        )


@register_test_case(module_factory=lambda: Aten_TrilinearModule())
def Aten_TrilinearModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 3, 3), tu.rand(3, 3, 3), tu.rand(3, 3, 3))
