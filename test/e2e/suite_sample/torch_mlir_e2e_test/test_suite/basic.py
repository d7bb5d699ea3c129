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


class PixelUnshuffleModuleSpatiallyDynamic(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args([None, ([4, 1, 6, -1, -1], torch.int64, True)])
    def forward(self, x):
        return torch.ops.aten.pixel_unshuffle(x, 2)


@register_test_case(module_factory=lambda: PixelUnshuffleModuleSpatiallyDynamic())
def PixelUnshuffleModuleSpatiallyDynamic_basic(module, tu: TestUtils):
    module.forward(tu.randint(4, 1, 6, 4, 6, low=0, high=100))


class TensorsConcatComplex64FloatModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1], torch.complex64, True),
            ([-1, -1, -1], torch.float64, True),
            ([-1, -1, -1], torch.float32, True),
            ([-1, -1, -1], torch.float16, True),
        ]
    )
    def forward(self, a, b, c, d):
        return torch.cat([a, b, c, d], 1)


@register_test_case(module_factory=lambda: TensorsConcatComplex64FloatModule())
def TensorsConcatComplex64FloatModule_basic(module, tu: TestUtils):
    module.forward(
        tu.rand(2, 1, 4, low=1, high=10).to(torch.complex64),
        tu.rand(2, 3, 4, low=1, high=10).to(torch.float64),
        tu.rand(2, 3, 4, low=1, high=10).to(torch.float32),
        tu.rand(2, 3, 4, low=1, high=10).to(torch.float16),
    )


class ColumnStack0dModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([], torch.float32, True),
            ([], torch.float32, True),
        ]
    )
    def forward(self, x, y):
        return torch.ops.aten.column_stack([x, y])


@register_test_case(module_factory=lambda: ColumnStack0dModule())
def ColumnStack0dModule_basic(module, tu: TestUtils):
    module.forward(torch.tensor(4.0), torch.tensor(1.0))


class EmbeddingForwardFlagsModule(torch.nn.Module):
    @export
    @annotate_args(
        [
            None,
            ([10, 4], torch.float32, True),
            ([2, 2], torch.int64, True),
        ]
    )
    def forward(self, weight, indices):
        scale_grad_by_freq = torch.nn.functional.embedding(
            indices, weight, padding_idx=-1, scale_grad_by_freq=True
        )
        sparse = torch.nn.functional.embedding(
            indices, weight, padding_idx=-1, sparse=True
        )
        return scale_grad_by_freq, sparse


@register_test_case(module_factory=lambda: EmbeddingForwardFlagsModule())
def EmbeddingForwardFlagsModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(10, 4), tu.randint(2, 2, high=10))


class SafeSoftmaxModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1], torch.float32, True),
        ]
    )
    def forward(self, tensor):
        return torch.ops.aten._safe_softmax(tensor, dim=0)


@register_test_case(module_factory=lambda: SafeSoftmaxModule())
def SafeSoftmaxModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 2, 4))


class RepeatModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([3, 1, 2], torch.float32, True),
        ]
    )
    def forward(self, x):
        return x.repeat([2, 1, 3, 4])


@register_test_case(module_factory=lambda: RepeatModule())
def RepeatModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 1, 2))


class ReturnThreeTensorFloat32(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.float32, True),
            ([-1, -1], torch.float32, True),
            ([-1, -1], torch.float32, True),
        ]
    )
    def forward(self, a, b, c):
        return a, b, c


@register_test_case(module_factory=lambda: ReturnThreeTensorFloat32())
def ReturnThreeTensorFloat32_basic(module, tu: TestUtils):
    module.forward(tu.rand(2, 3), tu.rand(2, 3), tu.rand(2, 3))


class AddCMulModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.float32, True),
            ([-1, -1], torch.float32, True),
            ([-1, -1], torch.float32, True),
        ]
    )
    def forward(self, input, tensor1, tensor2):
        return torch.addcmul(input, tensor1, tensor2, value=1.0)


@register_test_case(module_factory=lambda: AddCMulModule())
def AddCMulModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(1, 3), tu.rand(1, 3), tu.rand(1, 3))


class TModuleRank1(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1], torch.float32, True),
        ]
    )
    def forward(self, lhs):
        return torch.t(lhs)


@register_test_case(module_factory=lambda: TModuleRank1())
def TModuleRank1_basic(module, tu: TestUtils):
    module.forward(tu.rand(3))


class IndexTensorMultiInputThreeIndexers(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1, -1, -1, -1], torch.float32, True),
            ([8, 4, 2], torch.int64, True),
            ([8, 1, 1], torch.int64, True),
            ([4, 2], torch.int64, True),
        ]
    )
    def forward(self, x, index1, index2, index3):
        return torch.ops.aten.index(x, (None, None, index1, None, index2, index3))


@register_test_case(module_factory=lambda: IndexTensorMultiInputThreeIndexers())
def IndexTensorMultiInputThreeIndexers_basic(module, tu: TestUtils):
    module.forward(
        tu.rand(1, 2, 4, 4, 5, 3),
        tu.randint(8, 4, 2, high=3),
        tu.randint(8, 1, 1, high=4),
        tu.randint(4, 2, high=2),
    )


class HardswishRandomModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.float32, True),
        ]
    )
    def forward(self, x):
        return torch.ops.aten.hardswish(x)


@register_test_case(module_factory=lambda: HardswishRandomModule())
def HardswishRandomModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(128, 128, low=-10, high=10))


class CopyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1], torch.float32, True),
            ([-1, -1, -1], torch.float32, True),
        ]
    )
    def forward(self, x, y):
        return torch.ops.aten.copy_(x, y)


@register_test_case(module_factory=lambda: CopyModule())
def CopyModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 2, 4), tu.rand(3, 2, 4))


class AtenEmbeddingBagSumExample(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.float32, True),
            ([-1], torch.int64, True),
            ([-1], torch.int64, True),
        ]
    )
    def forward(self, weight, indices, offsets):
        return torch.ops.aten.embedding_bag(
            weight,
            indices,
            offsets,
            scale_grad_by_freq=False,
            mode=0,
            sparse=False,
            per_sample_weights=None,
            include_last_offset=False,
            padding_idx=None,
        )


@register_test_case(module_factory=lambda: AtenEmbeddingBagSumExample())
def AtenEmbeddingBagSumExample_basic(module, tu: TestUtils):
    weight = tu.rand(100, 10)
    indices = torch.LongTensor(
        [0, 1, 2, 2, 0, 2, 1, 3, 20, 50, 99, 2, 4, 5, 6, 7, 34, 54]
    )
    offsets = torch.LongTensor([0, 3, 5, 7, 9, 10, 15])
    module.forward(weight, indices, offsets)


class CumprodStaticNegativeDimModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([2, 7, 4], torch.float32, True),
        ]
    )
    def forward(self, val):
        return torch.ops.aten.cumprod(val, dim=-1)


@register_test_case(module_factory=lambda: CumprodStaticNegativeDimModule())
def CumprodStaticNegativeDimModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(2, 7, 4))


class SortTensor(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args([None, ([-1, -1, -1], torch.float32, True)])
    def forward(self, input):
        return torch.sort(input)


@register_test_case(module_factory=lambda: SortTensor())
def SortTensor_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 4, 5))


class BucketizeTensorStaticFloatModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([15, 17], torch.float32, True),
            ([16], torch.float32, True),
        ]
    )
    def forward(self, input, boundaries):
        return torch.bucketize(input, boundaries)


@register_test_case(module_factory=lambda: BucketizeTensorStaticFloatModule())
def BucketizeTensorStaticFloatModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(15, 17), torch.sort(tu.rand(16)).values)


class IscloseStaticModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([5, 5], torch.float32, True),
            ([5, 5], torch.float32, True),
        ]
    )
    def forward(self, x, y):
        return torch.isclose(x, y)


@register_test_case(module_factory=lambda: IscloseStaticModule())
def IscloseStaticModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(5, 5), tu.rand(5, 5))
