"""E8M0 block exponents (MXFP8): byte e means 2^(e-127); comfy-kitchen decodes e = 0 as 0."""

from __future__ import annotations

import numpy as np

F32 = np.float32


def exponent_for(amax: np.ndarray, lpmax: float = 448.0) -> np.ndarray:
    """Block amax (F32) -> biased exponent ``clip(ceil(log2(max(amax/max, 2^-127))) + 127)``.

    Zero blocks get 0. Uses numpy's F32 log2 like comfy-kitchen's correctly rounded one.
    """
    s = np.maximum(amax.astype(F32) / F32(lpmax), F32(2.0**-127))
    e = np.ceil(np.log2(s)).astype(np.int32) + 127
    np.clip(e, 0, 254, out=e)
    e[amax == 0] = 0
    return e.astype(np.uint8)


def decode(e: np.ndarray) -> np.ndarray:
    """Biased exponents -> F32 scales (0 -> 0.0, 255 -> inf, as comfy-kitchen)."""
    return (e.astype(np.uint32) << 23).view(F32)


def inverse(e: np.ndarray) -> np.ndarray:
    """Exact reciprocal 2^(127-e) for e in 1..254 (multiplying by it equals dividing)."""
    return np.ldexp(F32(1), 127 - e.astype(np.int32)).astype(F32)
