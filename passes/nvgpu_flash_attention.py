"""`accel-nvgpu-flash-attention`: attention as one flash-style GPU kernel, no score matrix.

Why: torch-mlir lowers `softmax(q @ k.T) @ v` (and SDPA's decomposition) to a chain of
whole-tensor ops whose every link is a B x S x S buffer; on the GPU that is five or more
kernels and several round trips of S x S through DRAM (and 2 GiB of f32 scores for 8 x 16
heads at S = 2048). The CPU's `accel-reduce-reduce-fusion` turns the chain into serial
loops over query blocks, which on a GPU would run as one thread. This pass takes the same
chain (`reduce_reduce_fusion.match_attention`) and replaces it by one `gpu.launch`:

    grid (ceil(M / BQ), B), BQ threads per block, one query row per thread;
    for each tile of BK keys (uniform loop, all threads):
      the block copies K^T[:, tile] and V[tile, :] into shared memory; barrier
      each thread: scores s = q . K^T[:, j] (then the chain's score ops: scale, mask),
        m' = max(m, max_j s), alpha = exp(m - m'), acc = acc * alpha + sum_j e^(s-m') V[j]
      barrier
    out[row] = acc / l   (0 for a fully -inf row under SDPA's guard, NaN without: as eager)

so the extra memory is O(S * d) (the rows' q and accumulators live in each thread, the
tiles in shared memory) and every K/V element is read from DRAM once per block of BQ
queries. The kernel is written on memrefs inside the tensor function
(`bufferization.to_buffer` of Q, K^T, V; the result `to_tensor restrict`), before
bufferization and elementwise fusion (which would merge the softmax's generics).

Matched: what `match_attention` matches, all f32 with static shapes (SDPA upcasts f16
inputs to f32 first), whose score ops have short bodies (add, sub, mul, div, max, min,
select, extf, truncf) on the score, constants and other inputs: a scale, an additive or
boolean mask (HF GPT-2's causal mask, SDPA's, an f16 mask upcast), read per score at its
[batch..., row, key] with the matcher's broadcasts (the mask stays an input: O(S^2) only
if the model made it so). Other score ops (tanh soft-capping, ...) keep the kernel-per-op
path.

Two kernels: the one above on the FMA units (its key tiles shrunk to keep the block's
shared memory within 48 KiB), and for f16 models of tensor-core sizes the WMMA kernel of
`_nvgpu_flash_wmma` (option `tensor-cores`, on unless `disable_tensor_core`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accel.ir import Operation, ir
from accel.passes import _nvgpu_flash_wmma
from accel.passes.base import ModulePass, ops_named, register_pass
from accel.passes.fold_matmul_upcasts import upcast_source
from accel.passes.reduce_reduce_fusion import erase_chain, match_attention

#: Ops a score generic's body may hold: the kernel re-states them per score.
_BINARY = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.maximumf",
           "arith.minimumf")
_CASTS = ("arith.extf", "arith.truncf")
#: Most ops a score body may hold (a mask's cast and its add, a scale, ...).
_MAX_BODY = 8


@dataclass
class _Step:
    """One score generic: its body ops, as (op name, operands, result type); an operand
    is "score", ("const", text, type), ("tensor", extra-input number, per-dim offsets,
    element type) or ("op", index of an earlier body op)."""

    ops: list[tuple[str, list[Any], str]]


def _operand(value: ir.Value, args: list[ir.Value], results: list[ir.Value],
             plans: list[Any], extra: list[ir.Value]) -> Any:
    """How a score body op reads `value` (see _Step), or None when it cannot."""
    if value in results:
        return ("op", results.index(value))
    if value in args[:-1]:
        plan = plans[args.index(value)]
        if plan is None:
            return "score"
        if plan.value not in extra:
            extra.append(plan.value)
        return ("tensor", extra.index(plan.value), plan.offsets, str(value.type))
    owner = value.owner
    if value in args or not isinstance(owner, ir.OpView | ir.Operation) or \
            owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if isinstance(attr, ir.FloatAttr) and str(value.type) in ("f16", "bf16", "f32"):
        return ("const", repr(ir.FloatAttr(attr).value), str(value.type))
    if isinstance(attr, ir.IntegerAttr) and str(value.type) == "i1":
        return ("const", "true" if ir.IntegerAttr(attr).value else "false", "i1")
    return None


def _score_step(op: Operation, plans: list[Any], extra: list[ir.Value]) -> _Step | None:
    """The step of a score generic whose body is a short sequence of float arithmetic,
    selects and casts on the score, other inputs (sliced per score: `plans`) and
    constants, yielding an f32 score; else None. Tensor inputs are appended to `extra`."""
    block = op.regions[0].blocks[0]
    body = [o.operation for o in block.operations]
    if not 2 <= len(body) <= _MAX_BODY + 1 or len(body[-1].operands) != 1:
        return None
    args, results = list(block.arguments), []
    ops: list[tuple[str, list[Any], str]] = []
    for inner in body[:-1]:
        if inner.name not in (*_BINARY, *_CASTS, "arith.select") or len(inner.results) != 1:
            return None
        operands = [_operand(v, args, results, plans, extra) for v in inner.operands]
        if any(x is None for x in operands):
            return None
        ops.append((inner.name, operands, str(inner.results[0].type)))
        results.append(inner.results[0])
    if body[-1].operands[0] != results[-1] or ops[-1][2] != "f32":
        return None
    return _Step(ops)


def _step_lines(n: int, step: _Step, score: str, batch_index: list[str],
                extra_types: list[str]) -> tuple[list[str], str]:
    """Lines computing step `n` on `score` inside the key loop (row `%row`, key `%j`)."""
    lines: list[str] = []
    for i, (name, operands, rtype) in enumerate(step.ops):
        names = []
        for m, operand in enumerate(operands):
            if operand == "score":
                names.append(score)
            elif operand[0] == "op":
                names.append(f"%score{n}_{operand[1]}")
            elif operand[0] == "const":
                lines.append(f"%sk{n}_{i}_{m} = arith.constant {operand[1]} : {operand[2]}")
                names.append(f"%sk{n}_{i}_{m}")
            else:
                _, k, offsets, _ = operand
                idx = [batch_index[int(o[1:])] if o.startswith("b") else
                       {"0": "%c0", "i": "%row", "j": "%j"}[o] for o in offsets]
                lines.append(f"%sk{n}_{i}_{m} = memref.load %X{k}[{', '.join(idx)}] : "
                             f"{extra_types[k]}")
                names.append(f"%sk{n}_{i}_{m}")
        types = [_type_of(o, [t for _, _, t in step.ops[:i]]) for o in operands]
        if name in _CASTS:
            lines.append(f"%score{n}_{i} = {name} {names[0]} : {types[0]} to {rtype}")
        else:
            lines.append(f"%score{n}_{i} = {name} {', '.join(names)} : {rtype}")
    return lines, f"%score{n}_{len(step.ops) - 1}"


def _type_of(operand: Any, earlier: list[str]) -> str:
    """The MLIR type of a body op's operand (`earlier`: the earlier ops' result types)."""
    if operand == "score":
        return "f32"
    if operand[0] == "op":
        return earlier[operand[1]]
    if operand[0] == "const":
        return operand[2]
    return operand[3]


@dataclass
class _Shape:
    batch: int
    batched: bool
    batch_shape: list[int]  # the softmax space's batch dims (their product is `batch`)
    m: int
    n: int
    d: int
    dv: int


def _f32_static(value: ir.Value) -> ir.RankedTensorType | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(t)
    return t if t.has_static_shape and isinstance(t.element_type, ir.F32Type) else None


def _common(s: _Shape, steps: list[_Step], extra_types: list[str]) -> tuple[
        list[str], Callable[[str], tuple[list[str], str]], str, str]:
    """What both kernels share: the lines splitting the launch's y into the batch indices
    (`%bi<k>`), a function giving the score ops' lines on a score value (at `%row`, `%j`),
    the extra (mask) arguments and their `to_buffer`s."""
    batch_index = [f"%bi{k}" for k in range(len(s.batch_shape))]
    index_lines, rest = [], "%by"
    for k in reversed(range(len(s.batch_shape))):
        index_lines += [f"%bs{k} = arith.constant {s.batch_shape[k]} : index",
                        f"%bi{k} = arith.remui {rest}, %bs{k} : index",
                        f"%bq{k} = arith.divui {rest}, %bs{k} : index"]
        rest = f"%bq{k}"
    memref_types = [t.replace("tensor", "memref") for t in extra_types]

    def score_lines(score: str) -> tuple[list[str], str]:
        lines, value = [], score
        for n, step in enumerate(steps):
            more, value = _step_lines(n, step, value, batch_index, memref_types)
            lines += more
        return lines, value

    extra_args = "".join(f", %x{k}: {t}" for k, t in enumerate(extra_types))
    extra_buffers = "\n".join(
        f"  %X{k} = bufferization.to_buffer %x{k} read_only : {t} to {memref_types[k]}"
        for k, t in enumerate(extra_types))
    return index_lines, score_lines, extra_args, extra_buffers


def render(shape: _Shape, steps: list[_Step], extra_types: list[str], guard: bool, bq: int,
           bk: int) -> str:
    """The kernel as a private function on tensors (inlined in place of the chain); its
    arguments: Q, K^T, V, then the score ops' tensor inputs (`extra_types`)."""
    s = shape
    pre = f"{s.batch}x" if s.batched else ""
    tq, tk = f"tensor<{pre}{s.m}x{s.d}xf32>", f"tensor<{pre}{s.d}x{s.n}xf32>"
    tv, to = f"tensor<{pre}{s.n}x{s.dv}xf32>", f"tensor<{pre}{s.m}x{s.dv}xf32>"
    mq, mk, mv, mo = (t.replace("tensor", "memref") for t in (tq, tk, tv, to))
    b = "%by, " if s.batched else ""
    wg = "#gpu.address_space<workgroup>"
    ksh, vsh = f"memref<{s.d}x{bk}xf32, {wg}>", f"memref<{bk}x{s.dv}xf32, {wg}>"
    index_lines, score_lines, extra_args, extra_buffers = _common(s, steps, extra_types)
    lines, value = score_lines("%dot")
    scale_lines = ["%j = arith.addi %j0, %jj : index", *lines]
    # SDPA's guard: a row whose scores were all -inf is 0 (eager's naive softmax: NaN).
    finish = ["%allinf = arith.cmpf oeq, %fin#0, %ninf : f32",
              "%safe = arith.select %allinf, %zero, %o : f32"] if guard else []
    result = "%safe" if guard else "%o"
    body = f"""
func.func private @flash(%q: {tq}, %kt: {tk}, %v: {tv}{extra_args}) -> {to} {{
{extra_buffers}
  %Q = bufferization.to_buffer %q read_only : {tq} to {mq}
  %K = bufferization.to_buffer %kt read_only : {tk} to {mk}
  %V = bufferization.to_buffer %v read_only : {tv} to {mv}
  %O = memref.alloc() : {mo}
  %c1 = arith.constant 1 : index
  %gx = arith.constant {math.ceil(s.m / bq)} : index
  %gy = arith.constant {s.batch} : index
  %nt = arith.constant {bq} : index
  gpu.launch blocks(%bx, %by, %bz) in (%sgx = %gx, %sgy = %gy, %sgz = %c1)
      threads(%tx, %ty, %tz) in (%sx = %nt, %sy = %c1, %sz = %c1)
      workgroup(%ksh : {ksh}, %vsh : {vsh}) {{
    %c0 = arith.constant 0 : index
    %one = arith.constant 1 : index
    %BQ = arith.constant {bq} : index
    %BK = arith.constant {bk} : index
    %M = arith.constant {s.m} : index
    %N = arith.constant {s.n} : index
    %D = arith.constant {s.d} : index
    %DV = arith.constant {s.dv} : index
    %DBK = arith.constant {s.d * bk} : index
    %BKDV = arith.constant {bk * s.dv} : index
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %qr = memref.alloca() : memref<{s.d}xf32>
    %acc = memref.alloca() : memref<{s.dv}xf32>
    %st = memref.alloca() : memref<{bk}xf32>
    {chr(10).join('    ' + x for x in index_lines).strip()}
    %r0 = arith.muli %bx, %BQ : index
    %row = arith.addi %r0, %tx : index
    %valid = arith.cmpi ult, %row, %M : index
    scf.if %valid {{
      scf.for %c = %c0 to %D step %one {{
        %x = memref.load %Q[{b}%row, %c] : {mq}
        memref.store %x, %qr[%c] : memref<{s.d}xf32>
      }}
      scf.for %c = %c0 to %DV step %one {{
        memref.store %zero, %acc[%c] : memref<{s.dv}xf32>
      }}
    }}
    %fin:2 = scf.for %j0 = %c0 to %N step %BK iter_args(%m = %ninf, %l = %zero) -> (f32, f32) {{
      scf.for %e = %tx to %DBK step %BQ {{
        %c = arith.divui %e, %BK : index
        %jj = arith.remui %e, %BK : index
        %j = arith.addi %j0, %jj : index
        %in = arith.cmpi ult, %j, %N : index
        %x = scf.if %in -> (f32) {{
          %y = memref.load %K[{b}%c, %j] : {mk}
          scf.yield %y : f32
        }} else {{
          scf.yield %zero : f32
        }}
        memref.store %x, %ksh[%c, %jj] : {ksh}
      }}
      scf.for %e = %tx to %BKDV step %BQ {{
        %jj = arith.divui %e, %DV : index
        %c = arith.remui %e, %DV : index
        %j = arith.addi %j0, %jj : index
        %in = arith.cmpi ult, %j, %N : index
        %x = scf.if %in -> (f32) {{
          %y = memref.load %V[{b}%j, %c] : {mv}
          scf.yield %y : f32
        }} else {{
          scf.yield %zero : f32
        }}
        memref.store %x, %vsh[%jj, %c] : {vsh}
      }}
      gpu.barrier
      %left = arith.subi %N, %j0 : index
      %kn = arith.minui %left, %BK : index
      %upd:2 = scf.if %valid -> (f32, f32) {{
        %tmax = scf.for %jj = %c0 to %kn step %one iter_args(%mx = %ninf) -> (f32) {{
          %dot = scf.for %c = %c0 to %D step %one iter_args(%a = %zero) -> (f32) {{
            %qa = memref.load %qr[%c] : memref<{s.d}xf32>
            %ka = memref.load %ksh[%c, %jj] : {ksh}
            %p = arith.mulf %qa, %ka : f32
            %a2 = arith.addf %a, %p : f32
            scf.yield %a2 : f32
          }}
          {chr(10).join('          ' + x for x in scale_lines).strip()}
          memref.store {value}, %st[%jj] : memref<{bk}xf32>
          %mx2 = arith.maximumf %mx, {value} : f32
          scf.yield %mx2 : f32
        }}
        %mnew = arith.maximumf %m, %tmax : f32
        %isinf = arith.cmpf oeq, %mnew, %ninf : f32
        %msafe = arith.select %isinf, %zero, %mnew : f32
        %dm = arith.subf %m, %msafe : f32
        %alpha = math.exp %dm : f32
        scf.for %c = %c0 to %DV step %one {{
          %a = memref.load %acc[%c] : memref<{s.dv}xf32>
          %a2 = arith.mulf %a, %alpha : f32
          memref.store %a2, %acc[%c] : memref<{s.dv}xf32>
        }}
        %lsum = scf.for %jj = %c0 to %kn step %one iter_args(%ls = %zero) -> (f32) {{
          %sj = memref.load %st[%jj] : memref<{bk}xf32>
          %ds = arith.subf %sj, %msafe : f32
          %p = math.exp %ds : f32
          scf.for %c = %c0 to %DV step %one {{
            %a = memref.load %acc[%c] : memref<{s.dv}xf32>
            %w = memref.load %vsh[%jj, %c] : {vsh}
            %pw = arith.mulf %p, %w : f32
            %a2 = arith.addf %a, %pw : f32
            memref.store %a2, %acc[%c] : memref<{s.dv}xf32>
          }}
          %ls2 = arith.addf %ls, %p : f32
          scf.yield %ls2 : f32
        }}
        %la = arith.mulf %l, %alpha : f32
        %lnew = arith.addf %la, %lsum : f32
        scf.yield %mnew, %lnew : f32, f32
      }} else {{
        scf.yield %m, %l : f32, f32
      }}
      gpu.barrier
      scf.yield %upd#0, %upd#1 : f32, f32
    }}
    scf.if %valid {{
      scf.for %c = %c0 to %DV step %one {{
        %a = memref.load %acc[%c] : memref<{s.dv}xf32>
        %o = arith.divf %a, %fin#1 : f32
        {chr(10).join('        ' + x for x in finish).strip()}
        memref.store {result}, %O[{b}%row, %c] : {mo}
      }}
    }}
    gpu.terminator
  }}
  %out = bufferization.to_tensor %O restrict writable : {mo} to {to}
  return %out : {to}
}}
"""
    return body


def _half_model(v: ir.Value) -> bool:
    """V is an elementwise upcast of an f16 tensor: the model computes in f16 (SDPA's CPU
    decomposition upcasts), so tensor cores' f16 operands lose nothing it had."""
    while isinstance(v.owner, ir.OpView | ir.Operation) and \
            v.owner.name in ("tensor.collapse_shape", "tensor.expand_shape"):
        v = v.owner.operands[0]
    source = upcast_source(v, ir.F32Type.get())
    return source is not None and \
        isinstance(ir.RankedTensorType(source.type).element_type, ir.F16Type)


@register_pass
@dataclass(frozen=True)
class NvgpuFlashAttention(ModulePass):
    """Replaces f32 attention chains (matmul-softmax-matmul) by one flash-style GPU kernel."""

    name = "accel-nvgpu-flash-attention"
    #: Query rows per block (threads per block: one row each).
    block_q: int = 64
    #: Keys per shared-memory tile.
    block_k: int = 32
    #: f16 models (V an upcast of f16) of fitting sizes on tensor cores (`_nvgpu_flash_wmma`).
    tensor_cores: bool = True

    def apply(self, module: Operation) -> None:
        if self.block_q < 32 or self.block_q > 1024 or self.block_q % 32 or \
                not 1 <= self.block_k <= 1024:
            self.fail(module, f"block-q must be a multiple of 32 from 32 to 1024 and block-k "
                              f"from 1 to 1024, got {self.block_q} and {self.block_k}")
        for op in ops_named(module, ("linalg.batch_matmul", "linalg.matmul")):
            if op.parent is None:
                continue  # erased with an earlier chain
            self._rewrite(op)

    def _rewrite(self, mm2: Operation) -> None:
        att = match_attention(mm2)
        if att is None:
            return
        extra: list[ir.Value] = []
        steps = [_score_step(op, plans, extra)
                 for op, plans in zip(att.score_ops, att.operands, strict=True)]
        if any(x is None for x in steps) or \
                any(not isinstance(x.type, ir.RankedTensorType) or
                    not ir.RankedTensorType(x.type).has_static_shape for x in extra):
            return  # other score ops: the kernel-per-op path
        q, kt, v = att.mm1.operands[0], att.mm1.operands[1], att.mm2.operands[1]
        types = [_f32_static(x) for x in (q, kt, v, att.mm2.results[0])]
        if any(t is None for t in types):
            return
        tq, tk, tv, _ = types
        batched = mm2.name == "linalg.batch_matmul"
        shape = _Shape(batch=tq.shape[0] if batched else 1, batched=batched,
                       batch_shape=list(att.batch_shape), m=tq.shape[-2], n=tk.shape[-1],
                       d=tq.shape[-1], dv=tv.shape[-1])
        bq = self.block_q if shape.m >= self.block_q else 32
        chosen = [x for x in steps if x is not None]
        extra_types = [str(x.type) for x in extra]
        guard = att.guard_input is not None
        if self.tensor_cores and _half_model(v) and \
                _nvgpu_flash_wmma.fits(shape.m, shape.n, shape.d, shape.dv):
            index_lines, score_lines, extra_args, extra_buffers = \
                _common(shape, chosen, extra_types)
            text = _nvgpu_flash_wmma.render(shape, score_lines, index_lines, extra_args,
                                            extra_buffers, guard)
        else:
            # The K^T and V tiles must fit a block's static shared memory (48 KiB).
            bk = min(self.block_k, _nvgpu_flash_wmma.SHARED_LIMIT // (4 * (shape.d + shape.dv)))
            if bk < 1:
                return
            text = render(shape, chosen, extra_types, guard, bq, bk)
        helper = ir.Module.parse(text, mm2.context)
        func = helper.body.operations[0]
        entry = func.regions[0].blocks[0]
        for arg, value in zip(entry.arguments, (q, kt, v, *extra), strict=True):
            arg.replace_all_uses_with(value)
        inner = [o.operation for o in entry.operations]
        for op in inner[:-1]:
            op.move_before(mm2)
        mm2.results[0].replace_all_uses_with(inner[-1].operands[0])
        erase_chain(att.chain)
