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


class AtenScaledMmPerTensorModule(torch.nn.Module):
    def __init__(self, fp8_dtype=torch.float8_e4m3fn, out_dtype=torch.bfloat16):
        super().__init__()
        self.fp8_dtype = fp8_dtype
        self.out_dtype = out_dtype

    @export
    @annotate_args(
        [
            None,
            ([16, 16], torch.float32, True),
            ([16, 16], torch.float32, True),
            ([], torch.float32, True),
            ([], torch.float32, True),
        ]
    )
    def forward(self, lhs, rhs, scale_lhs, scale_rhs):
        lhs_fp8 = lhs.to(self.fp8_dtype)
        rhs_fp8 = rhs.to(self.fp8_dtype)
        return torch._scaled_mm(
            lhs_fp8,
            rhs_fp8,
            scale_lhs,
            scale_rhs,
            out_dtype=self.out_dtype,
        )


@register_test_case(
    module_factory=lambda: AtenScaledMmPerTensorModule(fp8_dtype=torch.float8_e5m2)
)
def AtenScaledMmPerTensorE5M2Module_basic(module, tu: TestUtils):
    module.forward(tu.rand(16, 16), tu.rand(16, 16), tu.rand(), tu.rand())


class MatmulVecMat(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1], torch.float32, True),
            ([-1, -1], torch.float32, True),
        ]
    )
    def forward(self, lhs, rhs):
        return torch.matmul(lhs, rhs)


@register_test_case(module_factory=lambda: MatmulVecMat())
def Matmul_vecmat(module, tu: TestUtils):
    module.forward(tu.rand(4), tu.rand(4, 5))


import torch.ao.quantization.fx._decomposed


class AtenMmQMixedSigni8(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([3, 4], torch.int8, True),
            ([4, 3], torch.uint8, True),
        ]
    )
    def forward(self, x, y):
        x = torch.torch.ops.quantized_decomposed.dequantize_per_tensor.default(
            x, 0.03, -66, -128, 127, torch.int8
        )
        y = torch.torch.ops.quantized_decomposed.dequantize_per_tensor.default(
            y, 0.025, 160, 0, 255, torch.uint8
        )
        z = torch.mm(x, y)
        return z


@register_test_case(module_factory=lambda: AtenMmQMixedSigni8())
def AtenMmQMixedSigni8_basic(module, tu: TestUtils):
    module.forward(
        tu.randint(3, 4, low=-128, high=127).to(torch.int8),
        tu.randint(4, 3, low=0, high=255).to(torch.uint8),
    )


class AtenLinalgCrossInt(torch.nn.Module):
    @export
    @annotate_args(
        [
            None,
            ([2, 3], torch.int64, True),
            ([2, 3], torch.int64, True),
        ]
    )
    def forward(self, a, b):
        return torch.ops.aten.linalg_cross(a, b)


@register_test_case(module_factory=lambda: AtenLinalgCrossInt())
def AtenLinalgCrossInt_basic(module, tu: TestUtils):
    module.forward(tu.randint(2, 3), tu.randint(2, 3))
