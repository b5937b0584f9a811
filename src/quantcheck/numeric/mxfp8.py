"""MXFP8: FP8 E4M3 codes with E8M0 block-32 exponents (swizzled, stored as U8).

``W = q * 2^(e-127)`` (e = 0 decodes as 0). Weight and scales are zero-padded to
[ceil_to(N,32), ceil_to(K,32)]. Blocks with ``0 < amax <= 448·2^-127`` are refused:
comfy-kitchen gives them e = 0 and divides by zero.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from quantcheck.formats.codecs import register_codec

from . import e8m0
from .errors import NumericError
from .lowp import kind_of, last_axis_reduce, round_to, row_step, to_f32
from .parallel import for_each
from .swizzle import ceil_to, swizzle, unswizzle

FP8 = np.dtype(ml_dtypes.float8_e4m3fn)


def quantize(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weight [N, K] -> (F8_E4M3 [N32, K32], U8 swizzled exponents)."""
    kind_of(w)
    if w.ndim != 2:
        raise NumericError(f"mxfp8 expects a 2-D weight, got shape {w.shape}")
    n, k = w.shape
    n32, k32 = ceil_to(n, 32), ceil_to(k, 32)
    q = np.zeros((n32, k32), np.uint8)
    exps = np.zeros((n32, k32 // 32), np.uint8)
    problems: list[str] = []

    def work(rows: slice) -> None:
        x = to_f32(w[rows], copy=True)
        if k32 != k:
            x = np.pad(x, ((0, 0), (0, k32 - k)))
        blocks = x.reshape(x.shape[0], k32 // 32, 32)
        amax = last_axis_reduce(np.abs(blocks))[:, :, 0]
        if not np.isfinite(amax).all():
            problems.append("mxfp8: weight contains NaN/Inf; comfy-kitchen would store NaN")
            return
        e = e8m0.exponent_for(amax)
        tiny = (e == 0) & (amax > 0)
        if tiny.any():
            r, c = np.argwhere(tiny)[0]
            problems.append(
                f"mxfp8: {int(tiny.sum())} block(s) have 0 < amax <= 448*2^-127 (first: row "
                f"{rows.start + r}, block {c}, amax {float(amax[r, c]):.3g}); comfy-kitchen "
                "would write NaN codes"
            )
            return
        blocks *= e8m0.inverse(np.where(e == 0, 127, e))[:, :, None]
        blocks[e == 0] = 0  # zero blocks store +0 codes even for -0.0 inputs
        np.clip(blocks, -448, 448, out=blocks)
        q[rows] = x.astype(FP8).view(np.uint8)
        exps[rows] = e

    for_each(work, n, row_step(k32))
    if problems:
        raise NumericError(sorted(problems, key=lambda m: "NaN/Inf" not in m)[0])
    return q.view(FP8), swizzle(exps)


def dequantize(q: np.ndarray, scales: np.ndarray, out_dtype: str = "float32") -> np.ndarray:
    """Padded [N32, K32] weight from fp8 codes and swizzled E8M0 bytes."""
    n32, k32 = q.shape
    if k32 % 32:
        raise NumericError(f"mxfp8 weight has {k32} columns, not a multiple of 32")
    e = unswizzle(scales.view(np.uint8), n32, k32 // 32)
    scale = e8m0.decode(e)[:, :, None]
    table = np.arange(256, dtype=np.uint8).view(FP8).astype(np.float32)
    codes = q.view(np.uint8)
    out = np.empty((n32, k32), np.float32)

    def work(rows: slice) -> None:
        v = np.take(table, codes[rows], mode="clip").reshape(-1, k32 // 32, 32)
        np.multiply(v, scale[rows], out=v)
        out[rows] = v.reshape(-1, k32)

    for_each(work, n32, row_step(k32))
    if out_dtype == "float32":
        return out
    return round_to(out, {"bfloat16": "bf16", "float16": "f16"}[out_dtype])


def _quantize_layer(w: np.ndarray, fmt: str, o: dict[str, Any]) -> dict[str, np.ndarray]:
    q, e = quantize(w)
    return {"weight": q, "weight_scale": e}


def _dequantize_layer(
    t: dict[str, np.ndarray], fmt: str, o: dict[str, Any], out_dtype: str
) -> np.ndarray:
    return dequantize(t["weight"].view(FP8), t["weight_scale"], out_dtype)


register_codec("mxfp8", quantize=_quantize_layer, dequantize=_dequantize_layer)
