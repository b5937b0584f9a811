"""Per-layer error metrics between a reference and a reconstructed float array.

A zero reference is handled explicitly: relative L2 and SNR are ``0`` / ``inf`` when the
reconstruction is also zero, else ``inf`` / ``-inf``; cosine similarity is 1.0 when both are
zero and 0.0 when exactly one is. Any NaN/Inf input makes every metric NaN.

How the sums are computed (the numeric contract, tested in tests/numeric/test_metrics.py):
each chunk is cut into fixed blocks of :data:`BLOCK` elements. Per block, the difference
``d = a - b`` and the products ``a·a``, ``b·b``, ``d·d`` are formed elementwise in float32 (one
rounding each, relative 2⁻²⁴) and summed in float64 by ``np.add.reduce`` (numpy's pairwise sum,
an order fixed by numpy's code, never by BLAS or the CPU). ``Σab`` is ``(Σa² + Σb² - Σd²)/2``
where that cannot cancel (b ≈ a, what compare meets), else the sum of float32 products ``a·b``.
Block sums are added in block order, chunk sums in the order :meth:`ErrorAccumulator.add`
receives them. A block whose float32 values could overflow or underflow (any sum non-finite or
below :data:`TINY_PER_ELEMENT` per element) is recomputed entirely in float64. Each sum agrees
with the exact sum of its terms to within 2⁻²³ of the sum of the terms' magnitudes, far below
what ``compare`` prints (rel L2 to 4 decimals, cosine to 6, SNR to 0.1 dB, max-abs 3 digits).
For streaming, feed row chunks to :class:`ErrorAccumulator` and read :meth:`result`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Elements per block of the float32 pass (a block's temporaries stay in the CPU cache).
BLOCK = 1 << 16
#: A block whose float32 sum of squares is below this per element is redone in float64
#: (float32 products of values below ~1e-19 lose digits to underflow).
TINY_PER_ELEMENT = 2.0**-100


@dataclass(frozen=True)
class ErrorMetrics:
    """max |a-b|, ||a-b||/||a||, cos(a, b), 10·log10(||a||²/||a-b||²) and the element count."""

    max_abs: float
    rel_l2: float
    cosine: float
    snr_db: float
    count: int


@dataclass(frozen=True)
class ChunkSums:
    """The sums behind :class:`ErrorMetrics` for one chunk (combine with ErrorAccumulator.add)."""

    max_abs: float = 0.0
    ref_sq: float = 0.0
    test_sq: float = 0.0
    dot: float = 0.0
    err_sq: float = 0.0
    count: int = 0
    nonfinite: bool = False


def _block64(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float, float, bool]:
    """One block in float64 (the exact path: float32 values multiply exactly in float64)."""
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    if not (np.isfinite(a64).all() and np.isfinite(b64).all()):
        return 0.0, 0.0, 0.0, 0.0, 0.0, True
    d = a64 - b64
    return (
        float(np.max(np.abs(d))),
        float(np.add.reduce(a64 * a64)),
        float(np.add.reduce(b64 * b64)),
        float(np.add.reduce(a64 * b64)),
        float(np.add.reduce(d * d)),
        False,
    )


def _sum_of_products(u: np.ndarray, v: np.ndarray, tmp: np.ndarray) -> float:
    """Σ u·v: float32 products (one rounding each), summed in float64 by numpy's pairwise sum."""
    np.multiply(u, v, out=tmp)
    return float(np.add.reduce(tmp, dtype=np.float64))


def chunk_sums(reference: np.ndarray, test: np.ndarray) -> ChunkSums:
    """The partial sums of one chunk (same size in both arrays; any float dtype)."""
    a = np.asarray(reference).reshape(-1)
    b = np.asarray(test).reshape(-1)
    if a.size != b.size:
        raise ValueError(f"shape mismatch: {np.shape(reference)} vs {np.shape(test)}")
    n = a.size
    if n == 0:
        return ChunkSums()
    exact64 = a.dtype == np.float64 or b.dtype == np.float64
    a = np.ascontiguousarray(a, dtype=np.float64 if exact64 else np.float32)
    b = np.ascontiguousarray(b, dtype=np.float64 if exact64 else np.float32)
    step = min(BLOCK, n)
    d = np.empty(step, np.float32)
    t = np.empty(step, np.float32)
    max_abs = ref_sq = test_sq = dot = err_sq = 0.0
    for s in range(0, n, BLOCK):
        x, y = a[s : s + BLOCK], b[s : s + BLOCK]
        m = x.size
        if exact64:
            part = _block64(x, y)
        else:
            dm, tm = d[:m], t[:m]
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                np.subtract(x, y, out=dm)
                mx = max(float(dm.max()), -float(dm.min()))
                r, q, e = (_sum_of_products(u, u, tm) for u in (x, y, dm))
                # Σab = (Σa² + Σb² - Σd²)/2 when that does not cancel (the usual case: b ≈ a);
                # the test below keeps its error within 2⁻²³·Σ|ab|, else Σab is summed directly.
                p = 0.5 * (r + q - e)
                if not r + q + 3.0 * e <= 4.0 * abs(p):
                    p = _sum_of_products(x, y, tm)
            tiny = TINY_PER_ELEMENT * m
            if (
                not math.isfinite(mx + r + q + p + e)
                or r < tiny
                or q < tiny
                or (e < tiny and mx > 0.0)
            ):
                part = _block64(x, y)  # overflow, underflow, all-zero or NaN/Inf: redo exactly
            else:
                part = (mx, r, q, p, e, False)
        if part[5]:
            return ChunkSums(count=n, nonfinite=True)
        max_abs = max(max_abs, part[0])
        ref_sq += part[1]
        test_sq += part[2]
        dot += part[3]
        err_sq += part[4]
    return ChunkSums(max_abs, ref_sq, test_sq, dot, err_sq, n, False)


class ErrorAccumulator:
    """Accumulates the sums behind :class:`ErrorMetrics` over chunks of a layer, in the order
    the chunks are given (so a fixed chunking gives the same result on every machine)."""

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
        self.add(chunk_sums(reference, test))

    def add(self, sums: ChunkSums) -> None:
        """Add the sums of one chunk computed elsewhere (e.g. on a worker thread)."""
        self.nonfinite = self.nonfinite or sums.nonfinite
        self.max_abs = max(self.max_abs, sums.max_abs)
        self.ref_sq += sums.ref_sq
        self.test_sq += sums.test_sq
        self.dot += sums.dot
        self.err_sq += sums.err_sq
        self.count += sums.count

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
