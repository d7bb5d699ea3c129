"""accel's additions to torch-mlir's decomposition table, applied to every `torch.export`.

Each entry fixes an op that torch-mlir lowers unlike eager PyTorch, or not at all, by
rewriting it into ops it lowers correctly (or, for the backward ops of training graphs, into
ops it lowers to fast code). A decomposition may return `NotImplemented` to leave a call as
it is (e.g. for dtypes it does not concern). Every entry is tested against eager in
test/unit/test_op_coverage.py, test/unit/test_dtypes.py or (backward ops)
test/unit/test_training.py.
"""

from __future__ import annotations

from typing import Any

from accel.frontend.data_dependent import decompositions as data_dependent_decompositions
from accel.ir import torch_decompositions


def _reciprocal(x: Any) -> Any:
    """`1 / x` as a division: torch-mlir lowers `aten.reciprocal` with an assert that x has
    no zero ("unimplemented: tensor with zero element"), where eager PyTorch returns inf."""
    import torch

    dtype = x.dtype if x.is_floating_point() or x.is_complex() else torch.get_default_dtype()
    one = torch.ops.aten.scalar_tensor.default(1.0, dtype=dtype)
    return torch.ops.aten.div.Tensor(one, x)


def _hypot(a: Any, b: Any) -> Any:
    """hypot without overflow: max * sqrt(1 + (min/max)^2) (torch-mlir has no lowering)."""
    import torch

    big = torch.maximum(torch.abs(a), torch.abs(b))
    small = torch.minimum(torch.abs(a), torch.abs(b))
    ratio = torch.where(big == 0, torch.zeros_like(big), small / big)
    scaled = big * torch.sqrt(1 + ratio * ratio)
    return torch.where(torch.isinf(big), big, scaled)


def _fmod_scalar(x: Any, other: Any) -> Any:
    """fmod by a Python number as fmod by a 0-d tensor of the result's dtype (torch-mlir has
    no lowering of aten.fmod.Scalar: "unsupported op constant.int")."""
    import torch

    dtype = torch.result_type(x, other)
    divisor = torch.ops.aten.scalar_tensor.default(other, dtype=dtype)
    return torch.ops.aten.fmod.Tensor(x.to(dtype), divisor)


def _contiguous_attention(decomposition: Any) -> Any:
    """The flash-attention-for-CPU decomposition with its output contiguous, as the real
    op's is: the decomposition returns it in the (B, S, H, D) layout, so a model's later
    `.view` (HF GPT-2's sdpa path, batch > 1) failed with "Cannot view a tensor with shape
    ... and strides ..." while exporting."""

    def fixed(*args: Any, **kwargs: Any) -> Any:
        out = decomposition(*args, **kwargs)
        return (out[0].contiguous(), *out[1:])

    return fixed


def _copysign(a: Any, b: Any) -> Any:
    """|a| with the sign of b, -0.0 included (torch's decomposition needs prims.signbit)."""
    import torch

    dtype = torch.result_type(a, b)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    a, b = a.to(dtype), b.to(dtype)
    negative = (b < 0) | ((b == 0) & (torch.ops.aten.div.Tensor(1.0, b) < 0))
    return torch.where(negative, -torch.abs(a), torch.abs(a))


def _gelu_tanh(x: Any, approximate: str = "none") -> Any:
    """torch's own decomposition for tanh-approximate gelu, which matches eager (torch-mlir's
    lowering drifts 5e-5); exact gelu stays as it is (`NotImplemented`: not decomposed)."""
    import torch
    from torch._decomp import decomposition_table

    if approximate != "tanh":
        return NotImplemented
    return decomposition_table[torch.ops.aten.gelu.default](x, approximate=approximate)


# -- NaN-propagating max/min --------------------------------------------------------------
def _nan_max(a: Any, b: Any) -> Any:
    """eager's float `maximum`: b where a < b, else a (so -0.0 vs 0.0 gives a), and NaN
    when either is NaN. torch-mlir's `a > b ? a : b` lost a NaN `a`."""
    import torch

    return torch.where(b != b, b, torch.where(a < b, b, a))


def _nan_min(a: Any, b: Any) -> Any:
    """eager's float `minimum`: b where a > b, else a; NaN when either is NaN."""
    import torch

    return torch.where(b != b, b, torch.where(a > b, b, a))


def _float_dtype(*values: Any) -> Any:
    """The floating result dtype of `values` (tensors and scalars, None skipped), or None."""
    import torch

    present = [v for v in values if v is not None]
    dtype = present[0].dtype
    for v in present[1:]:
        dtype = torch.promote_types(dtype, v.dtype) if isinstance(v, torch.Tensor) else \
            torch.result_type(torch.empty((), dtype=dtype), v)
    return dtype if dtype.is_floating_point else None


def _maximum(a: Any, b: Any) -> Any:
    dtype = _float_dtype(a, b)
    return NotImplemented if dtype is None else _nan_max(a.to(dtype), b.to(dtype))


def _minimum(a: Any, b: Any) -> Any:
    dtype = _float_dtype(a, b)
    return NotImplemented if dtype is None else _nan_min(a.to(dtype), b.to(dtype))


def _nan_clamp(x: Any, lo: Any, hi: Any) -> Any:
    """clamp of a float tensor as eager: max with `lo`, then min with `hi` (tensors or
    scalars, None: no bound), NaN wherever x or a bound is NaN (torch-mlir's `x < lo ? lo
    : x` with an unordered compare gave lo for a NaN x)."""
    import torch

    dtype = _float_dtype(x, lo, hi)
    if dtype is None:
        return NotImplemented

    def bound(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.to(dtype)
        return torch.ops.aten.scalar_tensor.default(v, dtype=dtype)

    y = x.to(dtype)
    if lo is not None:
        y = _nan_max(y, bound(lo))
    if hi is not None:
        y = _nan_min(y, bound(hi))
    return y


def _clamp(x: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - aten's names
    return _nan_clamp(x, min, max)


def _clamp_min(x: Any, min: Any) -> Any:  # noqa: A002 - aten's names
    return _nan_clamp(x, min, None)


def _clamp_max(x: Any, max: Any) -> Any:  # noqa: A002 - aten's names
    return _nan_clamp(x, None, max)


def _hardtanh(x: Any, min_val: Any = -1.0, max_val: Any = 1.0) -> Any:
    return _nan_clamp(x, min_val, max_val)


# -- 8-bit integers ------------------------------------------------------------------------
def _in_int32(op: Any, *, scalar_other: bool = False, rounding: str | tuple[str, ...] | None = None,
              cast_back: bool = True, only: tuple[str, ...] = ("int8", "uint8")) -> Any:
    """A decomposition computing `op` on int8/uint8 tensors in int32, then cast back.

    torch-mlir's convert-torch-to-linalg crashes (SIGSEGV) or fails ("for conversion to byte
    or char type dstOriginalDtype has to be passed to convertScalarToDtype") on some ops with
    an si8/ui8 result: it converts a scalar (a Python operand, a reduction's initial value) to
    the 8-bit type without the original dtype such a conversion needs. int32 arithmetic and
    the truncating cast back wrap around modulo 2^8 exactly as eager's 8-bit arithmetic does
    (sums and products, matmuls included; floor division overflows only at -128 // -1, where
    both give -128). Other dtypes are left alone (`NotImplemented`), and so are calls whose
    second operand is a tensor when `scalar_other` is set, or whose rounding mode is not
    (one of) `rounding` when that is given.

    uint8 operands also go through int32 where torch-mlir treats the signless i8 it lowers
    uint8 to as signed (division, remainder, fmod, sort: 200 // 7 gave 248); `only` limits a
    fix to one of the two types, `cast_back=False` keeps a float result (true division), and
    a tuple result (sort's values and indices) has only its int32 members cast back. Python
    int operands are first wrapped into the 8-bit type, as eager converts them.
    """
    import torch

    narrow = tuple(getattr(torch, name) for name in only)
    modes = (rounding,) if isinstance(rounding, str) else rounding

    def back(result: Any, dtype: Any) -> Any:
        if not cast_back:
            return result
        if isinstance(result, tuple | list):
            return type(result)(back(r, dtype) if r.dtype == torch.int32 else r for r in result)
        return result.to(dtype)

    def decomposition(*args: Any, **kwargs: Any) -> Any:
        if modes is not None and kwargs.get("rounding_mode") not in modes:
            return NotImplemented
        if scalar_other and isinstance(args[1], torch.Tensor):
            return NotImplemented
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        dtype = torch.result_type(args[0], args[1]) if len(args) > 1 else args[0].dtype
        if dtype not in narrow or any(t.dtype not in (dtype, torch.bool) for t in tensors):
            return NotImplemented
        bits = torch.iinfo(dtype).bits

        def widen(a: Any) -> Any:
            if isinstance(a, torch.Tensor):
                return a.to(torch.int32)
            if isinstance(a, int) and not isinstance(a, bool):
                # eager converts an int scalar to the tensor's dtype first (uint8 // -7
                # divides by 249): wrap it into that range.
                a %= 1 << bits
                return a - (1 << bits) if dtype.is_signed and a >= 1 << (bits - 1) else a
            return a

        wide = [widen(a) for a in args]
        return back(op(*wide, **kwargs), dtype)

    return decomposition


def _int_floor_div(a: Any, b: Any, rounding_mode: str | None = None) -> Any:
    """Integer floor division as truncating division plus a correction: torch-mlir divides
    integers in float64 for `//` (wrong beyond 2^53, and 0 for a zero divisor where eager
    raises). The truncating division is `arith.divsi`, which `accel-guard-division` makes
    raise on a zero divisor and wrap at INT_MIN // -1, as eager does."""
    import torch

    if rounding_mode != "floor":
        return NotImplemented
    dtype = torch.result_type(a, b)
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return NotImplemented
    q = torch.ops.aten.div.Tensor_mode(a, b, rounding_mode="trunc")
    r = a - q * b
    negative_b = b < 0
    fix = (r != 0) & ((r < 0) != negative_b)
    return q - fix.to(q.dtype)


def _uint8_abs(x: Any) -> Any:
    """|x| of uint8 is x (torch-mlir takes the i8 bits as signed: abs(200) gave 56)."""
    import torch

    if x.dtype != torch.uint8:
        return NotImplemented
    return torch.ops.aten.clone.default(x)


def _float_to_uint8(x: Any, dtype: Any) -> Any:
    """float -> uint8 through int32 (torch-mlir's fptosi to i8 saturated at 127), wrapping
    modulo 256 from there as eager does on x86."""
    import torch

    if dtype != torch.uint8 or not x.is_floating_point():
        return NotImplemented
    convert = torch.ops.prims.convert_element_type.default
    return convert(convert(x, torch.int32), torch.uint8)


def _clamp_uint8(x: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - aten's names
    """clamp of a uint8 tensor by tensor bounds as min(max(x, lo), hi): torch-mlir's
    aten.clamp.Tensor compares ui8 values as signed (clamp(200, 100, 110) gives 100)."""
    import torch

    if x.dtype != torch.uint8:
        return NotImplemented
    if min is not None:
        x = torch.maximum(x, min)
    if max is not None:
        x = torch.minimum(x, max)
    return x


def _first(*decompositions: Any) -> Any:
    """The first of `decompositions` that does not return `NotImplemented` (for ops that
    more than one fix concerns, e.g. int8 and complex `aten.sub`)."""

    def decomposition(*args: Any, **kwargs: Any) -> Any:
        for decompose in decompositions:
            result = decompose(*args, **kwargs)
            if result is not NotImplemented:
                return result
        return NotImplemented

    return decomposition


# -- complex -------------------------------------------------------------------------------
# torch-mlir lowers complex tensors through the `complex` dialect, but not every op: these
# compute in the real and imaginary parts instead, for complex results only.
def _parts(x: Any, dtype: Any) -> tuple[Any, Any]:
    """(real, imaginary) of `x` (a tensor or a Python number) as tensors of complex `dtype`'s
    real dtype; a real `x` has an imaginary part of 0 (a 0-d tensor, broadcast)."""
    import torch

    real = dtype.to_real()
    if not isinstance(x, torch.Tensor):
        z = complex(x)
        return (torch.ops.aten.scalar_tensor.default(z.real, dtype=real),
                torch.ops.aten.scalar_tensor.default(z.imag, dtype=real))
    if x.is_complex():
        return torch.real(x).to(real), torch.imag(x).to(real)
    return x.to(real), torch.ops.aten.scalar_tensor.default(0.0, dtype=real)


def _complex_add(sign: int) -> Any:
    """a + alpha * b (sign 1) or a - alpha * b (sign -1), part by part: torch-mlir multiplies
    b by alpha with `arith.muli`, which takes no complex operand."""
    import torch

    def decomposition(a: Any, b: Any, *, alpha: Any = 1) -> Any:
        dtype = torch.result_type(a, b)
        if not dtype.is_complex:
            return NotImplemented
        (ar, ai), (br, bi) = _parts(a, dtype), _parts(b, dtype)
        if alpha != 1:
            k = complex(alpha)
            br, bi = br * k.real - bi * k.imag, br * k.imag + bi * k.real
        return torch.complex(ar + sign * br, ai + sign * bi)

    return decomposition


def _complex_div(a: Any, b: Any) -> Any:
    """a / b for complex results, by Smith's scaling (as c10::complex and numpy do): divide
    by the larger of |re b| and |im b| first, so that |b|^2 cannot overflow."""
    import torch

    dtype = torch.result_type(a, b)
    if not dtype.is_complex:
        return NotImplemented
    ar, ai = _parts(a, dtype)
    if not (isinstance(b, torch.Tensor) and b.is_complex()):
        # A real divisor: the formula below with im b = 0, as eager divides by |b| = 0
        # too, (a / +0, ai / +0). (Not the formula itself: with 0-d tensors for a Python
        # divisor, torch-mlir's convert-torch-to-linalg crashes on it.)
        if isinstance(b, torch.Tensor):
            br = b.to(dtype.to_real())
            br = torch.where(br == 0, torch.abs(br), br)
        else:
            br = abs(float(b)) if b == 0 else float(b)
        return torch.complex(ar / br, ai / br)
    br, bi = _parts(b, dtype)
    real_first = torch.abs(br) >= torch.abs(bi)
    # |re b| >= |im b|: t = im b / re b, a / b = (ar + ai t, ai - ar t) / (re b + im b t).
    t1 = bi / br
    s1 = br + bi * t1
    re1, im1 = (ar + ai * t1) / s1, (ai - ar * t1) / s1
    # otherwise: t = re b / im b, a / b = (ar t + ai, ai t - ar) / (re b t + im b).
    t2 = br / bi
    s2 = br * t2 + bi
    re2, im2 = (ar * t2 + ai) / s2, (ai * t2 - ar) / s2
    # b == 0: (ar / 0, ai / 0), infinities or nans, as eager.
    zero = (br == 0) & (bi == 0)
    re = torch.where(zero, ar / torch.abs(br), torch.where(real_first, re1, re2))
    im = torch.where(zero, ai / torch.abs(bi), torch.where(real_first, im1, im2))
    return torch.complex(re, im)


def _complex_abs(x: Any) -> Any:
    """|x| of a complex tensor as hypot(re, im), without overflow (`math.absf` takes no
    complex operand)."""
    if not x.is_complex():
        return NotImplemented
    re, im = _parts(x, x.dtype)
    return _hypot(re, im)


def _complex_exp(x: Any) -> Any:
    """exp(a + ib) = e^a (cos b + i sin b) (`math.exp` takes no complex operand); b == 0
    gives a real result, e^a + 0i, even where e^a overflows."""
    import torch

    if not x.is_complex():
        return NotImplemented
    re, im = _parts(x, x.dtype)
    scale = torch.exp(re)
    return torch.complex(scale * torch.cos(im),
                         torch.where(im == 0, im, scale * torch.sin(im)))


def _complex_angle(x: Any) -> Any:
    """arg(x) = atan2(im, re) for complex x (torch-mlir has no aten.angle)."""
    import torch

    if not x.is_complex():
        return NotImplemented
    re, im = _parts(x, x.dtype)
    return torch.atan2(im, re)


def _complex_conj_physical(x: Any) -> Any:
    """re - i im for complex x (torch-mlir has no aten._conj_physical)."""
    import torch

    if not x.is_complex():
        return NotImplemented
    re, im = _parts(x, x.dtype)
    return torch.complex(re, -im)


def _complex_mul_scalar(a: Any, b: Any) -> Any:
    """complex tensor * Python number, part by part (torch-mlir: "Only integer/float dtype
    supported"); complex * tensor is left alone."""
    import torch

    if isinstance(b, torch.Tensor) or not isinstance(a, torch.Tensor) or not a.is_complex():
        return NotImplemented
    dtype = torch.result_type(a, b)
    (ar, ai), k = _parts(a, dtype), complex(b)
    return torch.complex(ar * k.real - ai * k.imag, ar * k.imag + ai * k.real)


def _complex_neg(x: Any) -> Any:
    """-x for complex x (`arith.negf` takes no complex operand)."""
    import torch

    if not x.is_complex():
        return NotImplemented
    re, im = _parts(x, x.dtype)
    return torch.complex(-re, -im)


def _complex_reduction(reduce: Any) -> Any:
    """sum/mean of a complex tensor as the sum/mean of its parts (torch-mlir's complex
    sum aborts the process, its complex mean fails)."""
    import torch

    def decomposition(x: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        if not x.is_complex() or (dtype is not None and dtype != x.dtype):
            return NotImplemented
        re, im = _parts(x, x.dtype)
        return torch.complex(reduce(re, *args, **kwargs), reduce(im, *args, **kwargs))

    return decomposition


def _pair(value: Any, default: Any = None) -> tuple[int, int]:
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        value = default
    if isinstance(value, int):
        return value, value
    return (int(value[0]), int(value[0])) if len(value) == 1 else (int(value[0]), int(value[1]))


def _pool_divisors(size: int, out: int, k: int, s: int, p: int, include_pad: bool
                   ) -> list[tuple[int, int]]:
    """Per output index along one dimension: (the window length the divisor counts, the
    window length within the padded input), exactly as torch's CPU avg_pool2d kernel."""
    found = []
    for o in range(out):
        start = o * s - p
        end = min(start + k, size + p)
        padded = end - start
        start, end = max(start, 0), min(end, size)
        found.append((padded if include_pad else end - start, padded))
    return found


def _runs(values: list[tuple[int, int]], dtype: Any) -> Any:
    """`values[i][0]` as a 1-D tensor, built from `full` runs (a tensor literal would be a
    lifted constant, which a decomposition may not create)."""
    import torch

    parts: list[tuple[int, int]] = []
    for v, _ in values:
        if parts and parts[-1][0] == v:
            parts[-1] = (v, parts[-1][1] + 1)
        else:
            parts.append((v, 1))
    return torch.cat([torch.full((n,), float(v), dtype=dtype) for v, n in parts])


def _interleave(x: Any, sh: int, sw: int) -> Any:
    """(..., h, w) -> (..., h*sh, w*sw): x at multiples of the strides, zeros between."""
    import torch

    if sh == sw == 1:
        return x
    *lead, h, w = x.shape
    x = torch.nn.functional.pad(x.unsqueeze(-1), (0, sw - 1)).reshape(*lead, h, w * sw)
    return torch.nn.functional.pad(x.unsqueeze(-2), (0, 0, 0, sh - 1)).reshape(
        *lead, h * sh, w * sw)


def _avg_pool2d_backward(grad: Any, x: Any, kernel_size: Any, stride: Any, padding: Any,
                         ceil_mode: bool, count_include_pad: bool,
                         divisor_override: int | None) -> Any:
    """`avg_pool2d`'s gradient without a pooling op (torch-mlir has no lowering for
    `aten.avg_pool2d_backward`): each output gradient, divided by its window's divisor, is
    spread over its window: for every kernel offset (di, dj), the gradient placed at rows
    di + i*stride and columns dj + j*stride (zero-interleaved by padding), summed, then the
    padding cropped off. Divisors are computed at trace time from the static shapes, as
    torch's CPU kernel does (count_include_pad, ceil_mode, divisor_override)."""
    import torch

    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride, (kh, kw))
    ph, pw = _pair(padding, 0)
    h, w = int(x.shape[-2]), int(x.shape[-1])
    oh, ow = int(grad.shape[-2]), int(grad.shape[-1])
    if divisor_override:
        div = torch.full((oh, ow), float(divisor_override), dtype=grad.dtype)
    else:
        rows = _runs(_pool_divisors(h, oh, kh, sh, ph, count_include_pad), grad.dtype)
        cols = _runs(_pool_divisors(w, ow, kw, sw, pw, count_include_pad), grad.dtype)
        div = rows.unsqueeze(-1) * cols
    g = grad / div
    g = _interleave(g, sh, sw)  # (..., oh*sh, ow*sw), g at multiples of the stride
    total = None
    for di in range(kh):
        for dj in range(kw):
            shifted = torch.nn.functional.pad(g, (dj, kw - dj, di, kh - di))
            total = shifted if total is None else total + shifted
    assert total is not None
    return total[..., ph:ph + h, pw:pw + w]


def _convolution_backward(grad: Any, x: Any, weight: Any, bias_sizes: Any, stride: Any,
                          padding: Any, dilation: Any, transposed: bool, output_padding: Any,
                          groups: int, output_mask: Any) -> Any:
    """A 2-D convolution's gradients as two matrix products (what accel's CPU codegen runs
    as packed GEMM kernels; torch-mlir lowers `convolution_backward` to convolutions with
    an output-sized kernel, ~30x slower than eager on a small CNN's layer):

    - weight: im2col of the padded input (the kernel's kh*kw strided windows, stacked) times
      the output gradient: (o, n*oh*ow) @ (n*oh*ow, kh*kw*i);
    - input (padding < kernel): the forward convolution of the output gradient,
      zero-interleaved by the stride, with the flipped, transposed weight (accel's direct
      conv kernel); else, and for strided 1x1 convolutions, the flipped problem as col2im:
      (kh*kw*i, o) @ (o, n*oh*ow), each kernel offset's slice zero-interleaved by the
      stride, shifted into place (padding) and summed, then the padding cropped off.

    im2col materialises n*oh*ow*kh*kw*i values, as accel's own im2col convolutions do.
    Grouped convolutions (MobileNet's depthwise ones) are the same products batched over
    the groups (torch-mlir's own lowering of theirs does not compile). Other convolutions
    (transposed, dilated, not 2-D) are left to torch-mlir (`NotImplemented`)."""
    import torch

    if transposed or x.dim() != 4 or any(d != 1 for d in dilation):
        return NotImplemented
    if groups != 1:
        return _grouped_convolution_backward(grad, x, weight, stride, padding, groups,
                                             output_mask)
    pad = torch.nn.functional.pad
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    o, i, kh, kw = (int(d) for d in weight.shape)
    n, h, w = int(x.shape[0]), int(x.shape[2]), int(x.shape[3])
    oh, ow = int(grad.shape[2]), int(grad.shape[3])
    rows = grad.permute(1, 0, 2, 3).reshape(o, n * oh * ow)  # (o, n*oh*ow)
    grad_input = grad_weight = grad_bias = None
    if output_mask[1]:
        # The windows of the channel-major padded input, (i, n, oh, ow) each, stacked
        # as (i, kh*kw, n, oh, ow): cols^T (i*kh*kw, n*oh*ow) is then that buffer as it
        # is, and the product (o, i*kh*kw) is the weight's layout. Stacked tap-major,
        # the im2col buffer was copied once more to put the channels first, and the
        # product permuted into (o, i, kh, kw): two full copies, 8.5% of a small
        # ResNet-18's train step. (The stacked buffer reaches the GEMM through two views,
        # which affine fusion must accept: docs/fusion.md, "Aliasing".) Both operands
        # run along the reduction, so a small
        # layer's product (8 filters x 9 taps over 25088 positions) is dot products
        # (accel-matmul-microkernel's dot kernel), not a GEMM with a 9-wide B.
        xp = pad(x.transpose(0, 1), (pw, pw, ph, ph))
        windows = [xp[:, :, di:di + (oh - 1) * sh + 1:sh, dj:dj + (ow - 1) * sw + 1:sw]
                   for di in range(kh) for dj in range(kw)]
        cols_t = torch.stack(windows, 1).reshape(i * kh * kw, n * oh * ow)
        grad_weight = (rows @ cols_t.t()).reshape(o, i, kh, kw)
    if output_mask[0] and ph < kh and pw < kw and ((sh, sw) == (1, 1) or kh * kw > 1):
        # The input gradient is a forward convolution of the output gradient (strided: of
        # it zero-interleaved by the stride) with the flipped, transposed weight: one call
        # of accel-conv-kernels' direct kernel. col2im instead wrote kh*kw interleaved,
        # padded full-size slices and summed them: a ResNet train step's stride-2 3x3
        # layers spent ~0.5 ms each there, against ~0.1 ms for the convolution, whose
        # zeros cost sh*sw times the multiply-adds (1x1 layers keep col2im: one slice).
        conv = torch.nn.functional.conv2d(
            _interleave(grad, sh, sw), weight.flip(2, 3).transpose(0, 1),
            padding=(kh - 1 - ph, kw - 1 - pw))
        grad_input = _fit(conv, h, w)
    elif output_mask[0]:
        parts = (weight.permute(2, 3, 1, 0).reshape(kh * kw * i, o) @ rows).reshape(
            kh, kw, i, n, oh, ow).permute(0, 1, 3, 2, 4, 5)  # (kh, kw, n, i, oh, ow)
        grad_input = _col2im(parts, sh, sw, ph, pw, h, w)
    if output_mask[2]:
        grad_bias = grad.sum([0, 2, 3])
    return grad_input, grad_weight, grad_bias


def _empty_permuted(size: Any, physical_layout: Any, **kwargs: Any) -> Any:
    """`aten.empty_permuted` (what `empty_like`/`full_like` become in training graphs, e.g.
    SiLU's backward) as `empty` in the physical order, permuted back: torch-mlir has no
    lowering for it ("unsupported op aten.empty_permuted")."""
    import torch

    layout = list(physical_layout)
    physical = [size[i] for i in layout]
    inverse = [layout.index(i) for i in range(len(layout))]
    empty = torch.ops.aten.empty.memory_format(physical, **kwargs)
    return torch.ops.aten.permute.default(empty, inverse)


def _fit(x: Any, h: int, w: int) -> Any:
    """(n, c, a, b) -> (n, c, h, w): cropped at the end, or zero-padded there (input rows
    and columns no output window reached get a zero gradient)."""
    import torch

    extra_h, extra_w = max(0, h - int(x.shape[2])), max(0, w - int(x.shape[3]))
    if extra_h or extra_w:
        x = torch.nn.functional.pad(x, (0, extra_w, 0, extra_h))
    return x[:, :, :h, :w]


def _col2im(parts: Any, sh: int, sw: int, ph: int, pw: int, h: int, w: int) -> Any:
    """(kh, kw, n, c, oh, ow) per-offset input gradients -> (n, c, h, w): each offset's
    slice zero-interleaved by the stride, shifted into place and summed, padding cropped."""
    kh, kw = int(parts.shape[0]), int(parts.shape[1])
    import torch

    pad = torch.nn.functional.pad
    total = None
    for di in range(kh):
        for dj in range(kw):
            part = _interleave(parts[di, dj], sh, sw)  # (n, c, oh*sh, ow*sw)
            shifted = pad(part, (dj, kw - dj, di, kh - di))
            total = shifted if total is None else total + shifted
    assert total is not None
    return _fit(total[:, :, ph:, pw:], h, w)


def _grouped_convolution_backward(grad: Any, x: Any, weight: Any, stride: Any, padding: Any,
                                  groups: int, output_mask: Any) -> Any:
    """`_convolution_backward` for `groups` > 1: the weight and input gradients as matrix
    products batched over the groups ((g, o/g, n*oh*ow) @ (g, n*oh*ow, kh*kw*i) and
    (g, kh*kw*i, o/g) @ (g, o/g, n*oh*ow); i = input channels per group)."""
    import torch

    pad = torch.nn.functional.pad
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    o, i, kh, kw = (int(d) for d in weight.shape)
    g, og = groups, o // groups
    n, h, w = int(x.shape[0]), int(x.shape[2]), int(x.shape[3])
    oh, ow = int(grad.shape[2]), int(grad.shape[3])
    rows = grad.reshape(n, g, og, oh, ow).permute(1, 2, 0, 3, 4).reshape(g, og, n * oh * ow)
    grad_input = grad_weight = grad_bias = None
    if output_mask[1]:
        xp = pad(x, (pw, pw, ph, ph))
        windows = [xp[:, :, di:di + (oh - 1) * sh + 1:sh, dj:dj + (ow - 1) * sw + 1:sw]
                   for di in range(kh) for dj in range(kw)]
        cols = torch.stack(windows, -1).reshape(n, g, i, oh, ow, kh * kw).permute(
            1, 0, 3, 4, 5, 2).reshape(g, n * oh * ow, kh * kw * i)
        grad_weight = torch.matmul(rows, cols).reshape(o, kh, kw, i).permute(0, 3, 1, 2)
    if output_mask[0]:
        wg = weight.reshape(g, og, i, kh, kw).permute(0, 3, 4, 2, 1).reshape(g, kh * kw * i,
                                                                            og)
        parts = torch.matmul(wg, rows).reshape(g, kh, kw, i, n, oh, ow).permute(
            1, 2, 4, 0, 3, 5, 6).reshape(kh, kw, n, g * i, oh, ow)
        grad_input = _col2im(parts, sh, sw, ph, pw, h, w)
    if output_mask[2]:
        grad_bias = grad.sum([0, 2, 3])
    return grad_input, grad_weight, grad_bias


def _conv1d_as_2d(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
                  transposed: bool, output_padding: Any, groups: int) -> Any:
    """A 1-D convolution as a 2-D one over a unit height (Whisper's and wav2vec's stems).

    torch-mlir lowers it to `linalg.conv_1d_ncw_fcw`, which only the generic loop lowering
    runs (Whisper-base's 384 -> 384 stem conv took 11% of the encoder at ~5 GFLOP/s); as
    `conv_2d_nchw_fchw` it becomes im2col + the packed GEMM kernel."""
    import torch

    if x.dim() != 3 or weight.dim() != 3 or not isinstance(groups, int):
        return NotImplemented
    out = torch.ops.aten.convolution.default(
        x.unsqueeze(2), weight.unsqueeze(2), bias, [1, *stride], [0, *padding],
        [1, *dilation], transposed, [0, *output_padding], groups)
    return out.squeeze(2)


def _var_mean(x: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False
              ) -> Any:
    """`var_mean` of a 16/32-bit float tensor (BatchNorm's training statistics) in two
    passes over `x` and no buffer: the mean from a float64 sum, then the float64 sum of the
    squared deviations from it (each accumulated in float64 inside its reduction).
    torch-mlir's lowering copies `x` into a float64 buffer twice `x`'s size, reads it twice,
    and sums `x` once more in float32 for the mean. Deviations from the float32 mean are
    exact to float32 rounding and centred, so the variance keeps float32 accuracy whatever
    mean^2 / var (eager accumulates in double). n <= correction divides by 0: NaN for
    identical values (n = 1), as in eager."""
    import torch

    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or x.dim() == 0:
        return NotImplemented
    dims = list(range(x.dim())) if not dim else sorted({int(d) % x.dim() for d in dim})
    n = 1
    for d in dims:
        n *= int(x.shape[d])
    c = 1.0 if correction is None else float(correction)
    mean = (x.sum(dims, keepdim=True, dtype=torch.float64) / n).to(x.dtype)
    dev = x - mean
    var = ((dev * dev).sum(dims, keepdim=keepdim, dtype=torch.float64)
           / max(n - c, 0.0)).to(x.dtype)
    return var, (mean if keepdim else mean.squeeze(dims))


def decompositions() -> dict[Any, Any]:
    """torch-mlir's decomposition table plus accel's fixes for ops it lowers unlike eager."""
    import torch

    aten = torch.ops.aten
    table = torch_decompositions()
    table[aten.gelu.default] = _gelu_tanh
    table[aten.reciprocal.default] = _reciprocal
    table[aten.hypot.default] = _hypot
    table[aten.copysign.Tensor] = _copysign
    table[aten.fmod.Scalar] = _fmod_scalar
    flash = aten._scaled_dot_product_flash_attention_for_cpu.default
    if flash in table:
        table[flash] = _contiguous_attention(table[flash])
    table[aten.avg_pool2d_backward.default] = _avg_pool2d_backward
    table[aten.convolution_backward.default] = _convolution_backward
    table[aten.empty_permuted.default] = _empty_permuted
    table[aten.var_mean.correction] = _var_mean
    fixes: dict[Any, Any] = {}
    # int8/uint8 ops convert-torch-to-linalg crashes or fails on.
    fixes[aten.mul.Tensor] = _first(_in_int32(aten.mul.Tensor, scalar_other=True),
                                    _complex_mul_scalar)
    fixes[aten.sub.Tensor] = _first(_in_int32(aten.sub.Tensor, scalar_other=True),
                                    _complex_add(-1))
    fixes[aten.mm.default] = _in_int32(aten.mm.default)
    fixes[aten.bmm.default] = _in_int32(aten.bmm.default)
    fixes[aten.max.default] = _in_int32(aten.max.default)
    fixes[aten.min.default] = _in_int32(aten.min.default)
    fixes[aten.div.Tensor_mode] = _first(_in_int32(aten.div.Tensor_mode, rounding="floor"),
                                         _in_int32(aten.div.Tensor_mode, rounding="trunc"),
                                         _int_floor_div)
    fixes[aten.remainder.Scalar] = _in_int32(aten.remainder.Scalar)
    # uint8 ops torch-mlir computes as signed i8 (wrong results, not crashes).
    fixes[aten.remainder.Tensor] = _in_int32(aten.remainder.Tensor, only=("uint8",))
    fixes[aten.fmod.Tensor] = _in_int32(aten.fmod.Tensor, only=("uint8",))
    fixes[aten.sort.default] = _in_int32(aten.sort.default, only=("uint8",))
    fixes[aten.topk.default] = _in_int32(aten.topk.default, only=("uint8",))
    fixes[torch.ops.prims.convert_element_type.default] = _float_to_uint8
    fixes[aten.clamp.Tensor] = _first(_clamp_uint8, _clamp)
    # Float max/min/clamp: NaN propagates as in eager.
    fixes[aten.maximum.default] = _maximum
    fixes[aten.minimum.default] = _minimum
    fixes[aten.clamp.default] = _clamp
    fixes[aten.clamp_min.default] = _clamp_min
    fixes[aten.clamp_min.Tensor] = _clamp_min
    fixes[aten.clamp_max.default] = _clamp_max
    fixes[aten.clamp_max.Tensor] = _clamp_max
    fixes[aten.hardtanh.default] = _hardtanh
    # complex ops torch-mlir lowers to ops that take no complex operands, or not at all.
    fixes[aten.add.Tensor] = _complex_add(1)
    fixes[aten.div.Tensor] = _first(_in_int32(aten.div.Tensor, only=("uint8",),
                                              cast_back=False), _complex_div)
    fixes[aten.abs.default] = _first(_uint8_abs, _complex_abs)
    fixes[aten.exp.default] = _complex_exp
    fixes[aten.angle.default] = _complex_angle
    fixes[aten._conj_physical.default] = _complex_conj_physical
    fixes[aten.conj_physical.default] = _complex_conj_physical
    fixes[aten.neg.default] = _complex_neg
    fixes[aten.sum.default] = _complex_reduction(aten.sum.default)
    fixes[aten.sum.dim_IntList] = _complex_reduction(aten.sum.dim_IntList)
    fixes[aten.mean.default] = _complex_reduction(aten.mean.default)
    fixes[aten.mean.dim] = _complex_reduction(aten.mean.dim)
    fixes[aten.convolution.default] = _conv1d_as_2d
    # Boolean masks, masked_select, unique: an upper bound and a runtime size.
    fixes.update(data_dependent_decompositions())
    for op, fix in fixes.items():
        # After torch-mlir's own entry's turn, if it has one (aten.sum.default).
        table[op] = _first(fix, table[op]) if op in table else fix
    return table
