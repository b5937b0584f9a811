"""Comparison helpers shared by the numeric tests (no torch needed)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from quantcheck.numeric import nibbles

BF16 = ml_dtypes.bfloat16


def weights(n: int, k: int, dtype, seed: int, kind: str = "gauss") -> np.ndarray:
    """Random test weights: Gaussian, column-scaled, or with sparse outliers."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, k)) * 0.02
    if kind == "colscale":
        w *= np.exp(rng.standard_normal(k))[None, :]
    elif kind == "outliers":
        mask = rng.random((n, k)) < 0.002
        w[mask] *= 40
    return w.astype(dtype)


def raw(a: np.ndarray) -> np.ndarray:
    """Bytes of 1-byte arrays as uint8 (so NaN codes compare), other arrays unchanged."""
    return a.view(np.uint8) if a.dtype.itemsize == 1 else a


def mismatches(a: np.ndarray, b: np.ndarray) -> int:
    """Number of differing elements (by bits for 1-byte dtypes); shapes/dtypes must agree."""
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    return int(np.count_nonzero(raw(a) != raw(b)))


def codes_of(fmt: str, tensors: dict, k: int) -> np.ndarray:
    """Integer level indices of a rotated format's packed weight."""
    w = tensors["weight"]
    if fmt == "int8_tensorwise":
        return w.astype(np.int32)
    if fmt == "convrot_w4a4":
        return nibbles.unpack_signed_lo_first(w).astype(np.int32)
    if w.shape[1] * 8 == k * 6:
        return nibbles.unpack6(w, k).astype(np.int32)
    return nibbles.unpack_lo_first(w).astype(np.int32)
