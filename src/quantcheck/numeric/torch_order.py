"""numpy emulations of torch CPU details the W4A8 quantizer depends on (spec §6.5)."""

from __future__ import annotations

import numpy as np

F32 = np.float32


def torch_sum_last(a: np.ndarray) -> np.ndarray:
    """torch's F32 ``.sum(-1)`` over a contiguous last dim (4, 8, 16, ... < 512), same order.

    Eight-lane partial sums in four accumulators (a lane that never receives a vector stays
    +0.0 and is added as a scalar 0), combined ``((P0 + P1) + P2) + P3``, then the eight lanes
    in order. Accumulates in place: temporaries are the accumulators only."""
    a = np.asarray(a, dtype=F32)
    g = a.shape[-1]
    r = np.zeros(a.shape[:-1], F32)
    if g < 8:
        for i in range(g):
            np.add(r, a[..., i], out=r)
        return r
    nv = g // 8
    if g % 8:
        raise ValueError(f"torch_sum_last: unsupported length {g}")
    n4 = nv // 4 * 4
    parts: list[np.ndarray | None] = [None] * 4

    def acc(j: int, i: int) -> None:
        v = a[..., 8 * i : 8 * i + 8]
        p = parts[j]
        if p is None:
            parts[j] = np.add(v, F32(0))  # +0.0 + v, as torch's zero-initialised accumulator
        else:
            np.add(p, v, out=p)

    for i in range(n4):
        acc(i % 4, i)
    for i in range(n4, nv):
        acc(0, i)
    lanes = parts[0]
    assert lanes is not None
    for p in parts[1:]:
        np.add(lanes, F32(0) if p is None else p, out=lanes)
    for j in range(8):
        np.add(r, lanes[..., j], out=r)
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
