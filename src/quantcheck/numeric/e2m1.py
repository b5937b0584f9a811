"""FP4 E2M1 codes: sign bit 3, values 0, .5, 1, 1.5, 2, 3, 4, 6 (codes 8-15 negative)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

VALUES = np.array(
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
    np.float32,
)


def encode(x: np.ndarray) -> np.ndarray:
    """F32 values in [-6, 6] -> uint8 codes, round to nearest, ties to even code (-0 -> 8)."""
    return x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF


def decode(codes: np.ndarray) -> np.ndarray:
    """uint8 codes -> F32 values."""
    return VALUES[codes]
