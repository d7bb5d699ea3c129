"""The same model compiles to the same code in every process, with or without threads in
the affine fusion child.

Values hash by address, so a pass that iterates a set of them can order its output
differently from one run to the next: accel-parallelize-loops did so with a loop's private
buffers (test_parallelize_loops.py::test_private_buffers_keep_program_order). Here two new
processes compile a 1-layer BERT (hidden 256, 128 tokens, eager attention: fusion, GEMM
kernels and parallel loops run), one with MLIR's threads in the fusion child
and one without, and must print the same LLVM IR.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

pytest.importorskip("transformers")
pytestmark = pytest.mark.slow

CHILD = """
import hashlib, sys, torch, transformers, accel
from accel import phases
import accel.passes.affine_fusion as fusion
if sys.argv[1] == "serial":  # the fusion child without MLIR threads
    original = fusion.run_pipeline_isolated
    fusion.run_pipeline_isolated = lambda text, pipeline, **kw: original(
        text, pipeline, **{**kw, "threads": False})
torch.manual_seed(0)
cfg = transformers.BertConfig(num_hidden_layers=1, hidden_size=256, num_attention_heads=4,
                              intermediate_size=1024, vocab_size=1000,
                              attn_implementation="eager")
model = transformers.BertModel(cfg).eval()
ids = torch.randint(0, 1000, (1, 128))
with phases.recording(keep_ir=True) as rec:
    accel.compile(model, (ids,), options={"cache": False})
ll = next(p.ir for p in rec.phases if p.name == "llvm-ir")
assert "_body(" in ll, "no parallel loop body: the test no longer covers its case"
print(hashlib.sha256(ll.encode()).hexdigest())
"""


def _digest(mode: str) -> str:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                         timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[-1]


def test_two_processes_print_the_same_llvm_ir():
    threads, serial = _digest("threads"), _digest("serial")
    assert len(threads) == len(hashlib.sha256().hexdigest())
    assert threads == serial, "two processes (fusion with and without threads) differ"
