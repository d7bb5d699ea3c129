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


class NllLossModule_backward1D(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @export
    @annotate_args(
        [
            None,
            ([-1], torch.float32, True),
            ([-1], torch.float32, True),
            ([-1], torch.int64, True),
            ([], torch.float32, True),
        ]
    )
    def forward(self, grad_output, input, target, total_weight):
        return torch.ops.aten.nll_loss_backward(
            grad_output,
            input,
            target=target,
            weight=None,
            reduction=0,
            ignore_index=10,
            total_weight=total_weight,
        )


@register_test_case(module_factory=lambda: NllLossModule_backward1D())
def NllLossModuleBackward1D_basic(module, tu: TestUtils):
    module.forward(tu.rand(1), tu.rand(3), torch.tensor([2, 3, 0]), torch.tensor(3.0))
