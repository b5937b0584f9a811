"""Our rotation (fast Walsh-Hadamard transform), fixed-order sums, exact E8M0 exponents, and
the deterministic torch-semantics helpers the W4A8 quantizer keeps."""

from __future__ import annotations

import numpy as np
import pytest
from golden import weights

from quantcheck.numeric import e8m0, hadamard, lowp, torch_order

GROUPS = [4, 16, 64, 256]


def _wide(n: int, k: int, seed: int) -> np.ndarray:
    """F32 values over ~2^±12 with both signs (exact construction)."""
    w = weights(n, k, "f32", seed, "tails")
    return np.ldexp(w, (np.arange(n * k).reshape(n, k) * 7919 % 25) - 12).astype(np.float32)


@pytest.mark.parametrize("g", GROUPS)
def test_hadamard_matrix(g):
    h = hadamard.hadamard(g)
    assert np.array_equal(h, h.T)
    h64 = h.astype(np.float64)
    assert np.array_equal(h64 @ h64, np.eye(g))  # products ±2^-2j: exact in float64
    assert set(np.unique(np.abs(h)).tolist()) == {2.0 ** -((g.bit_length() - 1) // 2)}
    assert hadamard.hadamard(4)[0].tolist() == [0.5, 0.5, 0.5, -0.5]


@pytest.mark.parametrize("g", GROUPS)
def test_fwht_is_the_dense_product_within_the_bound(g):
    x = _wide(37, 2 * g, g)
    ours = hadamard.rotate(x, g).astype(np.float64)
    exact = x.astype(np.float64).reshape(-1, g) @ hadamard.hadamard(g).astype(np.float64).T
    exact = exact.reshape(x.shape)  # float64: exact to far below the F32 bound
    half = hadamard.error_bound(hadamard.abs_term_sums(x, g), g) / 2  # γ_g·Σ|terms|
    assert (np.abs(ours - exact) <= half).all()
    assert (ours != exact).any()  # F32 rounding really happens on these inputs
    # unit vectors give the columns of H_g exactly
    eye = np.eye(g, dtype=np.float32)
    assert np.array_equal(hadamard.rotate(eye, g), hadamard.hadamard(g))


@pytest.mark.parametrize("g", GROUPS)
def test_h_times_h_is_identity_on_small_integers(g):
    x = (weights(19, 4 * g, "f32", 3) * 64 * 32).astype(np.float32)
    x = np.rint(x)  # integers up to a few hundred: every partial sum is exact
    assert np.abs(x).max() >= 32
    once = hadamard.rotate(x, g)
    assert np.array_equal(hadamard.rotate(once, g), x)


@pytest.mark.parametrize("g", GROUPS)
def test_rotation_is_deterministic(g):
    x = _wide(301, 4 * g, 11)
    ref = hadamard.rotate(x, g)
    for block in (1, 4 * g, 7 * 4 * g, 1 << 20):
        assert np.array_equal(hadamard.rotate(x, g, block=block), ref)
    assert np.array_equal(hadamard.rotate(x[5:9], g), ref[5:9])  # rows are independent
    bf = lowp.round_to(x.copy(), "bf16")
    got = hadamard.rotate(lowp.from_f32(bf, "bf16"), g, "bf16")
    assert np.array_equal(got, lowp.round_to(hadamard.rotate(bf, g), "bf16"))


def test_fixed_sum_order():
    a = np.array([1e8, 1.0, -1e8, 1.0, 3.0], np.float32)
    # halving: (1e8 + -1e8) + (1 + 1), then the odd 3.0 joins element 0: ((0 + 3) + 2)
    assert lowp.fixed_sum(a) == 5.0
    x = np.random.default_rng(0).standard_normal(1001)
    assert lowp.fixed_sum(x) == pytest.approx(np.sum(x), rel=1e-12)


def test_e8m0_exponent_is_ceil_of_correctly_rounded_log2():
    p = np.float32(448) * np.ldexp(np.float32(1), np.arange(-125, 120)).astype(np.float32)
    cand = [p, np.nextafter(p, np.float32(np.inf)), np.nextafter(p, np.float32(0))]
    cand += [(p * np.float32(1 + i * 2.0**-23)).astype(np.float32) for i in range(1, 64)]
    cand.append(_wide(64, 64, 1).ravel() * np.float32(1e3))
    amax = np.concatenate(cand).astype(np.float32)
    amax = np.abs(amax[np.isfinite(amax)])
    s = np.maximum(amax / np.float32(448), np.float32(2.0**-127))
    log2 = np.log2(s.astype(np.float64)).astype(np.float32)  # float64 log2, rounded once
    want = np.clip(np.ceil(log2).astype(np.int64) + 127, 0, 254)
    want[amax == 0] = 0
    got = e8m0.exponent_for(amax).astype(np.int64)
    assert np.array_equal(got, want)
    assert (np.ceil(log2) != np.ceil(np.log2(s.astype(np.float64)))).any()  # rounding matters


def test_linspace_randint_quantile(ck):
    """linspace is ours: ``start + step·i`` (first half) / ``end - step·(n-1-i)`` rounded once
    (torch's FMA kernel). torch itself is machine-dependent here (its baseline kernel,
    ATEN_CPU_CAPABILITY=default, rounds twice), so torch is only required within 1 ulp."""
    import torch

    for a, b, n in ((0, 1, 16), (0, 3071, 1365), (0, 99, 7), (2, 5, 1)):
        ours = torch_order.linspace_f32(a, b, n)
        if n > 1:
            step = (np.float64(np.float32(b) - np.float32(a)) / (n - 1)).astype(np.float32)
            i = np.arange(n, dtype=np.float64)
            want = np.where(
                i < n // 2, a + np.float64(step) * i, b - np.float64(step) * (n - 1 - i)
            ).astype(np.float32)
            assert np.array_equal(ours, want)
        ref = torch.linspace(a, b, n).numpy()
        assert (np.abs(ours - ref) <= np.spacing(np.abs(ref))).all()
    gen = torch.Generator().manual_seed(0)
    ref = torch.randint(0, 1000003, (5000,), generator=gen).numpy()
    assert np.array_equal(torch_order.torch_randint(1000003, 5000, 0), ref)
    x = np.sort(np.random.default_rng(0).standard_normal(30001).astype(np.float32))
    q = torch_order.linspace_f32(0, 1, 16)
    ref = torch.quantile(torch.from_numpy(x), torch.from_numpy(q)).numpy()
    assert np.array_equal(torch_order.torch_quantile(x, q), ref)
