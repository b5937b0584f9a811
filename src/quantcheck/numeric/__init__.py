"""Numeric codecs for ComfyUI quantized weights (numpy + ml_dtypes; never torch).

Public API: :func:`quantize`, :func:`dequantize`, :class:`QuantizedLayer`, :class:`NumericError`,
and the modules :mod:`.arrays` (safetensors bytes <-> arrays) and :mod:`.metrics`.

Numeric contract (README "Numeric contract"; tested in tests/numeric):

1. Our output is the same on every CPU and at every thread count. Every sum and rotation runs
   in an order this package fixes (:func:`.hadamard.fwht`; pairwise halving sums in
   :func:`.lowp.last_axis_reduce`); the codecs use only IEEE + - * / sqrt, comparisons,
   max/min/abs, rint, frexp/ldexp and bit operations -- no BLAS, no numpy transcendental
   ufunc, no numpy float sum. Row chunks never share a reduction. SHA-256 digests of quantize
   and dequantize output are committed (tests/numeric/golden_digests.json).
2. Against comfy-kitchen 0.2.40's CPU eager backend: bit-exact where the computation is
   elementwise (fp8, int8 scalar/row-wise, nvfp4, mxfp8 quantize; their dequantize and awq;
   the W4A8 int8 grid). Where comfy-kitchen sums (the Hadamard rotation of int8 ConvRot,
   convrot_w4a4 and asym_w4a8_int8, both ways), each of its rotated values lies within
   ``B = 2·γ_g·Σ_k|x_k|·2^-j`` of ours (γ_n = n·u/(1 - n·u), u = 2^-24) before rounding to
   the storage/output dtype, for any summation order; scales, codes and W4A8 corrections lie in
   the interval that this gives through their formulas, so a code differs only where that
   interval straddles a rounding boundary. W4A8 codebook / 6-bit group scales are fits
   (ALS, k-means): their codes follow the rule above given comfy-kitchen's stored scales, and
   the scales agree within stated tolerances, not a bound.

Refusals (:class:`NumericError`, a ``ValueError``) instead of the NaN / garbage comfy-kitchen
would store -- nothing is ever silently written:
- NaN or ±Inf anywhere in the weight (every format);
- float8: all-zero or tiny tensors, where ``1/scale`` is 0 or not finite in the input dtype
  (this includes float16 weights quantized to e5m2 with amax < 57344/65504 ≈ 0.875: ck then
  saturates every code to ±57344);
- nvfp4: a global scale of 0 (all-zero tensor);
- mxfp8: blocks with ``0 < amax <= 448·2^-127`` (E8M0 exponent 0, ck divides by zero).
All-zero tensors are accepted where comfy-kitchen writes finite values: int8 (scale 1e-30),
mxfp8 (exponent 0), convrot_w4a4 and W4A8. The input array is never modified.

Speed: work runs in row chunks on a small thread pool (``QUANTCHECK_THREADS``, default the
CPU count); rotations are O(g log g) butterflies per group of g.
``NumericError`` is importable without numpy; the rest loads numpy on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import NumericError

if TYPE_CHECKING:
    from .api import CODEC_FORMATS, QuantizedLayer, dequantize, quantize

__all__ = ["CODEC_FORMATS", "NumericError", "QuantizedLayer", "dequantize", "quantize"]


def __getattr__(name: str) -> Any:
    if name in ("CODEC_FORMATS", "QuantizedLayer", "dequantize", "quantize"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
