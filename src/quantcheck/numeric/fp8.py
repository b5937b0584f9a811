"""float8_e4m3fn / float8_e5m2 with one F32 tensor scale (``W = q * weight_scale``).

Quantize follows comfy-kitchen in the input dtype: ``s = dtype(amax / max)``,
``q = fp8(clamp(x * dtype(1/s), ±max))``. All-zero or tiny-amax tensors (``1/s`` not finite)
are refused: comfy-kitchen writes NaN codes for them.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from quantcheck.formats.codecs import register_codec

from .errors import NumericError
from .lowp import (
    F32,
    abs_max,
    all_patterns,
    bits16,
    kind_of,
    lut_map,
    round_scalar,
    round_to,
    row_step,
)

#: The FP8 formats: numpy dtype, largest finite value, safetensors dtype.
FP8_DTYPES = {
    "float8_e4m3fn": (np.dtype(ml_dtypes.float8_e4m3fn), 448.0, "F8_E4M3"),
    "float8_e5m2": (np.dtype(ml_dtypes.float8_e5m2), 57344.0, "F8_E5M2"),
}


def quantize(w: np.ndarray, fmt: str = "float8_e4m3fn") -> tuple[np.ndarray, np.float32]:
    """Weight (F32/F16/BF16) -> (fp8 codes, F32 scale)."""
    dt, lpmax, _ = FP8_DTYPES[fmt]
    kind = kind_of(w)
    amax = F32(abs_max(w)) if w.size else F32(0)
    if not np.isfinite(amax):
        raise NumericError(f"{fmt}: weight contains NaN/Inf; comfy-kitchen would store NaN")
    s = round_scalar(amax / F32(lpmax), kind)
    with np.errstate(divide="ignore", over="ignore"):
        inv = round_scalar(F32(1) / s, kind)
    if s == 0 or not np.isfinite(inv):
        raise NumericError(
            f"{fmt}: weight amax {float(amax):.3g} gives scale {float(s):.3g} whose inverse is "
            "not finite (all-zero or tiny tensor); comfy-kitchen would write NaN codes"
        )

    def codes(x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            y = x * inv
            round_to(y, kind, out=y)
            np.clip(y, -lpmax, lpmax, out=y)
            return y.astype(dt).view(np.uint8)

    u = bits16(w)
    if u is not None:  # every BF16/F16 pattern maps to one code: a 64K-entry table
        return lut_map(codes(all_patterns(kind)), u).view(dt), F32(s)
    out = np.empty(w.shape, np.uint8)
    step = row_step(w.shape[-1]) if w.ndim == 2 else max(1, w.shape[0])
    for r in range(0, w.shape[0], step):
        out[r : r + step] = codes(w[r : r + step].astype(np.float32))
    return out.view(dt), F32(s)


def dequantize(q: np.ndarray, scale: np.ndarray | float, out_dtype: str = "float32") -> np.ndarray:
    """fp8 codes * scale; for BF16/F16 output both factors are cast first (ck eager order)."""
    s = np.asarray(scale, dtype=np.float32).reshape(-1)
    if s.size != 1:
        raise NumericError(f"fp8 weight_scale must hold one value, got shape {np.shape(scale)}")
    if out_dtype == "float32":  # 256-entry table of code * scale, exactly the F32 product
        table = np.arange(256, dtype=np.uint8).view(q.dtype).astype(np.float32) * s[0]
        return lut_map(table, q.view(np.uint8)) if q.ndim == 2 else table[q.view(np.uint8)]
    kind = {"bfloat16": "bf16", "float16": "f16"}[out_dtype]
    return round_to(round_to(q.astype(np.float32), kind) * round_scalar(s[0], kind), kind)


def _quantize_layer(w: np.ndarray, fmt: str, o: dict[str, Any]) -> dict[str, np.ndarray]:
    q, s = quantize(w, fmt)
    return {"weight": q, "weight_scale": np.asarray(s, np.float32).reshape(())}


def _dequantize_layer(
    t: dict[str, np.ndarray], fmt: str, o: dict[str, Any], out_dtype: str
) -> np.ndarray:
    return dequantize(t["weight"].view(FP8_DTYPES[fmt][0]), t["weight_scale"], out_dtype)


for _fmt in FP8_DTYPES:
    register_codec(_fmt, quantize=_quantize_layer, dequantize=_dequantize_layer)
