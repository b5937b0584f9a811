"""The compare metrics (float32 blocks, float64 sums) against an exact float64 reference.

The contract (numeric/metrics.py): every sum (Σa², Σb², Σab, Σ(a-b)²) agrees with the exact
sum of its terms to within 2⁻²³·Σ|terms| (each float32 product or difference is rounded once,
relative 2⁻²⁴; the float64 summation adds far less), so rel L2 agrees to a relative 2.5e-7,
cosine to an absolute 5e-7 · (Σ|ab| / √(Σa²·Σb²) + 1) and SNR to 2e-6 dB: below what compare
prints (rel L2 to 4 decimals, cosine to 6, SNR to 0.1 dB). On ordinary data (random weights
and their quantized copies) the agreement is far closer, and is tested at 1e-8.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")

from quantcheck.numeric import dequantize, quantize  # noqa: E402
from quantcheck.numeric.metrics import (  # noqa: E402
    BLOCK,
    ErrorAccumulator,
    chunk_sums,
    error_metrics,
)

U = 2.0**-23  # the stated bound per sum, relative to the sum of the terms' magnitudes


def _reference(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Exact float64 metrics: float32 values multiply exactly in float64; math.fsum is exact."""
    a = np.asarray(a, np.float32).astype(np.float64).ravel()
    b = np.asarray(b, np.float32).astype(np.float64).ravel()
    d = a - b
    r, t, p, e = (math.fsum(x) for x in (a * a, b * b, a * b, d * d))
    return {
        "r": r,
        "t": t,
        "p": p,
        "e": e,
        "abs_p": math.fsum(np.abs(a * b)),
        "max_abs": float(np.max(np.abs(d))) if d.size else 0.0,
    }


def _check(a: np.ndarray, b: np.ndarray, tol: float | None = None) -> None:
    ref = _reference(a, b)
    acc = ErrorAccumulator()
    acc.update(a, b)
    bound = {"r": U * ref["r"], "t": U * ref["t"], "p": U * ref["abs_p"], "e": U * ref["e"]}
    got = {"r": acc.ref_sq, "t": acc.test_sq, "p": acc.dot, "e": acc.err_sq}
    for key, value in got.items():
        assert abs(value - ref[key]) <= bound[key] + 1e-300, (key, value, ref[key])
    m = acc.result()
    assert m.max_abs == pytest.approx(ref["max_abs"], rel=2.0**-24, abs=0)
    rel = math.sqrt(ref["e"] / ref["r"])
    cos = ref["p"] / math.sqrt(ref["r"] * ref["t"])
    snr = 10 * math.log10(ref["r"] / ref["e"])
    cos_bound = 5e-7 * (ref["abs_p"] / math.sqrt(ref["r"] * ref["t"]) + 1)
    assert abs(m.rel_l2 - rel) <= 2.5e-7 * rel
    assert abs(m.cosine - cos) <= cos_bound
    assert abs(m.snr_db - snr) <= 2e-6
    if tol is not None:  # ordinary data: much closer than the bound
        assert abs(m.rel_l2 - rel) <= tol * rel
        assert abs(m.cosine - cos) <= tol
        assert abs(m.snr_db - snr) <= tol * max(1.0, abs(snr))


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp8", "float8_e4m3fn", "int8_tensorwise"])
@pytest.mark.parametrize("scale", [1.0, 0.02, 3e-5])
def test_quantized_weights_match_exact_float64(fmt: str, scale: float) -> None:
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((96, 1024)) * scale).astype(ml_dtypes.bfloat16)
    layer = quantize(w, fmt)
    test = dequantize(fmt, layer.arrays(), layer.marker, shape=(96, 1024))
    _check(w.astype(np.float32), test, tol=1e-8)


def test_random_float32_data_matches_exact_float64() -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal(3 * BLOCK + 17).astype(np.float32)
    b = (a + rng.standard_normal(a.size).astype(np.float32) * 0.1).astype(np.float32)
    _check(a, b, tol=1e-8)
    _check(a, rng.standard_normal(a.size).astype(np.float32))  # uncorrelated: cosine ~ 0
    _check(a, -a * 0.5)  # anti-correlated


def _rounds_up(n: int) -> np.ndarray:
    """float32 values whose squares all round the same way (a biased rounding error)."""
    # (1 + 2^-12 + 2^-23)^2 = 1 + 2^-11 + 2^-22 + ... : the tail beyond 2^-23 is always dropped
    # with the same sign, the worst case for a sum of float32 products.
    return np.full(n, 1 + 2.0**-12 + 2.0**-23, np.float32)


def test_adversarial_data_stays_within_the_stated_bound() -> None:
    rng = np.random.default_rng(3)
    n = 2 * BLOCK + 5
    a = _rounds_up(n)
    _check(a, a * np.float32(1 - 2.0**-10))
    # huge dynamic range within one block: tiny values next to large ones
    mag = np.float32(10.0) ** rng.integers(-30, 30, n).astype(np.float32)
    a = (rng.standard_normal(n).astype(np.float32) * mag).astype(np.float32)
    _check(a, (a * np.float32(1.001)).astype(np.float32))
    # one large value and a sea of small differences (cancellation-free err_sq)
    a = rng.standard_normal(n).astype(np.float32)
    b = a.copy()
    b[::7] += np.float32(1e-6)
    a[0] = 1e4
    b[0] = 1e4
    _check(a, b)
    # scales far apart: cosine from a well-conditioned dot, not from cancelling squares
    _check(a, (a * np.float32(1e-6)).astype(np.float32))


@pytest.mark.parametrize("scale", [1e-20, 1e-30, 1e19, 1e30])
def test_values_that_underflow_or_overflow_in_float32_products(scale: float) -> None:
    rng = np.random.default_rng(8)
    a = (rng.standard_normal(5000) * scale).astype(np.float32)
    b = (a * np.float32(0.99)).astype(np.float32)
    if not np.isfinite(b).all():
        pytest.skip("scale overflows float32 itself")
    _check(a, b)


def test_identical_and_zero_inputs_are_exact() -> None:
    a = np.random.default_rng(1).standard_normal(BLOCK + 3).astype(np.float32)
    m = error_metrics(a, a.copy())
    assert (m.max_abs, m.rel_l2, m.cosine, m.snr_db) == (0.0, 0.0, 1.0, math.inf)
    z = np.zeros(BLOCK + 3, np.float32)
    m = error_metrics(z, z)
    assert (m.rel_l2, m.cosine, m.snr_db) == (0.0, 1.0, math.inf)
    tiny = np.zeros(10, np.float32)
    tiny[3] = 1e-40  # a subnormal difference must still count as an error
    m = error_metrics(np.zeros(10, np.float32), tiny)
    assert m.rel_l2 == math.inf and m.max_abs == pytest.approx(1e-40)


def test_nan_and_inf_make_every_metric_nan() -> None:
    a = np.ones(BLOCK + 10, np.float32)
    for bad in (np.nan, np.inf):
        b = a.copy()
        b[BLOCK + 4] = bad
        m = error_metrics(a, b)
        assert all(math.isnan(v) for v in (m.max_abs, m.rel_l2, m.cosine, m.snr_db))


def test_chunking_is_fixed_by_the_caller_not_the_machine() -> None:
    """Same chunks in the same order give bit-identical sums; the sums of any chunking agree
    with each other to the stated bound."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal(100_000).astype(np.float32)
    b = (a + rng.standard_normal(a.size).astype(np.float32) * 0.05).astype(np.float32)
    first, again, other = ErrorAccumulator(), ErrorAccumulator(), ErrorAccumulator()
    for s in range(0, a.size, 40_000):
        first.add(chunk_sums(a[s : s + 40_000], b[s : s + 40_000]))
        again.add(chunk_sums(a[s : s + 40_000].copy(), b[s : s + 40_000].copy()))
    other.update(a, b)
    assert first.result() == again.result()
    assert first.ref_sq == pytest.approx(other.ref_sq, rel=U)
    exact = sum(Fraction(float(x)) ** 2 for x in a[:2000])
    assert chunk_sums(a[:2000], a[:2000]).ref_sq == pytest.approx(float(exact), rel=U)
