"""Per-layer error metrics between a reference and a reconstructed float array.

All sums run in float64. A zero reference is handled explicitly: relative L2 and SNR are
``0`` / ``inf`` when the reconstruction is also zero, else ``inf`` / ``-inf``; cosine
similarity is 1.0 when both are zero and 0.0 when exactly one is.
For streaming, feed row chunks to :class:`ErrorAccumulator` and read :meth:`result`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ErrorMetrics:
    """max |a-b|, ||a-b||/||a||, cos(a, b), 10·log10(||a||²/||a-b||²) and the element count."""

    max_abs: float
    rel_l2: float
    cosine: float
    snr_db: float
    count: int


class ErrorAccumulator:
    """Accumulates the sums behind :class:`ErrorMetrics` over chunks of a layer."""

    def __init__(self) -> None:
        self.max_abs = 0.0
        self.ref_sq = 0.0
        self.test_sq = 0.0
        self.dot = 0.0
        self.err_sq = 0.0
        self.count = 0
        self.nonfinite = False

    def update(self, reference: np.ndarray, test: np.ndarray) -> None:
        """Add one chunk (same shape in both arrays; any float dtype)."""
        a = np.asarray(reference).astype(np.float64, copy=False).ravel()
        b = np.asarray(test).astype(np.float64, copy=False).ravel()
        if a.shape != b.shape:
            raise ValueError(f"shape mismatch: {np.shape(reference)} vs {np.shape(test)}")
        if a.size == 0:
            return
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            self.nonfinite = True
        d = a - b
        self.max_abs = max(self.max_abs, float(np.max(np.abs(d))))
        self.ref_sq += float(a @ a)
        self.test_sq += float(b @ b)
        self.dot += float(a @ b)
        self.err_sq += float(d @ d)
        self.count += a.size

    def result(self) -> ErrorMetrics:
        """The metrics so far (NaN everywhere if any input was NaN/Inf)."""
        if self.nonfinite:
            nan = float("nan")
            return ErrorMetrics(nan, nan, nan, nan, self.count)
        if self.ref_sq == 0.0:
            rel = 0.0 if self.err_sq == 0.0 else math.inf
            snr = math.inf if self.err_sq == 0.0 else -math.inf
        else:
            rel = math.sqrt(self.err_sq / self.ref_sq)
            snr = math.inf if self.err_sq == 0.0 else 10.0 * math.log10(self.ref_sq / self.err_sq)
        if self.ref_sq == 0.0 or self.test_sq == 0.0:
            cos = 1.0 if self.ref_sq == self.test_sq else 0.0
        else:
            cos = max(-1.0, min(1.0, self.dot / math.sqrt(self.ref_sq * self.test_sq)))
        return ErrorMetrics(self.max_abs, rel, cos, snr, self.count)


def error_metrics(reference: np.ndarray, test: np.ndarray) -> ErrorMetrics:
    """Metrics between two whole arrays."""
    acc = ErrorAccumulator()
    acc.update(reference, test)
    return acc.result()
