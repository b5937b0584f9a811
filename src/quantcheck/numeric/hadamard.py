"""ConvRot Hadamard matrices and the per-group rotation ``W[:, grp] @ H_g^T`` as a fast
Walsh-Hadamard transform in an order this module fixes.

H_g (g = 4^j) is the j-th Kronecker power of the regular 4x4 Hadamard matrix ``H4``, scaled
by 2^-j (so H_g is symmetric and H_g·H_g = I). :func:`rotate`:

1. forms the terms ``x_k·2^-j`` in F32 (exact unless a term is subnormal; the same products
   comfy-kitchen's matmul forms);
2. applies the 4-point butterfly ``a = t0 + t1, b = t2 + t3, c = t0 - t1, d = t2 - t3;
   y = (a + d, a - d, c + b, b - c)`` along each of the j radix-4 axes of a group, most
   significant axis first, every add an F32 add (O(g log g) per group, no BLAS);
3. for ``kind`` "bf16"/"f16" rounds the F32 result once to that dtype.

The order is the code's, so the result is the same on every CPU and at every thread count.
Against any other summation order of the same terms (torch/comfy-kitchen's matmul), each
output differs by at most ``2·γ_g·Σ_k|x_k|·2^-j`` before the final rounding, with
``γ_n = n·u/(1 - n·u)``, u = 2^-24 (:func:`error_bound`).
"""

from __future__ import annotations

import functools

import numpy as np

from .errors import NumericError
from .lowp import round_to, to_f32

H4 = ((1, 1, 1, -1), (1, 1, -1, 1), (1, -1, 1, 1), (-1, 1, 1, 1))
U32 = 2.0**-24  # unit roundoff of F32


def check_group(g: int) -> int:
    """Validate a ConvRot group size: a power of 4, at least 4."""
    g = int(g)
    if g < 4 or g & (g - 1) or (g.bit_length() - 1) % 2:
        raise NumericError(f"convrot_groupsize must be a power of 4 (16, 64, 256), got {g}")
    return g


@functools.cache
def hadamard(g: int) -> np.ndarray:
    """The normalized regular Hadamard matrix H_g (F32, symmetric, H·H = I); entries ±2^-j."""
    check_group(g)
    h4 = np.array(H4, np.float32)
    h = h4
    while h.shape[0] < g:
        h = np.kron(h, h4)
    return h * np.float32(2.0 ** -((g.bit_length() - 1) // 2))


def gamma(n: int, u: float = U32) -> float:
    """``γ_n = n·u / (1 - n·u)``: the relative error bound of any n-term float sum."""
    return n * u / (1 - n * u)


def error_bound(abs_sum: np.ndarray | float, g: int) -> np.ndarray | float:
    """Largest difference between two F32 evaluations (any summation orders) of one rotated
    value whose terms have ``Σ|x_k|·2^-j = abs_sum``: ``2·γ_g·abs_sum`` plus g subnormal
    half-ulps (2^-150 each) for terms that underflow."""
    return 2 * gamma(g) * abs_sum + g * 2.0**-149


def _butterfly(src: np.ndarray, dst: np.ndarray, a: int, b: int) -> None:
    """One radix-4 stage: ``src``/``dst`` viewed as [M, a, 4, b], H4 along axis 2."""
    s = src.reshape(-1, a, 4, b)
    d = dst.reshape(-1, a, 4, b)
    t0, t1, t2, t3 = s[:, :, 0], s[:, :, 1], s[:, :, 2], s[:, :, 3]
    s01 = t0 + t1
    d23 = t2 - t3
    np.add(s01, d23, out=d[:, :, 0])
    np.subtract(s01, d23, out=d[:, :, 1])
    del s01, d23
    s23 = t2 + t3
    d01 = t0 - t1
    np.add(d01, s23, out=d[:, :, 2])
    np.subtract(s23, d01, out=d[:, :, 3])


def _stages(cur: np.ndarray, nxt: np.ndarray, shape: tuple[int, ...], axes: range) -> np.ndarray:
    """H4 along each radix-4 axis in ``axes`` of ``cur`` viewed as ``shape``; ping-pongs with
    ``nxt`` and returns the buffer holding the result."""
    for ax in axes:
        a = int(np.prod(shape[1:ax], dtype=np.int64))
        b = int(np.prod(shape[ax + 1 :], dtype=np.int64))
        _butterfly(cur, nxt, a, b)
        cur, nxt = nxt, cur
    return cur


def fwht(x: np.ndarray, g: int, out: np.ndarray | None = None) -> np.ndarray:
    """Per-group ``H_g·x`` of F32 rows [M, K] (K % g == 0) into a new F32 array, F32 adds in
    the order described in the module docstring (the terms ``x·2^-j`` formed first).

    Works on a transposed [g, M·K/g] copy so that every butterfly slice is long and
    contiguous; the layout does not change any result. ``out``: a C-contiguous F32 [M, K]
    array to write into (may be ``x`` itself)."""
    check_group(g)
    j = (g.bit_length() - 1) // 2
    m, k = x.shape
    p = m * k // g
    t = np.empty((g, p), np.float32)
    _transpose_into(t, x.reshape(p, g))
    with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN in stored data propagate
        np.multiply(t, np.float32(2.0**-j), out=t)
        res = _stages(t, np.empty_like(t), (1,) + (4,) * j + (p,), range(1, j + 1))
    if out is None:
        out = np.empty((m, k), np.float32)
    out.reshape(p, g)[...] = res.T
    return out


_TILE = 32  # rows of the [p, g] side copied per step: their g·32 floats stay in L1


def _transpose_into(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src.T`` (cast to ``dst``'s dtype) for src [p, g], in tiles of
    :data:`_TILE` rows: a plain strided copy reads ``src`` with a power-of-two stride, which
    thrashes the cache for large g."""
    p = src.shape[0]
    for r in range(0, p, _TILE):
        np.copyto(dst[:, r : r + _TILE], src[r : r + _TILE].T, casting="unsafe")


def rotate(
    x: np.ndarray, g: int, kind: str = "f32", block: int = 1 << 17, out: np.ndarray | None = None
) -> np.ndarray:
    """Per-group ``x[:, grp] @ H_g^T`` (= ``H_g·x[:, grp]``) of an [N, K] array, as F32.

    ``x`` is F32 or the BF16/F16 input itself; for ``kind`` "bf16"/"f16" the F32 result is
    rounded once to that dtype (values returned as F32). Rows are processed in blocks of about
    ``block`` elements; the result does not depend on the block size. ``out``: a C-contiguous
    F32 [N, K] array for the result (may be ``x`` itself when ``x`` is F32)."""
    n, k = x.shape
    check_group(g)
    if k % g:
        raise NumericError(f"K={k} is not divisible by convrot_groupsize {g}")
    rows = max(1, block // max(k, 1))
    if out is None:
        out = np.empty((n, k), np.float32)
    for r in range(0, n, rows):
        part = fwht(to_f32(x[r : r + rows]), g, out=out[r : r + rows])
        if kind != "f32":
            round_to(part, kind, out=part)
    return out


def abs_term_sums(x: np.ndarray, g: int) -> np.ndarray:
    """``Σ_k |x_k|·2^-j`` per row and group of an [N, K] array, broadcast to [N, K] (F64): the
    ``abs_sum`` of :func:`error_bound` for every rotated value (exact to a relative 2^-40)."""
    n, k = x.shape
    j = (g.bit_length() - 1) // 2
    a = np.abs(to_f32(x).astype(np.float64)).reshape(n, k // g, g)
    s = a[..., 0].copy()
    for i in range(1, g):
        s += a[..., i]
    return np.repeat(s * 2.0**-j, g, axis=1)
