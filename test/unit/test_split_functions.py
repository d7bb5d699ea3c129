"""Split functions and merged repeated layers (docs/compile-time.md), through accel.compile.

A 3-layer GPT-2 (width 64) lowers to a `main` long enough to be split into parts, and the
parts of its repeated layers are equal: the LLVM IR must hold fewer part definitions than
`main` has part calls, and the compiled model must match eager (rtol 1e-4 of the largest
logit). `ACCEL_SPLIT_FUNCTIONS=0` (read per compile) keeps `main` whole.
"""

from __future__ import annotations

import re

import accel
import pytest
import torch
from accel import phases


def _gpt2() -> tuple[torch.nn.Module, torch.Tensor]:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=3, n_head=2, n_embd=64, vocab_size=128,
                                  n_positions=32, bos_token_id=127, eos_token_id=127,
                                  attn_implementation="eager", use_cache=False)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    return transformers.GPT2LMHeadModel(cfg).eval(), ids


def _llvm_ir(rec: phases.Recorder) -> str:
    return next(p.ir for p in rec.phases if p.name == "llvm-ir" and p.ir)


@pytest.mark.slow
def test_repeated_layers_compile_once_and_match_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACCEL_SPLIT_FUNCTIONS", raising=False)
    model, ids = _gpt2()
    with phases.recording() as rec:
        fn = accel.compile(model, (ids,), options={"opt_level": 1, "cache": False})
    ll = _llvm_ir(rec)
    defined = set(re.findall(r"^define [^@]*@(main_part\d+)\(", ll, re.M))
    called = re.findall(r"call [^@]*@(main_part\d+)\(", ll)
    assert defined, "main was not split"
    assert len(called) > len(defined), (len(called), sorted(defined))
    assert set(called) <= defined
    with torch.no_grad():
        want, got = model(ids).logits, fn(ids).logits
    assert float((got - want).abs().max()) <= 1e-4 * float(want.abs().max())


def test_knob_keeps_functions_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from accel.host.compile import split_functions

    monkeypatch.setenv("ACCEL_SPLIT_FUNCTIONS", "0")
    assert not split_functions({})
    assert split_functions({"split_functions": True})
    monkeypatch.delenv("ACCEL_SPLIT_FUNCTIONS")
    assert split_functions({})
