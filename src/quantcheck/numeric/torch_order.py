"""numpy emulations of torch CPU semantics the W4A8 quantizer depends on (spec §6.5).

Only deterministic, elementwise definitions live here (linspace with one rounding, the legacy
generator's randint stream, linear quantile); no kernel summation order is imitated."""

from __future__ import annotations

import numpy as np

F32 = np.float32


def linspace_f32(start: float, end: float, steps: int) -> np.ndarray:
    """torch.linspace in F32: ``start + step*i`` for the first half, ``end - step*(n-1-i)`` for
    the rest, each a fused multiply-add (one rounding), as torch's compiled CPU kernel does."""
    if steps == 1:
        return np.array([start], F32)
    a, b = F32(start), F32(end)
    step = np.float64((b - a) / F32(steps - 1))
    i = np.arange(steps, dtype=np.float64)
    lo = np.float64(a) + step * i  # exact in float64 for these magnitudes, rounded once below
    hi = np.float64(b) - step * (steps - 1 - i)
    return np.where(i < steps // 2, lo, hi).astype(F32)


def torch_randint(n: int, size: int, seed: int = 0, dtype: type = np.int64) -> np.ndarray:
    """``torch.randint(0, n, (size,), generator=manual_seed(seed))`` on CPU, for n < 2**32.

    Drawn in blocks (the legacy generator takes one 32-bit output per value, so blocks give the
    same stream) straight into ``dtype`` (int32 is enough for n <= 2**31)."""
    out: np.ndarray = np.empty(size, dtype)
    rs = np.random.RandomState(seed)
    step = 1 << 16
    for r in range(0, size, step):
        raw = rs.randint(0, 2**32, min(step, size - r), dtype=np.uint64)
        np.remainder(raw, np.uint64(n), out=raw)
        out[r : r + raw.size] = raw
    return out


def torch_quantile(sorted_x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """torch.quantile (linear) of an already sorted F32 vector at F32 probabilities ``q``."""
    n = sorted_x.shape[0]
    rank = q.astype(F32) * F32(n - 1)
    lo = np.floor(rank).astype(np.int64)
    hi = np.ceil(rank).astype(np.int64)
    w = rank - lo.astype(F32)
    a, b = sorted_x[lo], sorted_x[hi]
    return np.where(w < F32(0.5), a + w * (b - a), b - (b - a) * (F32(1) - w)).astype(F32)
