"""The codec module of a format added by a test: INT8 codes with one F32 scale per row."""

from __future__ import annotations

import numpy as np

from quantcheck.formats.codecs import register_codec

NAME = "int8_rowwise_test"


def quantize(w: np.ndarray, fmt: str, o: dict) -> dict[str, np.ndarray]:
    x = np.asarray(w, np.float32)
    s = np.maximum(np.abs(x).max(axis=1), np.float32(1e-30)) / np.float32(127)
    q = np.clip(np.rint(x / s[:, None]), -127, 127).astype(np.int8)
    return {"weight": q, "weight_scale": s.astype(np.float32)}


def dequantize(t: dict[str, np.ndarray], fmt: str, o: dict, out_dtype: str) -> np.ndarray:
    return t["weight"].view(np.int8).astype(np.float32) * t["weight_scale"][:, None]


register_codec(NAME, quantize=quantize, dequantize=dequantize)
