"""numpy emulations of torch CPU details the W4A8 quantizer depends on (spec §6.5)."""

from __future__ import annotations

import numpy as np

F32 = np.float32


def torch_sum_last(a: np.ndarray) -> np.ndarray:
    """torch's F32 ``.sum(-1)`` over a contiguous last dim (4, 8, 16, ... < 512), same order."""
    a = np.asarray(a, dtype=F32)
    g = a.shape[-1]
    if g < 8:
        r = np.zeros(a.shape[:-1], F32)
        for i in range(g):
            r = r + a[..., i]
        return r
    nv = g // 8
    if g % 8:
        raise ValueError(f"torch_sum_last: unsupported length {g}")
    n4 = nv // 4 * 4
    parts = [np.zeros((*a.shape[:-1], 8), F32) for _ in range(4)]
    for i in range(n4):
        parts[i % 4] = parts[i % 4] + a[..., 8 * i : 8 * i + 8]
    for i in range(n4, nv):
        parts[0] = parts[0] + a[..., 8 * i : 8 * i + 8]
    lanes = ((parts[0] + parts[1]) + parts[2]) + parts[3]
    r = np.zeros(a.shape[:-1], F32)
    for j in range(8):
        r = r + lanes[..., j]
    return r


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


def torch_randint(n: int, size: int, seed: int = 0) -> np.ndarray:
    """``torch.randint(0, n, (size,), generator=manual_seed(seed))`` on CPU, for n < 2**32."""
    raw = np.random.RandomState(seed).randint(0, 2**32, size, dtype=np.uint64)
    return (raw % np.uint64(n)).astype(np.int64)


def torch_quantile(sorted_x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """torch.quantile (linear) of an already sorted F32 vector at F32 probabilities ``q``."""
    n = sorted_x.shape[0]
    rank = q.astype(F32) * F32(n - 1)
    lo = np.floor(rank).astype(np.int64)
    hi = np.ceil(rank).astype(np.int64)
    w = rank - lo.astype(F32)
    a, b = sorted_x[lo], sorted_x[hi]
    return np.where(w < F32(0.5), a + w * (b - a), b - (b - a) * (F32(1) - w)).astype(F32)
