"""NVFP4: packed E2M1 (high nibble first), FP8 E4M3 block-16 scales swizzled, F32 global scale.

``W = e2m1(code) * (s2 * fp8(S[r, c//16]))``. Weight and scales are zero-padded to
[ceil_to(N,16), ceil_to(K,16)]. All-zero tensors are refused (comfy-kitchen writes NaN).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from quantcheck.formats.codecs import register_codec

from . import e2m1
from .errors import NumericError
from .lowp import F32, abs_max, kind_of, last_axis_reduce, round_scalar, round_to, row_step, to_f32
from .nibbles import pack_hi_first, unpack_hi_first
from .parallel import for_each
from .swizzle import ceil_to, swizzle, unswizzle

FP8 = np.dtype(ml_dtypes.float8_e4m3fn)


def quantize(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.float32]:
    """Weight [N, K] -> (U8 [N16, K16/2], F8_E4M3 swizzled scales, F32 global scale)."""
    kind = kind_of(w)
    if w.ndim != 2:
        raise NumericError(f"nvfp4 expects a 2-D weight, got shape {w.shape}")
    n, k = w.shape
    n16, k16 = ceil_to(n, 16), ceil_to(k, 16)
    amax = F32(abs_max(w))
    if not np.isfinite(amax):
        raise NumericError("nvfp4: weight contains NaN/Inf; comfy-kitchen would store NaN")
    s2 = round_scalar(amax / F32(2688), kind)
    if s2 == 0:
        raise NumericError(
            f"nvfp4: weight amax {float(amax):.3g} gives global scale 0 (all-zero tensor); "
            "comfy-kitchen would write NaN block scales"
        )
    packed = np.zeros((n16, k16 // 2), np.uint8)
    bs = np.zeros((n16, k16 // 16), np.uint8)

    def work(rows: slice) -> None:
        x = to_f32(w[rows], copy=True)
        if k16 != k:
            x = np.pad(x, ((0, 0), (0, k16 - k)))
        blocks = x.reshape(x.shape[0], k16 // 16, 16)
        amax_blk = last_axis_reduce(np.abs(blocks))[:, :, 0]
        b8 = np.minimum((amax_blk / F32(6)) / s2, F32(448)).astype(FP8)
        tot = s2 * b8.astype(np.float32)
        zero = tot == 0
        tot[zero] = 1
        blocks /= tot[:, :, None]
        blocks[zero] = 0
        np.clip(blocks, -6, 6, out=blocks)
        packed[rows] = pack_hi_first(e2m1.encode(x))
        bs[rows] = b8.view(np.uint8)

    for_each(work, n, row_step(k16, 16))
    return packed, swizzle(bs).view(FP8), s2


def dequantize(
    packed: np.ndarray, scales: np.ndarray, s2: np.ndarray | float, out_dtype: str = "float32"
) -> np.ndarray:
    """Padded [N16, K16] weight from U8 codes, swizzled fp8 scales and the global scale."""
    n16, kb = packed.shape
    k16 = kb * 2
    if k16 % 16:
        raise NumericError(f"nvfp4 weight row of {kb} bytes is not a whole number of blocks")
    s2a = np.asarray(s2, dtype=np.float32).reshape(-1)
    if s2a.size != 1:
        raise NumericError(f"nvfp4 weight_scale_2 must hold one value, got {np.shape(s2)}")
    bs = unswizzle(scales.view(np.uint8), n16, k16 // 16).view(FP8).astype(np.float32)
    if out_dtype == "float32":
        tot = s2a[0] * bs
        kind = "f32"
    else:
        kind = {"bfloat16": "bf16", "float16": "f16"}[out_dtype]
        tot = round_to(round_scalar(s2a[0], kind) * round_to(bs, kind), kind)
    out = np.empty((n16, k16), np.float32)
    codes = packed.view(np.uint8)

    pairs = e2m1.decode(unpack_hi_first(np.arange(256, dtype=np.uint8)[:, None]))  # [256, 2]

    def work(rows: slice) -> None:
        v = np.take(pairs, codes[rows], axis=0, mode="clip").reshape(-1, k16 // 16, 16)
        np.multiply(v, tot[rows][:, :, None], out=v)
        out[rows] = round_to(v, kind).reshape(-1, k16)

    for_each(work, n16, row_step(k16))
    return out


def _quantize_layer(w: np.ndarray, fmt: str, o: dict[str, Any]) -> dict[str, np.ndarray]:
    q, bs, s2 = quantize(w)
    return {
        "weight": q,
        "weight_scale": bs,
        "weight_scale_2": np.asarray(s2, np.float32).reshape(()),
    }


def _dequantize_layer(
    t: dict[str, np.ndarray], fmt: str, o: dict[str, Any], out_dtype: str
) -> np.ndarray:
    return dequantize(t["weight"], t["weight_scale"], t["weight_scale_2"], out_dtype)


register_codec("nvfp4", quantize=_quantize_layer, dequantize=_dequantize_layer)
