"""Numeric codecs for ComfyUI quantized weights (numpy + ml_dtypes; never torch).

Public API: :func:`quantize`, :func:`dequantize`, :class:`QuantizedLayer`, :class:`NumericError`,
and the modules :mod:`.arrays` (safetensors bytes <-> arrays) and :mod:`.metrics`.

Exactness target: comfy-kitchen 0.2.40's CPU eager backend (spec §6). Dequantize (F32) is
bit-exact for every format; int8 ConvRot and W4A8 depend on the F32 Hadamard sum order, which
follows torch's sequential order via numpy's sgemm (checked at first use). Quantize is
byte-identical for fp8, int8 scalar/row-wise, nvfp4 and mxfp8, and the rotated formats use the
rotation order of torch's AVX-512 BF16 kernel; on CPUs whose BF16 matmul differs (e.g. AMX) a
rotated element can differ by one BF16 ulp, rarely enough to move a code. W4A8 fitted
codebooks (g >= 128 or heavy-tailed weights) use float64 cluster sums: the table and
``s_channel`` can differ from torch by ~1 F32 ulp.

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
CPU count); see :mod:`.parallel` for how BLAS threads are kept from oversubscribing.
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
