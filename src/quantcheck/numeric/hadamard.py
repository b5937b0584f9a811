"""ConvRot Hadamard matrices and the per-group rotation ``W[:, grp] @ H^T``.

Entries of H_g are ±2^-j, so every product is exact and only the summation order matters:
- F32 (quantize of F32 weights, every F32 dequantize): k summed in order 0..g-1 in F32;
- BF16/F16 (quantize of BF16/F16 weights): torch's default CPU BF16 kernel sums k in the
  pair order 1, 0, 3, 2, ... in one F32 accumulator and rounds once (spec §6.2).
numpy's OpenBLAS sgemm accumulates k sequentially for these sizes; :func:`sgemm_is_sequential`
checks this once per process and an explicit loop takes over if it does not hold.
"""

from __future__ import annotations

import functools

import numpy as np

from .errors import NumericError
from .lowp import round_to


def check_group(g: int) -> int:
    """Validate a ConvRot group size: a power of 4, at least 4."""
    g = int(g)
    if g < 4 or g & (g - 1) or (g.bit_length() - 1) % 2:
        raise NumericError(f"convrot_groupsize must be a power of 4 (16, 64, 256), got {g}")
    return g


@functools.cache
def hadamard(g: int) -> np.ndarray:
    """The normalized regular Hadamard matrix H_g (F32, symmetric, H·H = I)."""
    check_group(g)
    h4 = np.array([[1, 1, 1, -1], [1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, 1, 1]], np.float32)
    h = h4
    while h.shape[0] < g:
        h = np.kron(h, h4)
    return (h / np.float32(np.sqrt(g))).astype(np.float32)


@functools.cache
def _pair_perm(g: int) -> np.ndarray:
    return np.arange(g).reshape(-1, 2)[:, ::-1].ravel()


def _loop_rotate(x: np.ndarray, ht: np.ndarray, order: np.ndarray) -> np.ndarray:
    acc = np.zeros_like(x)
    for k in order:
        acc += x[:, k : k + 1] * ht[k]
    return acc


@functools.cache
def sgemm_is_sequential() -> bool:
    """Whether numpy's F32 matmul sums k = 0, 1, 2, ... for [M, g] @ [g, g] (g <= 256)."""
    rng = np.random.default_rng(12345)
    for g in (16, 64, 256):
        x = (rng.standard_normal((96, g)) * np.exp(3 * rng.standard_normal((96, g))))
        x = x.astype(np.float32)
        ht = hadamard(g).T.copy()
        if not np.array_equal(x @ ht, _loop_rotate(x, ht, np.arange(g))):
            return False
    return True


def _widen_permuted(w: np.ndarray, g: int, kind: str) -> np.ndarray:
    """F32 copy of rows of ``w`` [n, K] with each column pair swapped (pair order 1, 0, ...)."""
    n, k = w.shape
    if kind == "bf16":
        # a little-endian uint32 word holds (element 2j) | (element 2j+1) << 16
        words = np.ascontiguousarray(w).view(np.uint16).view(np.uint32)
        out = np.empty((n, k // 2, 2), np.uint32)
        np.bitwise_and(words, 0xFFFF0000, out=out[..., 0])
        np.left_shift(words, 16, out=out[..., 1])
        return out.view(np.float32).reshape(-1, g)
    x = w.astype(np.float32).reshape(n, k // 2, 2)[..., ::-1]
    return np.ascontiguousarray(x).reshape(-1, g)


def _rotate_block(x: np.ndarray, g: int, kind: str) -> np.ndarray:
    n, k = x.shape
    ht = hadamard(g).T
    if kind == "f32":
        flat = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, g)
        out = flat @ ht if sgemm_is_sequential() else _loop_rotate(flat, ht, np.arange(g))
        return out.reshape(n, k)
    order = _pair_perm(g)
    if x.dtype == np.float32:  # F32 container holding BF16/F16 values
        flat = np.ascontiguousarray(x.reshape(n, k // 2, 2)[..., ::-1]).reshape(-1, g)
    else:
        flat = _widen_permuted(x, g, kind)
    out = flat @ ht[order] if sgemm_is_sequential() else _loop_rotate(flat, ht[order], np.arange(g))
    round_to(out, kind, out=out)
    return out.reshape(n, k)


def rotate(x: np.ndarray, g: int, kind: str = "f32", block: int = 1 << 20) -> np.ndarray:
    """Per-group ``x[:, grp] @ H_g^T`` of an [N, K] array; ``kind`` picks order and rounding.

    ``x`` is F32 (or the BF16/F16 input itself). For ``kind`` "bf16"/"f16" its values must be
    representable in that dtype; the result is rounded to it (and returned as F32). Large
    inputs are rotated in row blocks of about ``block`` elements (BLAS threads inside).
    """
    n, k = x.shape
    if k % g:
        raise NumericError(f"K={k} is not divisible by convrot_groupsize {g}")
    rows = max(1, block // max(k, 1))
    if n <= rows:
        return _rotate_block(x, g, kind)
    out = np.empty((n, k), np.float32)
    for r in range(0, n, rows):
        out[r : r + rows] = _rotate_block(x[r : r + rows], g, kind)
    return out
