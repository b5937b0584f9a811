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


def assert_close_codes(fmt: str, ours: dict, theirs: dict, k: int) -> dict:
    """The rotated-format criteria: >= 99.99% identical codes, the rest within one level;
    scales within 1 bf16 ulp (int8, w4a4), 1 fp8 step (s_rel) or 1e-5 relative (s_channel)."""
    a, b = codes_of(fmt, ours, k), codes_of(fmt, theirs, k)
    assert a.shape == b.shape
    diff = np.abs(a - b)
    n_bad = int(np.count_nonzero(diff))
    assert n_bad <= 1e-4 * a.size, f"{n_bad} of {a.size} codes differ"
    assert diff.max(initial=0) <= 1
    stats = {"codes": n_bad}
    for key in ours:
        if key == "weight":
            continue
        x, y = ours[key], theirs[key]
        assert x.shape == y.shape and x.dtype == y.dtype, key
        stats[key] = mismatches(x, y)
        if key == "weight_s_rel" and x.dtype.itemsize == 1:
            assert np.abs(raw(x).astype(int) - raw(y).astype(int)).max(initial=0) <= 1
        elif key in ("weight_s_channel", "weight_codebook", "weight_correction") or (
            key == "weight_s_rel"
        ):
            xf, yf = x.astype(np.float32), y.astype(np.float32)
            np.testing.assert_allclose(xf, yf, rtol=1e-5, atol=0)
        else:  # int8 / w4a4 scales: bf16-valued for bf16 input
            xf, yf = x.astype(np.float32), y.astype(np.float32)
            np.testing.assert_allclose(xf, yf, rtol=2.0**-7, atol=0)
    return stats
