"""E8M0 block exponents (MXFP8): byte e means 2^(e-127); comfy-kitchen decodes e = 0 as 0."""

from __future__ import annotations

import functools

import numpy as np

F32 = np.float32


_LN2 = 0.6931471805599453  # float64 nearest to ln 2


def _log2_1p(m: int) -> float:
    """log2(1 + m·2^-23) for small m by its series (float64; error far below 2^-60)."""
    f = m * 2.0**-23
    return (f - f * f / 2 + f * f * f / 3 - f**4 / 4) / _LN2


@functools.cache
def _max_fraction() -> np.ndarray:
    """For each exponent n = -150..128: the largest m with F32(log2(2^n·(1 + m·2^-23))) == n
    under round-to-nearest, i.e. ``ceil`` of the correctly rounded F32 log2 is still n.

    F32(n + δ) rounds to n while δ < half the gap from n to the next F32 above it; those gaps
    are powers of two and δ = log2(1 + f) is never within 2^-40 of one (asserted here)."""
    table = np.zeros(279, np.int64)
    for i, n in enumerate(range(-150, 129)):
        if n == 0:
            continue  # log2(1 + f) for f > 0 is itself an F32 > 0: ceil gives 1
        half_gap = float(np.nextafter(np.float32(n), np.float32(np.inf)) - np.float32(n)) / 2
        m = 0
        while _log2_1p(m + 1) < half_gap:
            m += 1
        assert half_gap - _log2_1p(m) > 2.0**-40 * half_gap and (
            _log2_1p(m + 1) - half_gap > 2.0**-40 * half_gap
        )
        table[i] = m
    return table


def exponent_for(amax: np.ndarray, lpmax: float = 448.0) -> np.ndarray:
    """Block amax (F32) -> biased exponent ``clip(ceil(log2(max(amax/max, 2^-127))) + 127)``.

    Zero blocks get 0. ``log2`` is the correctly rounded F32 log2 (what comfy-kitchen's torch
    kernel computes), evaluated exactly from ``frexp`` and a per-exponent threshold table:
    no transcendental ufunc, so the result does not depend on the CPU.
    """
    s = np.maximum(amax.astype(F32) / F32(lpmax), F32(2.0**-127))
    mant, ex = np.frexp(s)  # s = mant·2^ex, mant in [0.5, 1): exact
    n = ex.astype(np.int64) - 1
    frac = (mant.astype(np.float64) * 2 - 1) * 2.0**23  # integer m of s = 2^n·(1 + m·2^-23)
    up = frac > _max_fraction()[np.clip(n + 150, 0, 278)]
    e = (n + up + 127).astype(np.int32)
    np.clip(e, 0, 254, out=e)
    e[amax == 0] = 0
    return e.astype(np.uint8)


def decode(e: np.ndarray) -> np.ndarray:
    """Biased exponents -> F32 scales (0 -> 0.0, 255 -> inf, as comfy-kitchen)."""
    return (e.astype(np.uint32) << 23).view(F32)


def inverse(e: np.ndarray) -> np.ndarray:
    """Exact reciprocal 2^(127-e) for e in 1..254 (multiplying by it equals dividing)."""
    return np.ldexp(F32(1), 127 - e.astype(np.int32)).astype(F32)
