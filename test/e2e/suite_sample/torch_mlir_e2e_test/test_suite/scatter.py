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


class IndexPutImpl1DIntAccumulateModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1], torch.int64, True),
            ([-1], torch.int64, True),
            ([-1], torch.int64, True),
        ]
    )
    def forward(self, input, index, value):
        return torch.ops.aten._index_put_impl_(
            input, (index,), value, accumulate=True, unsafe=False
        )


@register_test_case(module_factory=lambda: IndexPutImpl1DIntAccumulateModule())
def IndexPutImpl1DIntAccumulateModule_basic(module, tu: TestUtils):
    module.forward(
        tu.randint(10, high=100), tu.randint(10, high=10), tu.randint(10, high=1000)
    )


class ScatterAddDynamicModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1], torch.float32, True),
            ([-1, -1, -1], torch.int64, True),
            ([-1, -1, -1], torch.float32, True),
        ]
    )
    def forward(self, input, index, src):
        return torch.ops.aten.scatter_add(input, 0, index, src)


@register_test_case(module_factory=lambda: ScatterAddDynamicModule())
def ScatterAddDynamicModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(10, 8, 6), tu.randint(2, 4, 3, high=4), tu.rand(5, 8, 6))


class ScatterReduceIntModule(torch.nn.Module):
    include_self: bool
    reduce_type: str

    def __init__(self, reduce_type: str, include_self: bool):
        super().__init__()
        self.include_self = include_self
        self.reduce_type = reduce_type

    @export
    @annotate_args(
        [
            None,
            ([-1, -1, -1], torch.int32, True),
            ([-1, -1, -1], torch.int64, True),
            ([-1, -1, -1], torch.int32, True),
        ]
    )
    def forward(self, input, index, src):
        return torch.ops.aten.scatter_reduce(
            input, 0, index, src, self.reduce_type, include_self=self.include_self
        )


@register_test_case(module_factory=lambda: ScatterReduceIntModule("prod", True))
def ScatterReduceIntProdModuleIncludeSelf(module, tu: TestUtils):
    module.forward(
        tu.randint(10, 8, 6, dtype=torch.int32, high=10),
        tu.randint(2, 4, 3, high=4),
        tu.randint(5, 8, 6, dtype=torch.int32, high=10),
    )


class IndexPutBoolMask2DModule(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([5, 5], torch.float32, True),
            ([5], torch.bool, True),
            ([-1, 5], torch.float32, True),
        ]
    )
    def forward(self, input, mask, values):
        return torch.ops.aten.index_put(input, (mask,), values, accumulate=False)


@register_test_case(module_factory=lambda: IndexPutBoolMask2DModule())
def IndexPutBoolMask2DModule_multiple_true(module, tu: TestUtils):
    input_t = tu.rand(5, 5)
    mask = torch.tensor([True, False, True, True, False])
    values = tu.rand(3, 5)
    module.forward(input_t, mask, values)
