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
import threading

import numpy as np

from .errors import NumericError
from .lowp import BF16, round_to, to_f32

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


def _butterfly(t: np.ndarray, e: np.ndarray, a: int) -> None:
    """One radix-4 stage in place on ``t`` [g, p] (rows may be padded): the group index
    viewed as [a, 4, g/(4a)], H4 along the 4; ``e`` is scratch of the same shape.

    Each output keeps today's two F32 adds with the same operands in the same order
    (``s01 = t0 + t1, d01 = t0 - t1, s23 = t2 + t3, d23 = t2 - t3``; ``y0 = s01 + d23,
    y1 = s01 - d23, y2 = d01 + s23, y3 = s23 - d01``), grouped so that each half is two
    ufunc calls: ``e`` holds ``(s01, d01, d23, s23)`` along the radix axis, then
    ``(y0, y2) = e[0:2] + e[2:4]`` and ``(y1, y3) = (e0, e3) - (e2, e1)``."""
    g, p = t.shape
    v = t.reshape(a, 4, g // (4 * a), p)
    w = e.reshape(a, 4, g // (4 * a), p)
    np.add(v[:, 0::2], v[:, 1::2], out=w[:, 0::3])
    np.subtract(v[:, 0::2], v[:, 1::2], out=w[:, 1:3])
    np.add(w[:, 0:2], w[:, 2:4], out=v[:, 0::2])
    np.subtract(w[:, 0::3], w[:, 2:0:-1], out=v[:, 1::2])


_LOCAL = threading.local()
#: numpy's ufunc buffer (elements) while the butterflies run: with the default 8192, operands
#: whose contiguous runs are shorter (late stages, p < 8192) go through the iterator's
#: buffers, which halves the speed; buffering never changes a result.
_BUFSIZE = 1024
_KEEP = 1 << 19  # largest per-thread scratch kept between calls (elements; 2 MiB each)
_PAD = 16  # floats added to a scratch row whose stride is a multiple of 1 KiB (L1 sets thrash)


def _scratch(g: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Two F32 [g, p] scratch arrays, reused per thread while they hold at most :data:`_KEEP`
    elements; rows are padded by :data:`_PAD` when ``p`` is a multiple of 256."""
    stride = p + (_PAD if p % 256 == 0 else 0)
    size = g * stride
    kept: tuple[np.ndarray, np.ndarray] | None = getattr(_LOCAL, "bufs", None)
    if kept is not None and kept[0].size >= size:
        flat = kept
    else:
        flat = (np.empty(size, np.float32), np.empty(size, np.float32))
        if size <= _KEEP:
            _LOCAL.bufs = flat
    t, e = (f[:size].reshape(g, stride)[:, :p] for f in flat)
    return t, e


def block_rows(k: int, block: int = 1 << 18) -> int:
    """Rows per rotation block of about ``block`` elements for rows of length ``k``: odd
    when more than one, so that the [g, p] scratch rows rarely have a power-of-two stride."""
    rows = max(1, block // max(k, 1))
    return rows - 1 if rows > 1 and rows % 2 == 0 else rows


def fwht(x: np.ndarray, g: int, out: np.ndarray | None = None, kind: str = "f32") -> np.ndarray:
    """Per-group ``H_g·x`` of rows [M, K] (K % g == 0; F32, BF16 or F16) into F32, F32 adds
    in the order described in the module docstring (the terms ``x·2^-j`` formed first); for
    ``kind`` "bf16"/"f16" the result is rounded once to that dtype.

    Works on a transposed [g, M·K/g] scratch copy so that every butterfly slice is long and
    contiguous; the layout does not change any result. ``out``: a C-contiguous F32 [M, K]
    array to write into (may be ``x`` itself when ``x`` is F32)."""
    check_group(g)
    j = (g.bit_length() - 1) // 2
    m, k = x.shape
    p = m * k // g
    t, e = _scratch(g, p)
    scale = np.float32(2.0**-j)
    with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN in stored data propagate
        if x.dtype == BF16:  # BF16 -> F32 is a 16-bit shift of the pattern
            bits = x.view(np.uint16).reshape(p, g)
            np.left_shift(bits.T, 16, out=t.view(np.uint32), dtype=np.uint32)
        else:
            np.copyto(t, x.reshape(p, g).T, casting="unsafe")
        np.multiply(t, scale, out=t)  # the terms x·2^-j
        size = np.setbufsize(_BUFSIZE)
        try:
            for ax in range(1, j + 1):
                _butterfly(t, e, 4 ** (ax - 1))
        finally:
            np.setbufsize(size)
    if kind != "f32":
        round_to(t, kind, out=t)
    if out is None:
        out = np.empty((m, k), np.float32)
    out.reshape(p, g)[...] = t.T
    return out


def rotate(
    x: np.ndarray, g: int, kind: str = "f32", block: int = 1 << 18, out: np.ndarray | None = None
) -> np.ndarray:
    """Per-group ``x[:, grp] @ H_g^T`` (= ``H_g·x[:, grp]``) of an [N, K] array, as F32.

    ``x`` is F32 or the BF16/F16 input itself; for ``kind`` "bf16"/"f16" the F32 result is
    rounded once to that dtype (values returned as F32). Rows are processed in blocks of about
    ``block`` elements (:func:`block_rows`; the default, 2^18, measured fastest on Zen 4:
    smaller blocks pay numpy's per-call cost more often); the result does not depend on the
    block size. ``out``: a C-contiguous F32 [N, K] array for the result (may be ``x``
    itself when ``x`` is F32)."""
    n, k = x.shape
    check_group(g)
    if k % g:
        raise NumericError(f"K={k} is not divisible by convrot_groupsize {g}")
    rows = block_rows(k, block)
    if out is None:
        out = np.empty((n, k), np.float32)
    for r in range(0, n, rows):
        fwht(x[r : r + rows], g, out=out[r : r + rows], kind=kind)
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
