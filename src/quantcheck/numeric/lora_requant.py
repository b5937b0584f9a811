"""What other runtimes write back when they merge a LoRA into a quantized layer (ComfyUI's and
Forge Neo's re-quantization is `lora_patch.requantize`).

- `sdnq_requant`: SD.Next @d11a619 (`modules/sdnq/quant_utils.py` `quantize_weight`, stochastic
  rounding off): symmetric scales recalculated as amax / max over each row (INT8, FP8) or each
  16-wide group (the FP4 of an nvfp4 layer), float32; INT8 codes round half to even (ConvRot
  layers rotated first, SDNQ's Hadamard being ComfyUI's), FP8 by the cast (round to nearest
  even), FP4 (E2M1) by `packed_float.pack_float`'s bit rounding: the float32 pattern's 4 bits
  below the kept mantissa bit decide (more than half: up; a tie or less, and every lower
  bit: down); a value under 1 after that step (subnormal E2M1) then goes to the nearest
  multiple of 0.5, half to even.
- `merge16`: a LoRA merged into a 16-bit weight (InvokeAI's direct patch in bf16: the float32
  delta cast to the weight's dtype, then added in it; sd.cpp's F16 add of a float32 diff).

Read in their code, not run ([READ] in the runtimes' evidence). Each returns the float32
weight the runtime computes with after the patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np

from .api import dequantize, quantize

F32 = np.float32
#: 16-bit merge dtypes
DTYPES = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16)}
SDNQ_FORMATS = ("int8_tensorwise", "float8_e4m3fn", "nvfp4")


def _rows_scale(x: np.ndarray, top: float) -> np.ndarray:
    amax = np.max(np.abs(x), axis=-1, keepdims=True).astype(F32)
    return (amax / F32(top)).astype(F32)


def _e2m1(y: np.ndarray) -> np.ndarray:
    """pack_float's rounding of float32 `y` (|y| <= 6) onto E2M1, as values."""
    bits = np.ascontiguousarray(y, F32).view(np.int32).copy()
    mantissa_difference = 23 - 1
    keep = 1 << mantissa_difference
    mask = -(1 << (mantissa_difference - 4)) & ~(-keep)
    up = (bits & mask) > (1 << (mantissa_difference - 1))
    bits[up] += keep
    rounded = bits.view(F32).copy()
    out = (bits & ~(keep - 1)).view(F32).copy()
    # the subnormal test reads the value after that first rounding, as pack_float does
    small = np.abs(rounded) < 1.0
    out[small] = np.copysign(np.rint(np.abs(rounded[small]) * 2.0) / 2.0, rounded[small])
    return out.astype(F32)


def sdnq_requant(w: np.ndarray, fmt: str, options: Mapping[str, Any] | None = None) -> np.ndarray:
    """SD.Next's re-quantization of float32 `w` for a layer adopted from `fmt` (dequantized)."""
    w = np.asarray(w, F32)
    if fmt == "int8_tensorwise":
        opts = {k: v for k, v in (options or {}).items() if k in ("convrot", "convrot_groupsize")}
        layer = quantize(w, fmt, per_row=True, **opts)
        return dequantize(fmt, layer.arrays(), layer.marker, shape=w.shape)
    if fmt == "float8_e4m3fn":
        s = _rows_scale(w, 448.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.clip(np.nan_to_num(w / s), -448.0, 448.0)
        q = y.astype(ml_dtypes.float8_e4m3fn).astype(F32)
        return (q * s).astype(F32)
    if fmt == "nvfp4":
        n, k = w.shape
        g = w.reshape(n, k // 16, 16)
        s = _rows_scale(g, 6.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.clip(np.nan_to_num(g / s), -6.0, 6.0).astype(F32)
        return (_e2m1(y) * s).reshape(n, k).astype(F32)
    raise ValueError(f"SD.Next adopts no {fmt} layer")


def merge16(w: np.ndarray, delta: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(the 16-bit base weight, the merged weight), float32: dtype(dtype(w) + dtype(delta))
    for "bf16" (InvokeAI), dtype(dtype(w) + delta) for "f16" (sd.cpp adds the float32 diff)."""
    t = DTYPES[dtype]
    base = np.asarray(w, F32).astype(t)
    d = np.asarray(delta, F32)
    if dtype == "bf16":
        d = d.astype(t).astype(F32)
    merged = (base.astype(F32) + d).astype(t)
    return base.astype(F32), merged.astype(F32)
