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


class ElementwiseAtanhIntModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.int32, True),
        ]
    )
    def forward(self, a):
        return torch.atanh(a)


@register_test_case(module_factory=lambda: ElementwiseAtanhIntModule())
def ElementwiseAtanhIntModule_basic(module, tu: TestUtils):
    module.forward(tu.randint(3, 4, low=1, high=10).to(torch.int32))


class QuantizedReluUint8(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.uint8, True),
        ]
    )
    def forward(self, x):
        qx = torch._make_per_tensor_quantized_tensor(x, 0.0215, 190)
        qx = torch.dequantize(qx)
        return torch.relu(qx)


@register_test_case(module_factory=lambda: QuantizedReluUint8())
def QuantizedReluUint8_basic(module, tu: TestUtils):
    module.forward(tu.randint(7, 4, low=0, high=255).to(torch.uint8))


class ElementwiseLeakyReluStaticModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([4, 5, 6], torch.float32, True),
        ]
    )
    def forward(self, x):
        return torch.ops.aten.leaky_relu(x, negative_slope=0.1)


@register_test_case(module_factory=lambda: ElementwiseLeakyReluStaticModule())
def ElementwiseLeakyReluStaticModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(4, 5, 6, low=-1))


class ElementwisePreluModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1, -1, -1], torch.float32, True),
            ([-1], torch.float32, True),
        ]
    )
    def forward(self, x, weight):
        return torch.ops.aten.prelu(x, weight)


@register_test_case(module_factory=lambda: ElementwisePreluModule())
def ElementwisePreluModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(5, 4, 3, 2, 1, low=-1, high=1), tu.rand(1))


class ElementwiseRreluWithNoiseEvalStaticModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args([None, ([5, 3], torch.float32, True), ([5, 3], torch.float32, True)])
    def forward(self, x, noise):
        res = torch.ops.aten.rrelu_with_noise_functional(x, noise, 0.4, 0.6, False)[0]
        return torch.mean(res), torch.std(res)


@register_test_case(module_factory=lambda: ElementwiseRreluWithNoiseEvalStaticModule())
def ElementwiseRreluWithNoiseEvalStaticModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(5, 3, low=-1, high=1), tu.rand(5, 3))


class ElementwiseClampTensorFloatModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.float32, True),
            ([1], torch.float32, True),
            ([1], torch.float32, True),
        ]
    )
    def forward(self, x, min, max):
        min_clamp = torch.clamp(x, min)
        max_clamp = torch.clamp(x, max=max)
        both_clamp = torch.clamp(x, min=min, max=max)
        return min_clamp, max_clamp, both_clamp


@register_test_case(module_factory=lambda: ElementwiseClampTensorFloatModule())
def ElementwiseClampTensorFloatModule_basic(module, tu: TestUtils):
    module.forward(
        tu.rand(3, 5, low=-10, high=10), torch.tensor([-5.0]), torch.tensor([5.0])
    )


class ElementwiseMulTensorIntModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1], torch.int32, True),
            ([-1], torch.int64, True),
        ]
    )
    def forward(self, a, b):
        return torch.mul(a, b)


@register_test_case(module_factory=lambda: ElementwiseMulTensorIntModule())
def ElementwiseMulTensorIntModule_basic(module, tu: TestUtils):
    module.forward(tu.randint(4, high=10).type(torch.int32), tu.randint(4, high=10))


class ElementwiseSoftshrinkModule(torch.nn.Module):
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
        return torch.ops.aten.softshrink(a)


@register_test_case(module_factory=lambda: ElementwiseSoftshrinkModule())
def ElementwiseSoftshrinkModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 4))


class ElementwiseCeilModule(torch.nn.Module):
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
        return torch.ceil(a)


@register_test_case(module_factory=lambda: ElementwiseCeilModule())
def ElementwiseCeilModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 4))


class ElementwiseTruncModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([1, 6], torch.float32, True),
        ]
    )
    def forward(self, a):
        return torch.trunc(a)


@register_test_case(module_factory=lambda: ElementwiseTruncModule())
def ElementwiseTruncModule_basic(module, tu: TestUtils):
    module.forward(torch.tensor([[-torch.inf, torch.inf, torch.nan, -2.3, 0.0, 1.5]]))


class ElementwiseRemainderScalarModule_Int_Float(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1], torch.int32, True),
        ]
    )
    def forward(self, x):
        return torch.remainder(x, 2.0)


@register_test_case(module_factory=lambda: ElementwiseRemainderScalarModule_Int_Float())
def ElementwiseRemainderScalarModule_Int_Float_basic(module, tu: TestUtils):
    module.forward(tu.randint(3, high=10).to(torch.int32))


class ElementwiseFmodTensor_Float(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args([None, ([-1], torch.float32, True), ([-1], torch.float32, True)])
    def forward(self, x, y):
        return torch.fmod(x, y)


@register_test_case(module_factory=lambda: ElementwiseFmodTensor_Float())
def ElementwiseFmodTensor_Float_basic(module, tu: TestUtils):
    module.forward(tu.rand(100, low=-10, high=10), tu.rand(100, low=-10, high=10))


class ElementwiseDivScalarRoundingModeFloorStaticModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([3, 4], torch.float32, True),
        ]
    )
    def forward(self, a):
        return torch.div(a, 0.5, rounding_mode="floor")


@register_test_case(
    module_factory=lambda: ElementwiseDivScalarRoundingModeFloorStaticModule()
)
def ElementwiseDivScalarRoundingModeFloorStaticModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 4))


class ElementwiseAddScalar_TensorLiteralInt32_Module(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.x = torch.tensor(2, dtype=torch.int32)

    @export
    @annotate_args(
        [
            None,
        ]
    )
    def forward(self):
        return torch.add(self.x, 3)


@register_test_case(
    module_factory=lambda: ElementwiseAddScalar_TensorLiteralInt32_Module()
)
def ElementwiseAddScalar_TensorLiteralInt32_Module_basic(module, tu: TestUtils):
    module.forward()


class ElementwiseAtenLogicalOrOpDiffArgs2Module(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1], torch.bool, True),
            ([-1], torch.int64, True),
        ]
    )
    def forward(self, x, y):
        return torch.ops.aten.logical_or(x, y)


@register_test_case(module_factory=lambda: ElementwiseAtenLogicalOrOpDiffArgs2Module())
def ElementwiseAtenLogicalOrOpDiffArgs2Module_basic(module, tu: TestUtils):
    module.forward(torch.tensor([True, False]), torch.tensor([0, 1]))


class AtenTrilModule(torch.nn.Module):
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
        return torch.ops.aten.tril(x)


@register_test_case(module_factory=lambda: AtenTrilModule())
def AtenTrilModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(8, 8))


class Fill_TensorFloat64WithInt64Static(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([3, 2, 4], torch.float64, True),
        ]
    )
    def forward(self, tensor):
        return torch.ops.aten.fill_(tensor, 3)


@register_test_case(module_factory=lambda: Fill_TensorFloat64WithInt64Static())
def Fill_TensorFloat64WithInt64Static_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 2, 4).to(torch.float64))


class ElementwiseBitwiseAndScalarInt64Module(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1], torch.int64, True),
        ]
    )
    def forward(self, x):
        return torch.bitwise_and(x, 15)


@register_test_case(module_factory=lambda: ElementwiseBitwiseAndScalarInt64Module())
def ElementwiseBitwiseAndScalarInt64Module_basic(module, tu: TestUtils):
    module.forward(tu.randint(3, 4, low=-1000, high=1000))


class TrilIndicesOfssetGreaterThanRowModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
        ]
    )
    def forward(self):
        return torch.ops.aten.tril_indices(7, 9, 8)


@register_test_case(module_factory=lambda: TrilIndicesOfssetGreaterThanRowModule())
def TrilIndicesOfssetGreaterThanRowModule_basic(module, tu: TestUtils):
    module.forward()
