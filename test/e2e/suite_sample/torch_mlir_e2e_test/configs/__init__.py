# Part of the LLVM Project, under the Apache License v2.0 with LLVM Exceptions.
# See https://llvm.org/LICENSE.txt for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Also available under a BSD-style license. See LICENSE.
# Modified for accel's e2e sample (test/e2e/make_sample.py): only what the sampled
# tests need is kept.

from .native_torch import NativeTorchTestConfig
from .fx_importer_backend import FxImporterTestConfig
